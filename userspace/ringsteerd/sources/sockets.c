// SPDX-License-Identifier: MIT
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "backend_socket.h"
#include "generations.h"
#include "kernel_features.h"
#include "log.h"
#include "socket_holders.h"
#include "socket_slots.h"
#include "sockets.h"
#include "state.h"

int sockets_clear_backend(struct rs_dataplane *dp, uint32_t id)
{
	int err = dp_clear_socket(dp, rs_socket_slot(id, 0));

	return err ? err : dp_clear_socket(dp, rs_socket_slot(id, 1));
}

static bool has_reuseport(int fd)
{
	socklen_t len = sizeof(int);
	int on = 0;

	return !getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, &len) && on;
}

struct listener_name {
	struct rs_dataplane *dp;
	uint32_t backend, service;
	int err;
};

static int name_one(int fd, void *arg)
{
	struct listener_name *n = arg;
	int err = dp_set_listener(n->dp, fd, n->backend, n->service);

	if (err && !n->err)
		n->err = err;
	return err;
}

/*
 * rs_listen on every socket of the address: with SO_REUSEPORT the kernel
 * picks any socket of the group after steer_lookup's choice, and the
 * children of one without it would be neither counted nor sticky.
 */
static void name_listeners(struct rs_dataplane *dp,
			   const struct rs_backend_conf *bc,
			   const struct rs_sock_addr *sa, uint32_t id,
			   uint32_t svc_id)
{
	struct listener_name n = {.dp = dp, .backend = id, .service = svc_id};
	char where[80];
	int got;

	if (sa->protocol != IPPROTO_TCP)
		return;
	got = sock_each_listener(sa, name_one, &n);
	if (got > 0 && !n.err) {
		rs_debug("backend %s: %d listening socket(s) named", bc->name,
			 got);
		return;
	}
	rs_addr_format(sa->family, sa->addr, sa->port, where, sizeof(where));
	rs_warn("backend %s: listening socket(s) on %s not named for the "
		"load gauge and sticky entries (%s): its connections are "
		"counted by the next reconciliation instead",
		bc->name, where,
		strerror(n.err	   ? -n.err
			 : got < 0 ? -got
				   : ENOENT));
}

static int install_socket(struct rs_dataplane *dp,
			  const struct rs_sock_addr *sa,
			  const struct rs_backend_conf *bc, uint32_t id,
			  const struct rs_backend_addr *ba,
			  struct rs_sock_found *found, pid_t *owner,
			  bool *reuseport)
{
	uint32_t slots[2];
	size_t n;
	int fd, err = 0;

	fd = sock_acquire(sa, found, owner);
	if (fd < 0)
		return fd;
	*reuseport = has_reuseport(fd);
	n = sockets_target_slots(bc, id, ba, found, slots);
	for (size_t i = 0; i < n && !err; i++)
		err = dp_set_socket(dp, slots[i], fd);
	/* The map holds its own reference: a backend exit empties the slot. */
	close(fd);
	return err;
}

/*
 * The usual reason nothing listens on a specific backend address: the
 * backend listens on the wildcard of its port. That socket is not taken (it
 * may belong to another program than the one configured), but the operator
 * is told: true with the wildcard's "addr:port" in @buf.
 */
static bool wildcard_listener(const struct rs_sock_addr *sa, char *buf,
			      size_t len)
{
	static const uint8_t zero[16];
	struct rs_sock_found found;
	struct rs_sock_addr w = *sa;

	if (!memcmp(sa->addr, zero, sizeof(zero)))
		return false;
	memset(w.addr, 0, sizeof(w.addr));
	if (sock_diag_find(&w, &found)) {
		/* A dual-stack [::] socket takes IPv4 clients too. */
		if (sa->family != AF_INET)
			return false;
		w.family = AF_INET6;
		if (sock_diag_find(&w, &found) || found.v6only)
			return false;
	}
	rs_addr_format(w.family, w.addr, w.port, buf, len);
	return true;
}

/*
 * A socket of another user on a backend's address: a local user who
 * listens there while the backend is down would otherwise be handed its
 * clients. Not taken (and out of the slots if an earlier state put it
 * there), counted once per socket, said once per socket.
 */
static void refuse_socket(struct rs_dataplane *dp,
			  const struct rs_backend_conf *bc,
			  const struct rs_backend_addr *ba, uint32_t id,
			  const struct rs_sock_found *found, uint32_t want,
			  struct rs_addr_rt *rt)
{
	uint32_t slots[2];
	size_t n = sockets_target_slots(bc, id, ba, found, slots);

	if (sockets_slots_hold(dp, slots, n, found->cookie))
		for (size_t i = 0; i < n; i++)
			dp_clear_socket(dp, slots[i]);
	rt->has_socket = false;
	rt->nslots = 0;
	rt->reported_missing = true;
	sockets_note_refused(bc, ba, found, want, rt);
}

static void reconcile_addr(struct rs_dataplane *dp, const struct rs_config *cfg,
			   size_t idx, uint32_t id, uint32_t svc_id, size_t a,
			   struct rs_addr_rt *rt, double now)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];
	const struct rs_backend_addr *ba = &bc->addrs[a];
	struct rs_sock_found found;
	struct rs_sock_addr sa;
	char where[80];
	uint32_t slots[2];
	pid_t owner = 0;
	bool reuseport = false;
	uint32_t want;
	int err;

	if (generations_on(cfg, bc)) {
		generations_reconcile_addr(dp, cfg, idx, id, a, rt, now);
		return;
	}
	/*
	 * While the slots still hold the socket we put there, nothing changed:
	 * a backend that stops listening or exits empties them itself. Only
	 * then is the (costly, on a busy host) sock_diag dump needed.
	 */
	if (rt->nslots &&
	    sockets_slots_hold(dp, rt->slots, rt->nslots, rt->cookie) &&
	    (!bc->has_owner || rt->uid == bc->owner_uid)) {
		rt->has_socket = true;
		return;
	}
	rt->nslots = 0;
	sockets_sock_addr(cfg, bc, ba, &sa);
	err = sock_diag_find(&sa, &found);
	if (err == 0 && sockets_owner_expected(bc, rt, &want) &&
	    found.uid != want) {
		refuse_socket(dp, bc, ba, id, &found, want, rt);
		sockets_gone(rt, now);
		return;
	}
	if (err == 0) {
		size_t n = sockets_target_slots(bc, id, ba, &found, slots);

		if (sockets_slots_hold(dp, slots, n, found.cookie)) {
			/*
			 * Adopted after a restart: look at a copy once, for
			 * the SO_REUSEPORT check of kernel.c.
			 */
			int fd = sock_acquire(&sa, &found, &owner);

			rt->reuseport = fd >= 0 && has_reuseport(fd);
			if (fd >= 0)
				close(fd);
			kernel_note_socket(cfg, idx, rt->reuseport);
			if (sa.protocol == IPPROTO_TCP)
				dp_sockops_cover(dp, &found.cgroup_id, 1,
						 false);
			name_listeners(dp, bc, &sa, id, svc_id);
			rt->has_socket = true;
			rt->cgroup_id = found.cgroup_id;
			rt->cookie = found.cookie;
			rt->uid_known = true;
			rt->uid = found.uid;
			rt->nslots = n;
			memcpy(rt->slots, slots, sizeof(rt->slots));
			rt->held_mask = sockets_slot_mask(slots, n);
			rt->gone_since = 0;
			rt->taken++;
			rt->taken_at = now;
			return;
		}
	}
	rs_addr_format(ba->family, ba->addr, ba->port, where, sizeof(where));
	/*
	 * sockops_cgroup = auto: steer_sockops sees this listener's children
	 * before the first of them is steered to it.
	 */
	if (err == 0 && sa.protocol == IPPROTO_TCP)
		dp_sockops_cover(dp, &found.cgroup_id, 1, false);
	if (err == 0)
		err = install_socket(dp, &sa, bc, id, ba, &found, &owner,
				     &reuseport);
	/* install_socket() looks again: the socket may have changed hands. */
	if (err == 0 && sockets_owner_expected(bc, rt, &want) &&
	    found.uid != want) {
		refuse_socket(dp, bc, ba, id, &found, want, rt);
		sockets_gone(rt, now);
		return;
	}
	if (err == 0) {
		rs_info("backend %s: socket %s (cookie %llu%s) taken from pid "
			"%d",
			bc->name, where, (unsigned long long)found.cookie,
			ba->family == AF_INET6 && !found.v6only ? ", dual-stack"
								: "",
			(int)owner);
		name_listeners(dp, bc, &sa, id, svc_id);
		rt->has_socket = true;
		rt->reported_missing = false;
		rt->cgroup_id = found.cgroup_id;
		rt->cookie = found.cookie;
		rt->owner = owner;
		rt->reuseport = reuseport;
		if (!rt->uid_known && !bc->has_owner) {
			char who[96];

			rs_info("backend %s: %s serves on %s: only its sockets "
				"are taken there from now on (owner = names "
				"another)",
				bc->name,
				sockets_user_name(found.uid, who, sizeof(who)),
				where);
		}
		rt->uid_known = true;
		rt->uid = found.uid;
		kernel_note_socket(cfg, idx, reuseport);
		rt->nslots =
			sockets_target_slots(bc, id, ba, &found, rt->slots);
		if (rt->gone_since > 0)
			rs_info("backend %s: socket %s back after %.0f ms",
				bc->name, where,
				(now - rt->gone_since) * 1000.0);
		rt->held_mask = sockets_slot_mask(rt->slots, rt->nslots);
		rt->gone_since = 0;
		rt->taken++;
		rt->taken_at = now;
		return;
	}
	if (rt->has_socket || !rt->reported_missing) {
		char wild[80];

		if (err == -ENOENT &&
		    wildcard_listener(&sa, wild, sizeof(wild)))
			rs_warn("backend %s: nothing listens on %s, but a "
				"wildcard socket on %s does: not taken, only "
				"a socket bound to the configured address is "
				"(configure address = %s to use it); retrying",
				bc->name, where, wild, wild);
		else
			rs_warn("backend %s: no usable socket on %s (%s); "
				"retrying",
				bc->name, where, strerror(-err));
	} else {
		rs_debug("backend %s: still no usable socket on %s (%s)",
			 bc->name, where, strerror(-err));
	}
	sockets_gone(rt, now);
	rt->reported_missing = true;
}

bool sockets_reconcile_backend(struct rs_dataplane *dp,
			       const struct rs_config *cfg, size_t idx,
			       uint32_t id, uint32_t svc_id,
			       struct rs_backend_rt *rt,
			       const struct sock_scope *scope)
{
	bool any = false;

	for (size_t a = 0; a < cfg->backends[idx].n_addrs; a++) {
		struct rs_addr_rt *ar = &rt->addr[a];
		bool recent = ar->gone_since > 0 &&
			      scope->now < ar->gone_since + scope->window;

		if (scope->window == 0 || recent ||
		    (scope->present && ar->has_socket))
			reconcile_addr(dp, cfg, idx, id, svc_id, a, ar,
				       scope->now);
		any |= ar->has_socket;
	}
	return any;
}

bool sockets_listening(const struct rs_config *cfg, size_t idx)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];
	struct rs_sock_found found;
	struct rs_sock_addr sa;

	for (size_t a = 0; a < bc->n_addrs; a++) {
		sockets_sock_addr(cfg, bc, &bc->addrs[a], &sa);
		/* Another user's socket is not the backend's (owner =). */
		if (!sock_diag_find(&sa, &found) &&
		    (!bc->has_owner || found.uid == bc->owner_uid))
			return true;
	}
	return false;
}

/* ---- every backend of the daemon ---- */

static uint64_t passes;

uint64_t sockets_reconcile_passes(void)
{
	return passes;
}

bool sockets_reconcile_all(struct daemon *d, bool refresh)
{
	bool changed = false;

	passes++;
	/* One /proc walk and one sock_diag dump per family for the pass. */
	socket_holders_batch_begin();
	sock_diag_batch_begin();
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];
		bool had = be->has_socket;

		be->has_socket = sockets_reconcile_backend(
			&d->dp, &d->st.cfg, i, be->id,
			d->st.svcs[d->st.cfg.backends[i].service].id, &be->sock,
			&(struct sock_scope){.now = ev_now(d->loop)});
		be->socket_unknown = false;
		changed |= had != be->has_socket;
		if (refresh && had != be->has_socket)
			ring_refresh(d, d->st.cfg.backends[i].service,
				     REFRESH_CHECK, "backend socket");
	}
	sock_diag_batch_end();
	socket_holders_batch_end();
	return changed;
}

void daemon_reconcile_sockets(struct daemon *d)
{
	/* A listener came or went: where steer_sockops sits may narrow. */
	if (sockets_reconcile_all(d, true) && d->dp.sockops_auto)
		load_check_soon(d);
}

void on_reconcile(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	daemon_reconcile_sockets(w->data);
	daemon_tc_check(w->data);
	daemon_check_pins(w->data);
	daemon_trace_reap(w->data);
	generations_sweep(w->data);
}

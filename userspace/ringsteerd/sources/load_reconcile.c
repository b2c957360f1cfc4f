// SPDX-License-Identifier: MIT
/*
 * The load gauge against the sockets the kernel holds. steer_sockops
 * counts a connection at establishment and at close, so the gauge is
 * exact for every connection that was established while it was attached.
 * Connections that predate it (opened under a daemon that was
 * --detach'ed, or before ringsteer ran at all) carry no counted mark in
 * their copy of rs_listen and were never counted; nothing will count them
 * down either. This pass finds them with sock_diag (a connection whose
 * local address is a TCP service's listen address and that is not
 * marked RS_CONN_COUNTED), attributes
 * each to the backend whose listening socket the same process holds, and
 * keeps their number in the gauge with atomic adds: raised when found,
 * lowered as they close, the amount kept in each backend's word
 * (rs_backend.uncounted) so that a restarted daemon takes back its own.
 *
 * The connections the kernel counted are left to it: a dump is not a
 * snapshot (sockets open and close while it runs), so a difference
 * between it and the gauge under churn is the dump's, not the gauge's.
 * An earlier version "corrected" such differences and drove a gauge below
 * 0 under churn.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "socket_holders.h"
#include "state.h"
#include "tcp_conn_diag.h"

/*
 * The states a counted connection is in the load in (steer_sockops counts
 * it down at its first state outside them): rules.h.
 */
#define COUNTED_STATES RS_LOAD_TCP_STATES
_Static_assert(COUNTED_STATES == (1u << TCP_ESTABLISHED | 1u << TCP_CLOSE_WAIT),
	       "the kernel's TCP state numbers");

/* While predating connections remain, they are looked for this often. */
#define LOAD_CHECK_BUSY 5.0
#define LOAD_CHECK_IDLE 60.0

/* One inode the /proc scan looks for: a candidate or a listener. */
struct watched {
	uint64_t inode;
	size_t index; /* into cands, or into d->st.bes for a listener */
	bool listener;
};

struct cand {
	size_t svc; /* index into d->st.cfg.services */
	pid_t pid;  /* a process holding it, 0 = none found */
};

struct holder {
	pid_t pid;
	size_t be; /* index into d->st.bes */
};

struct pass {
	struct daemon *d;
	/* Ports some TCP service listens on (all: a listen on port 0). */
	uint64_t ports[65536 / 64];
	bool any_port;
	struct cand *cands;
	struct watched *watch;
	size_t ncands, nwatch, capwatch;
	struct holder *holders;
	size_t nholders, capholders;
	/* The cgroups steer_sockops sees (sorted; none: it sees all). */
	uint64_t *scope;
	size_t nscope;
	bool *outside; /* per backend: its listener is not under them */
	/*
	 * sockops_cgroup = auto: the cgroups of the backends' named listeners
	 * and of the connections counted up (each must be seen again when it
	 * closes), distinct.
	 */
	uint64_t *cgroups;
	size_t ncgroups, capcgroups, nlistening;
	int err;
};

/*
 * The listeners' cgroups first (the first nlistening of them), then those
 * only counted connections are in. The dump gives listeners before
 * connections only per family, hence the swap.
 */
static int cgroup_add(struct pass *p, uint64_t id, bool listener)
{
	for (size_t i = 0; i < p->ncgroups; i++) {
		if (p->cgroups[i] != id)
			continue;
		if (listener && i >= p->nlistening) {
			p->cgroups[i] = p->cgroups[p->nlistening];
			p->cgroups[p->nlistening++] = id;
		}
		return 0;
	}
	if (p->ncgroups == p->capcgroups) {
		size_t cap = p->capcgroups ? p->capcgroups * 2 : 16;
		uint64_t *q = reallocarray(p->cgroups, cap, sizeof(*q));

		if (!q)
			return -ENOMEM;
		p->cgroups = q;
		p->capcgroups = cap;
	}
	p->cgroups[p->ncgroups++] = id;
	if (listener) {
		p->cgroups[p->ncgroups - 1] = p->cgroups[p->nlistening];
		p->cgroups[p->nlistening++] = id;
	}
	return 0;
}

static int watch_add(struct pass *p, uint64_t inode, size_t index,
		     bool listener)
{
	if (p->nwatch == p->capwatch) {
		size_t cap = p->capwatch ? p->capwatch * 2 : 64;
		struct watched *w = realloc(p->watch, cap * sizeof(*w));
		struct cand *c = realloc(p->cands, cap * sizeof(*c));

		if (w)
			p->watch = w;
		if (c)
			p->cands = c;
		if (!w || !c)
			return -ENOMEM;
		p->capwatch = cap;
	}
	if (!listener) {
		p->cands[p->ncands] = (struct cand){0};
		index = p->ncands++;
	}
	p->watch[p->nwatch++] = (struct watched){
		.inode = inode, .index = index, .listener = listener};
	return 0;
}

static int svc_index(const struct daemon *d, uint32_t id)
{
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		if (d->st.svcs[s].id == id &&
		    d->st.cfg.services[s].protocol == IPPROTO_TCP)
			return (int)s;
	return -1;
}

static int be_by_cookie(const struct daemon *d, uint64_t cookie)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		for (size_t a = 0; a < RS_MAX_BACKEND_ADDRS; a++)
			if (d->st.bes[i].sock.addr[a].has_socket &&
			    d->st.bes[i].sock.addr[a].cookie == cookie)
				return (int)i;
	return -1;
}

/* An IPv4 client of a dual-stack listener shows as ::ffff:a.b.c.d. */
static void unmap_v4(uint8_t *family, uint8_t *addr)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	if (*family == AF_INET6 && !memcmp(addr, prefix, sizeof(prefix))) {
		memmove(addr, addr + 12, 4);
		memset(addr + 4, 0, 12);
		*family = AF_INET;
	}
}

/*
 * The child's copy of its listener's rs_listen storage says whether
 * steer_sockops counted it (abi.h, RS_CONN_COUNTED); a child without one
 * (its listener had none yet) or without the mark (established while no
 * steer_sockops ran) is not in the gauge, unless an earlier build counted
 * it and left its record in rs_conn (dp_counted_storage()).
 */
static bool conn_counted(const struct tcp_conn_seen *c)
{
	const struct tcp_conn_value *l = &c->value[0];
	struct rs_conn v;

	/* Counted by a build before the mark: its own record, rs_conn. */
	if (c->value[1].has)
		return true;
	if (!l->has || l->len < sizeof(v))
		return false;
	memcpy(&v, l->b, sizeof(v));
	return v.service & RS_CONN_COUNTED;
}

/* @c's rs_listen names a backend of this configuration, of its service. */
static bool names_backend(const struct daemon *d, const struct tcp_conn_seen *c)
{
	struct rs_conn v;

	if (!c->value[0].has || c->value[0].len < sizeof(v))
		return false;
	memcpy(&v, c->value[0].b, sizeof(v));
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		if (d->st.bes[i].id == v.backend &&
		    d->st.svcs[d->st.cfg.backends[i].service].id ==
			    (v.service & ~RS_CONN_FLAGS))
			return true;
	return false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * A backend whose listening socket was created outside the cgroup
 * steer_sockops is attached at ([global] sockops_cgroup): its accepted
 * connections share that cgroup, so the program never sees them. Said
 * when it starts and when it ends, and kept for `ringsteer status`.
 */
static void scope_report(struct daemon *d, const bool *outside)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];

		if (be->outside_sockops == outside[i])
			continue;
		be->outside_sockops = outside[i];
		if (outside[i])
			rs_warn("backend %s: its listening socket was created "
				"outside sockops_cgroup %s: its connections "
				"are neither counted in the load gauge nor "
				"made sticky at establishment (start it "
				"under %s, or widen sockops_cgroup)",
				d->st.cfg.backends[i].name,
				d->st.cfg.sockops_cgroup,
				d->st.cfg.sockops_cgroup);
		else
			rs_info("backend %s: its listening socket is under "
				"sockops_cgroup %s now",
				d->st.cfg.backends[i].name,
				d->st.cfg.sockops_cgroup);
	}
}

static int on_socket(const struct tcp_conn_seen *c, void *arg)
{
	struct pass *p = arg;
	uint8_t family = c->family, addr[16];
	uint32_t svc_id;
	int i;

	if (c->state == TCP_LISTEN) {
		i = be_by_cookie(p->d, c->cookie);
		/*
		 * A backend's, or one of its SO_REUSEPORT group (named for it
		 * in rs_listen). Not one named for a backend a reload removed:
		 * nothing is steered to it, so its children are not counted.
		 */
		if (p->d->dp.sockops_auto && (i >= 0 || names_backend(p->d, c)))
			p->err = cgroup_add(p, c->cgroup_id, true);
		if (p->err)
			return p->err;
		if (i >= 0 && p->nscope && c->cgroup_id &&
		    !bsearch(&c->cgroup_id, p->scope, p->nscope,
			     sizeof(*p->scope), cmp_u64))
			p->outside[i] = true;
		if (i >= 0 && c->inode)
			p->err = watch_add(p, c->inode, (size_t)i, true);
		return p->err;
	}
	/* Counted by steer_sockops (its mark in rs_listen): the kernel's. */
	if (conn_counted(c)) {
		if (p->d->dp.sockops_auto)
			p->err = cgroup_add(p, c->cgroup_id, false);
		return p->err;
	}
	/* An orphan (closed by its process) has no owner to go by. */
	if (!c->inode)
		return 0;
	/* Most sockets of a host are no service's: no map lookup for them. */
	if (!p->any_port &&
	    !(p->ports[c->local_port / 64] >> (c->local_port % 64) & 1))
		return 0;
	memcpy(addr, c->local_addr, sizeof(addr));
	unmap_v4(&family, addr);
	if (dp_bind_service(&p->d->dp, IPPROTO_TCP, family, c->local_port, addr,
			    &svc_id))
		return 0;
	i = svc_index(p->d, svc_id);
	if (i < 0)
		return 0;
	p->err = watch_add(p, c->inode, 0, false);
	if (!p->err)
		p->cands[p->ncands - 1].svc = (size_t)i;
	return p->err;
}

static int cmp_watched(const void *a, const void *b)
{
	const struct watched *x = a, *y = b;

	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

static int on_holder(size_t idx, pid_t pid, int fd, void *arg)
{
	struct pass *p = arg;
	const struct watched *w = &p->watch[idx];

	(void)fd;
	if (!w->listener) {
		if (!p->cands[w->index].pid)
			p->cands[w->index].pid = pid;
		return 0;
	}
	if (p->nholders == p->capholders) {
		size_t cap = p->capholders ? p->capholders * 2 : 32;
		struct holder *h = realloc(p->holders, cap * sizeof(*h));

		if (!h) {
			p->err = -ENOMEM;
			return 1;
		}
		p->holders = h;
		p->capholders = cap;
	}
	p->holders[p->nholders++] = (struct holder){.pid = pid, .be = w->index};
	return 0;
}

/*
 * The backend of service @svc whose listener process @pid holds, when
 * exactly one does (a process serving two backends of one service cannot
 * say which a connection came from).
 */
static int attribute(const struct pass *p, size_t svc, pid_t pid)
{
	int found = -1;

	for (size_t h = 0; h < p->nholders; h++) {
		size_t be = p->holders[h].be;

		if (p->holders[h].pid != pid ||
		    p->d->st.cfg.backends[be].service != svc ||
		    (int)be == found)
			continue;
		if (found >= 0)
			return -1;
		found = (int)be;
	}
	return found;
}

/*
 * Each backend's uncounted share moves to what this pass found, and its
 * service's gauge by the same amount.
 */
static void gauges_fix(struct daemon *d, const uint32_t *found)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];
		size_t s = d->st.cfg.backends[i].service;
		int64_t delta = (int64_t)found[i] - be->uncounted;

		/* A UDP backend's gauge is its flows (load_flows.c). */
		if (d->st.cfg.services[s].protocol != IPPROTO_TCP || !delta)
			continue;
		dp_load_add(&d->dp, be->id, d->st.svcs[s].id, delta);
		rs_info("load: backend %s: %u connections predate the "
			"counting (were %u)",
			d->st.cfg.backends[i].name, found[i], be->uncounted);
		be->uncounted = found[i];
		backend_push(d, be);
	}
}

int load_reconcile(struct daemon *d)
{
	size_t nb = d->st.cfg.n_backends, ns = d->st.cfg.n_services;
	struct pass *p = calloc(1, sizeof(*p));
	uint32_t *found = calloc(nb + 1, sizeof(*found));
	uint64_t *inodes = NULL;
	uint32_t unattributed = 0, uncounted = 0;
	_Static_assert(TCP_CONN_MAPS_MAX == 2, "rs_listen and rs_conn");
	struct tcp_conn_map maps[TCP_CONN_MAPS_MAX];
	int fd[TCP_CONN_MAPS_MAX];
	uint32_t id[TCP_CONN_MAPS_MAX];
	int err;

	if (!p || !found) {
		err = -ENOMEM;
		goto out;
	}
	p->d = d;
	for (size_t s = 0; s < ns; s++) {
		const struct rs_service_conf *sc = &d->st.cfg.services[s];

		if (sc->protocol != IPPROTO_TCP)
			continue;
		for (size_t l = 0; l < sc->n_listens; l++) {
			uint16_t port = sc->listens[l].port;

			p->any_port |= port == 0;
			p->ports[port / 64] |= 1ull << (port % 64);
		}
	}
	p->outside = calloc(nb + 1, sizeof(*p->outside));
	if (!p->outside) {
		err = -ENOMEM;
		goto out;
	}
	/*
	 * Unknown scope: nobody is said to be outside it. With auto nobody
	 * is: the listeners' cgroups are where it goes (below).
	 */
	if (!d->dp.sockops_auto &&
	    !dp_sockops_scope(&d->dp, &p->scope, &p->nscope))
		qsort(p->scope, p->nscope, sizeof(*p->scope), cmp_u64);
	err = dp_counted_storage(&d->dp, fd, id);
	for (int i = 0; i < TCP_CONN_MAPS_MAX; i++) {
		maps[i].fd = fd[i];
		maps[i].id = id[i];
	}
	if (!err)
		err = tcp_conn_dump(COUNTED_STATES | 1u << TCP_LISTEN, maps,
				    TCP_CONN_MAPS_MAX, on_socket, p);
	if (!err)
		err = p->err;
	if (err)
		goto out;
	scope_report(d, p->outside);
	/*
	 * Narrowed (or widened) to what this pass saw; nothing is steered to
	 * a listener outside before it is covered (sockets.c), so a move here
	 * loses no connection's count up or down.
	 */
	dp_sockops_cover(&d->dp, p->cgroups, p->ncgroups, true);
	d->load.held_wide = p->nlistening && p->ncgroups > p->nlistening;
	if (p->ncands) {
		qsort(p->watch, p->nwatch, sizeof(*p->watch), cmp_watched);
		inodes = calloc(p->nwatch, sizeof(*inodes));
		if (!inodes) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t w = 0; w < p->nwatch; w++)
			inodes[w] = p->watch[w].inode;
		err = socket_holders_scan(inodes, p->nwatch, on_holder, p);
		if (!err)
			err = p->err;
		if (err)
			goto out;
	}
	for (size_t c = 0; c < p->ncands; c++) {
		int be = p->cands[c].pid ? attribute(p, p->cands[c].svc,
						     p->cands[c].pid)
					 : -1;

		if (be < 0) {
			unattributed++;
			continue;
		}
		found[be]++;
		uncounted++;
	}
	gauges_fix(d, found);
	if (unattributed != d->load.unattributed)
		rs_info("load: %u connections to services predate the "
			"counting and belong to no backend's process: not in "
			"any gauge",
			unattributed);
	d->load.uncounted = uncounted;
	d->load.unattributed = unattributed;
	d->load.passes++;
out:
	if (err && err != d->load.last_err)
		rs_warn("load: cannot check the gauge against the sockets: %s",
			strerror(-err));
	d->load.last_err = err;
	free(inodes);
	if (p) {
		free(p->cands);
		free(p->watch);
		free(p->holders);
		free(p->scope);
		free(p->outside);
		free(p->cgroups);
	}
	free(p);
	free(found);
	return err;
}

static bool any_tcp_service(const struct daemon *d)
{
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		if (d->st.cfg.services[s].protocol == IPPROTO_TCP)
			return true;
	return false;
}

static void on_load_check(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;

	(void)revents;
	if (any_tcp_service(d))
		load_reconcile(d);
	w->repeat =
		d->load.uncounted || d->load.unattributed || d->load.held_wide
			? LOAD_CHECK_BUSY
			: LOAD_CHECK_IDLE;
	ev_timer_again(loop, w);
}

void load_check_soon(struct daemon *d)
{
	if (!ev_is_active(&d->load_check))
		return;
	d->load_check.repeat = 1.0;
	ev_timer_again(d->loop, &d->load_check);
}

void load_check_start(struct daemon *d)
{
	/* At once: connections may predate this daemon's counting. */
	if (any_tcp_service(d))
		load_reconcile(d);
	ev_timer_init(&d->load_check, on_load_check, 0., 0.);
	d->load_check.data = d;
	d->load_check.repeat = d->load.uncounted || d->load.unattributed
				       ? LOAD_CHECK_BUSY
				       : LOAD_CHECK_IDLE;
	ev_timer_again(d->loop, &d->load_check);
}

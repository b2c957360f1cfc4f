// SPDX-License-Identifier: MIT
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "backend_socket.h"
#include "config_apply.h"
#include "log.h"

void rs_service_from_conf(const struct rs_config *cfg, uint32_t id,
			  struct rs_service *out)
{
	const struct rs_service_conf *sc = &cfg->services[id];

	memset(out, 0, sizeof(*out));
	out->seed = sc->seed;
	out->id = id;
	out->enabled = 1;
	out->protocol = sc->protocol;
	out->key_policy = sc->key_policy;
	out->fallback = sc->fallback;
	out->prefix4 = sc->prefix4;
	out->prefix6 = sc->prefix6;
	snprintf(out->name, sizeof(out->name), "%s", sc->name);
}

void rs_backend_from_conf(const struct rs_config *cfg, uint32_t id,
			  struct rs_backend *out)
{
	const struct rs_backend_conf *bc = &cfg->backends[id];
	uint32_t points = bc->weight * cfg->services[bc->service].vnodes;

	memset(out, 0, sizeof(*out));
	out->state = RS_BACKEND_UP;
	out->active_points = points;
	out->max_points = points;
	out->service = (uint32_t)bc->service;
	snprintf(out->name, sizeof(out->name), "%s", bc->name);
}

int rs_rings_build(const struct rs_config *cfg, struct rs_ring *rings)
{
	struct rs_ring_member *members;
	int err = 0;

	members =
		calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof(*members));
	if (!members)
		return -ENOMEM;
	for (size_t s = 0; s < cfg->n_services && !err; s++) {
		size_t n = 0;

		for (size_t b = 0; b < cfg->n_backends; b++) {
			const struct rs_backend_conf *bc = &cfg->backends[b];

			if (bc->service != s)
				continue;
			members[n].name = bc->name;
			members[n].backend = (uint32_t)b;
			members[n].points =
				bc->weight * cfg->services[s].vnodes;
			n++;
		}
		err = ring_build(members, n, cfg->services[s].seed, &rings[s]);
	}
	free(members);
	return err;
}

static int apply_binds(struct rs_dataplane *dp, const struct rs_config *cfg)
{
	struct rs_bind_key *keys;
	struct rs_bind *vals;
	size_t n = 0;
	int err;

	keys = calloc(RS_MAX_BINDS, sizeof(*keys));
	vals = calloc(RS_MAX_BINDS, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t s = 0; s < cfg->n_services; s++) {
		const struct rs_service_conf *sc = &cfg->services[s];

		for (size_t l = 0; l < sc->n_listens && n < RS_MAX_BINDS; l++) {
			const struct rs_listen *li = &sc->listens[l];

			keys[n].prefixlen = 32 + li->prefixlen;
			keys[n].protocol = sc->protocol;
			keys[n].family = li->family;
			keys[n].port = li->port;
			memcpy(keys[n].addr, li->addr, sizeof(li->addr));
			vals[n].service = (uint32_t)s;
			vals[n].addr_prefixlen = li->prefixlen;
			n++;
		}
	}
	err = dp_sync_binds(dp, keys, vals, n);
	free(keys);
	free(vals);
	return err;
}

/* Ids beyond the configuration may hold state from an earlier config. */
static int retire_unused(struct rs_dataplane *dp, const struct rs_config *cfg)
{
	struct rs_service off_svc = {0};
	struct rs_backend off_be = {0};
	int err = 0;

	for (uint32_t id = cfg->n_services; id < RS_MAX_SERVICES && !err; id++)
		err = dp_set_service(dp, id, &off_svc);
	for (uint32_t id = cfg->n_backends; id < RS_MAX_BACKENDS && !err;
	     id++) {
		err = dp_set_backend(dp, id, &off_be);
		if (!err)
			err = dp_clear_socket(dp, rs_socket_slot(id, 0));
		if (!err)
			err = dp_clear_socket(dp, rs_socket_slot(id, 1));
	}
	return err;
}

int config_apply(struct rs_dataplane *dp, const struct rs_config *cfg)
{
	struct rs_ring *rings;
	int err = 0;

	rings = calloc(cfg->n_services ? cfg->n_services : 1, sizeof(*rings));
	if (!rings)
		return -ENOMEM;
	err = rs_rings_build(cfg, rings);
	if (err) {
		rs_err("ring: build failed: %s", strerror(-err));
		goto out;
	}
	for (uint32_t b = 0; b < cfg->n_backends && !err; b++) {
		struct rs_backend be;

		rs_backend_from_conf(cfg, b, &be);
		err = dp_set_backend(dp, b, &be);
	}
	for (uint32_t s = 0; s < cfg->n_services && !err; s++) {
		struct rs_service svc;
		int64_t gen;

		rs_service_from_conf(cfg, s, &svc);
		gen = dp_swap_ring(dp, s, &rings[s]);
		if (gen < 0) {
			err = (int)gen;
			break;
		}
		err = dp_set_service(dp, s, &svc);
		rs_info("service %s: ring generation %lld, %u points", svc.name,
			(long long)gen, rings[s].npoints);
	}
	if (!err)
		err = apply_binds(dp, cfg);
	if (!err)
		err = retire_unused(dp, cfg);
out:
	for (size_t s = 0; s < cfg->n_services; s++)
		ring_free(&rings[s]);
	free(rings);
	return err;
}

static void backend_sock_addr(const struct rs_config *cfg,
			      const struct rs_backend_conf *bc,
			      const struct rs_backend_addr *ba,
			      struct rs_sock_addr *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->protocol = cfg->services[bc->service].protocol;
	sa->family = ba->family;
	sa->port = ba->port;
	memcpy(sa->addr, ba->addr, sizeof(sa->addr));
}

static bool backend_has_family(const struct rs_backend_conf *bc, int family)
{
	for (size_t i = 0; i < bc->n_addrs; i++)
		if (bc->addrs[i].family == family)
			return true;
	return false;
}

/*
 * SOCKMAP slots a socket fills: its own family's, and the IPv4 one too for
 * a dual-stack IPv6 socket when no IPv4 address is configured.
 */
static size_t target_slots(const struct rs_backend_conf *bc, uint32_t id,
			   const struct rs_backend_addr *ba,
			   const struct rs_sock_found *found, uint32_t slots[2])
{
	if (ba->family == AF_INET) {
		slots[0] = rs_socket_slot(id, 0);
		return 1;
	}
	slots[0] = rs_socket_slot(id, 1);
	if (found->v6only || backend_has_family(bc, AF_INET))
		return 1;
	slots[1] = rs_socket_slot(id, 0);
	return 2;
}

static bool slots_hold(struct rs_dataplane *dp, const uint32_t *slots, size_t n,
		       uint64_t cookie)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t have;

		if (dp_socket_cookie(dp, slots[i], &have) || have != cookie)
			return false;
	}
	return true;
}

static int install_socket(struct rs_dataplane *dp,
			  const struct rs_sock_addr *sa,
			  const struct rs_backend_conf *bc, uint32_t id,
			  const struct rs_backend_addr *ba,
			  struct rs_sock_found *found, pid_t *owner)
{
	uint32_t slots[2];
	size_t n;
	int fd, err = 0;

	fd = sock_acquire(sa, found, owner);
	if (fd < 0)
		return fd;
	n = target_slots(bc, id, ba, found, slots);
	for (size_t i = 0; i < n && !err; i++)
		err = dp_set_socket(dp, slots[i], fd);
	/* The map holds its own reference: a backend exit empties the slot. */
	close(fd);
	return err;
}

static void reconcile_addr(struct rs_dataplane *dp, const struct rs_config *cfg,
			   uint32_t id, size_t a, struct rs_addr_rt *rt)
{
	const struct rs_backend_conf *bc = &cfg->backends[id];
	const struct rs_backend_addr *ba = &bc->addrs[a];
	struct rs_sock_found found;
	struct rs_sock_addr sa;
	char where[80];
	uint32_t slots[2];
	pid_t owner = 0;
	int err;

	backend_sock_addr(cfg, bc, ba, &sa);
	err = sock_diag_find(&sa, &found);
	if (err == 0 &&
	    slots_hold(dp, slots, target_slots(bc, id, ba, &found, slots),
		       found.cookie)) {
		rt->has_socket = true;
		return;
	}
	rs_addr_format(ba->family, ba->addr, ba->port, where, sizeof(where));
	if (err == 0)
		err = install_socket(dp, &sa, bc, id, ba, &found, &owner);
	if (err == 0) {
		rs_info("backend %s: socket %s (cookie %llu%s) taken from pid "
			"%d",
			bc->name, where, (unsigned long long)found.cookie,
			ba->family == AF_INET6 && !found.v6only ? ", dual-stack"
								: "",
			(int)owner);
		rt->has_socket = true;
		rt->reported_missing = false;
		rt->cookie = found.cookie;
		rt->owner = owner;
		return;
	}
	if (rt->has_socket || !rt->reported_missing)
		rs_warn("backend %s: no usable socket on %s (%s); retrying",
			bc->name, where, strerror(-err));
	rt->has_socket = false;
	rt->reported_missing = true;
}

int sockets_reconcile(struct rs_dataplane *dp, const struct rs_config *cfg,
		      struct rs_backend_rt *rt)
{
	int have = 0;

	for (uint32_t id = 0; id < cfg->n_backends; id++) {
		bool any = false;

		for (size_t a = 0; a < cfg->backends[id].n_addrs; a++) {
			reconcile_addr(dp, cfg, id, a, &rt[id].addr[a]);
			any |= rt[id].addr[a].has_socket;
		}
		have += any;
	}
	return have;
}

// SPDX-License-Identifier: MIT
/*
 * The one pipeline that writes a configuration into the data plane, at
 * start-up and on reload alike. Both begin from a snapshot of what the
 * data plane holds (at start-up read from the pins, on reload taken from
 * the state being replaced): ids are assigned from it (ids.c), backends
 * adopt or carry their runtime state (backends.c), then apply_config()
 * writes in the order that keeps every lookup on the old mapping or the
 * new one, the lookup tables follow, and whatever the snapshot held that
 * the configuration does not is retired last.
 */
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "all_out.h"
#include "config_diff.h"
#include "fleet.h"
#include "ids.h"
#include "log.h"
#include "apply.h"
#include "state.h"
#include "upgrade.h"
#include "view.h"

/* Start-up: what a previous ringsteerd left pinned. */
static void snapshot_read(struct daemon *d, struct snapshot *p)
{
	for (uint32_t i = 0; i < RS_MAX_SERVICES; i++)
		if (dp_get_service(&d->dp, i, &p->svcs[i]))
			memset(&p->svcs[i], 0, sizeof(p->svcs[i]));
	for (uint32_t i = 0; i < RS_MAX_BACKENDS; i++)
		if (dp_get_backend(&d->dp, i, &p->bes[i]))
			memset(&p->bes[i], 0, sizeof(p->bes[i]));
}

/*
 * Reload: the state being replaced (@old), as @d's data plane holds it: its
 * services by name, its backends' words (a word never written still
 * names its backend, so that its id is kept and retired like the others),
 * and the words of removed backends that still hold connections.
 */
void snapshot_of(struct daemon *d, const struct rs_state *old,
		 struct snapshot *p)
{
	/*
	 * The words first: a backend no longer configured whose connections
	 * are still open keeps its word (retire()), and with it its id.
	 */
	for (uint32_t i = 0; i < RS_MAX_BACKENDS; i++)
		if (dp_get_backend(&d->dp, i, &p->bes[i]))
			memset(&p->bes[i], 0, sizeof(p->bes[i]));
	for (size_t s = 0; s < old->cfg.n_services; s++) {
		struct rs_service *svc = &p->svcs[old->svcs[s].id];

		svc->enabled = 1;
		snprintf(svc->name, sizeof(svc->name), "%s",
			 old->cfg.services[s].name);
	}
	for (size_t i = 0; i < old->cfg.n_backends; i++) {
		const struct be_rt *be = &old->bes[i];
		struct rs_backend *w = &p->bes[be->id];

		if (be->pushed_valid) {
			*w = be->pushed;
			continue;
		}
		w->service = old->svcs[old->cfg.backends[i].service].id;
		snprintf(w->name, sizeof(w->name), "%s",
			 old->cfg.backends[i].name);
	}
}

/*
 * Service and backend ids for the configuration in @st from @before (see
 * ids_assign()): a service keeps its id by name, a backend by name and
 * service; new ones avoid every id @before used and every id whose load
 * gauge is not 0.
 */
int assign_ids(struct daemon *d, struct rs_state *st,
	       const struct snapshot *before)
{
	size_t nmax = RS_MAX_BACKENDS > RS_MAX_SERVICES ? RS_MAX_BACKENDS
							: RS_MAX_SERVICES;
	const char **held = calloc(nmax, sizeof(*held));
	const char **names = calloc(nmax, sizeof(*names));
	uint32_t *owner = calloc(nmax, sizeof(*owner));
	uint32_t *ids = calloc(nmax, sizeof(*ids));
	uint32_t *svc_of = calloc(nmax, sizeof(*svc_of));
	bool *avoid = calloc(nmax, sizeof(*avoid));
	struct id_table t = {.held = held, .avoid = avoid};
	int err = -ENOMEM;

	if (!held || !names || !owner || !ids || !svc_of || !avoid)
		goto out;
	/*
	 * An id whose load gauge is not 0 still has connections open that
	 * will count it down when they close: a new service or backend
	 * under it would carry their load, so it is taken only when
	 * nothing else is left.
	 */
	for (uint32_t k = 0; k < RS_MAX_SERVICES; k++) {
		int64_t load = 0;

		held[k] = before->svcs[k].enabled ? before->svcs[k].name : NULL;
		dp_service_load(&d->dp, k, &load);
		avoid[k] = before->svcs[k].enabled || load != 0;
	}
	for (size_t s = 0; s < st->cfg.n_services; s++)
		names[s] = st->cfg.services[s].name;
	t.max = RS_MAX_SERVICES;
	err = ids_assign(&t, names, NULL, st->cfg.n_services, ids);
	if (err)
		goto out;
	for (size_t s = 0; s < st->cfg.n_services; s++)
		st->svcs[s].id = ids[s];
	for (uint32_t k = 0; k < RS_MAX_BACKENDS; k++) {
		int64_t load = 0;

		held[k] = before->bes[k].name;
		owner[k] = before->bes[k].service;
		dp_backend_load(&d->dp, k, &load);
		avoid[k] = before->bes[k].name[0] != 0 || load != 0;
	}
	for (size_t i = 0; i < st->cfg.n_backends; i++) {
		names[i] = st->cfg.backends[i].name;
		svc_of[i] = st->svcs[st->cfg.backends[i].service].id;
	}
	t.max = RS_MAX_BACKENDS;
	t.owner = owner;
	err = ids_assign(&t, names, svc_of, st->cfg.n_backends, ids);
	for (size_t i = 0; i < st->cfg.n_backends && !err; i++)
		st->bes[i].id = ids[i];
out:
	free(held);
	free(names);
	free(owner);
	free(ids);
	free(svc_of);
	free(avoid);
	return err;
}

static int sticky_apply(struct daemon *d, size_t s)
{
	const struct rs_service_conf *sc = &d->st.cfg.services[s];
	uint32_t id = d->st.svcs[s].id;

	if (!sc->sticky_ttl)
		return dp_sticky_remove(&d->dp, id);
	if (dp_sticky_size(&d->dp, id) == sc->sticky_max)
		return 0;
	return dp_sticky_create(&d->dp, id, sc->sticky_max);
}

static int services_push(struct daemon *d)
{
	int err = 0;

	for (size_t s = 0; s < d->st.cfg.n_services && !err; s++) {
		struct rs_service svc;

		rs_service_from_conf(&d->st.cfg, s, d->st.svcs[s].id, &svc);
		err = sticky_apply(d, s);
		if (!err)
			err = dp_set_service(&d->dp, d->st.svcs[s].id, &svc);
	}
	return err;
}

/*
 * Whatever @before held under an id the configuration does not use
 * leaves the data plane: the backend's word and sockets (and its sticky
 * entries, before its id can be reused), the service's entry, ring and
 * sticky table.
 */
static void retire(struct daemon *d, const struct snapshot *before)
{
	bool svc_used[RS_MAX_SERVICES] = {0};
	bool *be_used = calloc(RS_MAX_BACKENDS, sizeof(bool));
	struct rs_service off_svc = {0};
	struct rs_backend off_be = {0};

	if (!be_used)
		return;
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		svc_used[d->st.svcs[s].id] = true;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		be_used[d->st.bes[i].id] = true;
	for (uint32_t id = 0; id < RS_MAX_BACKENDS; id++) {
		const struct rs_backend *b = &before->bes[id];

		struct rs_backend keep;
		int64_t load = 0;

		if (be_used[id] || (!b->name[0] && !b->state))
			continue;
		if (b->service < RS_MAX_SERVICES) {
			dp_sticky_forget_backend(&d->dp, b->service, id);
			/* Its uncounted connections leave the gauge with it. */
			dp_load_add(&d->dp, id, b->service,
				    -(int64_t)b->uncounted);
		}
		sockets_clear_backend(&d->dp, id);
		dp_backend_load(&d->dp, id, &load);
		if (!b->name[0] || load <= 0) {
			if (b->name[0])
				rs_info("backend %s (id %u): no longer "
					"configured",
					b->name, id);
			dp_set_backend(&d->dp, id, &off_be);
			continue;
		}
		/*
		 * Its open connections still count in this id's gauge and
		 * will count it down as they close. The word keeps its name
		 * (DOWN, no points): a backend of that name configured again
		 * gets this id and its load back, and no other takes the id
		 * (assign_ids), until a reload finds the gauge at 0.
		 */
		keep = *b;
		keep.state = RS_BACKEND_DOWN;
		keep.active_points = 0;
		keep.bound_points = 0;
		keep.balance_milli = 0;
		keep.uncounted = 0;
		dp_set_backend(&d->dp, id, &keep);
		rs_info("backend %s (id %u): no longer configured; %lld "
			"connections it holds keep its id until they close",
			b->name, id, (long long)load);
	}
	for (uint32_t id = 0; id < RS_MAX_SERVICES; id++) {
		if (svc_used[id] || !before->svcs[id].enabled)
			continue;
		rs_info("service %s (id %u): no longer configured",
			before->svcs[id].name, id);
		dp_set_service(&d->dp, id, &off_svc);
		dp_delete_ring(&d->dp, id);
		dp_sticky_remove(&d->dp, id);
	}
	free(be_used);
}

/*
 * Bring the data plane from what it holds now (the rings in
 * d->st.svcs[].ring, the words @before, by id) to the configuration in @d
 * without a lookup ever seeing a mix of the two. A ring's points are
 * interpreted through the words' active_points, so ring and words cannot
 * change in one write; instead (docs/architecture.md, "Reloads"):
 *  1. each installed ring is trimmed to the points its words use now
 *     (same mapping);
 *  2. every word takes the larger of its old and new active_points, which
 *     leaves every point of either trimmed ring in use (same mapping);
 *  3. sticky tables and service entries (key, seed and points travel
 *     with the ring, not here);
 *  4. each service's new ring, trimmed to its new words, replaces the old
 *     one in a single update: the switch;
 *  5. every word gets its new active_points (no point of the trimmed
 *     rings is skipped by that);
 *  6. each ring becomes the full one where the walk allows (same mapping).
 * A service whose ring and words would come out as they are
 * (ring_unchanged()) is left out of 1, 4 and 6: its ring is not touched,
 * and a rollback finds it as the failed attempt left it, unchanged.
 * Binds and cookies come after this, and removed ids after them.
 */
static int apply_config(struct daemon *d, const struct rs_backend *before)
{
	struct rs_backend *words = calloc(RS_MAX_BACKENDS, sizeof(*words));
	size_t ns = d->st.cfg.n_services;
	bool *same = calloc(ns ? ns : 1, sizeof(*same));
	struct rs_ring *full;
	int err = 0;

	if (!words || !same) {
		free(words);
		free(same);
		return -ENOMEM;
	}
	for (size_t s = 0; s < ns; s++) {
		same[s] = ring_unchanged(d, s, before);
		d->rings_untouched += same[s];
	}
	for (size_t s = 0; s < ns && !err; s++)
		if (!same[s] && d->st.svcs[s].generation &&
		    d->st.svcs[s].ring.npoints)
			err = ring_install_trimmed(
				d, s, &d->st.svcs[s].ring, before,
				"reload: points in use only");
	for (size_t i = 0; i < d->st.cfg.n_backends && !err; i++) {
		struct be_rt *be = &d->st.bes[i];
		const struct rs_backend *old = &before[be->id];

		daemon_backend_word(d, be, &words[be->id]);
		if (old->name[0] && !strcmp(old->name, words[be->id].name) &&
		    old->active_points > words[be->id].active_points) {
			struct rs_backend mid = words[be->id];

			mid.active_points = old->active_points;
			err = dp_set_backend(&d->dp, be->id, &mid);
			be->pushed_valid = false;
		} else {
			err = backend_push(d, be);
		}
	}
	if (!err)
		err = services_push(d);
	/* The cache holds the full ring: trimmed, or copied as it goes in. */
	for (size_t s = 0; s < ns && !err; s++) {
		if (same[s])
			continue;
		err = ring_build_full(d, s, &full);
		if (!err)
			err = ring_install_trimmed(d, s, full, words,
						   "configuration");
	}
	for (size_t i = 0; i < d->st.cfg.n_backends && !err; i++)
		err = backend_push(d, &d->st.bes[i]);
	for (size_t s = 0; s < ns && !err; s++)
		if (!same[s])
			err = ring_refresh(d, s, REFRESH_REBUILD,
					   "configuration");
	free(same);
	free(words);
	return err;
}

int alloc_runtime(struct rs_state *st)
{
	st->svcs = calloc(st->cfg.n_services ? st->cfg.n_services : 1,
			  sizeof(*st->svcs));
	st->bes = calloc(st->cfg.n_backends ? st->cfg.n_backends : 1,
			 sizeof(*st->bes));
	if (!st->svcs || !st->bes)
		return -ENOMEM;
	return 0;
}

/*
 * What the lookup tables were last written with: a reload whose binds
 * or cookies are the same writes neither (rs_binds was ~14 ms of an
 * unchanged reload at 200 backends). Unknown (not valid) at start, where
 * the pins may hold anything, and from the start of a write until it
 * succeeds, so a failed or half-done write is written again.
 */
struct lookups_memo {
	bool binds_valid, cookies_valid;
	size_t nb, nc;
	struct rs_bind_key bk[RS_MAX_BINDS];
	struct rs_bind bv[RS_MAX_BINDS];
	struct rs_cookie_key ck[RS_MAX_BACKENDS];
	struct rs_cookie cv[RS_MAX_BACKENDS];
};

/* rs_binds from the configuration, unless it holds that already. */
static int binds_push(struct daemon *d, struct lookups_memo *next)
{
	struct lookups_memo *memo = d->lookups;
	uint32_t ids[RS_MAX_SERVICES];
	int err;

	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		ids[s] = d->st.svcs[s].id;
	next->nb = binds_collect(&d->st.cfg, ids, next->bk, next->bv);
	if (memo->binds_valid && memo->nb == next->nb &&
	    !memcmp(memo->bk, next->bk, next->nb * sizeof(next->bk[0])) &&
	    !memcmp(memo->bv, next->bv, next->nb * sizeof(next->bv[0])))
		/* A fault injected here fails the step all the same. */
		return dp_fault("binds");
	memo->binds_valid = false;
	err = dp_sync_binds(&d->dp, next->bk, next->bv, next->nb);
	if (err)
		return err;
	d->lookups_written++;
	memo->nb = next->nb;
	memcpy(memo->bk, next->bk, next->nb * sizeof(next->bk[0]));
	memcpy(memo->bv, next->bv, next->nb * sizeof(next->bv[0]));
	memo->binds_valid = true;
	return 0;
}

/*
 * rs_cookies holds exactly the server IDs of the backends of cookie
 * services: {service id, quic_server_id_len, server ID} -> backend id.
 * Entries of removed backends or services, of changed IDs or lengths, and
 * of services that dropped cookie = quic go; so does anything a previous
 * daemon left that this configuration does not have.
 */
static int cookies_push(struct daemon *d, struct lookups_memo *next)
{
	struct lookups_memo *memo = d->lookups;
	size_t n = 0, written = 0, removed = 0;
	int err;

	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];
		const struct rs_service_conf *sc =
			&d->st.cfg.services[bc->service];

		if (sc->cookie != RS_COOKIE_QUIC || !bc->has_server_id)
			continue;
		memset(&next->ck[n], 0, sizeof(next->ck[n]));
		next->ck[n].service = d->st.svcs[bc->service].id;
		next->ck[n].len = sc->quic_server_id_len;
		memcpy(next->ck[n].server_id, bc->server_id,
		       sc->quic_server_id_len);
		memset(&next->cv[n], 0, sizeof(next->cv[n]));
		next->cv[n].backend = d->st.bes[i].id;
		n++;
	}
	if (memo->cookies_valid && memo->nc == n &&
	    !memcmp(memo->ck, next->ck, n * sizeof(next->ck[0])) &&
	    !memcmp(memo->cv, next->cv, n * sizeof(next->cv[0])))
		return dp_fault("cookies");
	memo->cookies_valid = false;
	err = dp_sync_cookies(&d->dp, next->ck, next->cv, n, &written,
			      &removed);
	if (err)
		return err;
	if (written || removed)
		rs_info("rs_cookies: %zu QUIC server IDs (%zu written, %zu "
			"removed)",
			n, written, removed);
	d->lookups_written++;
	memo->nc = n;
	memcpy(memo->ck, next->ck, n * sizeof(next->ck[0]));
	memcpy(memo->cv, next->cv, n * sizeof(next->cv[0]));
	memo->cookies_valid = true;
	return 0;
}

/* The tables that lead packets to ids: rs_binds, then rs_cookies. */
static int lookups_push(struct daemon *d)
{
	struct lookups_memo *next = calloc(1, sizeof(*next));
	int err = -ENOMEM;

	if (!d->lookups)
		d->lookups = calloc(1, sizeof(*d->lookups));
	if (next && d->lookups)
		err = binds_push(d, next);
	if (!err)
		err = cookies_push(d, next);
	free(next);
	return err;
}

/*
 * Start-up and reload alike, once ids are assigned and backends have
 * their runtime state: sockets (a ring member without one would pass its
 * keys to its neighbour, a third owner that a sticky table would then keep
 * for the whole TTL), then apply_config() from the words @before holds,
 * then the tables that lead packets to the new ids.
 */
static int apply_pipeline(struct daemon *d, const struct snapshot *before)
{
	int err;

	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		if (d->st.bes[i].addrs_changed) {
			sockets_clear_backend(&d->dp, d->st.bes[i].id);
			d->st.bes[i].addrs_changed = false;
		}
	sockets_reconcile_all(d, false);
	err = apply_config(d, before->bes);
	return err ? err : lookups_push(d);
}

static void start_timers(struct daemon *d)
{
	ev_timer_init(&d->reconcile, on_reconcile, 1.0, 1.0);
	d->reconcile.data = d;
	ev_timer_start(d->loop, &d->reconcile);
	/* Slow start moves in steps of at most 1/20 of a second's work. */
	ev_timer_init(&d->ramp, on_ramp, 0.25, 0.25);
	d->ramp.data = d;
	ev_timer_start(d->loop, &d->ramp);
	load_check_start(d);
	load_flows_start(d);
	restart_watch_start(d);
}

void log_warning(const char *line)
{
	rs_warn("%s", line);
}

/*
 * A service whose file leaves vnodes to the default, running a ring built
 * with the default of earlier versions (an upgrade): that ring is kept
 * until a reload, so that an upgrade alone moves no client, and the log
 * says what the reload will move.
 */
static void keep_legacy_vnodes(struct daemon *d, const struct snapshot *p)
{
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		double moved;

		if (!rs_config_legacy_ring(&d->st.cfg, s, p->bes))
			continue;
		moved = rs_config_vnodes_moved(&d->st.cfg, s, RS_LEGACY_VNODES);
		d->st.cfg.services[s].vnodes = RS_LEGACY_VNODES;
		rs_warn("service %s: vnodes not set, and the running ring was "
			"built with %u (the default of earlier versions, now "
			"%u): kept until a reload, which moves %.1f%% of its "
			"clients; set vnodes in %s to choose",
			d->st.cfg.services[s].name, RS_LEGACY_VNODES,
			RS_DEFAULT_VNODES, moved * 100, d->config_path);
	}
}

/*
 * steer_sockops where [global] sockops_cgroup says; for auto, where the
 * TCP backends' listeners found so far are (sockets.c moves it as more
 * come).
 */
static void sockops_attach(struct daemon *d)
{
	uint64_t ids[RS_MAX_BACKENDS * RS_MAX_BACKEND_ADDRS];
	size_t n = 0;

	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];

		if (d->st.cfg.services[bc->service].protocol != IPPROTO_TCP)
			continue;
		for (size_t a = 0; a < bc->n_addrs; a++)
			if (d->st.bes[i].sock.addr[a].has_socket)
				ids[n++] = d->st.bes[i].sock.addr[a].cgroup_id;
	}
	dp_sockops_attach(&d->dp, d->st.cfg.control_socket,
			  d->st.cfg.sockops_cgroup, ids, n);
}

int daemon_start(struct daemon *d, const struct upgrade *up)
{
	struct snapshot *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p || alloc_runtime(&d->st)) {
		free(p);
		return -ENOMEM;
	}
	rs_config_empty_services(&d->st.cfg, log_warning);
	rs_config_fleet_ipv6_notes(&d->st.cfg, log_warning);
	err = checker_init(&d->checker, d->loop);
	if (!err)
		err = dp_open(&d->dp, d->st.cfg.bpffs);
	if (!err)
		err = upgrade_seed(d, up);
	if (!err) {
		snapshot_read(d, p);
		keep_legacy_vnodes(d, p);
		err = assign_ids(d, &d->st, p);
	}
	if (err)
		goto out;
	backends_adopt(d, p->bes);
	/* The rings in place: adopted as they are when they are right. */
	rings_read_pinned(d);
	err = apply_pipeline(d, p);
	for (size_t s = 0; s < d->st.cfg.n_services && !err; s++)
		if (d->st.svcs[s].rebuilds == 0)
			rs_info("service %s: adopted ring generation %llu, %u "
				"points",
				d->st.cfg.services[s].name,
				(unsigned long long)d->st.svcs[s].generation,
				d->st.svcs[s].ring.npoints);
	if (err) {
		/*
		 * The pins stay as they were or half written, which steering
		 * reads as the old mapping or the new one; the next start
		 * repairs them the same way. If it cannot either, the way out
		 * is the one that always works: start from nothing.
		 */
		rs_err("applying %s to the data plane under %s failed: %s (the "
		       "line above names the map); steering goes on from the "
		       "pins. If starting again fails the same way, "
		       "`ringsteerd --detach -c %s` removes them (steering "
		       "stops until the next start builds everything anew)",
		       d->config_path, d->st.cfg.bpffs, strerror(-err),
		       d->config_path);
		goto out;
	}
	retire(d, p);
	/* Before the link: a connection steered from now on has a consumer. */
	sockops_attach(d);
	/* TC first: if steer_tc cannot load, the link stays as it was. */
	err = daemon_tc_apply(d);
	if (!err)
		err = daemon_fleet_apply(d);
	if (!err)
		err = dp_attach(&d->dp);
	if (err)
		goto out;
	checks_start(d);
	start_timers(d);
out:
	free(p);
	return err;
}

/*
 * No daemon, nothing ends a restart_grace: a flow must not wait for a
 * socket that may never come back. The pins keep steering as without the
 * grace until the next start holds again. The state says so (stopping:
 * no slot held) and the word writer writes the words that differ.
 */
static void release_held(struct daemon *d)
{
	d->st.stopping = true;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];

		if (be->pushed_valid && be->pushed.held_slots)
			(void)backend_push(d, be);
	}
}

void daemon_stop(struct daemon *d)
{
	if (!d->st.bes)
		return;
	daemon_fleet_stop(d);
	daemon_tc_stop(d);
	checks_stop(d);
	ev_timer_stop(d->loop, &d->reconcile);
	ev_timer_stop(d->loop, &d->ramp);
	ev_timer_stop(d->loop, &d->load_check);
	ev_timer_stop(d->loop, &d->load_flows);
	ev_timer_stop(d->loop, &d->restart_watch);
	checker_fini(&d->checker);
	release_held(d);
	dp_close(&d->dp);
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		ring_free(&d->st.svcs[s].ring);
	rings_cache_free(d);
	free(d->lookups);
	d->lookups = NULL;
	free(d->st.svcs);
	free(d->st.bes);
	d->st.svcs = NULL;
	d->st.bes = NULL;
}

/*
 * Write the state in @d (its configuration, ids, carried runtime state)
 * into the data plane, from what @before says it holds: the one function
 * a reload and its rollback both go through. Nothing is retired until the
 * whole state is in place, so a failure part-way leaves every object of
 * the previous state where the rollback can find it.
 */
int apply_state(struct daemon *d, const struct snapshot *before)
{
	int err = apply_pipeline(d, before);

	if (!err)
		err = daemon_tc_apply(d);
	if (!err)
		err = daemon_fleet_apply(d);
	if (!err)
		retire(d, before);
	return err;
}

void runtime_free(struct rs_state *x)
{
	for (size_t s = 0; s < x->cfg.n_services; s++)
		ring_free(&x->svcs[s].ring);
	free(x->svcs);
	free(x->bes);
	rs_config_free(&x->cfg);
}

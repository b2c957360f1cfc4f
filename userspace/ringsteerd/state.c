// SPDX-License-Identifier: MIT
/*
 * The daemon's state engine: ids, operator and health states, weights,
 * slow start, rings and their atomic swaps, reloads as diffs, and adoption
 * of what a previous ringsteerd left pinned.
 *
 * Rule of thumb: anything that does not change ring membership or a
 * backend's maximum points is one state-word write to rs_backends. Ring
 * rebuilds happen only when membership or a maximum changes, or when the
 * walk bound would otherwise be at risk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "config_diff.h"
#include "daemon.h"
#include "log.h"

/* A skipped run longer than this triggers a rebuild without the skippers. */
#define WALK_SAFE_RUN (RS_WALK_MAX / 2)

const char *rs_op_state_name(enum rs_op_state op)
{
	switch (op) {
	case RS_OP_DRAIN:
		return "drain";
	case RS_OP_DOWN:
		return "down";
	default:
		return "up";
	}
}

const char *rs_backend_state_name(uint32_t state)
{
	switch (state) {
	case RS_BACKEND_UP:
		return "UP";
	case RS_BACKEND_DRAIN:
		return "DRAIN";
	default:
		return "DOWN";
	}
}

int daemon_find_backend(const struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		if (!strcmp(d->cfg.backends[i].name, name))
			return (int)i;
	return -ENOENT;
}

int daemon_find_service(const struct daemon *d, const char *name)
{
	return rs_config_find_service(&d->cfg, name);
}

static uint32_t full_points(const struct daemon *d, const struct be_rt *be)
{
	const struct rs_backend_conf *bc = &d->cfg.backends[be->idx];

	return be->weight * d->cfg.services[bc->service].vnodes;
}

void daemon_backend_word(const struct daemon *d, const struct be_rt *be,
			 struct rs_backend *out)
{
	const struct rs_backend_conf *bc = &d->cfg.backends[be->idx];
	uint32_t full = full_points(d, be), active = full;

	memset(out, 0, sizeof(*out));
	if (be->op == RS_OP_DOWN || !be->health.up)
		out->state = RS_BACKEND_DOWN;
	else if (be->op == RS_OP_DRAIN)
		out->state = RS_BACKEND_DRAIN;
	else
		out->state = RS_BACKEND_UP;
	if (be->up_since > 0 && bc->health.slow_start_ms)
		active = slow_start_points(
			full,
			(uint64_t)((ev_now(d->loop) - be->up_since) * 1000),
			bc->health.slow_start_ms);
	out->active_points =
		active < be->built_points ? active : be->built_points;
	out->service = d->svcs[bc->service].id;
	out->max_points = be->built_points;
	out->op_state = be->op;
	out->health = be->health.up;
	out->weight = be->weight;
	out->weight_set = be->weight_override;
	snprintf(out->name, sizeof(out->name), "%s", bc->name);
}

/* Write the backend's word if it changed. */
static int push_backend(struct daemon *d, struct be_rt *be)
{
	struct rs_backend word;
	int err;

	daemon_backend_word(d, be, &word);
	if (be->pushed_valid && !memcmp(&word, &be->pushed, sizeof(word)))
		return 0;
	err = dp_set_backend(&d->dp, be->id, &word);
	if (err)
		return err;
	be->pushed = word;
	be->pushed_valid = true;
	return 0;
}

int daemon_ring_view(const struct daemon *d, struct rs_backend **backends,
		     bool **has_socket, uint32_t *n)
{
	*backends = calloc(RS_MAX_BACKENDS, sizeof(**backends));
	*has_socket = calloc(RS_MAX_BACKENDS, sizeof(**has_socket));
	if (!*backends || !*has_socket) {
		free(*backends);
		free(*has_socket);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		const struct be_rt *be = &d->bes[i];

		daemon_backend_word(d, be, &(*backends)[be->id]);
		(*has_socket)[be->id] = be->has_socket;
	}
	*n = RS_MAX_BACKENDS;
	return 0;
}

/* Service @s's ring with every backend at its built (maximum) points. */
static int build_full_ring(struct daemon *d, size_t s, struct rs_ring *ring)
{
	struct rs_ring_member *m;
	struct rs_service svc;
	size_t n = 0;
	int err;

	m = calloc(d->cfg.n_backends ? d->cfg.n_backends : 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		struct be_rt *be = &d->bes[i];

		if (d->cfg.backends[i].service != s || !be->built_points)
			continue;
		m[n].name = d->cfg.backends[i].name;
		m[n].backend = be->id;
		m[n].points = be->built_points;
		n++;
	}
	err = ring_build(m, n, d->cfg.services[s].seed, ring);
	free(m);
	if (err)
		return err;
	rs_service_from_conf(&d->cfg, s, d->svcs[s].id, &svc);
	ring_set_key(ring, &svc);
	return 0;
}

static int install_ring(struct daemon *d, size_t s, struct rs_ring *ring,
			bool compact, const char *why)
{
	struct svc_rt *svc = &d->svcs[s];
	int64_t gen = dp_swap_ring(&d->dp, svc->id, ring);

	if (gen < 0) {
		ring_free(ring);
		return (int)gen;
	}
	ring_free(&svc->ring);
	svc->ring = *ring;
	memset(ring, 0, sizeof(*ring));
	svc->generation = (uint64_t)gen;
	svc->compact = compact;
	svc->rebuilds++;
	rs_info("service %s: ring generation %llu, %u points%s (%s)",
		d->cfg.services[s].name, (unsigned long long)gen,
		svc->ring.npoints, compact ? ", only the points in use" : "",
		why);
	return 0;
}

/* Install @ring unless the same ring is in place already. */
static int install_if_changed(struct daemon *d, size_t s, struct rs_ring *ring,
			      bool compact, bool force, const char *why)
{
	struct svc_rt *svc = &d->svcs[s];

	if (!force && svc->generation && ring_equal(ring, &svc->ring)) {
		ring_free(ring);
		svc->compact = compact;
		return 0;
	}
	return install_ring(d, s, ring, compact, why);
}

enum refresh {
	REFRESH_CHECK,	 /* only if the installed ring is no longer right */
	REFRESH_REBUILD, /* built points changed: rebuild, swap if it differs */
	REFRESH_FORCE,	 /* rebuild and swap even if nothing changed */
};

/*
 * Keep the installed ring of service @s right for the words in force:
 * the full ring (every backend at its built points) while no walk meets
 * a long run of skipped points, else the full ring trimmed to the points
 * in use (ring_trim()), which maps every key the same way. The data plane
 * walks the whole ring if it must, so this is about speed, never about
 * whether a client finds its backend.
 */
static int ring_refresh(struct daemon *d, size_t s, enum refresh how,
			const char *why)
{
	struct svc_rt *svc = &d->svcs[s];
	struct rs_ring_view view = {0};
	struct rs_ring full = {0}, trimmed = {0};
	struct rs_backend *words;
	bool *has_socket;
	int err;

	err = daemon_ring_view(d, &words, &has_socket, &view.nbackends);
	if (err)
		return err;
	view.backends = words;
	view.has_socket = has_socket;
	if (how == REFRESH_CHECK && !svc->compact && svc->generation &&
	    ring_max_skip_run(&svc->ring, &view) <= WALK_SAFE_RUN)
		goto out;
	err = build_full_ring(d, s, &full);
	if (err)
		goto out;
	if (full.npoints == 0 ||
	    ring_max_skip_run(&full, &view) <= WALK_SAFE_RUN) {
		err = install_if_changed(d, s, &full, false,
					 how == REFRESH_FORCE, why);
		goto out;
	}
	err = ring_trim(&full, &view, true, &trimmed);
	if (!err)
		err = install_if_changed(
			d, s, &trimmed, true, how == REFRESH_FORCE,
			how == REFRESH_CHECK
				? "walks past unused points too long"
				: why);
out:
	ring_free(&full);
	ring_free(&trimmed);
	free(words);
	free(has_socket);
	return err;
}

/* A backend's state changed: write its word, then mind the walk. */
static void backend_changed(struct daemon *d, struct be_rt *be)
{
	push_backend(d, be);
	ring_refresh(d, d->cfg.backends[be->idx].service, REFRESH_CHECK,
		     "backend state");
}

/* ---- health ---- */

static void on_check_result(void *arg, bool ok, const char *reason,
			    double latency_ms)
{
	struct be_rt *be = arg;
	struct daemon *d = be->d;
	const struct rs_backend_conf *bc = &d->cfg.backends[be->idx];
	enum rs_health_event ev;

	ev = health_on_result(&be->health, &bc->health, ok, reason, latency_ms);
	if (ev == RS_HEALTH_NO_CHANGE)
		return;
	if (ev == RS_HEALTH_WENT_DOWN) {
		rs_warn("backend %s: DOWN, health check failed: %s (fall %u)",
			bc->name, be->health.last_result, bc->health.fall);
		be->up_since = 0;
	} else {
		rs_info("backend %s: UP, %u health checks passed%s", bc->name,
			bc->health.rise,
			bc->health.slow_start_ms ? ", slow start" : "");
		be->up_since = bc->health.slow_start_ms ? ev_now(d->loop) : 0;
	}
	backend_changed(d, be);
}

static void start_check(struct daemon *d, struct be_rt *be)
{
	const struct rs_backend_conf *bc = &d->cfg.backends[be->idx];
	const struct rs_backend_addr *a = &bc->addrs[0];
	/* Spread the first probes over the interval. */
	uint32_t delay =
		(uint32_t)((be->idx * 97) % (bc->health.interval_ms
						     ? bc->health.interval_ms
						     : 1));

	be->d = d;
	if (check_start(&d->checker, &be->check, &bc->health, a->family,
			a->addr, bc->health.port ? bc->health.port : a->port,
			delay, on_check_result, be))
		rs_err("backend %s: cannot start its health check", bc->name);
}

/* Slow-start steps: raise active points of ramping backends. */
static void on_ramp(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;

	(void)revents;
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		struct be_rt *be = &d->bes[i];
		uint32_t window = d->cfg.backends[i].health.slow_start_ms;

		if (!be->up_since)
			continue;
		if ((ev_now(loop) - be->up_since) * 1000 >= window) {
			be->up_since = 0;
			rs_info("backend %s: slow start done",
				d->cfg.backends[i].name);
		}
		push_backend(d, be);
		/* A trimmed ring holds only the points in use until now. */
		if (d->svcs[d->cfg.backends[i].service].compact)
			ring_refresh(d, d->cfg.backends[i].service,
				     REFRESH_CHECK, "slow start");
	}
}

/* ---- sockets ---- */

/* @refresh: rings are in place and follow who has a socket. */
static void reconcile_sockets(struct daemon *d, bool refresh)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		struct be_rt *be = &d->bes[i];
		bool had = be->has_socket;

		be->has_socket = sockets_reconcile_backend(&d->dp, &d->cfg, i,
							   be->id, &be->sock);
		if (refresh && had != be->has_socket)
			ring_refresh(d, d->cfg.backends[i].service,
				     REFRESH_CHECK, "backend socket");
	}
}

void daemon_reconcile_sockets(struct daemon *d)
{
	reconcile_sockets(d, true);
}

static void on_reconcile(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	daemon_reconcile_sockets(w->data);
	daemon_tc_check(w->data);
	daemon_check_pins(w->data);
}

/* ---- ids ---- */

struct pinned {
	struct rs_service svcs[RS_MAX_SERVICES];
	struct rs_backend bes[RS_MAX_BACKENDS];
};

static int read_pinned(struct daemon *d, struct pinned *p)
{
	for (uint32_t i = 0; i < RS_MAX_SERVICES; i++)
		if (dp_get_service(&d->dp, i, &p->svcs[i]))
			memset(&p->svcs[i], 0, sizeof(p->svcs[i]));
	for (uint32_t i = 0; i < RS_MAX_BACKENDS; i++)
		if (dp_get_backend(&d->dp, i, &p->bes[i]))
			memset(&p->bes[i], 0, sizeof(p->bes[i]));
	return 0;
}

/* Lowest id not in @used; ids in @avoid only if nothing else is left. */
static int free_id(const bool *used, const bool *avoid, uint32_t max)
{
	for (uint32_t i = 0; i < max; i++)
		if (!used[i] && !avoid[i])
			return (int)i;
	for (uint32_t i = 0; i < max; i++)
		if (!used[i])
			return (int)i;
	return -ENOSPC;
}

/* A state's service or backend ids: @n of them, @stride bytes apart. */
struct id_list {
	uint32_t *first;
	size_t n, stride;
};

static struct id_list service_ids(struct daemon *d)
{
	return (struct id_list){&d->svcs[0].id, d->cfg.n_services,
				sizeof(d->svcs[0])};
}

static struct id_list backend_ids(struct daemon *d)
{
	return (struct id_list){&d->bes[0].id, d->cfg.n_backends,
				sizeof(d->bes[0])};
}

static uint32_t *id_at(struct id_list ids, size_t i)
{
	return (uint32_t *)((char *)ids.first + i * ids.stride);
}

static bool has_id(struct id_list ids, uint32_t id)
{
	for (size_t i = 0; i < ids.n; i++)
		if (*id_at(ids, i) == id)
			return true;
	return false;
}

/*
 * Every id of @ids that is still UINT32_MAX becomes the lowest free one
 * (free_id()), which is then @used. Stops at the first that finds none.
 */
static int give_free_ids(struct id_list ids, bool *used, const bool *avoid,
			 uint32_t max)
{
	for (size_t i = 0; i < ids.n; i++) {
		uint32_t *id = id_at(ids, i);
		int got;

		if (*id != UINT32_MAX)
			continue;
		got = free_id(used, avoid, max);
		if (got < 0)
			return got;
		used[got] = true;
		*id = (uint32_t)got;
	}
	return 0;
}

/*
 * Which ids the state being set up uses, and which to take only when
 * nothing else is left (see free_id()).
 */
struct id_tables {
	bool svc_used[RS_MAX_SERVICES], svc_avoid[RS_MAX_SERVICES];
	bool be_used[RS_MAX_BACKENDS], be_avoid[RS_MAX_BACKENDS];
};

/* ---- start ---- */

static void init_backend(struct daemon *d, size_t i)
{
	struct be_rt *be = &d->bes[i];

	be->d = d;
	be->idx = i;
	be->weight = d->cfg.backends[i].weight;
	health_init_unproven(&be->health, &d->cfg.backends[i].health);
}

static int sticky_apply(struct daemon *d, size_t s)
{
	const struct rs_service_conf *sc = &d->cfg.services[s];
	uint32_t id = d->svcs[s].id;

	if (!sc->sticky_ttl)
		return dp_sticky_remove(&d->dp, id);
	if (dp_sticky_size(&d->dp, id) == sc->sticky_max)
		return 0;
	return dp_sticky_create(&d->dp, id, sc->sticky_max);
}

static int services_push(struct daemon *d)
{
	int err = 0;

	for (size_t s = 0; s < d->cfg.n_services && !err; s++) {
		struct rs_service svc;

		rs_service_from_conf(&d->cfg, s, d->svcs[s].id, &svc);
		err = sticky_apply(d, s);
		if (!err)
			err = dp_set_service(&d->dp, d->svcs[s].id, &svc);
	}
	return err;
}

/* Anything pinned under an id the configuration does not use goes away. */
static void retire_unused(struct daemon *d, const struct pinned *p)
{
	bool svc_used[RS_MAX_SERVICES] = {0};
	bool *be_used = calloc(RS_MAX_BACKENDS, sizeof(bool));
	struct rs_service off_svc = {0};
	struct rs_backend off_be = {0};

	if (!be_used)
		return;
	for (size_t s = 0; s < d->cfg.n_services; s++)
		svc_used[d->svcs[s].id] = true;
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		be_used[d->bes[i].id] = true;
	for (uint32_t id = 0; id < RS_MAX_BACKENDS; id++) {
		if (be_used[id] || (!p->bes[id].name[0] && !p->bes[id].state))
			continue;
		if (p->bes[id].name[0])
			rs_info("backend %s (id %u): no longer configured",
				p->bes[id].name, id);
		if (p->bes[id].service < RS_MAX_SERVICES)
			dp_sticky_forget_backend(&d->dp, p->bes[id].service,
						 id);
		dp_set_backend(&d->dp, id, &off_be);
		sockets_clear_backend(&d->dp, id);
	}
	for (uint32_t id = 0; id < RS_MAX_SERVICES; id++) {
		if (svc_used[id] || !p->svcs[id].enabled)
			continue;
		rs_info("service %s (id %u): no longer configured",
			p->svcs[id].name, id);
		dp_set_service(&d->dp, id, &off_svc);
		dp_delete_ring(&d->dp, id);
		dp_sticky_remove(&d->dp, id);
	}
	free(be_used);
}

static int assign_ids(struct daemon *d, const struct pinned *p)
{
	struct id_tables *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	/* Pinned names keep their ids: that is what adoption means. */
	for (size_t s = 0; s < d->cfg.n_services; s++) {
		d->svcs[s].id = UINT32_MAX;
		for (uint32_t i = 0; i < RS_MAX_SERVICES; i++) {
			if (p->svcs[i].enabled &&
			    !strcmp(p->svcs[i].name, d->cfg.services[s].name)) {
				d->svcs[s].id = i;
				t->svc_used[i] = true;
			}
		}
	}
	for (uint32_t i = 0; i < RS_MAX_SERVICES; i++)
		t->svc_avoid[i] = p->svcs[i].enabled;
	err = give_free_ids(service_ids(d), t->svc_used, t->svc_avoid,
			    RS_MAX_SERVICES);
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->cfg.backends[i];

		d->bes[i].id = UINT32_MAX;
		for (uint32_t k = 0; k < RS_MAX_BACKENDS; k++) {
			if (p->bes[k].name[0] &&
			    !strcmp(p->bes[k].name, bc->name) &&
			    p->bes[k].service == d->svcs[bc->service].id) {
				d->bes[i].id = k;
				t->be_used[k] = true;
				break;
			}
		}
	}
	for (uint32_t k = 0; k < RS_MAX_BACKENDS; k++)
		t->be_avoid[k] = p->bes[k].name[0] != 0;
	if (!err)
		err = give_free_ids(backend_ids(d), t->be_used, t->be_avoid,
				    RS_MAX_BACKENDS);
	free(t);
	return err;
}

/*
 * Take over what a previous ringsteerd left: operator states, health as
 * the data plane shows it (so nothing flaps), built points, and the rings
 * themselves when they are what this configuration would build.
 */
static void adopt_backends(struct daemon *d, const struct pinned *p)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		struct be_rt *be = &d->bes[i];
		const struct rs_backend *old = &p->bes[be->id];
		bool adopted = old->name[0] &&
			       !strcmp(old->name, d->cfg.backends[i].name);

		init_backend(d, i);
		be->built_points = full_points(d, be);
		if (!adopted)
			continue;
		be->op = old->op_state <= RS_OP_DOWN ? old->op_state : RS_OP_UP;
		/* Health as the data plane shows it: a restart flaps nothing.
		 */
		health_init(&be->health, old->health != 0);
		/* An operator's weight outlives a restart, as drain does. */
		if (old->weight_set && old->weight <= RS_MAX_WEIGHT) {
			be->weight = old->weight;
			be->weight_override = true;
			if (full_points(d, be) > be->built_points)
				be->built_points = full_points(d, be);
		}
		if (old->max_points >= be->built_points)
			be->built_points = old->max_points;
		be->pushed = *old;
		be->pushed_valid = true;
	}
}

/* What a previous ringsteerd left installed becomes the ring in place. */
static void read_pinned_rings(struct daemon *d)
{
	for (size_t s = 0; s < d->cfg.n_services; s++) {
		struct svc_rt *svc = &d->svcs[s];
		struct rs_ring pinned;
		uint64_t gen;

		if (!dp_read_ring(&d->dp, svc->id, &pinned, &gen)) {
			svc->ring = pinned;
			svc->generation = gen;
			/* Unknown shape: let the first refresh decide. */
			svc->compact = true;
		}
	}
}

/* A view over @words (RS_MAX_BACKENDS of them, by id), sockets unknown. */
static struct rs_ring_view words_view(const struct rs_backend *words)
{
	return (struct rs_ring_view){.backends = words,
				     .nbackends = RS_MAX_BACKENDS};
}

/* Install @ring of service @s trimmed to the points @words use. */
static int install_trimmed(struct daemon *d, size_t s,
			   const struct rs_ring *ring,
			   const struct rs_backend *words, const char *why)
{
	struct rs_ring_view view = words_view(words);
	struct rs_ring trimmed;
	int err = ring_trim(ring, &view, false, &trimmed);

	if (err)
		return err;
	return install_if_changed(d, s, &trimmed, true, false, why);
}

/*
 * Bring the data plane from what it holds now (the rings in
 * d->svcs[].ring, the words @before, by id) to the configuration in @d
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
 * Binds and cookies come after this, and removed ids after them.
 */
static int apply_config(struct daemon *d, const struct rs_backend *before)
{
	struct rs_backend *words = calloc(RS_MAX_BACKENDS, sizeof(*words));
	struct rs_ring *next = calloc(d->cfg.n_services ? d->cfg.n_services : 1,
				      sizeof(*next));
	int err = 0;

	if (!words || !next) {
		free(words);
		free(next);
		return -ENOMEM;
	}
	for (size_t s = 0; s < d->cfg.n_services && !err; s++)
		if (d->svcs[s].generation && d->svcs[s].ring.npoints)
			err = install_trimmed(d, s, &d->svcs[s].ring, before,
					      "reload: points in use only");
	for (size_t i = 0; i < d->cfg.n_backends && !err; i++) {
		struct be_rt *be = &d->bes[i];
		const struct rs_backend *old = &before[be->id];

		daemon_backend_word(d, be, &words[be->id]);
		if (old->name[0] && !strcmp(old->name, words[be->id].name) &&
		    old->active_points > words[be->id].active_points) {
			struct rs_backend mid = words[be->id];

			mid.active_points = old->active_points;
			err = dp_set_backend(&d->dp, be->id, &mid);
			be->pushed_valid = false;
		} else {
			err = push_backend(d, be);
		}
	}
	if (!err)
		err = services_push(d);
	for (size_t s = 0; s < d->cfg.n_services && !err; s++) {
		err = build_full_ring(d, s, &next[s]);
		if (!err)
			err = install_trimmed(d, s, &next[s], words,
					      "configuration");
	}
	for (size_t i = 0; i < d->cfg.n_backends && !err; i++)
		err = push_backend(d, &d->bes[i]);
	for (size_t s = 0; s < d->cfg.n_services && !err; s++)
		err = ring_refresh(d, s, REFRESH_REBUILD, "configuration");
	for (size_t s = 0; s < d->cfg.n_services; s++)
		ring_free(&next[s]);
	free(next);
	free(words);
	return err;
}

static int alloc_runtime(struct daemon *d)
{
	d->svcs = calloc(d->cfg.n_services ? d->cfg.n_services : 1,
			 sizeof(*d->svcs));
	d->bes = calloc(d->cfg.n_backends ? d->cfg.n_backends : 1,
			sizeof(*d->bes));
	if (!d->svcs || !d->bes)
		return -ENOMEM;
	return 0;
}

static int binds_push(struct daemon *d)
{
	uint32_t ids[RS_MAX_SERVICES];

	for (size_t s = 0; s < d->cfg.n_services; s++)
		ids[s] = d->svcs[s].id;
	return binds_apply(&d->dp, &d->cfg, ids);
}

/*
 * rs_cookies holds exactly the server IDs of the backends of cookie
 * services: {service id, quic_server_id_len, server ID} -> backend id.
 * Entries of removed backends or services, of changed IDs or lengths, and
 * of services that dropped cookie = quic go; so does anything a previous
 * daemon left that this configuration does not have.
 */
static int cookies_push(struct daemon *d)
{
	size_t n = 0, written = 0, removed = 0;
	struct rs_cookie_key *keys;
	struct rs_cookie *vals;
	int err;

	keys = calloc(d->cfg.n_backends ? d->cfg.n_backends : 1, sizeof(*keys));
	vals = calloc(d->cfg.n_backends ? d->cfg.n_backends : 1, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->cfg.backends[i];
		const struct rs_service_conf *sc =
			&d->cfg.services[bc->service];

		if (sc->cookie != RS_COOKIE_QUIC || !bc->has_server_id)
			continue;
		keys[n].service = d->svcs[bc->service].id;
		keys[n].len = sc->quic_server_id_len;
		memcpy(keys[n].server_id, bc->server_id,
		       sc->quic_server_id_len);
		vals[n].backend = d->bes[i].id;
		n++;
	}
	err = dp_sync_cookies(&d->dp, keys, vals, n, &written, &removed);
	if (!err && (written || removed))
		rs_info("rs_cookies: %zu QUIC server IDs (%zu written, %zu "
			"removed)",
			n, written, removed);
	free(keys);
	free(vals);
	return err;
}

/* The tables that lead packets to ids: rs_binds, then rs_cookies. */
static int lookups_push(struct daemon *d)
{
	int err = binds_push(d);

	return err ? err : cookies_push(d);
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
}

static void start_checks(struct daemon *d)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		start_check(d, &d->bes[i]);
}

static void stop_checks(struct daemon *d)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		check_stop(&d->bes[i].check);
}

int daemon_start(struct daemon *d)
{
	struct pinned *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p || alloc_runtime(d)) {
		free(p);
		return -ENOMEM;
	}
	err = checker_init(&d->checker, d->loop);
	if (!err)
		err = dp_open(&d->dp, d->cfg.bpffs);
	if (!err)
		err = read_pinned(d, p);
	if (!err)
		err = assign_ids(d, p);
	if (err)
		goto out;
	adopt_backends(d, p);
	/* Sockets first: which ring fits depends on who has one. */
	reconcile_sockets(d, false);
	read_pinned_rings(d);
	err = apply_config(d, p->bes);
	for (size_t s = 0; s < d->cfg.n_services && !err; s++)
		if (d->svcs[s].rebuilds == 0)
			rs_info("service %s: adopted ring generation %llu, %u "
				"points",
				d->cfg.services[s].name,
				(unsigned long long)d->svcs[s].generation,
				d->svcs[s].ring.npoints);
	if (!err)
		err = lookups_push(d);
	if (err) {
		rs_err("applying %s to the data plane failed: %s",
		       d->config_path, strerror(-err));
		goto out;
	}
	retire_unused(d, p);
	/* Before the link: a connection steered from now on has a consumer. */
	dp_sockops_attach(&d->dp, d->cfg.control_socket);
	/* TC first: if steer_tc cannot load, the link stays as it was. */
	err = daemon_tc_apply(d);
	if (!err)
		err = dp_attach(&d->dp);
	if (err)
		goto out;
	start_checks(d);
	start_timers(d);
out:
	free(p);
	return err;
}

void daemon_stop(struct daemon *d)
{
	if (!d->bes)
		return;
	daemon_tc_stop(d);
	stop_checks(d);
	ev_timer_stop(d->loop, &d->reconcile);
	ev_timer_stop(d->loop, &d->ramp);
	checker_fini(&d->checker);
	dp_close(&d->dp);
	for (size_t s = 0; s < d->cfg.n_services; s++)
		ring_free(&d->svcs[s].ring);
	free(d->svcs);
	free(d->bes);
	d->svcs = NULL;
	d->bes = NULL;
}

/* ---- operator actions ---- */

int daemon_set_op(struct daemon *d, const char *backend, enum rs_op_state op)
{
	int i = daemon_find_backend(d, backend);
	struct be_rt *be;

	if (i < 0)
		return i;
	be = &d->bes[i];
	if (be->op == op)
		return 0;
	rs_info("backend %s: operator %s (was %s)", backend,
		rs_op_state_name(op), rs_op_state_name(be->op));
	/* Coming back from an operator DOWN ramps like a health recovery. */
	if (be->op == RS_OP_DOWN && d->cfg.backends[i].health.slow_start_ms)
		be->up_since = ev_now(d->loop);
	be->op = op;
	backend_changed(d, be);
	return 0;
}

int daemon_set_weight(struct daemon *d, const char *backend, uint32_t weight)
{
	int i = daemon_find_backend(d, backend);
	struct be_rt *be;
	size_t s;

	if (i < 0)
		return i;
	if (weight > RS_MAX_WEIGHT)
		return -EINVAL;
	be = &d->bes[i];
	s = d->cfg.backends[i].service;
	rs_info("backend %s: weight %u (was %u)", backend, weight, be->weight);
	be->weight = weight;
	be->weight_override = weight != d->cfg.backends[i].weight;
	if (full_points(d, be) <= be->built_points) {
		backend_changed(d, be);
		return 0;
	}
	/* Above what the ring holds: rebuild with the new maximum. */
	be->built_points = full_points(d, be);
	be->pushed_valid = false;
	push_backend(d, be);
	return ring_refresh(d, s, REFRESH_REBUILD,
			    "weight raised above the built one");
}

int daemon_rebuild(struct daemon *d, const char *service)
{
	int s = daemon_find_service(d, service);

	if (s < 0)
		return s;
	return ring_refresh(d, (size_t)s, REFRESH_FORCE, "operator request");
}

/* ---- reload ---- */

/* Carry runtime state of backends that survive the reload, by name. */
static void carry_backends(struct daemon *d, struct daemon *old)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		struct be_rt *be = &d->bes[i];
		const struct rs_backend_conf *bc = &d->cfg.backends[i];
		int o = daemon_find_backend(old, bc->name);
		const struct rs_backend_conf *obc;
		struct be_rt *ob;

		init_backend(d, i);
		be->built_points = full_points(d, be);
		if (o < 0)
			continue;
		ob = &old->bes[o];
		obc = &old->cfg.backends[o];
		if (strcmp(old->cfg.services[obc->service].name,
			   d->cfg.services[bc->service].name))
			continue;
		be->id = ob->id;
		if (rs_backend_addrs_equal(bc, obc)) {
			be->sock = ob->sock;
			be->has_socket = ob->has_socket;
		} else {
			/* New addresses: their sockets replace the old ones. */
			sockets_clear_backend(&d->dp, be->id);
		}
		be->op = ob->op;
		be->health = ob->health;
		be->up_since = ob->up_since;
		be->pushed = ob->pushed;
		be->pushed_valid = ob->pushed_valid;
		/* An operator's weight lasts until the file changes it. */
		if (ob->weight_override && obc->weight == bc->weight) {
			be->weight = ob->weight;
			be->weight_override = true;
		}
		if (old->cfg.services[obc->service].vnodes ==
			    d->cfg.services[bc->service].vnodes &&
		    ob->built_points > be->built_points)
			be->built_points = ob->built_points;
	}
}

/* Ids for what is new, avoiding every id the old state used. */
static int assign_new_ids(struct daemon *d, struct daemon *old)
{
	struct id_tables *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	for (size_t s = 0; s < old->cfg.n_services; s++)
		t->svc_avoid[old->svcs[s].id] = true;
	for (size_t i = 0; i < old->cfg.n_backends; i++)
		t->be_avoid[old->bes[i].id] = true;
	for (size_t s = 0; s < d->cfg.n_services; s++) {
		int o = daemon_find_service(old, d->cfg.services[s].name);

		d->svcs[s].id = o >= 0 ? old->svcs[o].id : UINT32_MAX;
		if (o >= 0) {
			t->svc_used[d->svcs[s].id] = true;
			d->svcs[s].ring = old->svcs[o].ring;
			d->svcs[s].generation = old->svcs[o].generation;
			d->svcs[s].compact = old->svcs[o].compact;
			d->svcs[s].rebuilds = old->svcs[o].rebuilds;
			memset(&old->svcs[o].ring, 0,
			       sizeof(old->svcs[o].ring));
		}
	}
	err = give_free_ids(service_ids(d), t->svc_used, t->svc_avoid,
			    RS_MAX_SERVICES);
	carry_backends(d, old);
	/*
	 * A carried id stays in use; the backend keeps it only if the old
	 * state had the backend's word in the data plane.
	 */
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		bool found =
			daemon_find_backend(old, d->cfg.backends[i].name) >= 0;

		if (d->bes[i].pushed_valid || found)
			t->be_used[d->bes[i].id] = true;
		if (!found || !d->bes[i].pushed_valid)
			d->bes[i].id = UINT32_MAX;
	}
	if (!err)
		err = give_free_ids(backend_ids(d), t->be_used, t->be_avoid,
				    RS_MAX_BACKENDS);
	free(t);
	return err;
}

/* What the old state had that the new one does not, leaves the plane. */
static void retire_removed(struct daemon *d, struct daemon *old)
{
	struct rs_service off_svc = {0};
	struct rs_backend off_be = {0};

	for (size_t i = 0; i < old->cfg.n_backends; i++) {
		uint32_t id = old->bes[i].id;

		if (has_id(backend_ids(d), id))
			continue;
		rs_info("backend %s: removed", old->cfg.backends[i].name);
		dp_set_backend(&d->dp, id, &off_be);
		sockets_clear_backend(&d->dp, id);
		dp_sticky_forget_backend(
			&d->dp, old->svcs[old->cfg.backends[i].service].id, id);
	}
	for (size_t s = 0; s < old->cfg.n_services; s++) {
		uint32_t id = old->svcs[s].id;

		if (has_id(service_ids(d), id))
			continue;
		rs_info("service %s: removed", old->cfg.services[s].name);
		dp_set_service(&d->dp, id, &off_svc);
		dp_delete_ring(&d->dp, id);
		dp_sticky_remove(&d->dp, id);
	}
}

/* The words @old has in the data plane, by id (RS_MAX_BACKENDS). */
static int old_words(const struct daemon *old, struct rs_backend **out)
{
	*out = calloc(RS_MAX_BACKENDS, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < old->cfg.n_backends; i++)
		if (old->bes[i].pushed_valid)
			(*out)[old->bes[i].id] = old->bes[i].pushed;
	return 0;
}

int daemon_reload(struct daemon *d, char *err_text, size_t errlen)
{
	struct daemon next = *d, old = *d;
	struct rs_backend *before = NULL;
	struct rs_config_diff diff;
	int err;

	memset(&next.cfg, 0, sizeof(next.cfg));
	err = rs_config_load(d->config_path, &next.cfg, err_text, errlen);
	if (err) {
		d->reload_failures++;
		return err;
	}
	if (strcmp(next.cfg.bpffs, d->cfg.bpffs)) {
		snprintf(err_text, errlen,
			 "%s: bpffs cannot change on reload (restart with "
			 "--detach first)",
			 d->config_path);
		rs_config_free(&next.cfg);
		d->reload_failures++;
		return -EINVAL;
	}
	if (alloc_runtime(&next)) {
		rs_config_free(&next.cfg);
		return -ENOMEM;
	}
	if (!rs_config_diff(&d->cfg, &next.cfg, &diff))
		rs_info("reload: %s", diff.summary);
	err = assign_new_ids(&next, &old);
	if (err) {
		snprintf(err_text, errlen, "%s: out of ids", d->config_path);
		free(next.svcs);
		free(next.bes);
		rs_config_free(&next.cfg);
		return err;
	}
	/* From here on the new state is the state; apply it. */
	stop_checks(d);
	for (size_t i = 0; i < next.cfg.n_backends; i++) {
		next.bes[i].d = d;
		next.bes[i].idx = i;
	}
	d->cfg = next.cfg;
	d->svcs = next.svcs;
	d->bes = next.bes;
	/*
	 * New backends' sockets before the switch: a ring member without
	 * one would pass its keys to its neighbour, a third owner that a
	 * sticky table would then keep for the whole TTL.
	 */
	reconcile_sockets(d, false);
	err = old_words(&old, &before);
	if (!err)
		err = apply_config(d, before);
	free(before);
	if (!err)
		err = lookups_push(d);
	retire_removed(d, &old);
	daemon_reconcile_sockets(d);
	if (!err)
		err = daemon_tc_apply(d);
	start_checks(d);
	for (size_t s = 0; s < old.cfg.n_services; s++)
		ring_free(&old.svcs[s].ring);
	free(old.svcs);
	free(old.bes);
	rs_config_free(&old.cfg);
	d->reloads++;
	if (err)
		snprintf(err_text, errlen, "applying the new configuration: %s",
			 strerror(-err));
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * Backends at run time: the state word computed from operator state,
 * health, weight and slow start (written only when it changes), health
 * check callbacks, the slow-start ramp, operator actions, and what a
 * backend keeps across a restart (adopted from the pins) or a reload
 * (carried by name).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringsteer/rules.h>

#include "config_diff.h"
#include "all_out.h"
#include "log.h"
#include "state.h"
#include "view.h"

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
	return view_find_backend(&d->st, name);
}

int daemon_find_service(const struct daemon *d, const char *name)
{
	return view_find_service(&d->st, name);
}

uint32_t backend_full_points(const struct daemon *d, const struct be_rt *be)
{
	return view_full_points(&d->st, be);
}

/*
 * Service @svc's ring within RS_MAX_RING_POINTS. A backend's built points
 * can exceed its weight's (a weight lowered, a maximum adopted from the
 * pins or carried through a reload), and those extra points only save a
 * rebuild when the weight rises again: since a point depends on the
 * backend's name and ordinal alone, a ring built at the weights in force
 * maps every key the same way. So when the built points no longer fit
 * (a rebuild would fail with EINVAL, and before this, every later start
 * did), each backend is built at its weight in force instead. Returns
 * -E2BIG when even that does not fit (an operator's weight above what
 * the file allows), with the points in @points.
 */
int service_fit_points(struct rs_state *st, size_t svc, uint64_t *points)
{
	uint64_t built = 0, full = 0;

	for (size_t i = 0; i < st->cfg.n_backends; i++) {
		if (st->cfg.backends[i].service != svc)
			continue;
		built += st->bes[i].built_points;
		full += view_full_points(st, &st->bes[i]);
	}
	if (points)
		*points = full;
	if (built <= RS_MAX_RING_POINTS)
		return 0;
	if (full > RS_MAX_RING_POINTS)
		return -E2BIG;
	rs_info("service %s: %llu built points are over the ring's %u: built "
		"at the weights in force (%llu points, no client moves)",
		st->cfg.services[svc].name, (unsigned long long)built,
		RS_MAX_RING_POINTS, (unsigned long long)full);
	for (size_t i = 0; i < st->cfg.n_backends; i++) {
		struct be_rt *be = &st->bes[i];

		if (st->cfg.backends[i].service != svc)
			continue;
		be->built_points = view_full_points(st, be);
		be->pushed_valid = false;
	}
	return 0;
}

/*
 * A backend's state changed: write its service's words, then mind the
 * walk. Returns the words' error: a failed write is the change not made
 * (the caller undoes it); a failed refresh only leaves the walk longer
 * than it could be, and is logged where it failed.
 */
int backend_changed(struct daemon *d, struct be_rt *be)
{
	size_t s = d->st.cfg.backends[be->idx].service;
	int err = service_push(d, s);

	if (!err)
		(void)ring_refresh(d, s, REFRESH_CHECK, "backend state");
	return err;
}

/*
 * An operator's change to @be, made in memory by the caller from the
 * fields in @before, written with the test hook armed. If the writes
 * failed, the operator's fields are put back from @before and written
 * again. Returns their error.
 */
static int operator_write(struct daemon *d, struct be_rt *be,
			  const struct be_rt *before, char *why, size_t whylen)
{
	int err;

	dp_faults_arm_from_env();
	err = backend_changed(d, be);
	dp_faults_disarm();
	if (!err)
		return 0;
	be->op = before->op;
	be->up_since = before->up_since;
	be->weight = before->weight;
	be->weight_override = before->weight_override;
	(void)backend_changed(d, be);
	snprintf(why, whylen,
		 "writing the backend words failed: %s; nothing changed",
		 strerror(-err));
	return err;
}

/* ---- health and slow start ---- */

/* ---- health ---- */

static void on_check_result(void *arg, bool ok, const char *reason,
			    double latency_ms)
{
	struct be_rt *be = arg;
	struct daemon *d = be->d;
	const struct rs_backend_conf *bc = &d->st.cfg.backends[be->idx];
	enum rs_health_event ev;

	ev = health_on_result(&be->health, &bc->health, ok, reason, latency_ms);
	rs_debug("backend %s: check %s in %.1f ms", bc->name,
		 be->health.last_result, latency_ms);
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
	(void)backend_changed(d, be);
}

static void start_check(struct daemon *d, struct be_rt *be)
{
	const struct rs_backend_conf *bc = &d->st.cfg.backends[be->idx];
	const struct rs_backend_addr *a = &bc->addrs[0];
	/* Spread the first probes over the interval, or keep the schedule. */
	uint32_t delay =
		(uint32_t)((be->idx * 97) % (bc->health.interval_ms
						     ? bc->health.interval_ms
						     : 1));

	be->d = d;
	if (be->check_carried)
		delay = be->check_due_ms;
	be->check_carried = false;
	if (check_start(&d->checker, &be->check, &bc->health, a->family,
			a->addr, bc->health.port ? bc->health.port : a->port,
			delay, on_check_result, be))
		rs_err("backend %s: cannot start its health check", bc->name);
}

void checks_start(struct daemon *d)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		start_check(d, &d->st.bes[i]);
}

void checks_stop(struct daemon *d)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		check_stop(&d->st.bes[i].check);
}

/* Slow-start steps: raise active points of ramping backends. */
void on_ramp(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;

	(void)revents;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];
		uint32_t window = d->st.cfg.backends[i].health.slow_start_ms;

		if (!be->up_since)
			continue;
		if ((ev_now(loop) - be->up_since) * 1000 >= window) {
			be->up_since = 0;
			rs_info("backend %s: slow start done",
				d->st.cfg.backends[i].name);
		}
		(void)service_push(d, d->st.cfg.backends[i].service);
		/* A trimmed ring holds only the points in use until now. */
		if (d->st.svcs[d->st.cfg.backends[i].service].compact)
			ring_refresh(d, d->st.cfg.backends[i].service,
				     REFRESH_CHECK, "slow start");
	}
}

/* ---- a backend's runtime state: new, adopted, carried ---- */

/* ---- start ---- */

void backend_init(struct daemon *d, struct rs_state *st, size_t i)
{
	struct be_rt *be = &st->bes[i];

	be->d = d;
	be->idx = i;
	be->weight = st->cfg.backends[i].weight;
	be->socket_unknown = true;
	health_init_unproven(&be->health, &st->cfg.backends[i].health);
}

/*
 * The operators' weights of service @svc make a ring over the maximum with
 * this file's vnodes (changed while the daemon was down): the file's
 * weights win, said once per backend.
 */
static void drop_weight_overrides(struct rs_state *st, size_t svc,
				  const char *when)
{
	for (size_t i = 0; i < st->cfg.n_backends; i++) {
		struct be_rt *be = &st->bes[i];

		if (st->cfg.backends[i].service != svc || !be->weight_override)
			continue;
		rs_warn("backend %s: operator weight %u dropped %s: with "
			"vnodes %u, service %s's ring would be over %u "
			"points; the file's weight %u is in force",
			st->cfg.backends[i].name, be->weight, when,
			st->cfg.services[svc].vnodes,
			st->cfg.services[svc].name, RS_MAX_RING_POINTS,
			st->cfg.backends[i].weight);
		be->weight = st->cfg.backends[i].weight;
		be->weight_override = false;
	}
	for (size_t i = 0; i < st->cfg.n_backends; i++)
		if (st->cfg.backends[i].service == svc)
			st->bes[i].built_points =
				view_full_points(st, &st->bes[i]);
}

/*
 * A backend the previous daemon was ramping up (slow start after a
 * recovery or an operator up): the ramp goes on from where the pinned
 * word has it instead of jumping to full weight, which would move the
 * clients of the points not yet in use. The ramp's start is set back so
 * that its next step gives the same active points.
 */
static void resume_slow_start(struct daemon *d, struct be_rt *be,
			      const struct rs_backend *old)
{
	uint32_t window = d->st.cfg.backends[be->idx].health.slow_start_ms;
	uint32_t full = backend_full_points(d, be);
	double frac;

	if (!window || old->state != RS_BACKEND_UP || !be->health.up ||
	    be->op != RS_OP_UP || !full || old->active_points >= full ||
	    old->active_points == 0)
		return;
	/* ceil(full x frac) == active_points (the ramp's own rounding). */
	frac = (old->active_points - 0.5) / full;
	be->up_since = ev_now(d->loop) - frac * window / 1000.0;
	rs_info("backend %s: slow start resumed at %u of %u points",
		d->st.cfg.backends[be->idx].name, old->active_points, full);
}

/*
 * Take over what a previous ringsteerd left (@pinned: the words by id):
 * operator states, health as the data plane shows it (so nothing flaps)
 * and built points.
 */
void backends_adopt(struct daemon *d, const struct rs_backend *pinned)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];
		const struct rs_backend *old = &pinned[be->id];
		bool adopted = old->name[0] &&
			       !strcmp(old->name, d->st.cfg.backends[i].name);

		backend_init(d, &d->st, i);
		be->built_points = backend_full_points(d, be);
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
			if (backend_full_points(d, be) > be->built_points)
				be->built_points = backend_full_points(d, be);
		}
		if (old->max_points >= be->built_points)
			be->built_points = old->max_points;
		be->uncounted = old->uncounted;
		be->pushed = *old;
		be->pushed_valid = true;
		resume_slow_start(d, be, old);
	}
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		if (service_fit_points(&d->st, s, NULL) == -E2BIG)
			drop_weight_overrides(&d->st, s, "at start");
}

/* Carry runtime state of backends that survive the reload, by name. */
void backends_carry(struct daemon *d, struct rs_state *st,
		    const struct rs_state *old)
{
	for (size_t i = 0; i < st->cfg.n_backends; i++) {
		struct be_rt *be = &st->bes[i];
		const struct rs_backend_conf *bc = &st->cfg.backends[i];
		int o = view_find_backend(old, bc->name);
		const struct rs_backend_conf *obc;
		const struct be_rt *ob;

		backend_init(d, st, i);
		be->built_points = view_full_points(st, be);
		if (o < 0)
			continue;
		ob = &old->bes[o];
		obc = &old->cfg.backends[o];
		if (strcmp(old->cfg.services[obc->service].name,
			   st->cfg.services[bc->service].name))
			continue;
		be->uncounted = ob->uncounted;
		/* ids_assign() kept its id (same name, same service). */
		if (rs_backend_addrs_equal(bc, obc)) {
			be->sock = ob->sock;
			be->has_socket = ob->has_socket;
			be->socket_unknown = ob->socket_unknown;
		} else {
			/*
			 * New addresses: their sockets replace the old ones,
			 * when the new state is applied (apply_pipeline()),
			 * not while it is only being built.
			 */
			be->addrs_changed = true;
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
			    st->cfg.services[bc->service].vnodes &&
		    ob->built_points > be->built_points)
			be->built_points = ob->built_points;
		/*
		 * The points were counted at the file's weight: an operator's
		 * weight kept above it needs its own (else a vnodes change
		 * left it with the file's, 0 for a weight 0 in the file).
		 */
		if (view_full_points(st, be) > be->built_points)
			be->built_points = view_full_points(st, be);
	}
	for (size_t s = 0; s < st->cfg.n_services; s++)
		if (service_fit_points(st, s, NULL) == -E2BIG)
			drop_weight_overrides(st, s, "by the reload");
}

/* ---- operator actions ---- */

/* ---- operator actions ---- */

int daemon_set_op(struct daemon *d, const char *backend, enum rs_op_state op,
		  bool force, char *why, size_t whylen)
{
	struct be_rt saved;
	int i = daemon_find_backend(d, backend), err;
	enum rs_op_state was;
	char action[RS_NAME_MAX + 32];
	uint32_t before;
	struct be_rt *be;
	size_t s;

	if (i < 0)
		return i;
	be = &d->st.bes[i];
	if (be->op == op)
		return 0;
	s = d->st.cfg.backends[i].service;
	before = service_takers(d, s);
	was = be->op;
	be->op = op;
	snprintf(action, sizeof(action), "backend %s %s", backend,
		 op == RS_OP_UP ? "up" : rs_op_state_name(op));
	err = all_out_check(d, s, before, force, action, why, whylen);
	if (err) {
		be->op = was;
		return err;
	}
	saved = *be;
	saved.op = was;
	/* Coming back from an operator DOWN ramps like a health recovery. */
	if (was == RS_OP_DOWN && d->st.cfg.backends[i].health.slow_start_ms)
		be->up_since = ev_now(d->loop);
	err = operator_write(d, be, &saved, why, whylen);
	if (err) {
		rs_err("%s: %s", action, why);
		return err;
	}
	rs_info("backend %s: operator %s (was %s)", backend,
		rs_op_state_name(op), rs_op_state_name(was));
	return 0;
}

int daemon_set_weight(struct daemon *d, const char *backend, uint32_t weight,
		      bool force, char *why, size_t whylen)
{
	struct be_rt saved;
	int i = daemon_find_backend(d, backend), err, words_err;
	uint32_t was_weight, was_built, before;
	char action[RS_NAME_MAX + 32];
	bool was_override;
	uint64_t points;
	struct be_rt *be;
	size_t s;

	if (i < 0)
		return i;
	if (weight > RS_MAX_WEIGHT)
		return -EINVAL;
	be = &d->st.bes[i];
	s = d->st.cfg.backends[i].service;
	was_weight = be->weight;
	was_built = be->built_points;
	was_override = be->weight_override;
	before = service_takers(d, s);
	be->weight = weight;
	be->weight_override = weight != d->st.cfg.backends[i].weight;
	snprintf(action, sizeof(action), "backend weight %s %u", backend,
		 weight);
	err = all_out_check(d, s, before, force, action, why, whylen);
	if (err) {
		be->weight = was_weight;
		be->weight_override = was_override;
		return err;
	}
	if (backend_full_points(d, be) > be->built_points)
		be->built_points = backend_full_points(d, be);
	err = service_fit_points(&d->st, s, &points);
	if (err) {
		snprintf(why, whylen,
			 "weight %u would make service %s's ring %llu points "
			 "(weight x vnodes over its backends), over the "
			 "maximum %u: nothing changed",
			 weight, d->st.cfg.services[s].name,
			 (unsigned long long)points, RS_MAX_RING_POINTS);
		be->weight = was_weight;
		be->built_points = was_built;
		be->weight_override = was_override;
		return err;
	}
	if (be->built_points == was_built) {
		saved = *be;
		saved.weight = was_weight;
		saved.weight_override = was_override;
		err = operator_write(d, be, &saved, why, whylen);
		if (err) {
			rs_err("%s: %s", action, why);
			return err;
		}
		rs_info("backend %s: weight %u (was %u)", backend, weight,
			was_weight);
		return 0;
	}
	rs_info("backend %s: weight %u (was %u)", backend, weight, was_weight);
	/* Above what the ring holds: rebuild with the new maximum. */
	be->pushed_valid = false;
	dp_faults_arm_from_env();
	words_err = service_push(d, s);
	err = words_err ? words_err
			: ring_refresh(d, s, REFRESH_REBUILD,
				       "weight raised above the built one");
	dp_faults_disarm();
	if (err) {
		/* The installed ring is unchanged: so is the weight. */
		if (words_err)
			snprintf(why, whylen,
				 "writing the backend words failed: %s; "
				 "nothing changed (the weight stays %u)",
				 strerror(-err), was_weight);
		else
			snprintf(why, whylen,
				 "rebuilding service %s's ring for weight %u "
				 "failed: %s; the weight stays %u",
				 d->st.cfg.services[s].name, weight,
				 strerror(-err), was_weight);
		rs_err("backend %s: %s", backend, why);
		be->weight = was_weight;
		be->built_points = was_built;
		be->weight_override = was_override;
		(void)service_push(d, s);
	}
	return err;
}

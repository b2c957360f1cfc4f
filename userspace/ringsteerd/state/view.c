// SPDX-License-Identifier: MIT
/*
 * The desired state's view (view.h): one place computes a backend's word,
 * for the writer, the operator's all-out check, status, the metrics and
 * `lookup`, so that what is written is what they show.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <ringsteer/rules.h>

#include "health.h"
#include "view.h"

int view_find_backend(const struct rs_state *st, const char *name)
{
	for (size_t i = 0; i < st->cfg.n_backends; i++)
		if (!strcmp(st->cfg.backends[i].name, name))
			return (int)i;
	return -ENOENT;
}

int view_find_service(const struct rs_state *st, const char *name)
{
	return rs_config_find_service(&st->cfg, name);
}

uint32_t view_full_points(const struct rs_state *st, const struct be_rt *be)
{
	const struct rs_backend_conf *bc = &st->cfg.backends[be->idx];

	/* At most RS_MAX_WEIGHT x the largest vnodes: 32 bits. */
	return (uint32_t)rs_backend_points(
		be->weight, st->cfg.services[bc->service].vnodes);
}

uint32_t view_held_slots(const struct rs_state *st, const struct be_rt *be,
			 double now)
{
	const struct rs_backend_conf *bc = &st->cfg.backends[be->idx];
	const struct rs_service_conf *sc = &st->cfg.services[bc->service];
	double grace = sc->restart_grace_ms / 1000.0;
	uint32_t mask = 0;

	if (!sc->restart_grace_ms || sc->protocol != IPPROTO_UDP ||
	    st->stopping)
		return 0;
	for (size_t a = 0; a < bc->n_addrs; a++) {
		const struct rs_addr_rt *rt = &be->sock.addr[a];

		if (rt->has_socket ||
		    (rt->gone_since > 0 && now < rt->gone_since + grace))
			mask |= rt->held_mask;
	}
	return mask;
}

bool view_restarting(const struct rs_state *st, const struct be_rt *be,
		     double now)
{
	return !be->has_socket && view_held_slots(st, be, now) != 0;
}

/* The state word alone, without the bound (which needs every backend's). */
static void word_own(const struct rs_state *st, const struct be_rt *be,
		     double now, struct rs_backend *out)
{
	const struct rs_backend_conf *bc = &st->cfg.backends[be->idx];
	uint32_t full = view_full_points(st, be), active = full;

	memset(out, 0, sizeof(*out));
	if (be->op == RS_OP_DOWN || !be->health.up)
		out->state = RS_BACKEND_DOWN;
	else if (be->op == RS_OP_DRAIN)
		out->state = RS_BACKEND_DRAIN;
	else
		out->state = RS_BACKEND_UP;
	if (be->up_since > 0 && bc->health.slow_start_ms)
		active = slow_start_points(
			full, (uint64_t)((now - be->up_since) * 1000),
			bc->health.slow_start_ms);
	out->active_points =
		active < be->built_points ? active : be->built_points;
	out->service = st->svcs[bc->service].id;
	out->max_points = be->built_points;
	out->op_state = be->op;
	out->health = be->health.up;
	out->weight = be->weight;
	out->weight_set = be->weight_override;
	out->uncounted = be->uncounted;
	out->held_slots = view_held_slots(st, be, now);
	snprintf(out->name, sizeof(out->name), "%s", bc->name);
}

/*
 * The bound's total weight: active points of the service's UP backends,
 * those that take new clients. It changes whenever any of them changes
 * state, weight or slow-start step, so every word of the service is
 * pushed then (backend_changed, on_ramp); unchanged words are not written.
 */
static uint32_t service_bound_points(const struct rs_state *st, size_t svc,
				     double now)
{
	uint32_t total = 0;

	for (size_t i = 0; i < st->cfg.n_backends; i++) {
		struct rs_backend w;

		if (st->cfg.backends[i].service != svc)
			continue;
		word_own(st, &st->bes[i], now, &w);
		if (w.state == RS_BACKEND_UP)
			total += w.active_points;
	}
	return total;
}

void view_backend_word(const struct rs_state *st, const struct be_rt *be,
		       double now, struct rs_backend *out)
{
	size_t svc = st->cfg.backends[be->idx].service;

	word_own(st, be, now, out);
	out->balance_milli = st->cfg.services[svc].balance_milli;
	if (out->balance_milli)
		out->bound_points = service_bound_points(st, svc, now);
}

bool view_takes_new(const struct rs_state *st, size_t i, double now)
{
	const struct be_rt *be = &st->bes[i];
	struct rs_backend w;

	view_backend_word(st, be, now, &w);
	/* A restarting backend keeps its clients: they wait for it. */
	return w.state == RS_BACKEND_UP && w.active_points > 0 &&
	       (be->has_socket || be->socket_unknown ||
		view_restarting(st, be, now));
}

uint32_t view_service_takers(const struct rs_state *st, size_t svc, double now)
{
	uint32_t n = 0;

	for (size_t i = 0; i < st->cfg.n_backends; i++)
		n += st->cfg.backends[i].service == svc &&
		     view_takes_new(st, i, now);
	return n;
}

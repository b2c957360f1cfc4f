// SPDX-License-Identifier: MIT
/*
 * Questions about a service's ring: its points, how evenly it spreads, where
 * one client goes and why, and what a change would move. lookup replays the
 * data plane's decision (sticky table, then the walk, with each family's
 * own sockets) so that it can be asked without sending traffic; sim builds
 * a ring that is never installed.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringsteer/rules.h>

#include "all_out.h"
#include "control_cmds_internal.h"
#include "fleet.h"
#include "hash.h"
#include "ring_stats.h"
#include "sticky.h"

static void hex64(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "0x%016" PRIx64, v);
}

static json_t *ring_show(struct daemon *d, size_t s, json_t *req)
{
	const struct rs_ring *ring = &d->st.svcs[s].ring;
	json_t *limit = json_object_get(req, "limit");
	uint32_t n = ring->npoints;
	json_t *pts = json_array();

	if (json_is_integer(limit) && json_integer_value(limit) >= 0 &&
	    json_integer_value(limit) < n)
		n = (uint32_t)json_integer_value(limit);
	for (uint32_t i = 0; i < n; i++) {
		char pos[24];

		hex64(pos, sizeof(pos), ring->points[i].pos);
		json_array_append_new(
			pts,
			json_pack("{s:i, s:s, s:s, s:i}", "index", (int)i + 1,
				  "pos", pos, "backend",
				  backend_name_of(d, ring->points[i].backend),
				  "ordinal", (int)ring->points[i].ordinal));
	}
	return json_pack("{s:b, s:s, s:I, s:i, s:o}", "ok", 1, "service",
			 d->st.cfg.services[s].name, "generation",
			 (json_int_t)d->st.svcs[s].generation, "points",
			 (int)ring->npoints, "ring", pts);
}

static json_t *ring_stats(struct daemon *d, size_t s)
{
	double lost, sum = 0, sq = 0, max = 0, *shares;
	json_t *arr = json_array();
	int n = 0;

	shares = service_shares(d, s, &lost);
	if (!shares) {
		json_decref(arr);
		return err_reply("out of memory");
	}
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct be_rt *be = &d->st.bes[i];
		struct rs_backend w;
		uint32_t pts = 0;

		if (d->st.cfg.backends[i].service != s)
			continue;
		for (uint32_t k = 0; k < d->st.svcs[s].ring.npoints; k++)
			pts += d->st.svcs[s].ring.points[k].backend == be->id;
		daemon_backend_word(d, be, &w);
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:i, s:i, s:i, s:f}", "name",
				       d->st.cfg.backends[i].name, "state",
				       rs_backend_state_name(w.state), "weight",
				       (int)be->weight, "points", (int)pts,
				       "active_points", (int)w.active_points,
				       "share", shares[be->id]));
		if (backend_takes_new(d, i)) {
			sum += shares[be->id];
			sq += shares[be->id] * shares[be->id];
			if (shares[be->id] > max)
				max = shares[be->id];
			n++;
		}
	}
	free(shares);
	double mean = n ? sum / n : 0;
	double var = n ? sq / n - mean * mean : 0;

	return json_pack("{s:b, s:s, s:I, s:i, s:b, s:o, s:i, s:f, s:f, "
			 "s:f}",
			 "ok", 1, "service", d->st.cfg.services[s].name,
			 "generation", (json_int_t)d->st.svcs[s].generation,
			 "points", (int)d->st.svcs[s].ring.npoints, "compact",
			 d->st.svcs[s].compact, "backends", arr, "taking_new",
			 n, "cv", mean > 0 ? sqrt(var > 0 ? var : 0) / mean : 0,
			 "max_mean", mean > 0 ? max / mean : 0, "unowned",
			 lost);
}

json_t *cmd_ring(struct daemon *d, json_t *req)
{
	const char *action = req_str(req, "action");
	const char *service = req_str(req, "service");
	int s, err;

	if (!action || !service)
		return err_reply("ring needs \"action\" and \"service\"");
	s = daemon_find_service(d, service);
	if (s < 0)
		return err_reply("no service '%s'", service);
	if (!strcmp(action, "show"))
		return ring_show(d, (size_t)s, req);
	if (!strcmp(action, "stats"))
		return ring_stats(d, (size_t)s);
	if (!strcmp(action, "rebuild")) {
		err = daemon_rebuild(d, service);
		if (err)
			return err_reply("rebuild failed: %s", strerror(-err));
		return json_pack("{s:b, s:I}", "ok", 1, "generation",
				 (json_int_t)d->st.svcs[s].generation);
	}
	return err_reply("unknown ring action '%s' (show, stats, rebuild)",
			 action);
}

/* The data plane's view for a client of @family: per-family sockets. */
static int family_view(struct daemon *d, int family, struct rs_backend **words,
		       bool **has, uint32_t *n)
{
	int err = daemon_ring_view(d, words, has, n);

	if (err)
		return err;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		uint32_t id = d->st.bes[i].id;
		uint64_t cookie;

		(*has)[id] =
			dp_socket_cookie(&d->dp,
					 rs_socket_slot(id, family == AF_INET6),
					 &cookie) == 0;
	}
	return 0;
}

/*
 * The load gauge of service @s into @view, as the bound reads it. One
 * array for the daemon: its loop runs one command at a time.
 */
static void load_view(struct daemon *d, size_t s, struct rs_ring_view *view)
{
	static int64_t load[RS_MAX_BACKENDS];

	memset(load, 0, sizeof(load));
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		if (d->st.cfg.backends[i].service == s)
			dp_backend_load(&d->dp, d->st.bes[i].id,
					&load[d->st.bes[i].id]);
	dp_service_load(&d->dp, d->st.svcs[s].id, &view->service_active);
	view->load = load;
}

/*
 * Whether the data plane would honour @key's sticky entry now: the one
 * rule (core/sticky.c) on the entry as the kernel holds it.
 */
static bool sticky_wins(struct daemon *d, size_t s,
			const struct rs_affinity_key *key,
			const struct rs_ring_view *view, uint32_t *backend,
			double *idle_s)
{
	const struct rs_service_conf *sc = &d->st.cfg.services[s];
	struct rs_sticky_entry e;
	struct timespec ts;
	uint64_t now;

	if (!sc->sticky_ttl ||
	    dp_sticky_lookup(&d->dp, d->st.svcs[s].id, key, &e))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	*idle_s = now > e.last_seen_ns ? (now - e.last_seen_ns) / 1e9 : 0;
	/*
	 * Named only while live (the kernel's rule, a stamp just ahead of
	 * this clock included): an expired entry names nobody.
	 */
	if (rs_sticky_live(e.last_seen_ns, now, sc->sticky_ttl))
		*backend = e.backend;
	return sticky_honoured(&e, now, sc->sticky_ttl, d->st.svcs[s].id,
			       sc->protocol, view);
}

/* Why the walk passed over a point, as lookup reports it. */
static const char *skip_reason(const struct rs_ring_step *st,
			       const struct rs_backend *words)
{
	if (st->why == RS_RING_SKIP_NOT_UP)
		return rs_backend_state_name(words[st->backend].state);
	return ring_skip_name(st->why);
}

static json_t *lookup_reply(struct daemon *d, json_t *req);

/* In fleet mode: which host owns the client (docs/fleet.md). */
json_t *cmd_lookup(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *client = req_str(req, "client");
	json_t *reply = lookup_reply(d, req), *jport;
	const char *owner = NULL;
	uint8_t addr[16] = {0};
	int s, family = AF_INET;

	if (!json_is_true(json_object_get(reply, "ok")))
		return reply;
	s = daemon_find_service(d, service);
	jport = json_object_get(req, "port");
	if (client && inet_pton(AF_INET, client, addr) != 1) {
		family = AF_INET6;
		if (inet_pton(AF_INET6, client, addr) != 1)
			family = 0;
	}
	if (s >= 0 && family && json_is_true(json_object_get(req, "kernel")))
		lookup_kernel(d, (size_t)s, family, addr,
			      json_is_integer(jport)
				      ? (uint16_t)json_integer_value(jport)
				      : 0,
			      reply);
	if (s >= 0 && family && client &&
	    fleet_owner_of(d, (size_t)s, family, addr,
			   json_is_integer(jport)
				   ? (uint16_t)json_integer_value(jport)
				   : 0,
			   &owner)) {
		json_object_set_new(reply, "owner",
				    owner ? json_string(owner) : json_null());
		json_object_set_new(
			reply, "owner_is_this_host",
			json_boolean(owner &&
				     !strcmp(owner, d->st.cfg.fleet.name)));
	}
	return reply;
}

static json_t *lookup_reply(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *client = req_str(req, "client");
	json_t *jport = json_object_get(req, "port"), *skipped;
	struct rs_ring_view view = {0};
	struct rs_affinity_key key;
	struct rs_ring_trace trace = {0};
	struct rs_ring_choice c;
	struct rs_service svc;
	struct rs_backend *words;
	uint8_t addr[16] = {0};
	uint32_t sticky_be = RS_NONE;
	bool sticky_over;
	json_t *reply;
	double idle = 0;
	int family, s, err;
	uint16_t port = 0;
	uint64_t hash;
	char hbuf[24];
	bool *has;

	if (!service || !client)
		return err_reply("lookup needs \"service\" and \"client\"");
	s = daemon_find_service(d, service);
	if (s < 0)
		return err_reply("no service '%s'", service);
	if (inet_pton(AF_INET, client, addr) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, client, addr) == 1)
		family = AF_INET6;
	else
		return err_reply("bad client address '%s'", client);
	if (json_is_integer(jport)) {
		if (json_integer_value(jport) < 0 ||
		    json_integer_value(jport) > 65535)
			return err_reply("port must be 0..65535");
		port = (uint16_t)json_integer_value(jport);
	}
	rs_service_from_conf(&d->st.cfg, (size_t)s, d->st.svcs[s].id, &svc);
	/*
	 * The key as the kernel builds it: from the installed ring's header
	 * (key policy, prefixes, seed), which is what steer_lookup reads.
	 */
	if (d->st.svcs[s].generation) {
		svc.seed = d->st.svcs[s].ring.seed;
		svc.key_policy = d->st.svcs[s].ring.key_policy;
		svc.prefix4 = d->st.svcs[s].ring.prefix4;
		svc.prefix6 = d->st.svcs[s].ring.prefix6;
	}
	rs_affinity_key_build(&key, &svc, (uint8_t)family, addr, port);
	hash = rs_hash_key(&key, svc.seed);
	hex64(hbuf, sizeof(hbuf), hash);
	err = family_view(d, family, &words, &has, &view.nbackends);
	if (err)
		return err_reply("out of memory");
	view.backends = words;
	view.has_socket = has;
	load_view(d, (size_t)s, &view);
	if (sticky_wins(d, (size_t)s, &key, &view, &sticky_be, &idle)) {
		free(words);
		free(has);
		return json_pack("{s:b, s:s, s:s, s:s, s:s, s:f}", "ok", 1,
				 "service", service, "backend",
				 backend_name_of(d, sticky_be), "reason",
				 "sticky", "hash", hbuf, "sticky_idle_s", idle);
	}
	trace.cap = d->st.svcs[s].ring.npoints;
	trace.steps = calloc(trace.cap ? trace.cap : 1, sizeof(*trace.steps));
	if (!trace.steps) {
		free(words);
		free(has);
		return err_reply("out of memory");
	}
	err = ring_lookup(&d->st.svcs[s].ring, &view, hash, &c, &trace);
	if (err) {
		free(trace.steps);
		free(words);
		free(has);
		return json_pack("{s:b, s:s, s:n, s:s, s:s, s:s}", "ok", 1,
				 "service", service, "backend", "reason",
				 "no backend", "hash", hbuf, "fallback",
				 d->st.cfg.services[s].fallback ==
						 RS_FALLBACK_DROP
					 ? "drop"
					 : "pass");
	}
	/* A live entry on an UP backend at its bound: the client spills. */
	sticky_over = d->st.cfg.services[s].protocol == IPPROTO_TCP &&
		      sticky_be != RS_NONE && sticky_be < view.nbackends &&
		      words[sticky_be].state == RS_BACKEND_UP &&
		      ring_at_bound(&view, sticky_be);
	/* Which backends the walk passed over, and why. */
	skipped = json_array();
	for (uint32_t k = 0; k < trace.n; k++)
		json_array_append_new(
			skipped,
			json_pack("{s:s, s:s}", "backend",
				  backend_name_of(d, trace.steps[k].backend),
				  "why", skip_reason(&trace.steps[k], words)));
	free(trace.steps);
	reply = json_pack(
		"{s:b, s:s, s:s, s:s, s:s, s:s, s:i, s:o}", "ok", 1, "service",
		service, "backend", backend_name_of(d, c.backend), "reason",
		c.backend == c.primary		? "primary"
		: c.primary_over || sticky_over ? "spill for load"
						: "spill",
		"hash", hbuf, "primary", backend_name_of(d, c.primary),
		"walked", (int)c.walked, "skipped", skipped);
	/* Present only with a bound: what it was and who was over it. */
	if (words[c.primary].balance_milli) {
		json_object_set_new(reply, "primary_over_bound",
				    json_boolean(c.primary_over));
		json_object_set_new(
			reply, "primary_active",
			json_integer((json_int_t)view.load[c.primary]));
		json_object_set_new(
			reply, "primary_bound",
			json_integer((json_int_t)rs_load_bound(
				&words[c.primary], view.service_active)));
		json_object_set_new(reply, "all_at_bound",
				    json_boolean(c.all_at_bound));
	}
	if (sticky_over)
		json_object_set_new(reply, "sticky_over_bound",
				    json_string(backend_name_of(d, sticky_be)));
	free(words);
	free(has);
	return reply;
}

struct sticky_sim {
	const struct rs_ring *ring;
	const struct rs_ring_view *view;
	const struct rs_service *svc;
	uint32_t removed; /* backend id or UINT32_MAX */
	long total, lose_backend, ring_differs;
};

static void sim_sticky_entry(const struct rs_affinity_key *key,
			     const struct rs_sticky_entry *e, void *arg)
{
	struct sticky_sim *ss = arg;
	struct rs_ring_choice c;

	ss->total++;
	if (e->backend == ss->removed)
		ss->lose_backend++;
	if (ring_lookup(ss->ring, ss->view, rs_hash_key(key, ss->svc->seed), &c,
			NULL) ||
	    c.backend != e->backend)
		ss->ring_differs++;
}

/* A hypothetical ring: the current one with one backend added, removed or
 * reweighted. Nothing in the daemon or the data plane changes. */
json_t *cmd_sim(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *action = req_str(req, "action");
	const char *name = req_str(req, "name");
	json_t *jw = json_object_get(req, "weight");
	struct rs_ring_view now = {0}, then = {0};
	struct rs_backend *w_now, *w_then;
	struct rs_ring_member *m;
	struct rs_ring next = {0};
	struct rs_service svc;
	struct sticky_sim ss = {0};
	uint32_t weight =
		json_is_integer(jw) ? (uint32_t)json_integer_value(jw) : 1;
	uint32_t new_id = UINT32_MAX;
	bool *has, *has_then;
	size_t n = 0;
	double moved;
	int s, b = -1;

	if (!service || !action || !name)
		return err_reply("sim needs \"service\", \"action\", \"name\"");
	s = daemon_find_service(d, service);
	if (s < 0)
		return err_reply("no service '%s'", service);
	if (json_is_integer(jw) && (json_integer_value(jw) < 0 ||
				    json_integer_value(jw) > RS_MAX_WEIGHT))
		return err_reply("weight must be 0..%d", RS_MAX_WEIGHT);
	b = daemon_find_backend(d, name);
	if (!strcmp(action, "add") && b >= 0)
		return err_reply("backend '%s' exists already", name);
	if (strcmp(action, "add") &&
	    (b < 0 || d->st.cfg.backends[b].service != (size_t)s))
		return err_reply("no backend '%s' in service %s", name,
				 service);
	if (strcmp(action, "add") && strcmp(action, "remove") &&
	    strcmp(action, "weight"))
		return err_reply(
			"unknown sim action '%s' (add, remove, weight)",
			action);
	if (daemon_ring_view(d, &w_now, &has, &now.nbackends) ||
	    daemon_ring_view(d, &w_then, &has_then, &then.nbackends))
		return err_reply("out of memory");
	now.backends = w_now;
	now.has_socket = has;
	then.backends = w_then;
	then.has_socket = has_then;
	m = calloc(d->st.cfg.n_backends + 1, sizeof(*m));
	for (size_t i = 0; m && i < d->st.cfg.n_backends; i++) {
		const struct be_rt *be = &d->st.bes[i];
		uint32_t pts = w_now[be->id].active_points;

		if (d->st.cfg.backends[i].service != (size_t)s)
			continue;
		if ((int)i == b && !strcmp(action, "remove"))
			continue;
		if ((int)i == b)
			pts = (uint32_t)rs_backend_points(
				weight, d->st.cfg.services[s].vnodes);
		w_then[be->id].active_points = pts;
		w_then[be->id].max_points = pts;
		m[n].name = d->st.cfg.backends[i].name;
		m[n].backend = be->id;
		m[n].points = pts;
		n++;
	}
	if (m && !strcmp(action, "add")) {
		/* A free id for the newcomer, UP with a socket. */
		for (uint32_t id = 0; id < RS_MAX_BACKENDS; id++) {
			bool used = false;

			for (size_t i = 0; i < d->st.cfg.n_backends; i++)
				used |= d->st.bes[i].id == id;
			if (!used) {
				new_id = id;
				break;
			}
		}
		/* Every id taken: there is nowhere to put the newcomer. */
		if (new_id == UINT32_MAX) {
			free(m);
			free(w_now);
			free(w_then);
			free(has);
			free(has_then);
			return err_reply(
				"no free backend id: all %d are in use",
				RS_MAX_BACKENDS);
		}
		m[n].name = name;
		m[n].backend = new_id;
		m[n].points = (uint32_t)rs_backend_points(
			weight, d->st.cfg.services[s].vnodes);
		w_then[new_id].state = RS_BACKEND_UP;
		w_then[new_id].active_points = m[n].points;
		has_then[new_id] = true;
		n++;
	}
	if (!m || ring_build(m, n, d->st.cfg.services[s].seed, &next)) {
		free(m);
		free(w_now);
		free(w_then);
		free(has);
		free(has_then);
		return err_reply("cannot build the hypothetical ring");
	}
	moved = ring_moved_fraction(&d->st.svcs[s].ring, &now, &next, &then);
	rs_service_from_conf(&d->st.cfg, (size_t)s, d->st.svcs[s].id, &svc);
	ss.ring = &next;
	ss.view = &then;
	ss.svc = &svc;
	ss.removed = !strcmp(action, "remove") ? d->st.bes[b].id : UINT32_MAX;
	dp_sticky_each(&d->dp, d->st.svcs[s].id, sim_sticky_entry, &ss);
	ring_free(&next);
	free(m);
	free(w_now);
	free(w_then);
	free(has);
	free(has_then);
	return json_pack("{s:b, s:s, s:s, s:s, s:i, s:f, s:I, s:I, s:I}", "ok",
			 1, "service", service, "action", action, "backend",
			 name, "weight", (int)weight, "moved_fraction", moved,
			 "sticky_clients", (json_int_t)ss.total,
			 "sticky_moving", (json_int_t)ss.lose_backend,
			 "sticky_owner_changes", (json_int_t)ss.ring_differs);
}

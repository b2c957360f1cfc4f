// SPDX-License-Identifier: MIT
/*
 * Backends as operators see and change them. The view of one backend
 * (state word, counters, share of its service's hash space) is shared with
 * the metrics, so `ringsteer backends` and /metrics never disagree.
 */
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "control_cmds_internal.h"
#include "generations.h"
#include "ring_stats.h"
#include "view.h"

static json_t *addr_json(uint8_t family, const uint8_t *addr, uint16_t port)
{
	char buf[RS_ADDR_STRLEN];

	rs_addr_format(family, addr, port, buf, sizeof(buf));
	return json_string(buf);
}

double *service_shares(struct daemon *d, size_t svc, double *lost)
{
	struct rs_ring_view view = {0};
	struct rs_backend *words;
	double *share;
	bool *has;

	share = calloc(RS_MAX_BACKENDS, sizeof(*share));
	if (!share || daemon_ring_view(d, &words, &has, &view.nbackends)) {
		free(share);
		return NULL;
	}
	view.backends = words;
	view.has_socket = has;
	*lost = ring_shares(&d->st.svcs[svc].ring, &view, share);
	free(words);
	free(has);
	return share;
}

int backend_view_get(struct daemon *d, size_t idx, const double *shares,
		     struct backend_view *out)
{
	const struct be_rt *be = &d->st.bes[idx];

	memset(out, 0, sizeof(*out));
	daemon_backend_word(d, be, &out->word);
	dp_backend_stats(&d->dp, be->id, &out->stats);
	out->share = shares ? shares[be->id] : 0;
	{
		int64_t svc_active = 0;
		uint32_t svc = d->st.cfg.backends[idx].service;

		dp_backend_load(&d->dp, be->id, &out->active);
		dp_service_load(&d->dp, d->st.svcs[svc].id, &svc_active);
		/* An UP backend's bound; others take no new clients. */
		out->bound = out->word.state == RS_BACKEND_UP
				     ? rs_load_bound(&out->word, svc_active)
				     : RS_LOAD_UNBOUNDED;
	}
	out->serving = be->has_socket && out->word.state != RS_BACKEND_DOWN;
	return 0;
}

/* "0x0002": the server ID as the configuration writes it; NULL if none. */
json_t *server_id_json(const struct daemon *d, size_t i)
{
	const struct rs_backend_conf *bc = &d->st.cfg.backends[i];
	const struct rs_service_conf *sc = &d->st.cfg.services[bc->service];
	char buf[2 + 2 * RS_QUIC_MAX_SERVER_ID + 1] = "0x";

	if (!bc->has_server_id || sc->cookie != RS_COOKIE_QUIC)
		return json_null();
	rs_hex_bytes(buf + 2, sizeof(buf) - 2, bc->server_id,
		     sc->quic_server_id_len, "");
	return json_string(buf);
}

/*
 * Whose sockets the backend takes (sockets.c): {"uid", "from": "owner"
 * (the file) | "first socket" | null (none taken yet)}, and the sockets of
 * other users refused on its addresses, with the last one's user.
 */
/*
 * Each address's socket now: which one (its cookie, the process it was
 * taken from, how long ago), how many were taken there since the start
 * (a restart or a handover takes one more), and how long it has been
 * gone when it is.
 */
/*
 * generations = on: the address's sockets, oldest first: each one's
 * number (rs_addr_rt.gen_numbers), cookie, process, whether it takes new
 * flows (working) or only its own (draining), and the flows recorded on
 * it as of the last sweep (5 s).
 */
static json_t *generations_of(const struct rs_addr_rt *r, uint32_t id)
{
	json_t *arr = json_array();

	for (size_t g = 0; g < r->n_gen; g++)
		json_array_append_new(
			arr,
			json_pack("{s:I, s:I, s:i, s:s, s:I}", "generation",
				  (json_int_t)r->gen_numbers[g], "cookie",
				  (json_int_t)r->gen_cookies[g], "pid",
				  (int)r->gen_pids[g], "state",
				  g + 1 == r->n_gen ? "working" : "draining",
				  "flows",
				  (json_int_t)generations_flows(
					  id, r->gen_cookies[g])));
	return arr;
}

static json_t *sockets_json(const struct rs_backend_conf *bc,
			    const struct rs_backend_rt *rt, uint32_t id,
			    bool gen, double now)
{
	json_t *arr = json_array();

	for (size_t a = 0; a < bc->n_addrs; a++) {
		const struct rs_addr_rt *r = &rt->addr[a];
		const struct rs_backend_addr *ba = &bc->addrs[a];
		json_t *o = addr_json(ba->family, ba->addr, ba->port);

		o = json_pack("{s:o, s:I}", "address", o, "taken",
			      (json_int_t)r->taken);
		json_object_set_new(
			o, "cookie",
			r->has_socket ? json_integer((json_int_t)r->cookie)
				      : json_null());
		json_object_set_new(o, "pid",
				    r->has_socket && r->owner > 0
					    ? json_integer(r->owner)
					    : json_null());
		json_object_set_new(o, "since_s",
				    r->has_socket && r->taken_at > 0
					    ? json_real(now - r->taken_at)
					    : json_null());
		json_object_set_new(o, "gone_s",
				    !r->has_socket && r->gone_since > 0
					    ? json_real(now - r->gone_since)
					    : json_null());
		if (gen)
			json_object_set_new(o, "generations",
					    generations_of(r, id));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *owner_json(const struct rs_backend_conf *bc,
			  const struct rs_backend_rt *rt)
{
	json_t *o = json_object();
	uint64_t refused = 0;
	const struct rs_addr_rt *known = NULL, *last = NULL;

	for (size_t a = 0; a < bc->n_addrs; a++) {
		refused += rt->addr[a].refused;
		if (rt->addr[a].refused)
			last = &rt->addr[a];
		if (rt->addr[a].uid_known && !known)
			known = &rt->addr[a];
	}
	if (bc->has_owner) {
		json_object_set_new(o, "uid", json_integer(bc->owner_uid));
		json_object_set_new(o, "from", json_string("owner"));
	} else if (known) {
		json_object_set_new(o, "uid", json_integer(known->uid));
		json_object_set_new(o, "from", json_string("first socket"));
	} else {
		json_object_set_new(o, "uid", json_null());
		json_object_set_new(o, "from", json_null());
	}
	json_object_set_new(o, "refused", json_integer((json_int_t)refused));
	json_object_set_new(o, "refused_uid",
			    last ? json_integer(last->refused_uid)
				 : json_null());
	return o;
}

static json_t *backend_json(struct daemon *d, size_t i, const double *shares)
{
	const struct rs_backend_conf *bc = &d->st.cfg.backends[i];
	const struct be_rt *be = &d->st.bes[i];
	json_t *addrs = json_array(), *o;
	struct backend_view v;

	backend_view_get(d, i, shares, &v);
	for (size_t a = 0; a < bc->n_addrs; a++)
		json_array_append_new(addrs, addr_json(bc->addrs[a].family,
						       bc->addrs[a].addr,
						       bc->addrs[a].port));
	o = json_pack(
		"{s:s, s:i, s:s, s:o, s:s, s:s, s:s, s:b, s:i, s:i, s:i, s:f,"
		" s:b, s:b, s:I, s:I, s:I, s:I, s:s, s:f, s:I}",
		"name", bc->name, "id", (int)be->id, "service",
		d->st.cfg.services[bc->service].name, "addresses", addrs,
		"state", rs_backend_state_name(v.word.state), "op",
		rs_op_state_name(be->op), "health",
		be->health.up ? "up" : "down", "weight_override",
		be->weight_override, "weight", (int)be->weight, "active_points",
		(int)v.word.active_points, "built_points",
		(int)be->built_points, "share", v.share, "has_socket",
		be->has_socket, "slow_start", be->up_since > 0, "assigned",
		(json_int_t)v.stats.assigned, "sticky_hits",
		(json_int_t)v.stats.sticky_hits, "spills",
		(json_int_t)v.stats.spills, "cookie_hits",
		(json_int_t)v.stats.cookie_hits, "last_check",
		be->health.last_result, "check_latency_ms",
		be->health.last_latency_ms, "checks",
		(json_int_t)be->health.checks);
	json_object_set_new(o, "server_id", server_id_json(d, i));
	json_object_set_new(o, "serving", json_boolean(v.serving));
	/* Its socket is gone, its flows wait for it (restart_grace). */
	json_object_set_new(
		o, "restarting",
		json_boolean(view_restarting(&d->st, be, ev_now(d->loop))));
	json_object_set_new(o, "active", json_integer((json_int_t)v.active));
	/* Of which predate the counting, found by the daemon (sock_diag). */
	json_object_set_new(o, "uncounted", json_integer(be->uncounted));
	/* null: no bound (balance_factor off, or not UP). */
	json_object_set_new(o, "bound",
			    v.bound == RS_LOAD_UNBOUNDED
				    ? json_null()
				    : json_integer((json_int_t)v.bound));
	json_object_set_new(o, "load_spills",
			    json_integer((json_int_t)v.stats.load_spills));
	json_object_set_new(o, "owner", owner_json(bc, &be->sock));
	json_object_set_new(o, "sockets",
			    sockets_json(bc, &be->sock, be->id,
					 generations_on(&d->st.cfg, bc),
					 ev_now(d->loop)));
	return o;
}

json_t *cmd_backends(struct daemon *d, json_t *req)
{
	const char *only = req_str(req, "service");
	json_t *arr = json_array();
	int want = -1;

	if (only) {
		want = daemon_find_service(d, only);
		if (want < 0) {
			json_decref(arr);
			return err_reply("no service '%s'", only);
		}
	}
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		double lost, *shares;

		if (want >= 0 && (size_t)want != s)
			continue;
		shares = service_shares(d, s, &lost);
		for (size_t i = 0; i < d->st.cfg.n_backends; i++)
			if (d->st.cfg.backends[i].service == s)
				json_array_append_new(
					arr, backend_json(d, i, shares));
		free(shares);
	}
	return json_pack("{s:b, s:o}", "ok", 1, "backends", arr);
}

json_t *cmd_backend(struct daemon *d, json_t *req)
{
	const char *action = req_str(req, "action");
	const char *name = req_str(req, "name");
	json_t *w = json_object_get(req, "weight");
	bool force = json_is_true(json_object_get(req, "force"));
	char why[1024] = "";
	int err, i;

	if (!action || !name)
		return err_reply("backend needs \"action\" and \"name\"");
	i = daemon_find_backend(d, name);
	if (i < 0)
		return err_reply("no backend '%s'", name);
	if (!strcmp(action, "drain"))
		err = daemon_set_op(d, name, RS_OP_DRAIN, force, why,
				    sizeof(why));
	else if (!strcmp(action, "undrain") || !strcmp(action, "up"))
		err = daemon_set_op(d, name, RS_OP_UP, force, why, sizeof(why));
	else if (!strcmp(action, "down"))
		err = daemon_set_op(d, name, RS_OP_DOWN, force, why,
				    sizeof(why));
	else if (!strcmp(action, "weight")) {
		if (!json_is_integer(w) || json_integer_value(w) < 0 ||
		    json_integer_value(w) > RS_MAX_WEIGHT)
			return err_reply("weight must be an integer 0..%d",
					 RS_MAX_WEIGHT);
		err = daemon_set_weight(d, name,
					(uint32_t)json_integer_value(w), force,
					why, sizeof(why));
	} else
		return err_reply("unknown backend action '%s' (drain, "
				 "undrain, up, down, weight)",
				 action);
	json_t *reply;

	if (err)
		return err_reply("backend %s: %s", name,
				 why[0] ? why : strerror(-err));
	reply = backend_json(d, (size_t)i, NULL);
	json_object_set_new(reply, "ok", json_true());
	return reply;
}

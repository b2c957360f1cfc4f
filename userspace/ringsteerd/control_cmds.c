// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "control_cmds.h"
#include "hash.h"
#include "log.h"
#include "quic_cid.h"
#include "ring_stats.h"
#include "tc_attach.h"
#include "version.h"

static json_t *err_reply(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static json_t *err_reply(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *ok_reply(void)
{
	return json_pack("{s:b}", "ok", 1);
}

static const char *req_str(json_t *req, const char *key)
{
	return json_string_value(json_object_get(req, key));
}

static const char *proto_name(uint8_t p)
{
	return p == IPPROTO_UDP ? "udp" : "tcp";
}

static json_t *addr_json(uint8_t family, const uint8_t *addr, uint16_t port)
{
	char buf[RS_ADDR_STRLEN];

	rs_addr_format(family, addr, port, buf, sizeof(buf));
	return json_string(buf);
}

/* ---- shared views ---- */

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
	*lost = ring_shares(&d->svcs[svc].ring, &view, share);
	free(words);
	free(has);
	return share;
}

int backend_view_get(struct daemon *d, size_t idx, const double *shares,
		     struct backend_view *out)
{
	const struct be_rt *be = &d->bes[idx];

	memset(out, 0, sizeof(*out));
	daemon_backend_word(d, be, &out->word);
	dp_backend_stats(&d->dp, be->id, &out->stats);
	out->share = shares ? shares[be->id] : 0;
	return 0;
}

/* ---- commands ---- */

static json_t *cmd_version(struct daemon *d, json_t *req)
{
	(void)d;
	(void)req;
	return json_pack("{s:b, s:s, s:i}", "ok", 1, "version", RS_VERSION,
			 "abi", RS_ABI_VERSION);
}

static bool any_cookie_service(const struct daemon *d)
{
	for (size_t s = 0; s < d->cfg.n_services; s++)
		if (d->cfg.services[s].cookie == RS_COOKIE_QUIC)
			return true;
	return false;
}

static size_t tc_attached_count(const struct daemon *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->tc.n; i++)
		n += d->tc.ifs[i].ifindex != 0;
	return n;
}

/* steer_tc and where it is attached; the interfaces in config order. */
static json_t *tc_program_json(struct daemon *d)
{
	json_t *ifs = json_array();

	for (size_t i = 0; i < d->tc.n; i++) {
		const struct tc_iface *ti = &d->tc.ifs[i];
		const char *state = ti->ifindex		   ? "attached"
				    : ti->last_err	   ? "error"
				    : ti->reported_missing ? "missing"
							   : "detached";

		json_array_append_new(
			ifs, json_pack("{s:s, s:i, s:s, s:s?, s:I}", "name",
				       ti->name, "ifindex", ti->ifindex,
				       "state", state, "error",
				       !ti->ifindex && ti->last_err
					       ? tc_strerror(ti->last_err)
					       : NULL,
				       "attaches", (json_int_t)ti->attaches));
	}
	return json_pack("{s:s, s:i, s:s, s:i, s:i, s:o}", "name", "steer_tc",
			 "id", (int)dp_tc_program_id(&d->dp), "attach",
			 "tc ingress", "priority", RS_TC_PRIORITY, "handle",
			 RS_TC_HANDLE, "interfaces", ifs);
}

static json_t *cmd_status(struct daemon *d, json_t *req)
{
	json_t *svcs = json_array(), *progs = json_array();

	(void)req;
	json_array_append_new(
		progs, json_pack("{s:s, s:i, s:s, s:s}", "name", "steer_lookup",
				 "id", (int)dp_program_id(&d->dp), "attach",
				 "sk_lookup", "link", RS_LINK_PIN_NAME));
	if (any_cookie_service(d))
		json_array_append_new(progs, tc_program_json(d));
	for (size_t s = 0; s < d->cfg.n_services; s++)
		json_array_append_new(
			svcs, json_pack("{s:s, s:i, s:I, s:i, s:b}", "name",
					d->cfg.services[s].name, "id",
					(int)d->svcs[s].id, "generation",
					(json_int_t)d->svcs[s].generation,
					"points", (int)d->svcs[s].ring.npoints,
					"compact", d->svcs[s].compact));
	return json_pack("{s:b, s:s, s:i, s:f, s:s, s:s, s:o, s:o, s:I, s:I}",
			 "ok", 1, "version", RS_VERSION, "pid", (int)getpid(),
			 "uptime_s", ev_now(d->loop) - d->started, "config",
			 d->config_path, "bpffs", d->cfg.bpffs, "programs",
			 progs, "services", svcs, "reloads",
			 (json_int_t)d->reloads, "reload_failures",
			 (json_int_t)d->reload_failures);
}

static json_t *service_json(struct daemon *d, size_t s)
{
	const struct rs_service_conf *sc = &d->cfg.services[s];
	struct rs_service_stats st = {0};
	json_t *listens = json_array(), *o;
	size_t nbe = 0;

	for (size_t l = 0; l < sc->n_listens; l++) {
		char buf[RS_ADDR_STRLEN];

		rs_addr_format_prefix(sc->listens[l].family,
				      sc->listens[l].addr,
				      sc->listens[l].prefixlen,
				      sc->listens[l].port, buf, sizeof(buf));
		json_array_append_new(listens, json_string(buf));
	}
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		nbe += d->cfg.backends[i].service == s;
	dp_service_stats(&d->dp, d->svcs[s].id, &st);
	o = json_pack(
		"{s:s, s:i, s:s, s:o, s:s, s:i, s:i, s:i, s:I, s:s, s:i, s:s,"
		" s:I, s:i, s:b, s:I, s:i, s:{s:I, s:I, s:I, s:I, s:I, s:I,"
		" s:I, s:I}}",
		"name", sc->name, "id", (int)d->svcs[s].id, "protocol",
		proto_name(sc->protocol), "listen", listens, "key",
		sc->key_policy == RS_KEY_SRC_IP_PORT ? "src-ip-port" : "src-ip",
		"prefix4", sc->prefix4, "prefix6", sc->prefix6, "vnodes",
		(int)sc->vnodes, "seed", (json_int_t)sc->seed, "fallback",
		sc->fallback == RS_FALLBACK_DROP ? "drop" : "pass",
		"sticky_ttl", (int)sc->sticky_ttl, "cookie",
		sc->cookie == RS_COOKIE_QUIC ? "quic" : "none", "generation",
		(json_int_t)d->svcs[s].generation, "points",
		(int)d->svcs[s].ring.npoints, "compact", d->svcs[s].compact,
		"rebuilds", (json_int_t)d->svcs[s].rebuilds, "backends",
		(int)nbe, "stats", "lookups", (json_int_t)st.lookups,
		"no_backend", (json_int_t)st.no_backend, "errors",
		(json_int_t)st.errors, "walk_limit", (json_int_t)st.walk_limit,
		"cookie_none", (json_int_t)st.cookie_none, "cookie_unknown",
		(json_int_t)st.cookie_unknown, "cookie_down",
		(json_int_t)st.cookie_down, "cookie_malformed",
		(json_int_t)st.cookie_malformed);
	if (sc->cookie == RS_COOKIE_QUIC) {
		json_object_set_new(o, "quic_server_id_len",
				    json_integer(sc->quic_server_id_len));
		json_object_set_new(o, "quic_cid_len",
				    json_integer(sc->quic_cid_len));
		json_object_set_new(o, "quic_config_id",
				    json_integer(sc->quic_config_id));
	}
	return o;
}

static json_t *cmd_services(struct daemon *d, json_t *req)
{
	json_t *arr = json_array();

	(void)req;
	for (size_t s = 0; s < d->cfg.n_services; s++)
		json_array_append_new(arr, service_json(d, s));
	return json_pack("{s:b, s:o}", "ok", 1, "services", arr);
}

static void hex_bytes(char *buf, size_t len, const uint8_t *b, size_t n,
		      const char *sep)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < n && off + 3 + strlen(sep) <= len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%02x",
					k ? sep : "", b[k]);
}

/* "0x0002": the server ID as the configuration writes it; NULL if none. */
static json_t *server_id_json(const struct daemon *d, size_t i)
{
	const struct rs_backend_conf *bc = &d->cfg.backends[i];
	const struct rs_service_conf *sc = &d->cfg.services[bc->service];
	char buf[2 + 2 * RS_QUIC_MAX_SERVER_ID + 1] = "0x";

	if (!bc->has_server_id || sc->cookie != RS_COOKIE_QUIC)
		return json_null();
	hex_bytes(buf + 2, sizeof(buf) - 2, bc->server_id,
		  sc->quic_server_id_len, "");
	return json_string(buf);
}

static json_t *backend_json(struct daemon *d, size_t i, const double *shares)
{
	const struct rs_backend_conf *bc = &d->cfg.backends[i];
	const struct be_rt *be = &d->bes[i];
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
		d->cfg.services[bc->service].name, "addresses", addrs, "state",
		rs_backend_state_name(v.word.state), "op",
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
	return o;
}

static json_t *cmd_backends(struct daemon *d, json_t *req)
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
	for (size_t s = 0; s < d->cfg.n_services; s++) {
		double lost, *shares;

		if (want >= 0 && (size_t)want != s)
			continue;
		shares = service_shares(d, s, &lost);
		for (size_t i = 0; i < d->cfg.n_backends; i++)
			if (d->cfg.backends[i].service == s)
				json_array_append_new(
					arr, backend_json(d, i, shares));
		free(shares);
	}
	return json_pack("{s:b, s:o}", "ok", 1, "backends", arr);
}

static json_t *cmd_backend(struct daemon *d, json_t *req)
{
	const char *action = req_str(req, "action");
	const char *name = req_str(req, "name");
	json_t *w = json_object_get(req, "weight");
	int err, i;

	if (!action || !name)
		return err_reply("backend needs \"action\" and \"name\"");
	i = daemon_find_backend(d, name);
	if (i < 0)
		return err_reply("no backend '%s'", name);
	if (!strcmp(action, "drain"))
		err = daemon_set_op(d, name, RS_OP_DRAIN);
	else if (!strcmp(action, "undrain") || !strcmp(action, "up"))
		err = daemon_set_op(d, name, RS_OP_UP);
	else if (!strcmp(action, "down"))
		err = daemon_set_op(d, name, RS_OP_DOWN);
	else if (!strcmp(action, "weight")) {
		if (!json_is_integer(w) || json_integer_value(w) < 0 ||
		    json_integer_value(w) > RS_MAX_WEIGHT)
			return err_reply("weight must be an integer 0..%d",
					 RS_MAX_WEIGHT);
		err = daemon_set_weight(d, name,
					(uint32_t)json_integer_value(w));
	} else
		return err_reply("unknown backend action '%s' (drain, "
				 "undrain, up, down, weight)",
				 action);
	json_t *reply;

	if (err)
		return err_reply("backend %s: %s", name, strerror(-err));
	reply = backend_json(d, (size_t)i, NULL);
	json_object_set_new(reply, "ok", json_true());
	return reply;
}

static void hex64(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "0x%016" PRIx64, v);
}

static const char *backend_name_of(struct daemon *d, uint32_t id)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		if (d->bes[i].id == id)
			return d->cfg.backends[i].name;
	return "?";
}

static json_t *ring_show(struct daemon *d, size_t s, json_t *req)
{
	const struct rs_ring *ring = &d->svcs[s].ring;
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
			 d->cfg.services[s].name, "generation",
			 (json_int_t)d->svcs[s].generation, "points",
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
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		const struct be_rt *be = &d->bes[i];
		struct rs_backend w;
		uint32_t pts = 0;

		if (d->cfg.backends[i].service != s)
			continue;
		for (uint32_t k = 0; k < d->svcs[s].ring.npoints; k++)
			pts += d->svcs[s].ring.points[k].backend == be->id;
		daemon_backend_word(d, be, &w);
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:i, s:i, s:i, s:f}", "name",
				       d->cfg.backends[i].name, "state",
				       rs_backend_state_name(w.state), "weight",
				       (int)be->weight, "points", (int)pts,
				       "active_points", (int)w.active_points,
				       "share", shares[be->id]));
		if (w.state == RS_BACKEND_UP && be->has_socket &&
		    w.active_points) {
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
			 "ok", 1, "service", d->cfg.services[s].name,
			 "generation", (json_int_t)d->svcs[s].generation,
			 "points", (int)d->svcs[s].ring.npoints, "compact",
			 d->svcs[s].compact, "backends", arr, "taking_new", n,
			 "cv", mean > 0 ? sqrt(var > 0 ? var : 0) / mean : 0,
			 "max_mean", mean > 0 ? max / mean : 0, "unowned",
			 lost);
}

static json_t *cmd_ring(struct daemon *d, json_t *req)
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
				 (json_int_t)d->svcs[s].generation);
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
	for (size_t i = 0; i < d->cfg.n_backends; i++) {
		uint32_t id = d->bes[i].id;
		uint64_t cookie;

		(*has)[id] =
			dp_socket_cookie(&d->dp,
					 rs_socket_slot(id, family == AF_INET6),
					 &cookie) == 0;
	}
	return 0;
}

static bool sticky_honoured(struct daemon *d, size_t s,
			    const struct rs_affinity_key *key,
			    const struct rs_backend *words, const bool *has,
			    uint32_t *backend, double *idle_s)
{
	const struct rs_service_conf *sc = &d->cfg.services[s];
	struct rs_sticky_entry e;
	struct timespec ts;
	uint64_t now;

	if (!sc->sticky_ttl || dp_sticky_lookup(&d->dp, d->svcs[s].id, key, &e))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	*idle_s = now > e.last_seen_ns ? (now - e.last_seen_ns) / 1e9 : 0;
	*backend = e.backend;
	if (now - e.last_seen_ns > (uint64_t)sc->sticky_ttl * 1000000000ull)
		return false;
	if (e.backend >= RS_MAX_BACKENDS ||
	    words[e.backend].service != d->svcs[s].id)
		return false;
	return (words[e.backend].state == RS_BACKEND_UP ||
		words[e.backend].state == RS_BACKEND_DRAIN) &&
	       has[e.backend];
}

static json_t *cmd_lookup(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *client = req_str(req, "client");
	json_t *jport = json_object_get(req, "port"), *skipped;
	struct rs_ring_view view = {0};
	struct rs_affinity_key key;
	struct rs_ring_choice c;
	struct rs_service svc;
	struct rs_backend *words;
	uint8_t addr[16] = {0};
	uint32_t sticky_be = 0;
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
	rs_service_from_conf(&d->cfg, (size_t)s, d->svcs[s].id, &svc);
	rs_affinity_key_build(&key, &svc, (uint8_t)family, addr, port);
	hash = rs_hash_key(&key, svc.seed);
	hex64(hbuf, sizeof(hbuf), hash);
	err = family_view(d, family, &words, &has, &view.nbackends);
	if (err)
		return err_reply("out of memory");
	view.backends = words;
	view.has_socket = has;
	if (sticky_honoured(d, (size_t)s, &key, words, has, &sticky_be,
			    &idle)) {
		free(words);
		free(has);
		return json_pack("{s:b, s:s, s:s, s:s, s:s, s:f}", "ok", 1,
				 "service", service, "backend",
				 backend_name_of(d, sticky_be), "reason",
				 "sticky", "hash", hbuf, "sticky_idle_s", idle);
	}
	err = ring_lookup(&d->svcs[s].ring, &view, hash, &c);
	if (err) {
		free(words);
		free(has);
		return json_pack("{s:b, s:s, s:n, s:s, s:s, s:s}", "ok", 1,
				 "service", service, "backend", "reason",
				 "no backend", "hash", hbuf, "fallback",
				 d->cfg.services[s].fallback == RS_FALLBACK_DROP
					 ? "drop"
					 : "pass");
	}
	/* Which backends the walk passed over, and why. */
	skipped = json_array();
	for (uint32_t k = 0, idx = ring_lower_bound(&d->svcs[s].ring, hash);
	     k < c.walked; k++) {
		const struct rs_point *p = &d->svcs[s].ring.points[idx];
		const struct rs_backend *w = &words[p->backend];
		const char *why = p->ordinal >= w->active_points
					  ? "inactive point"
				  : w->state != RS_BACKEND_UP
					  ? rs_backend_state_name(w->state)
					  : "no socket";

		json_array_append_new(skipped,
				      json_pack("{s:s, s:s}", "backend",
						backend_name_of(d, p->backend),
						"why", why));
		idx = idx + 1 >= d->svcs[s].ring.npoints ? 0 : idx + 1;
	}
	free(words);
	free(has);
	return json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:i, s:o}", "ok", 1,
			 "service", service, "backend",
			 backend_name_of(d, c.backend), "reason",
			 c.backend == c.primary ? "primary" : "spill", "hash",
			 hbuf, "primary", backend_name_of(d, c.primary),
			 "walked", (int)c.walked, "skipped", skipped);
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
	if (ring_lookup(ss->ring, ss->view, rs_hash_key(key, ss->svc->seed),
			&c) ||
	    c.backend != e->backend)
		ss->ring_differs++;
}

/* A hypothetical ring: the current one with one backend added, removed or
 * reweighted. Nothing in the daemon or the data plane changes. */
static json_t *cmd_sim(struct daemon *d, json_t *req)
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
	    (b < 0 || d->cfg.backends[b].service != (size_t)s))
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
	m = calloc(d->cfg.n_backends + 1, sizeof(*m));
	for (size_t i = 0; m && i < d->cfg.n_backends; i++) {
		const struct be_rt *be = &d->bes[i];
		uint32_t pts = w_now[be->id].active_points;

		if (d->cfg.backends[i].service != (size_t)s)
			continue;
		if ((int)i == b && !strcmp(action, "remove"))
			continue;
		if ((int)i == b)
			pts = weight * d->cfg.services[s].vnodes;
		w_then[be->id].active_points = pts;
		w_then[be->id].max_points = pts;
		m[n].name = d->cfg.backends[i].name;
		m[n].backend = be->id;
		m[n].points = pts;
		n++;
	}
	if (m && !strcmp(action, "add")) {
		/* A free id for the newcomer, UP with a socket. */
		for (uint32_t id = 0; id < RS_MAX_BACKENDS; id++) {
			bool used = false;

			for (size_t i = 0; i < d->cfg.n_backends; i++)
				used |= d->bes[i].id == id;
			if (!used) {
				new_id = id;
				break;
			}
		}
		m[n].name = name;
		m[n].backend = new_id;
		m[n].points = weight * d->cfg.services[s].vnodes;
		w_then[new_id].state = RS_BACKEND_UP;
		w_then[new_id].active_points = m[n].points;
		has_then[new_id] = true;
		n++;
	}
	if (!m || ring_build(m, n, d->cfg.services[s].seed, &next)) {
		free(m);
		free(w_now);
		free(w_then);
		free(has);
		free(has_then);
		return err_reply("cannot build the hypothetical ring");
	}
	moved = ring_moved_fraction(&d->svcs[s].ring, &now, &next, &then);
	rs_service_from_conf(&d->cfg, (size_t)s, d->svcs[s].id, &svc);
	ss.ring = &next;
	ss.view = &then;
	ss.svc = &svc;
	ss.removed = !strcmp(action, "remove") ? d->bes[b].id : UINT32_MAX;
	dp_sticky_each(&d->dp, d->svcs[s].id, sim_sticky_entry, &ss);
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

/* ---- QUIC connection IDs ---- */

/* Hex with optional 0x and separators (blank : - .) into @out. */
static int parse_hex(const char *s, uint8_t *out, size_t max, size_t *len)
{
	int hi = -1;

	*len = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		int v;

		if (strchr(" :-.", *s))
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return -EINVAL;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (*len == max)
			return -E2BIG;
		out[(*len)++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 ? 0 : -EINVAL;
}

/* The cookie service @name, or an error reply in *@err. */
static int cookie_service(struct daemon *d, const char *name,
			  struct rs_service *svc, json_t **err)
{
	int s = daemon_find_service(d, name);

	if (s < 0) {
		*err = err_reply("no service '%s'", name);
		return -1;
	}
	if (d->cfg.services[s].cookie != RS_COOKIE_QUIC) {
		*err = err_reply("service %s has cookie = none: its datagrams "
				 "follow IP affinity and carry no server IDs",
				 name);
		return -1;
	}
	rs_service_from_conf(&d->cfg, (size_t)s, d->svcs[s].id, svc);
	return s;
}

static json_t *cid_new(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *backend = req_str(req, "backend");
	json_t *jcount = json_object_get(req, "count"), *cids, *err = NULL;
	const struct rs_backend_conf *bc;
	struct rs_service svc;
	uint8_t cid[QUIC_CID_MAX_LEN];
	char hex[2 * QUIC_CID_MAX_LEN + 1];
	long count = 1;
	int s, b, n = 0;

	if (!service || !backend)
		return err_reply("cid needs \"service\" and \"backend\"");
	if (json_is_integer(jcount))
		count = (long)json_integer_value(jcount);
	if (count < 1 || count > 1000)
		return err_reply("count must be 1..1000");
	s = cookie_service(d, service, &svc, &err);
	if (s < 0)
		return err;
	b = daemon_find_backend(d, backend);
	if (b < 0 || d->cfg.backends[b].service != (size_t)s)
		return err_reply("no backend '%s' in service %s", backend,
				 service);
	bc = &d->cfg.backends[b];
	cids = json_array();
	for (long i = 0; i < count; i++) {
		n = quic_cid_encode(&svc, bc->server_id, NULL, cid);
		if (n < 0) {
			json_decref(cids);
			return err_reply("cannot make a connection ID: %s",
					 strerror(-n));
		}
		hex_bytes(hex, sizeof(hex), cid, (size_t)n, "");
		json_array_append_new(cids, json_string(hex));
	}
	return json_pack("{s:b, s:s, s:s, s:o, s:O, s:i, s:i, s:i, s:o}", "ok",
			 1, "service", service, "backend", backend, "server_id",
			 server_id_json(d, (size_t)b), "cid",
			 json_array_get(cids, 0), "length", n, "config_id",
			 svc.quic_config_id, "server_id_len",
			 svc.quic_server_id_len, "cids", cids);
}

/*
 * What steer_tc would do with a datagram of @family carrying a CID that
 * names backend @id (bpf/steer_tc.bpf.c, after the rs_cookies lookup).
 */
static json_t *cid_family_verdict(struct daemon *d, uint32_t svc_id,
				  uint32_t id, const char *name, int is_ipv6)
{
	struct rs_backend word;
	uint64_t cookie;
	char why[160];

	if (dp_get_backend(&d->dp, id, &word) || word.service != svc_id) {
		snprintf(why, sizeof(why),
			 "rs_cookies names backend id %u, not of this service",
			 id);
		return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter",
				 "cookie_unknown", "why", why);
	}
	if (word.state != RS_BACKEND_UP && word.state != RS_BACKEND_DRAIN) {
		snprintf(why, sizeof(why), "%s is DOWN: left to IP affinity",
			 name);
		return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter",
				 "cookie_down", "why", why);
	}
	if (dp_socket_cookie(&d->dp, rs_socket_slot(id, is_ipv6), &cookie)) {
		snprintf(why, sizeof(why),
			 "%s has no %s socket: left to IP affinity", name,
			 is_ipv6 ? "IPv6" : "IPv4");
		return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter",
				 "cookie_down", "why", why);
	}
	snprintf(why, sizeof(why), "steered to %s (%s)", name,
		 rs_backend_state_name(word.state));
	return json_pack("{s:b, s:s, s:s, s:s}", "steered", 1, "counter",
			 "cookie_hits", "backend", name, "why", why);
}

static json_t *cid_not_steered(const char *counter, const char *why)
{
	return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter", counter,
			 "why", why);
}

static json_t *cid_decode(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *text = req_str(req, "cid");
	json_t *err = NULL, *reply, *v4 = NULL, *v6 = NULL;
	char hex[2 * QUIC_CID_MAX_LEN + 1], sid[2 * RS_QUIC_MAX_SERVER_ID + 3];
	char nonce[2 * QUIC_CID_MAX_LEN + 1], why[200];
	const char *backend = NULL, *state = NULL;
	struct rs_cookie_key key = {0};
	struct quic_cid_info info;
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct rs_service svc;
	struct rs_cookie val;
	size_t len;
	int s, r;

	if (!service || !text)
		return err_reply("cid decode needs \"service\" and \"cid\"");
	r = parse_hex(text, cid, sizeof(cid), &len);
	if (r == -E2BIG)
		return err_reply("'%s' is longer than %d bytes: not a QUIC "
				 "connection ID",
				 text, QUIC_CID_MAX_LEN);
	if (r || len == 0)
		return err_reply("'%s' is not a hex connection ID", text);
	s = cookie_service(d, service, &svc, &err);
	if (s < 0)
		return err;
	if (quic_cid_decode(&svc, cid, len, &info))
		return err_reply("cannot decode '%s'", text);
	hex_bytes(hex, sizeof(hex), cid, len, "");
	snprintf(sid, sizeof(sid), "0x");
	hex_bytes(sid + 2, sizeof(sid) - 2, info.server_id, info.server_id_len,
		  "");
	hex_bytes(nonce, sizeof(nonce), info.nonce, info.nonce_len, "");

	switch (info.reason) {
	case QUIC_CID_WRONG_LENGTH:
		snprintf(why, sizeof(why),
			 "%zu bytes, not quic_cid_len %u: no connection ID "
			 "this service's backends issue",
			 len, svc.quic_cid_len);
		v4 = cid_not_steered("cookie_unknown", why);
		break;
	case QUIC_CID_UNROUTABLE:
		v4 = cid_not_steered("cookie_none",
				     "config id 7: the server chose not to be "
				     "routable by its CID");
		break;
	case QUIC_CID_WRONG_CONFIG:
		snprintf(why, sizeof(why),
			 "config id %u, the service uses %u: issued under "
			 "another configuration",
			 info.config_id, svc.quic_config_id);
		v4 = cid_not_steered("cookie_unknown", why);
		break;
	case QUIC_CID_ROUTABLE:
		key.service = svc.id;
		key.len = svc.quic_server_id_len;
		memcpy(key.server_id, info.server_id, info.server_id_len);
		if (dp_cookie_lookup(&d->dp, &key, &val)) {
			snprintf(why, sizeof(why),
				 "server ID %s names no backend of %s", sid,
				 service);
			v4 = cid_not_steered("cookie_unknown", why);
			break;
		}
		backend = backend_name_of(d, val.backend);
		for (size_t i = 0; i < d->cfg.n_backends; i++)
			if (d->bes[i].id == val.backend) {
				struct rs_backend w;

				daemon_backend_word(d, &d->bes[i], &w);
				state = rs_backend_state_name(w.state);
			}
		v4 = cid_family_verdict(d, svc.id, val.backend, backend, 0);
		v6 = cid_family_verdict(d, svc.id, val.backend, backend, 1);
		break;
	}
	if (!v6)
		v6 = json_deep_copy(v4);
	reply = json_pack("{s:b, s:s, s:s, s:i, s:i, s:i, s:i, s:s?, s:s, s:s,"
			  " s:s?, s:s?, s:o, s:o, s:i}",
			  "ok", 1, "service", service, "cid", hex, "length",
			  (int)len, "config_id", info.config_id,
			  "config_expected", svc.quic_config_id, "low_bits",
			  info.low_bits, "server_id",
			  info.server_id_len ? sid : NULL, "nonce", nonce,
			  "reason", quic_cid_reason_str(info.reason), "backend",
			  backend, "backend_state", state, "ipv4", v4, "ipv6",
			  v6, "tc_interfaces", (int)tc_attached_count(d));
	return reply;
}

static json_t *cmd_cid(struct daemon *d, json_t *req)
{
	const char *action = req_str(req, "action");

	if (!action || !strcmp(action, "new"))
		return cid_new(d, req);
	if (!strcmp(action, "decode"))
		return cid_decode(d, req);
	return err_reply("unknown cid action '%s' (new, decode)", action);
}

static json_t *cmd_reload(struct daemon *d, json_t *req)
{
	char errs[8192] = "";

	(void)req;
	rs_info("control: reload of %s", d->config_path);
	if (daemon_reload(d, errs, sizeof(errs))) {
		rs_err("reload refused: nothing changed");
		return err_reply("%s", errs);
	}
	return ok_reply();
}

static json_t *cmd_detach(struct daemon *d, json_t *req)
{
	(void)req;
	rs_info("control: detach requested");
	d->detach_requested = true;
	return ok_reply();
}

struct command {
	const char *name;
	json_t *(*fn)(struct daemon *d, json_t *req);
};

static const struct command commands[] = {
	{"version", cmd_version},   {"status", cmd_status},
	{"services", cmd_services}, {"backends", cmd_backends},
	{"backend", cmd_backend},   {"ring", cmd_ring},
	{"lookup", cmd_lookup},	    {"sim", cmd_sim},
	{"reload", cmd_reload},	    {"detach", cmd_detach},
	{"cid", cmd_cid},
};

json_t *control_dispatch(struct daemon *d, const char *cmd, json_t *req)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, cmd))
			return commands[i].fn(d, req);
	return err_reply("unknown command '%s'", cmd);
}

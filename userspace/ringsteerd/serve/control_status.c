// SPDX-License-Identifier: MIT
/*
 * What the daemon runs: its version, its programs and where they are
 * attached, its services with their rings and counters. Nothing here
 * changes anything, so these are the commands to poll.
 */
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "all_out.h"
#include "control_cmds_internal.h"
#include "kernel.h"
#include "tc_attach.h"
#include "listen_check.h"
#include "notify_socket.h"
#include <ringsteer/version.h>

static const char *proto_name(uint8_t p)
{
	return p == IPPROTO_UDP ? "udp" : "tcp";
}

json_t *cmd_version(struct daemon *d, json_t *req)
{
	(void)d;
	(void)req;
	return json_pack("{s:b, s:s, s:s, s:i}", "ok", 1, "version", RS_VERSION,
			 "commit", RS_COMMIT, "abi", RS_ABI_VERSION);
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
	const char *why = NULL, *cipher = dp_tc_cipher(&d->dp, &why);

	return json_pack("{s:s, s:i, s:s, s:i, s:i, s:o, s:s?, s:s?}", "name",
			 "steer_tc", "id", (int)dp_tc_program_id(&d->dp),
			 "attach", "tc ingress", "priority", RS_TC_PRIORITY,
			 "handle", RS_TC_HANDLE, "interfaces", ifs,
			 "quic_lb_aes", cipher, "quic_lb_aes_why",
			 why && why[0] ? why : NULL);
}

/*
 * Backends of cookie service @s whose cookies this kernel cannot honour
 * (a SO_REUSEPORT socket before 6.6; kernel.c).
 */
static json_t *cookie_refused(struct daemon *d, size_t s)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		if (d->st.cfg.backends[i].service == s &&
		    daemon_kernel_cookie_refused(d, i))
			json_array_append_new(
				arr, json_string(d->st.cfg.backends[i].name));
	return arr;
}

/*
 * Tracing: whether a trace runs (and whose), and the events it was sent
 * and lost since the maps were made (counters of the pinned rs_trace_cpu).
 */
static json_t *trace_json(struct daemon *d)
{
	struct rs_trace_cpu st = {0};
	struct rs_trace_ctl t = {0};

	dp_trace_stats(&d->dp, &st);
	dp_trace_ctl(&d->dp, &t);
	return json_pack("{s:b, s:i, s:I, s:I, s:I, s:I}", "enabled",
			 t.enabled != 0, "owner", (int)t.owner, "events",
			 (json_int_t)st.emitted, "lost",
			 (json_int_t)(st.lost_full + st.lost_rate), "lost_full",
			 (json_int_t)st.lost_full, "lost_rate",
			 (json_int_t)st.lost_rate);
}

/*
 * steer_sockops: where it is attached ([global] sockops_cgroup; auto by
 * default: where the backends' listeners are) and the backends whose listeners
 * are outside that cgroup (uncounted, no TCP sticky entries: load_reconcile.c).
 */
static json_t *sockops_json(struct daemon *d)
{
	json_t *outside = json_array();
	char attach[PATH_MAX + 32];

	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		if (d->st.bes[i].outside_sockops)
			json_array_append_new(
				outside,
				json_string(d->st.cfg.backends[i].name));
	if (!d->dp.sockops_cgroup[0] || !strcmp(d->dp.sockops_cgroup, "/"))
		snprintf(attach, sizeof(attach), "sockops (cgroup2 root%s)",
			 d->dp.sockops_auto ? ", auto" : "");
	else
		snprintf(attach, sizeof(attach), "sockops (cgroup %s%s)",
			 d->dp.sockops_cgroup,
			 d->dp.sockops_auto ? ", auto" : "");
	return json_pack(
		"{s:s, s:i, s:s, s:s, s:s, s:I, s:b, s:b, s:o}", "name",
		"steer_sockops", "id", (int)dp_sockops_program_id(&d->dp),
		"attach", attach, "link", RS_SOCKOPS_LINK_PIN_NAME, "cgroup",
		d->dp.sockops_cgroup[0] ? d->dp.sockops_cgroup : "/",
		"cgroup_id", (json_int_t)d->dp.sockops_cgroup_id, "auto",
		d->dp.sockops_auto, "attached",
		dp_sockops_program_id(&d->dp) != 0, "outside", outside);
}

json_t *cmd_status(struct daemon *d, json_t *req)
{
	json_t *svcs = json_array(), *progs = json_array();
	json_t *not_local = json_array();

	(void)req;
	json_array_append_new(
		progs, json_pack("{s:s, s:i, s:s, s:s}", "name", "steer_lookup",
				 "id", (int)dp_program_id(&d->dp), "attach",
				 "sk_lookup", "link", RS_LINK_PIN_NAME));
	/*
	 * Not attached (no cgroup2, no privilege): TCP sticky entries at the
	 * SYN and no load gauge; the daemon said why at start.
	 */
	json_array_append_new(progs, sockops_json(d));
	/* Fleet services run it as well as cookie ones (a fleet-only host). */
	if (daemon_tc_wanted(&d->st.cfg))
		json_array_append_new(progs, tc_program_json(d));
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		json_t *o = json_pack("{s:s, s:i, s:I, s:i, s:b}", "name",
				      d->st.cfg.services[s].name, "id",
				      (int)d->st.svcs[s].id, "generation",
				      (json_int_t)d->st.svcs[s].generation,
				      "points", (int)d->st.svcs[s].ring.npoints,
				      "compact", d->st.svcs[s].compact);

		bool all_out = service_all_out(d, s);

		if (d->st.cfg.services[s].cookie == RS_COOKIE_QUIC)
			json_object_set_new(o, "cookie_refused",
					    cookie_refused(d, s));
		/* Backends that take new connections; 0: all-out. */
		json_object_set_new(o, "taking",
				    json_integer(service_takers(d, s)));
		json_object_set_new(o, "all_out", json_boolean(all_out));
		json_object_set_new(
			o, "all_out_forced",
			json_boolean(all_out && d->st.svcs[s].all_out_forced));
		json_array_append_new(svcs, o);
	}
	/* Asked anew each time: a VIP keepalived moves comes and goes. */
	listen_check(d, false, not_local);
	return json_pack(
		"{s:b, s:s, s:i, s:f, s:s, s:s, s:o, s:o, s:I, s:I, "
		"s:o, s:o, s:o, s:o, s:i}",
		"ok", 1, "version", RS_VERSION, "pid", (int)getpid(),
		"uptime_s", ev_now(d->loop) - d->started, "config",
		d->config_path, "bpffs", d->st.cfg.bpffs, "programs", progs,
		"services", svcs, "reloads", (json_int_t)d->reloads,
		"reload_failures", (json_int_t)d->reload_failures, "kernel",
		daemon_kernel_json(d), "load_check",
		json_pack("{s:I, s:i, s:i, s:s?}", "passes",
			  (json_int_t)d->load.passes, "uncounted",
			  (int)d->load.uncounted, "unattributed",
			  (int)d->load.unattributed, "error",
			  d->load.last_err ? strerror(-d->load.last_err)
					   : NULL),
		"trace", trace_json(d), "listen_not_local", not_local,
		"notify_queued", (int)notify_socket_queued());
}

/* generations, its flow_idle and its counters (docs/operations.md). */
static void generations_json(json_t *o, const struct rs_service_conf *sc,
			     const struct rs_service_stats *st)
{
	json_t *stats = json_object_get(o, "stats");

	json_object_set_new(o, "generations", json_boolean(sc->generations));
	if (sc->generations)
		json_object_set_new(o, "flow_idle_s",
				    json_integer(sc->flow_idle_s));
	json_object_set_new(stats, "gen_draining",
			    json_integer((json_int_t)st->gen_draining));
	json_object_set_new(stats, "gen_handovers",
			    json_integer((json_int_t)st->gen_handovers));
	json_object_set_new(stats, "flows_full",
			    json_integer((json_int_t)st->flows_full));
}

static json_t *service_json(struct daemon *d, size_t s)
{
	const struct rs_service_conf *sc = &d->st.cfg.services[s];
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
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		nbe += d->st.cfg.backends[i].service == s;
	dp_service_stats(&d->dp, d->st.svcs[s].id, &st);
	o = json_pack(
		"{s:s, s:i, s:s, s:o, s:s, s:i, s:i, s:i, s:I, s:s, s:i, s:s,"
		" s:I, s:i, s:b, s:I, s:i, s:{s:I, s:I, s:I, s:I, s:I, s:I,"
		" s:I, s:I}}",
		"name", sc->name, "id", (int)d->st.svcs[s].id, "protocol",
		proto_name(sc->protocol), "listen", listens, "key",
		sc->key_policy == RS_KEY_SRC_IP_PORT ? "src-ip-port" : "src-ip",
		"prefix4", sc->prefix4, "prefix6", sc->prefix6, "vnodes",
		(int)sc->vnodes, "seed", (json_int_t)sc->seed, "fallback",
		sc->fallback == RS_FALLBACK_DROP ? "drop" : "pass",
		"sticky_ttl", (int)sc->sticky_ttl, "cookie",
		sc->cookie == RS_COOKIE_QUIC ? "quic" : "none", "generation",
		(json_int_t)d->st.svcs[s].generation, "points",
		(int)d->st.svcs[s].ring.npoints, "compact",
		d->st.svcs[s].compact, "rebuilds",
		(json_int_t)d->st.svcs[s].rebuilds, "backends", (int)nbe,
		"stats", "lookups", (json_int_t)st.lookups, "no_backend",
		(json_int_t)st.no_backend, "errors", (json_int_t)st.errors,
		"walk_limit", (json_int_t)st.walk_limit, "cookie_none",
		(json_int_t)st.cookie_none, "cookie_unknown",
		(json_int_t)st.cookie_unknown, "cookie_down",
		(json_int_t)st.cookie_down, "cookie_malformed",
		(json_int_t)st.cookie_malformed);
	{
		int64_t active = 0;

		dp_service_load(&d->dp, d->st.svcs[s].id, &active);
		json_object_set_new(o, "active",
				    json_integer((json_int_t)active));
		json_object_set_new(o, "balance_factor",
				    json_real(sc->balance_milli / 1000.0));
		json_object_set_new(json_object_get(o, "stats"), "reassigned",
				    json_integer((json_int_t)st.reassigned));
		json_object_set_new(json_object_get(o, "stats"), "held",
				    json_integer((json_int_t)st.held));
		json_object_set_new(o, "restart_grace_ms",
				    json_integer(sc->restart_grace_ms));
		generations_json(o, sc, &st);
	}
	if (sc->cookie == RS_COOKIE_QUIC) {
		json_object_set_new(o, "quic_server_id_len",
				    json_integer(sc->quic_server_id_len));
		json_object_set_new(o, "quic_cid_len",
				    json_integer(sc->quic_cid_len));
		json_object_set_new(o, "quic_config_id",
				    json_integer(sc->quic_config_id));
		json_object_set_new(o, "cookie_refused", cookie_refused(d, s));
	}
	return o;
}

json_t *cmd_services(struct daemon *d, json_t *req)
{
	json_t *arr = json_array();

	(void)req;
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		json_array_append_new(arr, service_json(d, s));
	return json_pack("{s:b, s:o}", "ok", 1, "services", arr);
}

// SPDX-License-Identifier: MIT
/*
 * `ringsteer fleet`: the fleet as this host sees it (members, table
 * version, agreement with etcd, forwarded packets), `fleet ready` for
 * routing daemons' health checks, and drains of a whole host.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

/* This host's place in the fleet, readiness, and the packets' fates. */
static void fleet_summary_lines(json_t *r)
{
	json_t *v;

	printf("fleet: this host %s (%s), table version %lld, etcd %s at "
	       "revision %lld: %s\n",
	       jstr(r, "name"),
	       json_is_true(json_object_get(r, "member")) ? "member"
							  : "not a member",
	       jint(r, "version"), jstr(r, "etcd"), jint(r, "latest_revision"),
	       json_is_true(json_object_get(r, "agrees")) ? "agrees"
							  : "DISAGREES");
	if (json_is_string(json_object_get(r, "error")))
		printf("  etcd error: %s\n", jstr(r, "error"));
	if (json_is_true(json_object_get(r, "ready")) &&
	    !strcmp(jstr(r, "etcd"), "down"))
		printf("ready for traffic while this host's lease surely "
		       "lives (%.1f s more without etcd)\n",
		       json_number_value(json_object_get(r, "lease_left")));
	else if (json_is_true(json_object_get(r, "ready")))
		printf("ready for traffic\n");
	else
		printf("NOT ready for traffic: %s\n", jstr(r, "not_ready"));
	v = json_object_get(r, "packets");
	if (v)
		printf("packets: forwarded %lld (%lld after their SYN, %lld by "
		       "QUIC connection ID), "
		       "received %lld, second chance %lld, hop limit %lld, "
		       "forged %lld, unauthenticated %lld, local socket %lld, "
		       "stray %lld, errors %lld, no address6 %lld\n",
		       jint(v, "forwarded"), jint(v, "flow_hits"),
		       jint(v, "cookie_forwarded"), jint(v, "received"),
		       jint(v, "second_chance"), jint(v, "hop_limit"),
		       jint(v, "forged"), jint(v, "unauthenticated"),
		       jint(v, "local_socket"), jint(v, "stray"),
		       jint(v, "errors"), jint(v, "no_address6"));
	if (json_is_string(json_object_get(r, "ipv6_warning")))
		warning("%s", jstr(r, "ipv6_warning"));
}

/* The members, and server IDs that two of them publish. */
static void fleet_members_table(json_t *r)
{
	json_t *v;
	size_t i;

	printf("%-24s %-16s %-24s %9s %8s %4s %s\n", "MEMBER", "ADDRESS",
	       "ADDRESS6", "CAPACITY", "KEYS", "WIRE", "STATE");
	json_array_foreach(json_object_get(r, "members"), i, v) printf(
		"%-24s %-16s %-24s %9lld %7.1f%% %4lld %s%s\n", jstr(v, "name"),
		jstr(v, "address"),
		json_is_string(json_object_get(v, "address6"))
			? jstr(v, "address6")
			: "-",
		jint(v, "capacity"), 100 * jnum(v, "keys_share"),
		jint(v, "wire"),
		json_is_true(json_object_get(v, "drained")) ? "drained"
							    : "active",
		json_is_true(json_object_get(v, "self")) ? " (this host)" : "");
	json_array_foreach(json_object_get(r, "cid_conflicts"), i, v) printf(
		"CONFLICT: service %s server ID %s is published by %s "
		"and %s (its packets go by the table)\n",
		jstr(v, "service"), jstr(v, "server_id"),
		json_string_value(
			json_array_get(json_object_get(v, "members"), 0)),
		json_string_value(
			json_array_get(json_object_get(v, "members"), 1)));
}

static void fleet_table(json_t *r)
{
	/* A drain or undrain answers with what it did, not the fleet. */
	if (!json_object_get(r, "members")) {
		printf("%s %s\n", jstr(r, "action"), jstr(r, "name"));
		return;
	}
	fleet_summary_lines(r);
	fleet_members_table(r);
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * `fleet ready [SECONDS]`: exit 0 once this host may be given traffic
 * (added to the router's ECMP group), polling up to SECONDS; for scripts
 * and routing daemons' health checks.
 */
static int fleet_ready(const char *wait)
{
	double deadline, per_call = call_timeout;
	long secs = 0;

	if (wait && parse_uint(wait, 3600, &secs))
		return fail("bad wait '%s' (seconds, 0..3600)", wait);
	deadline = now_mono() + (double)secs;
	/* A daemon still starting (no control socket yet) is not ready. */
	call_quiet_unreachable = secs > 0;
	for (;;) {
		/* A daemon that does not answer costs the wait, not more. */
		double left = deadline - now_mono();
		json_t *r;
		bool ok, ready;
		char why[160];

		call_timeout =
			secs && left < per_call ? fmax(left, 0.1) : per_call;
		r = call(json_pack("{s:s, s:s}", "cmd", "fleet", "action",
				   "status"));
		ok = r && json_is_true(json_object_get(r, "ok"));
		ready = ok && json_is_true(json_object_get(r, "ready"));
		snprintf(why, sizeof(why), "%s",
			 !r   ? "ringsteerd does not answer"
			 : ok ? jstr(r, "not_ready")
			      : jstr(r, "error"));
		json_decref(r);
		if (ready) {
			if (!json_out)
				printf("ready\n");
			return 0;
		}
		/* A refusal (fleet mode off) will not change by waiting. */
		if ((r && !ok) || now_mono() >= deadline) {
			if (!json_out || !r)
				fail("not ready: %s", why);
			return 1;
		}
		usleep(100 * 1000);
	}
}

int cmd_fleet(int argc, char **argv)
{
	json_t *req;

	if ((argc == 2 || argc == 3) && !strcmp(argv[1], "ready"))
		return fleet_ready(argc == 3 ? argv[2] : NULL);
	if (argc == 2 && !strcmp(argv[1], "status"))
		req = json_pack("{s:s, s:s}", "cmd", "fleet", "action",
				"status");
	else if (argc == 3 &&
		 (!strcmp(argv[1], "drain") || !strcmp(argv[1], "undrain")))
		req = json_pack("{s:s, s:s, s:s}", "cmd", "fleet", "action",
				argv[1], "name", argv[2]);
	else
		return fail("usage: ringsteer fleet status | ready [SECONDS] | "
			    "drain HOST | undrain HOST");
	return print_reply(call(req), fleet_table);
}

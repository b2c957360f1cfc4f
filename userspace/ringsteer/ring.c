// SPDX-License-Identifier: MIT
/*
 * A service's ring and what it decides: `ringsteer ring` (its points, its
 * shares, a forced swap), `ringsteer lookup` (which backend one client
 * gets now, and why) and `ringsteer sim` (how many clients a change would
 * move; it changes nothing). The daemon computes; these print.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <ringsteer/abi.h>

#include "cli.h"
#include "config.h"

static void ring_show_table(json_t *r)
{
	json_t *v;
	size_t i;

	printf("service %s, generation %lld, %lld points\n", jstr(r, "service"),
	       jint(r, "generation"), jint(r, "points"));
	printf("%8s  %-18s  %-16s %7s\n", "INDEX", "POSITION", "BACKEND",
	       "ORDINAL");
	json_array_foreach(json_object_get(r, "ring"), i, v)
		printf("%8lld  %-18s  %-16s %7lld\n", jint(v, "index"),
		       jstr(v, "pos"), jstr(v, "backend"), jint(v, "ordinal"));
}

static void ring_stats_table(json_t *r)
{
	json_t *v;
	size_t i;

	printf("service %s, generation %lld, %lld points%s\n",
	       jstr(r, "service"), jint(r, "generation"), jint(r, "points"),
	       json_is_true(json_object_get(r, "compact"))
		       ? " (without unavailable backends)"
		       : "");
	printf("%-16s %-5s %6s %7s %7s %8s\n", "BACKEND", "STATE", "WEIGHT",
	       "POINTS", "ACTIVE", "SHARE");
	json_array_foreach(json_object_get(r, "backends"), i, v) printf(
		"%-16s %-5s %6lld %7lld %7lld %7.2f%%\n", jstr(v, "name"),
		jstr(v, "state"), jint(v, "weight"), jint(v, "points"),
		jint(v, "active_points"), 100 * jnum(v, "share"));
	printf("backends taking new clients: %lld, CV %.3f, max/mean %.3f\n",
	       jint(r, "taking_new"), jnum(r, "cv"), jnum(r, "max_mean"));
}

static void ring_rebuild_done(json_t *r)
{
	printf("ring swapped: generation %lld\n", jint(r, "generation"));
}

int cmd_ring(int argc, char **argv)
{
	void (*table)(json_t *) = NULL;

	if (argc != 3)
		return fail("usage: ringsteer ring show|stats|rebuild SERVICE");
	if (!strcmp(argv[1], "show"))
		table = ring_show_table;
	else if (!strcmp(argv[1], "stats"))
		table = ring_stats_table;
	else if (!strcmp(argv[1], "rebuild"))
		table = ring_rebuild_done;
	else
		return fail("unknown ring command '%s' (show, stats, rebuild)",
			    argv[1]);
	return print_reply(
		call(json_pack("{s:s, s:s, s:s}", "cmd", "ring", "action",
			       argv[1], "service", argv[2])),
		table);
}

/* In a fleet: which host owns the client, before this host's ring. */
static void lookup_owner_line(json_t *r)
{
	json_t *o = json_object_get(r, "owner");

	if (!json_is_string(o))
		printf("owner host: none (steered where it arrives)\n");
	else if (json_is_true(json_object_get(r, "owner_is_this_host")))
		printf("owner host: %s (this host)\n", json_string_value(o));
	else
		printf("owner host: %s (forwarded there; its own ring "
		       "picks the backend: below is this host's "
		       "ring)\n",
		       json_string_value(o));
}

/* --kernel: the loaded program's answer beside the replica's. */
static void lookup_kernel_line(json_t *r)
{
	json_t *k = json_object_get(r, "kernel");
	json_t *b = json_object_get(k, "backend");

	if (!k)
		return;
	if (json_is_string(json_object_get(k, "error"))) {
		printf("kernel: not asked (%s)\n", jstr(k, "error"));
		return;
	}
	printf("kernel: %s (%s)%s\n",
	       json_is_string(b) ? json_string_value(b) : "no backend",
	       jstr(k, "verdict"),
	       json_is_true(json_object_get(k, "agrees"))
		       ? ", agrees"
		       : ", DIFFERS from the replica above");
}

static void lookup_table(json_t *r)
{
	json_t *v;
	size_t i;

	if (json_is_null(json_object_get(r, "backend"))) {
		printf("no backend available (fallback %s)\n",
		       jstr(r, "fallback"));
		lookup_kernel_line(r);
		return;
	}
	if (json_object_get(r, "owner"))
		lookup_owner_line(r);
	printf("%s  (%s", jstr(r, "backend"), jstr(r, "reason"));
	if (!strcmp(jstr(r, "reason"), "sticky"))
		printf(", idle %.1fs", jnum(r, "sticky_idle_s"));
	else if (jint(r, "walked"))
		printf("; primary %s, walked past %lld points",
		       jstr(r, "primary"), jint(r, "walked"));
	printf("; hash %s)\n", jstr(r, "hash"));
	if (json_is_string(json_object_get(r, "sticky_over_bound")))
		printf("  sticky backend %s is at its bound: the client "
		       "spills, "
		       "its entry stays\n",
		       jstr(r, "sticky_over_bound"));
	if (json_is_true(json_object_get(r, "primary_over_bound")))
		printf("  primary %s is at its bound (%lld active, bound "
		       "%lld)%s\n",
		       jstr(r, "primary"), jint(r, "primary_active"),
		       jint(r, "primary_bound"),
		       json_is_true(json_object_get(r, "all_at_bound"))
			       ? "; every backend is: least loaded wins"
			       : "");
	json_array_foreach(json_object_get(r, "skipped"), i, v) printf(
		"  skipped %s: %s\n", jstr(v, "backend"), jstr(v, "why"));
	lookup_kernel_line(r);
}

int cmd_lookup(int argc, char **argv)
{
	bool kernel = argc > 1 && !strcmp(argv[argc - 1], "--kernel");
	json_t *req;
	long port;

	argc -= kernel;
	if (argc != 3 && argc != 4)
		return fail("usage: ringsteer lookup SERVICE CLIENT-IP [PORT] "
			    "[--kernel]");
	req = json_pack("{s:s, s:s, s:s, s:b}", "cmd", "lookup", "service",
			argv[1], "client", argv[2], "kernel", kernel);
	if (argc == 4) {
		if (parse_uint(argv[3], 65535, &port)) {
			json_decref(req);
			return fail("bad port '%s'", argv[3]);
		}
		json_object_set_new(req, "port", json_integer(port));
	}
	return print_reply(call(req), lookup_table);
}

static void sim_table(json_t *r)
{
	printf("%s %s in %s: %.2f%% of clients would move\n", jstr(r, "action"),
	       jstr(r, "backend"), jstr(r, "service"),
	       100 * jnum(r, "moved_fraction"));
	printf("sticky clients: %lld; %lld would move now (their backend "
	       "goes), %lld others once idle past the TTL\n",
	       jint(r, "sticky_clients"), jint(r, "sticky_moving"),
	       jint(r, "sticky_owner_changes") - jint(r, "sticky_moving"));
}

int cmd_sim(int argc, char **argv)
{
	json_t *req;
	char name[RS_NAME_MAX];
	long w = 1;
	char *colon;

	if (argc < 4)
		return fail("usage: ringsteer sim SERVICE add NAME[:W] | "
			    "remove NAME | weight NAME W");
	snprintf(name, sizeof(name), "%s", argv[3]);
	if (!strcmp(argv[2], "add") && argc == 4) {
		colon = strchr(name, ':');
		if (colon) {
			*colon = '\0';
			if (parse_uint(colon + 1, RS_MAX_WEIGHT, &w))
				return fail("bad weight in '%s'", argv[3]);
		}
	} else if (!strcmp(argv[2], "weight") && argc == 5) {
		if (parse_uint(argv[4], RS_MAX_WEIGHT, &w))
			return fail("bad weight '%s'", argv[4]);
	} else if (strcmp(argv[2], "remove") || argc != 4) {
		return fail("usage: ringsteer sim SERVICE add NAME[:W] | "
			    "remove NAME | weight NAME W");
	}
	req = json_pack("{s:s, s:s, s:s, s:s, s:i}", "cmd", "sim", "service",
			argv[1], "action", argv[2], "name", name, "weight",
			(int)w);
	return print_reply(call(req), sim_table);
}

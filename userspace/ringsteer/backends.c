// SPDX-License-Identifier: MIT
/*
 * `ringsteer backends` (what each backend is and carries) and `ringsteer
 * backend` (the operator's actions on one: drain, undrain, up, down,
 * weight). The daemon refuses an action that leaves a service with no
 * backend taking new connections unless --force is given.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "config.h"

/* Backends of cookie services: their server IDs and cookie hits. */
static void cookie_backends_table(json_t *r)
{
	bool header = false;
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(r, "backends"), i, v)
	{
		if (!json_is_string(json_object_get(v, "server_id")))
			continue;
		if (!header)
			printf("\n%-14s %-10s %-12s %12s\n", "BACKEND",
			       "SERVICE", "SERVER_ID", "COOKIE_HITS");
		header = true;
		printf("%-14s %-10s %-12s %12lld\n", jstr(v, "name"),
		       jstr(v, "service"), jstr(v, "server_id"),
		       jint(v, "cookie_hits"));
	}
}

/*
 * generations = on: one line per socket of each address, oldest first,
 * each by its number (kept while older ones go).
 */
static void generations_lines(json_t *v)
{
	json_t *s, *g;
	size_t i, k;

	json_array_foreach(json_object_get(v, "sockets"), i, s)
	{
		json_array_foreach(json_object_get(s, "generations"), k, g)
			printf("  generation %lld: cookie %lld pid %lld %-8s "
			       "%lld flows\n",
			       jint(g, "generation"), jint(g, "cookie"),
			       jint(g, "pid"), jstr(g, "state"),
			       jint(g, "flows"));
	}
}

static void backends_table(json_t *r)
{
	json_t *v;
	size_t i;

	/* POINTS: ring points in use; ACTIVE: connections held now. */
	printf("%-14s %-10s %-22s %-5s %-5s %-6s %6s %6s %7s %10s %7s %6s  "
	       "%s\n",
	       "BACKEND", "SERVICE", "ADDRESS", "STATE", "OP", "HEALTH",
	       "WEIGHT", "POINTS", "SHARE", "ASSIGNED", "ACTIVE", "BOUND",
	       "LAST CHECK");
	json_array_foreach(json_object_get(r, "backends"), i, v)
	{
		json_t *a = json_array_get(json_object_get(v, "addresses"), 0);
		/* An empty SOCKMAP slot is DOWN to the data plane. */
		bool sock = json_is_true(json_object_get(v, "has_socket"));
		json_t *owner = json_object_get(v, "owner");
		char bound[24] = "-", note[96] = "";

		/* "-": no bound (balance_factor off, or not UP). */
		if (json_is_integer(json_object_get(v, "bound")))
			snprintf(bound, sizeof(bound), "%lld",
				 jint(v, "bound"));
		/* A socket of another user is there, and is not taken. */
		if (!sock &&
		    json_is_integer(json_object_get(owner, "refused_uid")))
			snprintf(note, sizeof(note),
				 " (no socket: uid %lld's refused, not the "
				 "owner's)",
				 jint(owner, "refused_uid"));
		else if (!sock &&
			 json_is_true(json_object_get(v, "restarting")))
			snprintf(note, sizeof(note),
				 " (restarting: its flows wait for it)");
		else if (!sock)
			snprintf(note, sizeof(note),
				 " (no socket: not serving)");
		printf("%-14s %-10s %-22s %-5s %-5s %-6s %6lld %6lld %6.1f%% "
		       "%10lld %7lld %6s  %s%s\n",
		       jstr(v, "name"), jstr(v, "service"),
		       a ? json_string_value(a) : "-",
		       sock ? jstr(v, "state") : "DOWN", jstr(v, "op"),
		       jstr(v, "health"), jint(v, "weight"),
		       jint(v, "active_points"), 100 * jnum(v, "share"),
		       jint(v, "assigned"), jint(v, "active"), bound,
		       jstr(v, "last_check"), note);
		generations_lines(v);
	}
	cookie_backends_table(r);
}

/*
 * The operator's state in force as the commands that set it, one per
 * line: what a rollback to a release that cannot read this one's maps
 * replays with its own CLI (debian/ringsteer.prerm), and a record an
 * operator can keep. Health is not operator state: it is not listed.
 */
static void backends_commands(json_t *r)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(r, "backends"), i, v)
	{
		const char *op = jstr(v, "op");

		if (!strcmp(op, "drain") || !strcmp(op, "down"))
			printf("backend %s %s --force\n", op, jstr(v, "name"));
		if (json_is_true(json_object_get(v, "weight_override")))
			printf("backend weight %s %lld --force\n",
			       jstr(v, "name"), jint(v, "weight"));
	}
}

int cmd_backends(int argc, char **argv)
{
	json_t *req = json_pack("{s:s}", "cmd", "backends");
	bool commands = argc > 1 && !strcmp(argv[argc - 1], "--commands");

	argc -= commands;
	if (argc > 2) {
		json_decref(req);
		return fail("usage: ringsteer backends [SERVICE] [--commands]");
	}
	if (argc == 2)
		json_object_set_new(req, "service", json_string(argv[1]));
	return print_reply(call(req),
			   commands ? backends_commands : backends_table);
}

/* What the backend is after the operator's action. */
static void backend_done(json_t *r)
{
	printf("%s: state %s (operator %s, health %s), weight %lld\n",
	       jstr(r, "name"), jstr(r, "state"), jstr(r, "op"),
	       jstr(r, "health"), jint(r, "weight"));
}

int cmd_backend(int argc, char **argv)
{
	bool force = take_force(&argc, argv);
	json_t *req;
	long w;

	if (argc < 3)
		return fail("usage: ringsteer backend "
			    "drain|undrain|up|down NAME | weight NAME W "
			    "[--force]");
	req = json_pack("{s:s, s:s, s:s, s:b}", "cmd", "backend", "action",
			argv[1], "name", argv[2], "force", force);
	if (!strcmp(argv[1], "weight")) {
		if (argc != 4 || parse_uint(argv[3], RS_MAX_WEIGHT, &w)) {
			json_decref(req);
			return fail("usage: ringsteer backend weight NAME "
				    "0..%d",
				    RS_MAX_WEIGHT);
		}
		json_object_set_new(req, "weight", json_integer(w));
	} else if (argc != 3) {
		json_decref(req);
		return fail("usage: ringsteer backend %s NAME", argv[1]);
	}
	return print_reply(call(req), backend_done);
}

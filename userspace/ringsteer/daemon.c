// SPDX-License-Identifier: MIT
/*
 * Commands on the daemon as a whole: `ringsteer reload` (re-read the
 * configuration; systemd's ExecReload), `ringsteer detach` (remove the
 * data plane, then stop) and `ringsteer version` (the CLI's and the
 * daemon's, which may differ during an upgrade).
 */
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include <ringsteer/version.h>

#include "cli.h"

static void done_ok(json_t *r)
{
	json_t *v;
	size_t i;

	/* A reload that took but left something to fix (a listen not local). */
	json_array_foreach(json_object_get(r, "warnings"), i, v)
		warning("%s", json_string_value(v));
	printf("ok\n");
}

int cmd_reload(int argc, char **argv)
{
	bool force = take_force(&argc, argv);

	if (argc != 1)
		return fail("usage: ringsteer reload [--force]");
	return print_reply(
		call(json_pack("{s:s, s:b}", "cmd", "reload", "force", force)),
		done_ok);
}

int cmd_detach(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return print_reply(call(json_pack("{s:s}", "cmd", "detach")), done_ok);
}

static void version_table(json_t *r)
{
	puts(RS_VERSION_LINE("ringsteer"));
	printf("ringsteerd %s (commit %s, abi %lld)\n", jstr(r, "version"),
	       jstr(r, "commit"), jint(r, "abi"));
}

/* The CLI's version is news even when no daemon answers: exit 0. */
int cmd_version(int argc, char **argv)
{
	json_t *reply;

	(void)argc;
	(void)argv;
	reply = call(json_pack("{s:s}", "cmd", "version"));
	if (!reply && !json_out) {
		puts(RS_VERSION_LINE("ringsteer"));
		printf("ringsteerd not reachable\n");
		return 0;
	}
	return print_reply(reply, version_table);
}

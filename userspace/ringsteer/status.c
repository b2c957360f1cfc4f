// SPDX-License-Identifier: MIT
/*
 * `ringsteer status` and `ringsteer services`: the daemon, its programs
 * and the kernel it runs on, then the services. When the daemon does not
 * answer, status reads what the pins say instead (pins.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "config.h"
#include "dataplane.h"
#include "links.h"
#include "pins.h"

/* "program steer_tc id 9 at tc ingress (pref 1 handle 0x5253) on ..." */
static void tc_program_line(json_t *v)
{
	json_t *ifs = json_object_get(v, "interfaces"), *f;
	size_t k;

	printf("program %s id %lld at %s (pref %lld handle 0x%llx) on ",
	       jstr(v, "name"), jint(v, "id"), jstr(v, "attach"),
	       jint(v, "priority"), jint(v, "handle"));
	if (!json_array_size(ifs))
		printf("no interface ([global] interfaces is empty)");
	json_array_foreach(ifs, k, f)
	{
		const char *state = jstr(f, "state");

		printf("%s%s", k ? ", " : "", jstr(f, "name"));
		if (!strcmp(state, "attached"))
			printf(" (ifindex %lld)", jint(f, "ifindex"));
		else if (!strcmp(state, "error"))
			printf(" (not attached: %s)", jstr(f, "error"));
		else
			printf(" (%s)", state);
	}
	putchar('\n');
	/* How QUIC-LB encrypted CIDs are decrypted (docs/quic.md). */
	if (json_object_get(v, "quic_lb_aes")) {
		printf("quic-lb aes %s", jstr(v, "quic_lb_aes"));
		if (json_is_string(json_object_get(v, "quic_lb_aes_why")))
			printf(" (%s)", jstr(v, "quic_lb_aes_why"));
		putchar('\n');
	}
}

/* One line a program, how it is attached, and sockets it cannot see. */
static void program_lines(json_t *r)
{
	json_t *v, *o;
	size_t i, k;

	json_array_foreach(json_object_get(r, "programs"), i, v)
	{
		if (json_object_get(v, "interfaces"))
			tc_program_line(v);
		else if (json_object_get(v, "attached") &&
			 !json_is_true(json_object_get(v, "attached")))
			printf("program %s NOT attached (no load gauge; TCP "
			       "sticky entries at the SYN)\n",
			       jstr(v, "name"));
		else
			printf("program %s id %lld attached via %s (pinned "
			       "%s)\n",
			       jstr(v, "name"), jint(v, "id"),
			       jstr(v, "attach"), jstr(v, "link"));
		json_array_foreach(json_object_get(v, "outside"), k, o)
			warning("backend %s listens from outside "
				"sockops_cgroup %s: its connections are not "
				"counted nor made sticky",
				json_string_value(o), jstr(v, "cgroup"));
	}
}

/* "kernel 6.1.0-57-amd64: ... tc_sk_assign_reuseport no" and warnings. */
static void kernel_lines(json_t *k)
{
	const char *name;
	json_t *v;
	size_t i;

	if (!json_is_object(k))
		return;
	printf("kernel %s:", jstr(k, "release"));
	json_object_foreach(json_object_get(k, "features"), name, v)
		printf(" %s %s", name,
		       json_is_null(v)	 ? "?"
		       : json_is_true(v) ? "yes"
					 : "NO");
	putchar('\n');
	json_array_foreach(json_object_get(k, "warnings"), i, v)
		warning("%s", json_string_value(v));
}

/* The services' ring generations, and those no backend would take. */
static void status_services_table(json_t *r)
{
	json_t *v;
	size_t i;

	printf("%-16s %4s %11s %8s %9s\n", "SERVICE", "ID", "GENERATION",
	       "POINTS", "TAKING");
	json_array_foreach(json_object_get(r, "services"), i, v)
		printf("%-16s %4lld %11lld %8lld %9lld%s\n", jstr(v, "name"),
		       jint(v, "id"), jint(v, "generation"), jint(v, "points"),
		       jint(v, "taking"),
		       json_is_true(json_object_get(v, "compact"))
			       ? "  (without unavailable backends)"
			       : "");
	json_array_foreach(json_object_get(r, "services"), i,
			   v) if (json_is_true(json_object_get(v, "all_out")))
		printf("ALL OUT: service %s has no backend that takes "
		       "new connections%s\n",
		       jstr(v, "name"),
		       json_is_true(json_object_get(v, "all_out_forced"))
			       ? " (forced by the operator)"
			       : "");
}

static void status_table(json_t *r)
{
	json_t *v;
	size_t i;

	printf("ringsteerd %s, pid %lld, up %.0fs, config %s\n",
	       jstr(r, "version"), jint(r, "pid"), jnum(r, "uptime_s"),
	       jstr(r, "config"));
	printf("pins %s, reloads %lld (%lld refused)\n", jstr(r, "bpffs"),
	       jint(r, "reloads"), jint(r, "reload_failures"));
	program_lines(r);
	if (json_object_get(r, "sk_lookup"))
		links_print(json_object_get(r, "sk_lookup"));
	kernel_lines(json_object_get(r, "kernel"));
	v = json_object_get(r, "trace");
	if (v)
		printf("trace %s, %lld events sent, %lld lost (%lld buffer "
		       "full, %lld over the rate)\n",
		       json_is_true(json_object_get(v, "enabled")) ? "running"
								   : "off",
		       jint(v, "events"), jint(v, "lost"), jint(v, "lost_full"),
		       jint(v, "lost_rate"));
	json_array_foreach(json_object_get(r, "listen_not_local"), i, v)
		warning("%s", json_string_value(v));
	status_services_table(r);
}

/*
 * The bpffs of -c FILE or of the default file when readable, and whether
 * it runs a fleet (the maps a start sizes by it). Without a readable
 * file: the default bpffs, sized for everything, as the daemon's default.
 */
static void config_bpffs(char *buf, size_t len, bool *fleet)
{
	const char *path =
		cli_config_file ? cli_config_file : RS_DEFAULT_CONFIG;
	struct rs_config cfg;
	char errs[256];

	snprintf(buf, len, "%s", RS_DEFAULT_BPFFS);
	*fleet = true;
	if (access(path, R_OK) ||
	    rs_config_load(path, &cfg, errs, sizeof(errs)))
		return;
	snprintf(buf, len, "%s", cfg.bpffs);
	*fleet = cfg.fleet.enabled;
	/* The flow table's size is part of the pins' layout too. */
	dp_size_flows(cfg.flow_table);
	rs_config_free(&cfg);
}

/* Nothing pinned under @bpffs, or the pins unreadable (@err): why. */
static void no_pins(const char *bpffs, int err)
{
	if (json_out) {
		json_t *p = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "daemon",
				      "unreachable", "bpffs", bpffs, "pins",
				      strerror(err));

		json_dumpf(p, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(p);
	} else if (err == ENOENT) {
		json_t *links = links_json(0, 0);

		/* Not "nothing steers" while another data plane does. */
		if (links_foreign(links))
			printf("ringsteerd is not running and nothing is "
			       "pinned under %s, but another ringsteer data "
			       "plane steers in this netns:\n",
			       bpffs);
		else
			printf("ringsteerd is not running and nothing is "
			       "pinned under %s: nothing steers\n",
			       bpffs);
		if (json_array_size(links) || json_is_string(links))
			links_print(links);
		json_decref(links);
	} else {
		printf("ringsteerd is not running; the pins under %s "
		       "cannot be read (%s): run as root to see "
		       "whether they still steer\n",
		       bpffs, strerror(err));
	}
}

/*
 * The daemon down is not steering down: the pinned link goes on. Say
 * what the pins hold rather than only that nobody answers. Still exit 1:
 * whatever watches `ringsteer status` must see the daemon is gone.
 */
static int status_from_pins(void)
{
	char bpffs[PATH_MAX];
	bool fleet;
	json_t *p;

	config_bpffs(bpffs, sizeof(bpffs), &fleet);
	p = pins_read(bpffs,
		      cli_config_file ? cli_config_file : RS_DEFAULT_CONFIG,
		      fleet);
	if (!p) {
		no_pins(bpffs, errno);
		return 1;
	}
	if (json_out) {
		json_t *o = json_pack("{s:b, s:s, s:O}", "ok", 0, "daemon",
				      "unreachable", "pinned", p);

		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(o);
	} else {
		pins_print(p);
	}
	json_decref(p);
	return 1;
}

/*
 * Every sk_lookup program of the netns the daemon's steer_lookup is
 * attached in (which need not be ours), the daemon's marked "ours".
 */
static json_t *daemon_links(json_t *r)
{
	json_int_t id = 0;
	json_t *v, *links;
	size_t i;

	json_array_foreach(json_object_get(r, "programs"), i, v)
	{
		if (!strcmp(jstr(v, "attach"), "sk_lookup"))
			id = jint(v, "id");
	}
	links = links_json(links_netns_of_prog((uint32_t)id), 0);
	json_array_foreach(links, i, v) json_object_set_new(
		v, "ours", json_boolean(jint(v, "prog_id") == id));
	return links;
}

int cmd_status(int argc, char **argv)
{
	json_t *reply;

	(void)argc;
	(void)argv;
	reply = call(json_pack("{s:s}", "cmd", "status"));
	if (!reply && call_unreachable)
		return status_from_pins();
	if (json_is_true(json_object_get(reply, "ok")))
		json_object_set_new(reply, "sk_lookup", daemon_links(reply));
	return print_reply(reply, status_table);
}

/* Cookie services only: the QUIC parameters and why datagrams were left. */
static void cookie_services_table(json_t *r)
{
	bool header = false;
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(r, "services"), i, v)
	{
		json_t *st = json_object_get(v, "stats");

		if (strcmp(jstr(v, "cookie"), "quic"))
			continue;
		if (!header)
			printf("\n%-14s %-6s %7s %7s %6s %10s %10s %10s "
			       "%10s\n",
			       "SERVICE", "COOKIE", "SID_LEN", "CID_LEN",
			       "CFG_ID", "NONE", "UNKNOWN", "DOWN",
			       "MALFORMED");
		header = true;
		printf("%-14s %-6s %7lld %7lld %6lld %10lld %10lld %10lld "
		       "%10lld\n",
		       jstr(v, "name"), "quic", jint(v, "quic_server_id_len"),
		       jint(v, "quic_cid_len"), jint(v, "quic_config_id"),
		       jint(st, "cookie_none"), jint(st, "cookie_unknown"),
		       jint(st, "cookie_down"), jint(st, "cookie_malformed"));
	}
}

static void services_table(json_t *r)
{
	json_t *v, *l;
	size_t i, k;

	printf("%-14s %-4s %-28s %-11s %6s %5s %5s %10s %8s %7s %7s\n",
	       "SERVICE", "PROT", "LISTEN", "KEY", "VNODES", "BACK", "GEN",
	       "LOOKUPS", "NO_BACK", "ACTIVE", "BALANCE");
	json_array_foreach(json_object_get(r, "services"), i, v)
	{
		json_t *st = json_object_get(v, "stats");
		char listen[256] = "";

		json_array_foreach(json_object_get(v, "listen"), k, l)
		{
			if (k)
				strncat(listen, ",",
					sizeof(listen) - strlen(listen) - 1);
			strncat(listen, json_string_value(l),
				sizeof(listen) - strlen(listen) - 1);
		}
		char balance[16] = "off";

		if (jnum(v, "balance_factor") > 0)
			snprintf(balance, sizeof(balance), "%.3g",
				 jnum(v, "balance_factor"));
		printf("%-14s %-4s %-28s %-11s %6lld %5lld %5lld %10lld "
		       "%8lld %7lld %7s\n",
		       jstr(v, "name"), jstr(v, "protocol"), listen,
		       jstr(v, "key"), jint(v, "vnodes"), jint(v, "backends"),
		       jint(v, "generation"), jint(st, "lookups"),
		       jint(st, "no_backend"), jint(v, "active"), balance);
	}
	cookie_services_table(r);
}

int cmd_services(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return print_reply(call(json_pack("{s:s}", "cmd", "services")),
			   services_table);
}

// SPDX-License-Identifier: MIT
/*
 * ringsteer: the operator's CLI, in the style of bpftool and iproute2. It
 * sends one JSON request to ringsteerd's control socket and prints the
 * reply as a table, or as JSON with -j. This file reads the options and
 * dispatches to the command's file; cli.h says which file has what.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include <ringsteer/version.h>

bool json_out;
const char *cli_config_file;

struct cmd {
	const char *name;
	const char *usage;
	const char *help;
	int (*run)(int argc, char **argv);
};

static const struct cmd cmds[] = {
	{"status", "status", "daemon, programs, services, ring generations",
	 cmd_status},
	{"services", "services", "services with listens and counters",
	 cmd_services},
	{"backends", "backends [SERVICE] [--commands]",
	 "backends: state, health, weight, share, connections, last check; "
	 "--commands: the operator's drains, downs and weights as commands",
	 cmd_backends},
	{"backend",
	 "backend drain|undrain|up|down NAME | weight NAME W [--force]",
	 "operator state (distinct from health) and weight, at once; --force: "
	 "even if no backend of the service would take new connections",
	 cmd_backend},
	{"ring", "ring show|stats|rebuild SERVICE",
	 "points in order; shares, CV, max/mean; force a swap", cmd_ring},
	{"lookup", "lookup SERVICE CLIENT-IP [PORT] [--kernel]",
	 "which backend this client gets now, and why", cmd_lookup},
	{"sim", "sim SERVICE add NAME[:W] | remove NAME | weight NAME W",
	 "fraction of clients a change would move; changes nothing", cmd_sim},
	{"cid",
	 "cid [--config ID] SERVICE BACKEND [COUNT] | cid decode SERVICE HEX",
	 "QUIC connection IDs: make one for a backend; explain one", cmd_cid},
	{"fleet", "fleet status | ready [SECONDS] | drain HOST | undrain HOST",
	 "fleet members, table version, agreement; drain a host fleet-wide",
	 cmd_fleet},
	{"reload", "reload [--force]",
	 "re-read the configuration (refused if invalid, or if it leaves a "
	 "service with no backend taking new connections, without --force)",
	 cmd_reload},
	{"detach", "detach",
	 "remove the data plane (links, TC filters, pins), then stop "
	 "ringsteerd; fails, and ringsteerd steers on, if that fails",
	 cmd_detach},
	{"trace",
	 "trace [SERVICE] [--client A[/L]] [--backend B] [--reason R] ...",
	 "the kernel's decisions as they happen (trace --help)", cmd_trace},
	{"version", "version", "versions of the CLI and the daemon",
	 cmd_version},
};

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

int parse_uint(const char *s, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || !*s || *end || *out < 0 || *out > max ? -1 : 0;
}

bool take_force(int *argc, char **argv)
{
	bool force = false;
	int k = 0;

	for (int i = 0; i < *argc; i++) {
		if (i > 0 &&
		    (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))) {
			force = true;
			continue;
		}
		argv[k++] = argv[i];
	}
	*argc = k;
	return force;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ringsteer [-s SOCKET | -c FILE] [-j] [-T SECONDS] "
		"COMMAND "
		"[ARGS]\n"
		"  -s, --socket PATH  control socket; else $RINGSTEER_SOCKET, "
		"else\n"
		"  -c, --config FILE  its control_socket "
		"(default " RS_DEFAULT_CONFIG ",\n"
		"                     when readable), "
		"else " RS_DEFAULT_CONTROL_SOCKET "\n"
		"  -j, --json         JSON output\n"
		"  -T, --timeout SECONDS  how long to wait for the daemon "
		"(default 10;\n"
		"                     else $RINGSTEER_TIMEOUT)\n"
		"      --version      print the version and exit\n"
		"Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-52s %s\n", cmds[i].usage, cmds[i].help);
	fprintf(f, "`ringsteer COMMAND --help` for one command.\n");
}

/* What the options before COMMAND leave for main() to use. */
struct options {
	const char *socket;	  /* -s */
	const char *timeout;	  /* -T, else RINGSTEER_TIMEOUT */
	const char *timeout_from; /* which of the two; NULL: neither */
};

/*
 * Reads the options before COMMAND ("+": the command's own options are
 * its own). -1 to go on; else the exit status (--help, --version, a bad
 * option or timeout).
 */
static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_VERSION = 256 };
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"config", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"timeout", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		{0},
	};
	int opt;

	o->timeout = getenv("RINGSTEER_TIMEOUT");
	if (o->timeout && *o->timeout)
		o->timeout_from = "RINGSTEER_TIMEOUT";
	while ((opt = getopt_long(argc, argv, "+s:c:jhT:", opts, NULL)) != -1) {
		switch (opt) {
		case 'T':
			o->timeout = optarg;
			o->timeout_from = "-T";
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'c':
			cli_config_file = optarg;
			break;
		case OPT_VERSION:
			puts(RS_VERSION_LINE("ringsteer"));
			return 0;
		case 'j':
			json_out = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o->timeout_from) {
		call_timeout = parse_timeout(o->timeout);
		if (call_timeout < 0) {
			fail("%s %s: seconds, more than 0 and at most 86400",
			     o->timeout_from, o->timeout);
			return 2;
		}
	}
	return -1;
}

/* `ringsteer COMMAND ... --help`: true once its usage is printed. */
static bool command_help(const struct cmd *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			if (c->run == cmd_trace) {
				trace_usage(stdout);
				return true;
			}
			printf("Usage: ringsteer [-s SOCKET | -c FILE] [-j] "
			       "[-T SECONDS] %s\n  %s\n",
			       c->usage, c->help);
			return true;
		}
	}
	return false;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	const struct cmd *c;
	int rc = parse_options(argc, argv, &o);

	if (rc >= 0)
		return rc;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	c = find_cmd(argv[optind]);
	if (!c) {
		fail("unknown command '%s'", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (command_help(c, argc - optind, argv + optind))
		return 0;
	if (find_socket(o.socket, cli_config_file))
		return 1;
	return c->run(argc - optind, argv + optind);
}

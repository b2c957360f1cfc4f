// SPDX-License-Identifier: MIT
/*
 * ringsteer: the operator's CLI, in the style of bpftool and iproute2. It
 * sends one JSON request to ringsteerd's control socket and prints the
 * reply as a table, or as JSON with -j.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <limits.h>
#include <math.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "config.h"
#include "log.h"
#include "pins.h"
#include <ringsteer/version.h>

static const char *socket_path = RS_DEFAULT_CONTROL_SOCKET;
static const char *socket_from = "the built-in default";
static char config_socket[PATH_MAX];
static char config_from[PATH_MAX + 32];
bool json_out;
static const char *opt_config_file; /* -c FILE */

struct cmd {
	const char *name;
	const char *usage;
	const char *help;
	int (*run)(int argc, char **argv);
};

static const struct cmd *find_cmd(const char *name);

/*
 * The CLI's errors and warnings: under systemd (ExecReload=ringsteer
 * reload) each line carries its journald priority, so that a refused
 * reload's FILE:LINE lines are in `journalctl -p err`.
 */
static void vsay(FILE *f, enum rs_log_level level, const char *prefix,
		 const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	rs_log_print(f, level, prefix, msg ? msg : fmt);
	free(msg);
}

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(stderr, RS_LOG_ERROR, "ringsteer: ", fmt, ap);
	va_end(ap);
	return 1;
}

/* "warning: ..." on stdout, beside the table it is about. */
static void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(stdout, RS_LOG_WARN, "warning: ", fmt, ap);
	va_end(ap);
}

/* Set while polling (fleet ready): a daemon not up yet is not news. */
bool call_quiet_unreachable;
/* The last call() found no daemon on the socket (not a failed request). */
static bool call_unreachable;
/* -T, RINGSTEER_TIMEOUT: how long a call may wait for the daemon. */
double call_timeout = RS_CLI_TIMEOUT_DEFAULT;

/* Seconds, more than 0 and at most a day; -1 if @s is not that. */
static double parse_timeout(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 86400)
		return -1;
	return v;
}

/*
 * Each wait of the call, connect, send or read, is bounded: a daemon that
 * is stopped (SIGSTOP, a debugger) or wedged accepts into its backlog and
 * never answers, and a CLI under ExecReload or in a script must not hang.
 */
static void set_timeouts(int fd, double secs)
{
	struct timeval tv = {
		.tv_sec = (time_t)secs,
		.tv_usec = (suseconds_t)((secs - floor(secs)) * 1e6),
	};

	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1000; /* zero would mean no timeout at all */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* /proc/PID/stat's state letter, in ps(1)'s words. */
static const char *state_name(char c)
{
	switch (c) {
	case 'R':
		return "running";
	case 'S':
		return "sleeping";
	case 'D':
		return "uninterruptible sleep";
	case 'T':
		return "stopped";
	case 't':
		return "stopped by a tracer";
	case 'Z':
		return "zombie";
	case 'X':
		return "dead";
	default:
		return "unknown";
	}
}

/* Which process did not answer and what the kernel says of it. */
static void timed_out(int fd, const char *what)
{
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);
	char path[64], buf[512], state = '?', *paren;
	FILE *f;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    cred.pid <= 0) {
		fail("ringsteerd did not %s within %g s on %s", what,
		     call_timeout, socket_path);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)cred.pid);
	f = fopen(path, "re");
	if (f) {
		/* "PID (COMM) S ...": COMM may hold spaces and parentheses. */
		if (fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')) &&
		    paren[1] == ' ')
			state = paren[2];
		fclose(f);
	}
	fail("ringsteerd (pid %d, state %c: %s) did not %s within %g s on %s",
	     (int)cred.pid, state, state_name(state), what, call_timeout,
	     socket_path);
}

/* One request, one reply; NULL (after printing why) on failure. */
json_t *call(json_t *req)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *text = json_dumps(req, JSON_COMPACT);
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	json_error_t jerr;
	json_t *reply = NULL;
	bool connected = false;
	int fd;

	json_decref(req);
	if (!text || !buf) {
		fail("out of memory");
		goto out;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	call_unreachable = false;
	if (fd >= 0) {
		set_timeouts(fd, call_timeout);
		connected = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (!connected && fd >= 0 && errno == EAGAIN) {
		/* Its backlog is full: nobody has accepted for a while. */
		timed_out(fd, "accept the connection");
		close(fd);
		goto out;
	}
	if (!connected) {
		call_unreachable =
			fd >= 0 && (errno == ENOENT || errno == ECONNREFUSED);
		/* The daemon makes its socket 0600: root's alone. */
		if (!call_quiet_unreachable)
			fail("cannot reach ringsteerd at %s (%s): %s%s",
			     socket_path, socket_from, strerror(errno),
			     errno == EACCES || errno == EPERM
				     ? ": the control socket is root's; run "
				       "ringsteer as root"
				     : " (is it running? -s SOCKET)");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	/*
	 * A refused request is answered at once and the connection closed:
	 * our write may then fail (EPIPE), but the reply is already waiting
	 * to be read, so read it anyway.
	 */
	if (send(fd, text, strlen(text), MSG_NOSIGNAL) < 0 ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
		if (errno == EAGAIN) {
			timed_out(fd, "read the request");
			close(fd);
			goto out;
		}
		if (errno != EPIPE && errno != ECONNRESET) {
			fail("sending the request: %s", strerror(errno));
			close(fd);
			goto out;
		}
	}
	shutdown(fd, SHUT_WR);
	/*
	 * The daemon writes a reply of any size as the socket takes it and
	 * then closes: read to the end, however long it is.
	 */
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *q = realloc(buf, cap * 2);

			if (!q) {
				fail("out of memory for a reply of over %zu "
				     "bytes",
				     len);
				close(fd);
				goto out;
			}
			buf = q;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		/*
		 * A refusal is sent before our request is read; closing with
		 * it unread resets the connection after the reply.
		 */
		if (n < 0 && errno == ECONNRESET && len)
			break;
		/* No byte for call_timeout: a stopped or wedged daemon. */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			timed_out(fd, len ? "finish its answer" : "answer");
			close(fd);
			goto out;
		}
		if (n < 0) {
			fail("reading the reply: %s", strerror(errno));
			close(fd);
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	/* An exiting daemon closes pending clients without a word. */
	if (!len) {
		fail("ringsteerd closed the connection without a reply (did "
		     "it exit?)");
		goto out;
	}
	reply = json_loads(buf, 0, &jerr);
	if (!reply)
		fail("unreadable reply from ringsteerd: %s", jerr.text);
out:
	free(text);
	free(buf);
	return reply;
}

/* Print @reply per -j or with @table; returns the exit status. */
static int finish(json_t *reply, void (*table)(json_t *reply))
{
	int rc;

	if (!reply)
		return 1;
	rc = json_is_true(json_object_get(reply, "ok")) ? 0 : 1;
	if (json_out) {
		json_dumpf(reply, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
	} else if (rc) {
		fail("%s", json_string_value(json_object_get(reply, "error"))
				   ?: "request failed");
	} else if (table) {
		table(reply);
	}
	json_decref(reply);
	return rc;
}

const char *jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

long long jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static double jnum(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* ---- status, services, backends ---- */

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

static void status_table(json_t *r)
{
	json_t *v, *o;
	size_t i, k;

	printf("ringsteerd %s, pid %lld, up %.0fs, config %s\n",
	       jstr(r, "version"), jint(r, "pid"), jnum(r, "uptime_s"),
	       jstr(r, "config"));
	printf("pins %s, reloads %lld (%lld refused)\n", jstr(r, "bpffs"),
	       jint(r, "reloads"), jint(r, "reload_failures"));
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

/* The bpffs of -c FILE or of the default file when readable. */
static void config_bpffs(char *buf, size_t len)
{
	const char *path =
		opt_config_file ? opt_config_file : RS_DEFAULT_CONFIG;
	struct rs_config cfg;
	char errs[256];

	snprintf(buf, len, "%s", RS_DEFAULT_BPFFS);
	if (access(path, R_OK) ||
	    rs_config_load(path, &cfg, errs, sizeof(errs)))
		return;
	snprintf(buf, len, "%s", cfg.bpffs);
	rs_config_free(&cfg);
}

/*
 * The daemon down is not steering down: the pinned link goes on. Say
 * what the pins hold rather than only that nobody answers. Still exit 1:
 * whatever watches `ringsteer status` must see the daemon is gone.
 */
static int status_from_pins(void)
{
	char bpffs[PATH_MAX];
	json_t *p;

	config_bpffs(bpffs, sizeof(bpffs));
	p = pins_read(bpffs);
	if (!p) {
		int err = errno;

		if (json_out) {
			p = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "daemon",
				      "unreachable", "bpffs", bpffs, "pins",
				      strerror(err));
			json_dumpf(p, stdout, JSON_INDENT(2));
			putchar('\n');
			json_decref(p);
		} else if (err == ENOENT) {
			printf("ringsteerd is not running and nothing is "
			       "pinned under %s: nothing steers\n",
			       bpffs);
		} else {
			printf("ringsteerd is not running; the pins under %s "
			       "cannot be read (%s): run as root to see "
			       "whether they still steer\n",
			       bpffs, strerror(err));
		}
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

static int cmd_status(int argc, char **argv)
{
	json_t *reply;

	(void)argc;
	(void)argv;
	reply = call(json_pack("{s:s}", "cmd", "status"));
	if (!reply && call_unreachable)
		return status_from_pins();
	return finish(reply, status_table);
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

static int cmd_services(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return finish(call(json_pack("{s:s}", "cmd", "services")),
		      services_table);
}

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
		char bound[24] = "-";

		/* "-": no bound (balance_factor off, or not UP). */
		if (json_is_integer(json_object_get(v, "bound")))
			snprintf(bound, sizeof(bound), "%lld",
				 jint(v, "bound"));
		printf("%-14s %-10s %-22s %-5s %-5s %-6s %6lld %6lld %6.1f%% "
		       "%10lld %7lld %6s  %s%s\n",
		       jstr(v, "name"), jstr(v, "service"),
		       a ? json_string_value(a) : "-",
		       sock ? jstr(v, "state") : "DOWN", jstr(v, "op"),
		       jstr(v, "health"), jint(v, "weight"),
		       jint(v, "active_points"), 100 * jnum(v, "share"),
		       jint(v, "assigned"), jint(v, "active"), bound,
		       jstr(v, "last_check"),
		       sock ? "" : " (no socket: not serving)");
	}
	cookie_backends_table(r);
}

static int cmd_backends(int argc, char **argv)
{
	json_t *req = json_pack("{s:s}", "cmd", "backends");

	if (argc > 2)
		return fail("usage: ringsteer backends [SERVICE]");
	if (argc == 2)
		json_object_set_new(req, "service", json_string(argv[1]));
	return finish(call(req), backends_table);
}

static void backend_done(json_t *r)
{
	printf("%s: state %s (operator %s, health %s), weight %lld\n",
	       jstr(r, "name"), jstr(r, "state"), jstr(r, "op"),
	       jstr(r, "health"), jint(r, "weight"));
}

static int parse_uint(const char *s, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || !*s || *end || *out < 0 || *out > max ? -1 : 0;
}

/*
 * Takes --force (or -f) out of @argv wherever it is; true if it was there.
 * Actions that would leave a service with no backend taking new
 * connections are refused without it.
 */
static bool take_force(int *argc, char **argv)
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

static int cmd_backend(int argc, char **argv)
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
	return finish(call(req), backend_done);
}

/* ---- ring ---- */

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

static int cmd_ring(int argc, char **argv)
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
	return finish(call(json_pack("{s:s, s:s, s:s}", "cmd", "ring", "action",
				     argv[1], "service", argv[2])),
		      table);
}

/* ---- lookup, sim ---- */

static void lookup_table(json_t *r)
{
	json_t *v;
	size_t i;

	if (json_is_null(json_object_get(r, "backend"))) {
		printf("no backend available (fallback %s)\n",
		       jstr(r, "fallback"));
		return;
	}
	if (json_object_get(r, "owner")) {
		json_t *o = json_object_get(r, "owner");

		if (!json_is_string(o))
			printf("owner host: none (steered where it arrives)\n");
		else if (json_is_true(json_object_get(r, "owner_is_this_host")))
			printf("owner host: %s (this host)\n",
			       json_string_value(o));
		else
			printf("owner host: %s (forwarded there; its own ring "
			       "picks the backend: below is this host's "
			       "ring)\n",
			       json_string_value(o));
	}
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
}

static int cmd_lookup(int argc, char **argv)
{
	json_t *req;
	long port;

	if (argc != 3 && argc != 4)
		return fail("usage: ringsteer lookup SERVICE CLIENT-IP [PORT]");
	req = json_pack("{s:s, s:s, s:s}", "cmd", "lookup", "service", argv[1],
			"client", argv[2]);
	if (argc == 4) {
		if (parse_uint(argv[3], 65535, &port)) {
			json_decref(req);
			return fail("bad port '%s'", argv[3]);
		}
		json_object_set_new(req, "port", json_integer(port));
	}
	return finish(call(req), lookup_table);
}

/* ---- fleet ---- */

static void fleet_table(json_t *r)
{
	json_t *v;
	size_t i;

	if (!json_object_get(r, "members")) {
		printf("%s %s\n", jstr(r, "action"), jstr(r, "name"));
		return;
	}
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

static int cmd_fleet(int argc, char **argv)
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
	return finish(call(req), fleet_table);
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

static int cmd_sim(int argc, char **argv)
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
	return finish(call(req), sim_table);
}

/* ---- QUIC connection IDs ---- */

static void cid_new_table(json_t *r)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(r, "cids"), i, v)
		printf("%s\n", json_string_value(v));
}

static void print_spaced_hex(const char *label, const char *hex)
{
	printf("  %-11s", label);
	for (size_t k = 0; hex[k] && hex[k + 1]; k += 2)
		printf("%s%c%c", k ? " " : "", hex[k], hex[k + 1]);
	putchar('\n');
}

static void cid_family_line(const char *family, json_t *v)
{
	printf("  %-11s%s%s (%s)\n", family,
	       json_is_true(json_object_get(v, "steered")) ? ""
							   : "not steered: ",
	       jstr(v, "why"), jstr(v, "counter"));
}

static void cid_decode_table(json_t *r)
{
	printf("service %s, connection ID of %lld bytes (%s%s)\n",
	       jstr(r, "service"), jint(r, "length"), jstr(r, "reason"),
	       json_is_true(json_object_get(r, "encrypted")) ? ", encrypted"
							     : "");
	print_spaced_hex("cid", jstr(r, "cid"));
	printf("  %-11s%lld (service: %lld), low bits 0x%02llx\n", "config id",
	       jint(r, "config_id"), jint(r, "config_expected"),
	       jint(r, "low_bits"));
	if (json_is_string(json_object_get(r, "server_id"))) {
		printf("  %-11s%s", "server id", jstr(r, "server_id"));
		if (json_is_string(json_object_get(r, "backend")))
			printf(" -> backend %s (%s)", jstr(r, "backend"),
			       jstr(r, "backend_state"));
		putchar('\n');
	}
	if (*jstr(r, "nonce") != '-')
		print_spaced_hex("nonce", jstr(r, "nonce"));
	cid_family_line("IPv4", json_object_get(r, "ipv4"));
	cid_family_line("IPv6", json_object_get(r, "ipv6"));
	if (json_is_string(json_object_get(r, "fleet")))
		printf("  %-11s%s: %s\n", "owner host",
		       json_is_string(json_object_get(r, "owner"))
			       ? jstr(r, "owner")
			       : "none",
		       jstr(r, "fleet"));
	if (jint(r, "tc_interfaces") == 0)
		printf("  (steer_tc is attached to no interface now: nothing "
		       "is steered by cookie)\n");
}

/* "--config N": the config rotation a new CID is minted under. */
static int take_config(int *argc, char **argv, long *config)
{
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--config"))
			continue;
		if (i + 1 >= *argc || parse_uint(argv[i + 1], 6, config))
			return -1;
		for (int j = i; j + 2 <= *argc; j++)
			argv[j] = argv[j + 2];
		*argc -= 2;
		return 1;
	}
	return 0;
}

static int cmd_cid(int argc, char **argv)
{
	json_t *req;
	long count = 1, config = -1;
	int has_config = take_config(&argc, argv, &config);

	if (has_config < 0)
		return fail("--config takes a config id, 0..6");
	if (argc == 4 && !strcmp(argv[1], "decode") && !has_config)
		return finish(
			call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "cid",
				       "action", "decode", "service", argv[2],
				       "cid", argv[3])),
			cid_decode_table);
	if (argc != 3 && argc != 4)
		return fail("usage: ringsteer cid [--config ID] SERVICE "
			    "BACKEND [COUNT] | cid decode SERVICE HEX");
	if (argc == 4 && (parse_uint(argv[3], 1000, &count) || count < 1))
		return fail("COUNT must be 1..1000");
	req = json_pack("{s:s, s:s, s:s, s:s, s:i}", "cmd", "cid", "action",
			"new", "service", argv[1], "backend", argv[2], "count",
			(int)count);
	if (req && has_config)
		json_object_set_new(req, "config", json_integer(config));
	return finish(call(req), cid_new_table);
}

/* ---- reload, detach, version ---- */

static void done_ok(json_t *r)
{
	json_t *v;
	size_t i;

	/* A reload that took but left something to fix (a listen not local). */
	json_array_foreach(json_object_get(r, "warnings"), i, v)
		warning("%s", json_string_value(v));
	printf("ok\n");
}

static int cmd_reload(int argc, char **argv)
{
	bool force = take_force(&argc, argv);

	if (argc != 1)
		return fail("usage: ringsteer reload [--force]");
	return finish(
		call(json_pack("{s:s, s:b}", "cmd", "reload", "force", force)),
		done_ok);
}

static int cmd_detach(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return finish(call(json_pack("{s:s}", "cmd", "detach")), done_ok);
}

static void version_table(json_t *r)
{
	puts(RS_VERSION_LINE("ringsteer"));
	printf("ringsteerd %s (commit %s, abi %lld)\n", jstr(r, "version"),
	       jstr(r, "commit"), jint(r, "abi"));
}

static int cmd_version(int argc, char **argv)
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
	return finish(reply, version_table);
}

static const struct cmd cmds[] = {
	{"status", "status", "daemon, programs, services, ring generations",
	 cmd_status},
	{"services", "services", "services with listens and counters",
	 cmd_services},
	{"backends", "backends [SERVICE]",
	 "backends: state, health, weight, share, connections, last check",
	 cmd_backends},
	{"backend",
	 "backend drain|undrain|up|down NAME | weight NAME W [--force]",
	 "operator state (distinct from health) and weight, at once; --force: "
	 "even if no backend of the service would take new connections",
	 cmd_backend},
	{"ring", "ring show|stats|rebuild SERVICE",
	 "points in order; shares, CV, max/mean; force a swap", cmd_ring},
	{"lookup", "lookup SERVICE CLIENT-IP [PORT]",
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

/*
 * The control socket, first found of: -s, RINGSTEER_SOCKET, control_socket
 * in the configuration (-c FILE, or the default file when readable), the
 * built-in default. An explicit -c FILE that cannot be read is an error; a
 * broken default file is passed over, as if there were none.
 */
static int find_socket(const char *opt_socket, const char *opt_config)
{
	const char *env = getenv("RINGSTEER_SOCKET");
	const char *path = opt_config ? opt_config : RS_DEFAULT_CONFIG;
	struct rs_config cfg;
	char errs[4096];

	if (opt_socket) {
		socket_path = opt_socket;
		socket_from = "-s";
		return 0;
	}
	if (env && *env) {
		socket_path = env;
		socket_from = "RINGSTEER_SOCKET";
		return 0;
	}
	if (!opt_config && access(path, R_OK))
		return 0;
	if (rs_config_load(path, &cfg, errs, sizeof(errs))) {
		if (!opt_config)
			return 0;
		if (*errs && errs[strlen(errs) - 1] == '\n')
			errs[strlen(errs) - 1] = '\0';
		return fail("%s", errs);
	}
	snprintf(config_socket, sizeof(config_socket), "%s",
		 cfg.control_socket);
	snprintf(config_from, sizeof(config_from), "control_socket of %s",
		 path);
	rs_config_free(&cfg);
	socket_path = config_socket;
	socket_from = config_from;
	return 0;
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

int main(int argc, char **argv)
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
	const char *opt_socket = NULL, *opt_config = NULL;
	const char *timeout = getenv("RINGSTEER_TIMEOUT"), *timeout_from = NULL;
	const struct cmd *c;
	int opt;

	if (timeout && *timeout)
		timeout_from = "RINGSTEER_TIMEOUT";
	while ((opt = getopt_long(argc, argv, "+s:c:jhT:", opts, NULL)) != -1) {
		switch (opt) {
		case 'T':
			timeout = optarg;
			timeout_from = "-T";
			break;
		case 's':
			opt_socket = optarg;
			break;
		case 'c':
			opt_config = optarg;
			opt_config_file = optarg;
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
	if (timeout_from) {
		call_timeout = parse_timeout(timeout);
		if (call_timeout < 0) {
			fail("%s %s: seconds, more than 0 and at most 86400",
			     timeout_from, timeout);
			return 2;
		}
	}
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
	for (int i = optind + 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			if (c->run == cmd_trace) {
				trace_usage(stdout);
				return 0;
			}
			printf("Usage: ringsteer [-s SOCKET | -c FILE] [-j] "
			       "[-T SECONDS] %s\n  %s\n",
			       c->usage, c->help);
			return 0;
		}
	}
	if (find_socket(opt_socket, opt_config))
		return 1;
	return c->run(argc - optind, argv + optind);
}

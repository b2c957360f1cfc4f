// SPDX-License-Identifier: MIT
/*
 * The CLI's one road to ringsteerd: which control socket, one JSON
 * request and one reply over it, every wait bounded by -T, and how the
 * reply or its failure is printed. The command files build requests and
 * tables; everything about the socket is here.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "config.h"
#include "log.h"

/* The control socket and what chose it, for the error messages. */
static const char *socket_path = RS_DEFAULT_CONTROL_SOCKET;
static const char *socket_from = "the built-in default";
static char config_socket[PATH_MAX];
static char config_from[PATH_MAX + 32];

bool call_quiet_unreachable;
bool call_unreachable;
double call_timeout = RS_CLI_TIMEOUT_DEFAULT;

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

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(stdout, RS_LOG_WARN, "warning: ", fmt, ap);
	va_end(ap);
}

double parse_timeout(const char *s)
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
 * The control socket, first found of: -s, RINGSTEER_SOCKET, control_socket
 * in the configuration (-c FILE, or the default file when readable), the
 * built-in default. An explicit -c FILE that cannot be read is an error; a
 * broken default file is passed over, as if there were none.
 */
int find_socket(const char *opt_socket, const char *opt_config)
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

/*
 * A socket connected to the daemon, or -1 after saying why; a failure to
 * connect is not said while polling (call_quiet_unreachable), and no
 * daemon there at all is noted in call_unreachable for `status`.
 */
static int connect_daemon(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	bool connected = false;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	call_unreachable = false;
	if (fd >= 0) {
		set_timeouts(fd, call_timeout);
		connected = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (connected)
		return fd;
	if (fd >= 0 && errno == EAGAIN) {
		/* Its backlog is full: nobody has accepted for a while. */
		timed_out(fd, "accept the connection");
		close(fd);
		return -1;
	}
	call_unreachable =
		fd >= 0 && (errno == ENOENT || errno == ECONNREFUSED);
	/* The daemon makes its socket 0600: root's alone. */
	if (!call_quiet_unreachable)
		fail("cannot reach ringsteerd at %s (%s): %s%s", socket_path,
		     socket_from, strerror(errno),
		     errno == EACCES || errno == EPERM
			     ? ": the control socket is root's; run "
			       "ringsteer as root"
			     : " (is it running? -s SOCKET)");
	if (fd >= 0)
		close(fd);
	return -1;
}

/* @text and its newline, then our side closed; -1 after saying why. */
static int send_request(int fd, const char *text)
{
	/*
	 * A refused request is answered at once and the connection closed:
	 * our write may then fail (EPIPE), but the reply is already waiting
	 * to be read, so read it anyway.
	 */
	if (send(fd, text, strlen(text), MSG_NOSIGNAL) < 0 ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
		if (errno == EAGAIN) {
			timed_out(fd, "read the request");
			return -1;
		}
		if (errno != EPIPE && errno != ECONNRESET) {
			fail("sending the request: %s", strerror(errno));
			return -1;
		}
	}
	shutdown(fd, SHUT_WR);
	return 0;
}

/* A reply as it is read: it grows to whatever size the daemon sends. */
struct reply_buf {
	char *data;
	size_t len, cap;
};

/*
 * The daemon writes a reply of any size as the socket takes it and then
 * closes: read to the end, however long it is. -1 after saying why.
 */
static int read_reply(int fd, struct reply_buf *b)
{
	for (;;) {
		ssize_t n;

		if (b->len + 1 >= b->cap) {
			char *q = realloc(b->data, b->cap * 2);

			if (!q) {
				fail("out of memory for a reply of over %zu "
				     "bytes",
				     b->len);
				return -1;
			}
			b->data = q;
			b->cap *= 2;
		}
		n = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		/*
		 * A refusal is sent before our request is read; closing with
		 * it unread resets the connection after the reply.
		 */
		if (n < 0 && errno == ECONNRESET && b->len)
			break;
		/* No byte for call_timeout: a stopped or wedged daemon. */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			timed_out(fd, b->len ? "finish its answer" : "answer");
			return -1;
		}
		if (n < 0) {
			fail("reading the reply: %s", strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	b->data[b->len] = '\0';
	return 0;
}

json_t *call(json_t *req)
{
	char *text = json_dumps(req, JSON_COMPACT);
	struct reply_buf b = {.cap = 65536};
	json_error_t jerr;
	json_t *reply = NULL;
	int fd, rc;

	b.data = malloc(b.cap);
	json_decref(req);
	if (!text || !b.data) {
		fail("out of memory");
		goto out;
	}
	fd = connect_daemon();
	if (fd < 0)
		goto out;
	rc = send_request(fd, text);
	if (!rc)
		rc = read_reply(fd, &b);
	close(fd);
	if (rc)
		goto out;
	/* An exiting daemon closes pending clients without a word. */
	if (!b.len) {
		fail("ringsteerd closed the connection without a reply (did "
		     "it exit?)");
		goto out;
	}
	reply = json_loads(b.data, 0, &jerr);
	if (!reply)
		fail("unreadable reply from ringsteerd: %s", jerr.text);
out:
	free(text);
	free(b.data);
	return reply;
}

int print_reply(json_t *reply, void (*table)(json_t *reply))
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

double jnum(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

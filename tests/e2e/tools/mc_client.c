// SPDX-License-Identifier: MIT
/*
 * mc_client: memcached client for the demo.
 *
 *   mc_client --target ADDR:PORT --src-base IP --count N
 *             --phase set|get|whoami [--timeout-ms T]
 *
 * Each of N consecutive client addresses opens one fresh TCP connection,
 * runs the phase's operation on key "client-<srcip>", then asks for key
 * "whoami" (pre-seeded with each instance's name) on the same connection
 * to learn which memcached instance the steering program picked. Prints
 * "<srcip> <backend> <stored|hit|miss|ok|ERR>" per source. Exit status is
 * 1 if any source hit a connection or protocol error, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tool_net.h"

#define LINE_MAX_LEN  1024
#define VALUE_MAX_LEN 4096

enum phase { PHASE_SET, PHASE_GET, PHASE_WHOAMI };

struct options {
	struct tool_endpoints ep;
	unsigned long count;
	enum phase phase;
	unsigned int timeout_ms;
};

/* Buffered reader: memcached replies are lines plus counted data blocks. */
struct conn {
	int fd;
	size_t off, len;
	char buf[8192];
};

static struct options g_opt = {.timeout_ms = 2000};

static void usage(FILE *f)
{
	fprintf(f, "usage: mc_client --target ADDR:PORT --src-base IP "
		   "--count N --phase set|get|whoami [--timeout-ms T]\n"
		   "  ADDR is an IPv4 address or [IPv6 address]\n");
}

/*
 * Blocking sockets with SO_RCVTIMEO/SO_SNDTIMEO (which also bound
 * connect) keep this sequential tool simple and still unable to hang.
 */
static int open_conn(struct conn *c, unsigned long idx, char *src,
		     size_t srclen)
{
	struct timeval tv = {.tv_sec = g_opt.timeout_ms / 1000,
			     .tv_usec = (g_opt.timeout_ms % 1000) * 1000};
	struct sockaddr_storage ss;
	socklen_t slen;

	/* rs_client numbers its sources the same way; the tests rely on it. */
	slen = tool_src_addr(&g_opt.ep.src_base, idx, &ss);
	tool_addr_str(&ss, src, srclen);
	c->off = c->len = 0;
	c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		fprintf(stderr, "mc_client: socket for %s: %s\n", src,
			strerror(errno));
		return -1;
	}
	/* Best effort: a source that cannot be bound fails at bind() below. */
	tool_set_freebind(c->fd, ss.ss_family);
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (bind(c->fd, (struct sockaddr *)&ss, slen) < 0) {
		fprintf(stderr, "mc_client: bind %s: %s\n", src,
			strerror(errno));
		goto err;
	}
	if (connect(c->fd, (struct sockaddr *)&g_opt.ep.target,
		    g_opt.ep.target_len) < 0) {
		fprintf(stderr, "mc_client: connect from %s: %s\n", src,
			errno == EINPROGRESS ? "timed out" : strerror(errno));
		goto err;
	}
	return 0;
err:
	close(c->fd);
	c->fd = -1;
	return -1;
}

static int send_all(struct conn *c, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "mc_client: send: %s\n",
				strerror(errno));
			return -1;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

static int fill(struct conn *c)
{
	ssize_t n;

	if (c->off) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len == sizeof(c->buf)) {
		fprintf(stderr, "mc_client: reply line too long\n");
		return -1;
	}
	do
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		fprintf(stderr, "mc_client: recv: %s\n",
			n == 0		  ? "connection closed"
			: errno == EAGAIN ? "timed out"
					  : strerror(errno));
		return -1;
	}
	c->len += n;
	return 0;
}

/* Reads one "\r\n"-terminated line into @line without the terminator. */
static int read_line(struct conn *c, char *line, size_t cap)
{
	char *nl;
	size_t n;

	for (;;) {
		nl = memchr(c->buf + c->off, '\n', c->len - c->off);
		if (nl)
			break;
		if (fill(c))
			return -1;
	}
	n = nl - (c->buf + c->off);
	if (n && nl[-1] == '\r')
		n--;
	if (n >= cap) {
		fprintf(stderr, "mc_client: reply line too long\n");
		return -1;
	}
	memcpy(line, c->buf + c->off, n);
	line[n] = '\0';
	c->off = nl + 1 - c->buf;
	return 0;
}

static int read_exact(struct conn *c, char *out, size_t n)
{
	while (c->len - c->off < n)
		if (fill(c))
			return -1;
	memcpy(out, c->buf + c->off, n);
	c->off += n;
	return 0;
}

/*
 * "get KEY": returns 1 and the value on a hit, 0 on a miss, -1 on error.
 */
static int mc_get(struct conn *c, const char *key, char *val, size_t cap)
{
	char line[LINE_MAX_LEN], crlf[2], rkey[256];
	unsigned int flags;
	size_t bytes;

	snprintf(line, sizeof(line), "get %s\r\n", key);
	if (send_all(c, line, strlen(line)) || read_line(c, line, sizeof(line)))
		return -1;
	if (!strcmp(line, "END"))
		return 0;
	if (sscanf(line, "VALUE %255s %u %zu", rkey, &flags, &bytes) != 3 ||
	    strcmp(rkey, key) || bytes >= cap) {
		fprintf(stderr, "mc_client: get %s: unexpected reply '%s'\n",
			key, line);
		return -1;
	}
	if (read_exact(c, val, bytes) || read_exact(c, crlf, 2) ||
	    read_line(c, line, sizeof(line)))
		return -1;
	val[bytes] = '\0';
	if (memcmp(crlf, "\r\n", 2) || strcmp(line, "END")) {
		fprintf(stderr, "mc_client: get %s: malformed value block\n",
			key);
		return -1;
	}
	return 1;
}

static int mc_set(struct conn *c, const char *key, const char *val)
{
	char line[LINE_MAX_LEN];

	snprintf(line, sizeof(line), "set %s 0 0 %zu\r\n%s\r\n", key,
		 strlen(val), val);
	if (send_all(c, line, strlen(line)) || read_line(c, line, sizeof(line)))
		return -1;
	if (strcmp(line, "STORED")) {
		fprintf(stderr, "mc_client: set %s: unexpected reply '%s'\n",
			key, line);
		return -1;
	}
	return 0;
}

/* Runs the phase's operation; returns the status word or NULL on error. */
static const char *run_phase(struct conn *c, const char *src)
{
	char key[128], want[160], got[VALUE_MAX_LEN];
	int r;

	snprintf(key, sizeof(key), "client-%s", src);
	snprintf(want, sizeof(want), "value-%s", src);
	switch (g_opt.phase) {
	case PHASE_SET:
		return mc_set(c, key, want) ? NULL : "stored";
	case PHASE_GET:
		r = mc_get(c, key, got, sizeof(got));
		if (r < 0)
			return NULL;
		if (r && strcmp(got, want)) {
			fprintf(stderr,
				"mc_client: get %s: value '%s', "
				"expected '%s'\n",
				key, got, want);
			return NULL;
		}
		return r ? "hit" : "miss";
	case PHASE_WHOAMI:
		return "ok";
	}
	return NULL;
}

/* Returns 0 if this source completed without errors. */
static int do_source(unsigned long idx)
{
	char src[INET6_ADDRSTRLEN], who[VALUE_MAX_LEN] = "-";
	const char *status = NULL;
	struct conn c;
	int r;

	if (open_conn(&c, idx, src, sizeof(src)) == 0) {
		status = run_phase(&c, src);
		if (status) {
			r = mc_get(&c, "whoami", who, sizeof(who));
			if (r < 0)
				status = NULL;
			else if (r == 0)
				snprintf(who, sizeof(who), "unknown");
		}
		close(c.fd);
	}
	if (strpbrk(who, " \r\n"))
		snprintf(who, sizeof(who), "invalid-whoami");
	printf("%s %s %s\n", src, who, status ? status : "ERR");
	return status ? 0 : -1;
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		TOOL_OPTS_ENDPOINTS,
		{"count", required_argument, NULL, 'n'},
		{"phase", required_argument, NULL, 'p'},
		{"timeout-ms", required_argument, NULL, 'T'},
		TOOL_OPTS_END,
	};
	bool have_phase = false;
	char *end;
	int c;

	while ((c = tool_client_getopt("mc_client", argc, argv, opts, usage,
				       &g_opt.ep)) != -1) {
		switch (c) {
		case 'n':
			g_opt.count = strtoul(optarg, &end, 10);
			if (*end || !g_opt.count || g_opt.count > 1000000) {
				fprintf(stderr, "mc_client: bad --count\n");
				return -1;
			}
			break;
		case 'p':
			if (!strcmp(optarg, "set")) {
				g_opt.phase = PHASE_SET;
			} else if (!strcmp(optarg, "get")) {
				g_opt.phase = PHASE_GET;
			} else if (!strcmp(optarg, "whoami")) {
				g_opt.phase = PHASE_WHOAMI;
			} else {
				fprintf(stderr, "mc_client: bad --phase '%s'\n",
					optarg);
				return -1;
			}
			have_phase = true;
			break;
		case 'T':
			g_opt.timeout_ms = strtoul(optarg, &end, 10);
			if (*end || !g_opt.timeout_ms ||
			    g_opt.timeout_ms > 600000) {
				fprintf(stderr,
					"mc_client: bad --timeout-ms\n");
				return -1;
			}
			break;
		default:
			return -1;
		}
	}
	if (tool_client_args_done("mc_client", argc, &g_opt.ep,
				  have_phase && g_opt.count, usage))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long i, errors = 0;

	if (parse_args(argc, argv))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < g_opt.count; i++)
		if (do_source(i))
			errors++;
	fflush(stdout);
	if (errors)
		fprintf(stderr, "mc_client: %lu of %lu sources failed\n",
			errors, g_opt.count);
	return errors ? 1 : 0;
}

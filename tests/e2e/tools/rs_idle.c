// SPDX-License-Identifier: MIT
/*
 * rs_idle: a hostile client that opens many connections and sends nothing.
 *
 *   rs_idle (--tcp ADDR:PORT | --unix PATH) --count N [--connect-for S]
 *           [--src IP [--sources K] [--step N]] [--rst] [--ping]
 *           [--serial] [--dribble MS]
 *
 * Connects N sockets without blocking; a connect refused for a full unix
 * listen queue (EAGAIN) is retried until all N are in or --connect-for
 * seconds (default 10) have passed. Then prints "connected K" and "ready",
 * and every 200 ms "open M": how many of them the server has not closed
 * (EOF, reset or error counts as closed). Runs until SIGTERM.
 *
 * --src binds connection i to IP + (i mod K) x 256: K clients in K
 * different /24 prefixes (affinity keys with prefix4 = 24), for tests of
 * connections held open per key (--step N: N addresses apart instead).
 * IP may be IPv6: the sum is over its last 32 bits.
 * --rst closes with a reset at SIGTERM. --ping sends a line on every open
 * connection every 200 ms, so that they carry packets all along (a
 * backend with --hold echoes it): a connection whose packets reach a host
 * that does not hold it is reset, and counts as closed.
 * --keep leaves a connection the server closed open on this side until
 * SIGTERM (the server's socket stays in FIN_WAIT2), instead of closing it.
 * --dribble MS sends one more byte of an HTTP request that never ends
 * on every open connection every MS ms: a client that is never idle for
 * long, yet never finishes its request.
 * --serial makes connection i+1 only once the server has spoken on
 * connection i (a backend's greeting line): the server has accepted it,
 * so the kernel counted it in its load gauge before the next SYN. Without
 * it, N SYNs can all be steered before any handshake completes, and a
 * load bound (checked against established connections) sees none of them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tool_net.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fputs("usage: rs_idle (--tcp ADDR:PORT | --unix PATH) --count N "
	      "[--connect-for S] [--src IP [--sources K] [--step N]] "
	      "[--rst] [--ping] [--serial] [--keep] [--dribble MS]\n",
	      f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One connection: the fd, or -1 when it could not be made. */
static int connect_one(const struct sockaddr_storage *ss, socklen_t len,
		       const struct sockaddr_storage *src, socklen_t src_len,
		       double deadline)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (src && (tool_set_freebind(fd, src->ss_family) ||
		    bind(fd, (const struct sockaddr *)src, src_len))) {
		close(fd);
		return -1;
	}
	for (;;) {
		if (!connect(fd, (const struct sockaddr *)ss, len) ||
		    errno == EINPROGRESS)
			return fd;
		if (errno != EAGAIN || now() > deadline || stop)
			break;
		usleep(1000);
	}
	close(fd);
	return -1;
}

/* --serial: wait for the server's first bytes, left unread for reap(). */
static void wait_spoken(int fd, double deadline)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	double left;

	while (!stop && (left = deadline - now()) > 0)
		if (poll(&p, 1, (int)(left * 1000) + 1) >= 0 || errno != EINTR)
			return;
}

/*
 * A connection that ended: "closed SRC:PORT why" on stderr (why: the
 * socket's error, or eof), then closed.
 */
static void closed(int fd)
{
	struct sockaddr_storage sa = {0};
	socklen_t len = sizeof(sa), elen = sizeof(int);
	char addr[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;
	int err = 0;

	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
	if (!getsockname(fd, (struct sockaddr *)&sa, &len)) {
		tool_addr_str(&sa, addr, sizeof(addr));
		port = sa.ss_family == AF_INET6
			       ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
			       : ntohs(((struct sockaddr_in *)&sa)->sin_port);
	}
	/* IPv6 as [ADDR]:PORT, so that the address is all before ']:'. */
	fprintf(stderr,
		sa.ss_family == AF_INET6 ? "closed [%s]:%u %s\n"
					 : "closed %s:%u %s\n",
		addr, port, err ? strerror(err) : "eof");
	close(fd);
}

/* --keep: connections the server closed, left open (events 0). */
static bool keep;

/* Close and forget every connection the server has closed. */
static unsigned long reap(struct pollfd *pfd, unsigned long n)
{
	unsigned long open = 0, i;
	char c[4096];

	if (poll(pfd, n, 0) < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (pfd[i].fd < 0 || !pfd[i].events)
			continue;
		if (pfd[i].revents &&
		    (pfd[i].revents & (POLLHUP | POLLERR | POLLRDHUP) ||
		     recv(pfd[i].fd, c, sizeof(c), MSG_DONTWAIT) <= 0)) {
			if (keep) {
				pfd[i].events = 0;
				continue;
			}
			closed(pfd[i].fd);
			pfd[i].fd = -1;
			continue;
		}
		open++;
	}
	return open;
}

/* --dribble: byte @k of an endless request on every open connection. */
static void drip(struct pollfd *pfd, unsigned long n, size_t k)
{
	/* No newline: a control request does not end either. */
	static const char head[] = "GET /metrics?slow=";
	char c = k < sizeof(head) - 1 ? head[k] : 'a';

	for (unsigned long i = 0; i < n; i++)
		if (pfd[i].fd >= 0 && pfd[i].events)
			send(pfd[i].fd, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"tcp", required_argument, NULL, 't'},
		{"unix", required_argument, NULL, 'u'},
		{"count", required_argument, NULL, 'n'},
		{"connect-for", required_argument, NULL, 'f'},
		{"src", required_argument, NULL, 's'},
		{"sources", required_argument, NULL, 'k'},
		{"rst", no_argument, NULL, 'r'},
		{"step", required_argument, NULL, 'S'},
		{"ping", no_argument, NULL, 'p'},
		{"serial", no_argument, NULL, 'e'},
		{"keep", no_argument, NULL, 'K'},
		{"dribble", required_argument, NULL, 'd'},
		TOOL_OPTS_END,
	};
	struct sockaddr_storage ss = {0};
	socklen_t len = 0;
	unsigned long count = 0, secs = 10, i, made = 0, sources = 1,
		      step = 256, dribble_ms = 0;
	struct sockaddr_storage src = {0}, from;
	socklen_t src_len = 0;
	bool has_src = false, rst = false, ping = false, serial = false;
	struct pollfd *pfd;
	double deadline, next_drip = 0;
	size_t dripped = 0;
	int c;

	while ((c = tool_getopt(argc, argv, opts, usage)) != -1) {
		switch (c) {
		case 't':
			if (tool_parse_hostport(optarg, &ss, &len)) {
				fprintf(stderr, "rs_idle: bad --tcp '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'u': {
			struct sockaddr_un *un = (struct sockaddr_un *)&ss;

			if (strlen(optarg) >= sizeof(un->sun_path)) {
				fprintf(stderr, "rs_idle: --unix too long\n");
				return 2;
			}
			un->sun_family = AF_UNIX;
			strcpy(un->sun_path, optarg);
			len = sizeof(*un);
			break;
		}
		case 'n':
			if (tool_parse_ulong("rs_idle", "--count", optarg, 1,
					     1000000, &count))
				return 2;
			break;
		case 'f':
			if (tool_parse_ulong("rs_idle", "--connect-for", optarg,
					     1, 3600, &secs))
				return 2;
			break;
		case 's':
			if (tool_parse_ip(optarg, &src)) {
				fprintf(stderr, "rs_idle: bad --src '%s'\n",
					optarg);
				return 2;
			}
			has_src = true;
			src_len = tool_src_addr(&src, 0, &from);
			break;
		case 'k':
			if (tool_parse_ulong("rs_idle", "--sources", optarg, 1,
					     65536, &sources))
				return 2;
			break;
		case 'r':
			rst = true;
			break;
		case 'S':
			if (tool_parse_ulong("rs_idle", "--step", optarg, 1,
					     65536, &step))
				return 2;
			break;
		case 'p':
			ping = true;
			break;
		case 'e':
			serial = true;
			break;
		case 'K':
			keep = true;
			break;
		case 'd':
			if (tool_parse_ulong("rs_idle", "--dribble", optarg, 1,
					     60000, &dribble_ms))
				return 2;
			break;
		default:
			return 2;
		}
	}
	if (optind != argc || !len || !count) {
		usage(stderr);
		return 2;
	}
	tool_raise_nofile();
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	pfd = calloc(count, sizeof(*pfd));
	if (!pfd)
		return 1;
	deadline = now() + (double)secs;
	for (i = 0; i < count && !stop; i++) {
		tool_src_addr(&src, (i % sources) * step, &from);
		pfd[i].fd = connect_one(&ss, len, has_src ? &from : NULL,
					src_len, deadline);
		pfd[i].events = POLLIN | POLLRDHUP;
		made += pfd[i].fd >= 0;
		if (serial && pfd[i].fd >= 0)
			wait_spoken(pfd[i].fd, deadline);
	}
	for (; i < count; i++)
		pfd[i].fd = -1;
	printf("connected %lu\nready\n", made);
	fflush(stdout);
	while (!stop) {
		for (i = 0; ping && i < count; i++)
			if (pfd[i].fd >= 0 &&
			    send(pfd[i].fd, "p\n", 2, MSG_DONTWAIT) < 0 &&
			    errno != EAGAIN) {
				closed(pfd[i].fd);
				pfd[i].fd = -1;
			}
		if (dribble_ms && now() >= next_drip) {
			drip(pfd, count, dripped++);
			next_drip = now() + (double)dribble_ms / 1000;
		}
		printf("open %lu\n", reap(pfd, count));
		fflush(stdout);
		usleep(200000);
	}
	for (i = 0; i < count; i++) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		if (pfd[i].fd < 0)
			continue;
		/* A zero linger time makes close() send a reset. */
		if (rst)
			setsockopt(pfd[i].fd, SOL_SOCKET, SO_LINGER, &lg,
				   sizeof(lg));
		close(pfd[i].fd);
	}
	free(pfd);
	return 0;
}

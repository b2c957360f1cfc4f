// SPDX-License-Identifier: MIT
/*
 * bench_load: connection-rate and latency load generator.
 *
 *   bench_load --target ADDR:PORT [--target ADDR:PORT]...
 *              --src-base IP --sources N [--concurrency C]
 *              [--rate R] [--warmup S] [--duration S] [--timeout-ms T]
 *              [--spread turn|hash]
 *
 * One thread, epoll, up to C connections in flight. Every request is a new
 * TCP connection: socket, bind to the next of N client source addresses
 * (IP_FREEBIND + IP_BIND_ADDRESS_NO_PORT, as rs_client does; the sources
 * are only routed locally), non-blocking connect, send one small request
 * line, read the reply until the server closes, close. Source i always
 * connects to the same target, so with one target per backend ("direct")
 * a client always reaches the same backend, like the steered variants:
 * target i % (number of targets) by default ("turn": consecutive
 * connections go to the targets in turn), or a hash of i ("hash").
 *
 * Closed loop (default): a finished connection starts the next at once.
 * Open loop (--rate R): connection k is due at start + k/R; its latency
 * counts from that due time, so time spent waiting for a free slot is
 * included (no coordinated omission).
 *
 * Only connections that finish inside the measured window (after the
 * warmup) count. Output, one line:
 *   conns=N secs=S rate=R p50_us=.. p90_us=.. p99_us=.. p999_us=..
 *   max_us=.. errors=E timeouts=T late=L
 * Exit status 0, or 1 when nothing completed, 2 on usage errors.
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
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_lat.h"
#include "tool_net.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define MAX_TARGETS 64
#define MAX_CONC    4096
#define REQUEST	    "PING\n"

struct opts {
	struct sockaddr_storage target[MAX_TARGETS];
	socklen_t target_len[MAX_TARGETS];
	unsigned int ntargets;
	struct sockaddr_storage src_base;
	unsigned long sources;
	unsigned int concurrency;
	double rate;
	double warmup_s;
	double duration_s;
	unsigned int timeout_ms;
	bool spread_hash;
};

enum conn_state { C_FREE, C_CONNECTING, C_READING };

struct conn {
	int fd;
	enum conn_state state;
	uint64_t start_ns; /* due time (open loop) or socket() time */
	uint64_t deadline_ns;
	size_t got;
};

static struct opts g_opt = {
	.concurrency = 64,
	.warmup_s = 1,
	.duration_s = 5,
	.timeout_ms = 3000,
};

static struct conn g_conn[MAX_CONC];
static int g_ep;
static unsigned long g_next_src;
static uint64_t g_win_start, g_win_end;
static struct bench_lat g_lat; /* connections finished inside the window */
static unsigned long g_errors, g_timeouts, g_late;

static void record(uint64_t start, uint64_t end)
{
	uint64_t lat = end - start;

	if (end < g_win_start || end >= g_win_end)
		return;
	bench_lat_add(&g_lat, lat);
}

static void conn_close(struct conn *c)
{
	close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
	c->state = C_FREE;
}

static void conn_fail(struct conn *c, uint64_t now)
{
	if (now >= g_win_start && now < g_win_end)
		g_errors++;
	conn_close(c);
}

static int conn_start(struct conn *c, uint64_t start)
{
	unsigned long idx = g_next_src++ % g_opt.sources;
	unsigned int t = idx % g_opt.ntargets;

	/* --spread hash: sources scattered over the targets, not in turn. */
	if (g_opt.spread_hash)
		t = (((uint32_t)idx * 2654435761u) >> 8) % g_opt.ntargets;
	struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
	struct sockaddr_storage src;
	socklen_t slen;
	int one = 1, fd;

	slen = tool_src_addr(&g_opt.src_base, idx, &src);
	fd = socket(src.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -1;
	c->fd = fd;
	c->start_ns = start;
	c->deadline_ns = bench_now_ns() + g_opt.timeout_ms * 1000000ull;
	c->got = 0;
	c->state = C_CONNECTING;
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	tool_set_freebind(fd, src.ss_family);
	if (bind(fd, (struct sockaddr *)&src, slen) ||
	    (connect(fd, (struct sockaddr *)&g_opt.target[t],
		     g_opt.target_len[t]) &&
	     errno != EINPROGRESS) ||
	    epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev)) {
		conn_fail(c, bench_now_ns());
		return -1;
	}
	return 0;
}

static void conn_event(struct conn *c, uint32_t events)
{
	char buf[256];
	ssize_t n;

	if (c->state == C_CONNECTING) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) ||
		    err || (events & (EPOLLERR | EPOLLHUP)) ||
		    send(c->fd, REQUEST, sizeof(REQUEST) - 1, MSG_NOSIGNAL) !=
			    sizeof(REQUEST) - 1 ||
		    epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev)) {
			conn_fail(c, bench_now_ns());
			return;
		}
		c->state = C_READING;
		return;
	}
	for (;;) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n > 0) {
			c->got += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break;
	}
	/* EOF after a reply is success; anything else is an error. */
	if (n == 0 && c->got > 0) {
		record(c->start_ns, bench_now_ns());
		conn_close(c);
	} else {
		conn_fail(c, bench_now_ns());
	}
}

static void expire(uint64_t now)
{
	for (unsigned int i = 0; i < g_opt.concurrency; i++) {
		struct conn *c = &g_conn[i];

		if (c->state != C_FREE && now >= c->deadline_ns) {
			if (now >= g_win_start && now < g_win_end)
				g_timeouts++;
			conn_close(c);
		}
	}
}

static int run(void)
{
	uint64_t t0 = bench_now_ns(), now, last_expire = t0;
	uint64_t period = g_opt.rate > 0 ? (uint64_t)(1e9 / g_opt.rate) : 0;
	uint64_t next_due = t0;
	struct epoll_event evs[256];

	g_win_start = t0 + (uint64_t)(g_opt.warmup_s * 1e9);
	g_win_end = g_win_start + (uint64_t)(g_opt.duration_s * 1e9);
	for (;;) {
		/* Closed loop: only a bound for expiry; open loop: the due time
		 */
		struct timespec timeout = {.tv_nsec = 10000000};
		int n;

		now = bench_now_ns();
		if (now >= g_win_end)
			break;
		/* Fill free slots: at once (closed loop) or when due. */
		for (unsigned int i = 0; i < g_opt.concurrency; i++) {
			if (g_conn[i].state != C_FREE)
				continue;
			if (period) {
				if (next_due > now)
					break;
				if (now - next_due > 1000000)
					g_late++;
				conn_start(&g_conn[i], next_due);
				next_due += period;
			} else {
				conn_start(&g_conn[i], bench_now_ns());
			}
		}
		if (period) {
			now = bench_now_ns();
			if (next_due <= now)
				timeout.tv_nsec = 0;
			else if (next_due - now < 10000000)
				timeout.tv_nsec = (long)(next_due - now);
		}
		/* Nanosecond timeouts: a millisecond one would spin or be late.
		 */
		n = epoll_pwait2(g_ep, evs, 256, &timeout, NULL);
		if (n < 0 && errno != EINTR) {
			perror("bench_load: epoll_pwait2");
			return -1;
		}
		for (int i = 0; i < n; i++)
			conn_event(evs[i].data.ptr, evs[i].events);
		now = bench_now_ns();
		if (now - last_expire > 50000000) {
			expire(now);
			last_expire = now;
		}
	}
	for (unsigned int i = 0; i < g_opt.concurrency; i++)
		if (g_conn[i].state != C_FREE)
			conn_close(&g_conn[i]);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_load --target ADDR:PORT... --src-base IP "
		   "--sources N [--concurrency C] [--rate R] [--warmup S] "
		   "[--duration S] [--timeout-ms T] [--spread turn|hash]\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{"target", required_argument, NULL, 't'},
		{"src-base", required_argument, NULL, 's'},
		{"sources", required_argument, NULL, 'n'},
		{"concurrency", required_argument, NULL, 'c'},
		{"rate", required_argument, NULL, 'r'},
		{"warmup", required_argument, NULL, 'w'},
		{"duration", required_argument, NULL, 'd'},
		{"timeout-ms", required_argument, NULL, 'T'},
		{"spread", required_argument, NULL, 'S'},
		{NULL, 0, NULL, 0},
	};
	bool have_src = false;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (g_opt.ntargets == MAX_TARGETS ||
			    tool_parse_hostport(
				    optarg, &g_opt.target[g_opt.ntargets],
				    &g_opt.target_len[g_opt.ntargets]))
				return -1;
			g_opt.ntargets++;
			break;
		case 's':
			if (tool_parse_ip(optarg, &g_opt.src_base))
				return -1;
			have_src = true;
			break;
		case 'n':
			g_opt.sources = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			g_opt.concurrency = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			g_opt.rate = strtod(optarg, NULL);
			break;
		case 'w':
			g_opt.warmup_s = strtod(optarg, NULL);
			break;
		case 'd':
			g_opt.duration_s = strtod(optarg, NULL);
			break;
		case 'T':
			g_opt.timeout_ms = strtoul(optarg, NULL, 10);
			break;
		case 'S':
			if (strcmp(optarg, "hash") && strcmp(optarg, "turn"))
				return -1;
			g_opt.spread_hash = !strcmp(optarg, "hash");
			break;
		default:
			return -1;
		}
	}
	if (optind != argc || !g_opt.ntargets || !have_src || !g_opt.sources ||
	    !g_opt.concurrency || g_opt.concurrency > MAX_CONC ||
	    g_opt.duration_s <= 0 || g_opt.warmup_s < 0 || g_opt.rate < 0 ||
	    !g_opt.timeout_ms || g_opt.timeout_ms > 4000)
		return -1;
	for (unsigned int i = 0; i < g_opt.ntargets; i++)
		if (g_opt.target[i].ss_family != g_opt.src_base.ss_family)
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	if (parse_args(argc, argv)) {
		usage(stderr);
		return 2;
	}
	tool_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	for (unsigned int i = 0; i < MAX_CONC; i++)
		g_conn[i].fd = -1;
	g_ep = epoll_create1(EPOLL_CLOEXEC);
	if (g_ep < 0 || run())
		return 1;
	bench_lat_sort(&g_lat);
	printf("conns=%zu secs=%.3f rate=%.1f p50_us=%.1f p90_us=%.1f "
	       "p99_us=%.1f p999_us=%.1f max_us=%.1f errors=%lu timeouts=%lu "
	       "late=%lu\n",
	       g_lat.n, g_opt.duration_s, g_lat.n / g_opt.duration_s,
	       bench_lat_us(&g_lat, 0.5), bench_lat_us(&g_lat, 0.9),
	       bench_lat_us(&g_lat, 0.99), bench_lat_us(&g_lat, 0.999),
	       bench_lat_us(&g_lat, 1.0), g_errors, g_timeouts, g_late);
	free(g_lat.ns);
	return g_lat.n ? 0 : 1;
}

// SPDX-License-Identifier: MIT
/*
 * bench_dgram: datagram request/response load generator.
 *
 *   bench_dgram --target ADDR:PORT [--target ADDR:PORT]... --src-base IP
 *               [--sources N] [--flows F] [--size BYTES] [--cids FILE]
 *               [--warmup S] [--duration S] [--timeout-ms T]
 *
 * One thread, epoll. F flows, each a connected UDP socket bound to the
 * next of N client source addresses (IP_FREEBIND; the sources are only
 * routed locally) with a port the kernel picks, to target f % (number of
 * targets). Every flow keeps one request in flight (closed loop): a
 * reply starts its next request at once. A request is BYTES long: a
 * DNS-like query by default; with --cids, a QUIC 1-RTT (short header)
 * datagram whose destination connection ID is line f % (lines) of FILE
 * (hex), so each flow is one QUIC connection. The server echoes the
 * datagram (bench_backend --udp); the flow number and a sequence number
 * in the payload tell a reply from a late one. A request unanswered after
 * T ms counts as a timeout and the flow sends its next.
 *
 * Only replies that arrive inside the measured window (after the warmup)
 * count. Latency is from send() to the reply's recv(). Output, one line:
 *   dgrams=N secs=S rate=R p50_us=.. p90_us=.. p99_us=.. p999_us=..
 *   max_us=.. timeouts=T errors=E late=L
 * Exit status 0, or 1 when nothing came back, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
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

#define MAX_TARGETS 16
#define MAX_FLOWS   4096
#define MAX_CID	    20
#define MAX_SIZE    1400
#define TAG_LEN	    8 /* flow, sequence: 32 bits each */

struct flow {
	int fd;
	uint32_t seq;
	uint64_t sent_ns;
	uint8_t cid[MAX_CID];
	uint8_t cid_len;
};

static struct {
	struct sockaddr_storage target[MAX_TARGETS];
	socklen_t target_len[MAX_TARGETS];
	unsigned int ntargets;
	struct sockaddr_storage src_base;
	bool have_src;
	unsigned long sources;
	unsigned int flows;
	unsigned int size;
	const char *cids;
	double warmup_s, duration_s;
	unsigned int timeout_ms;
} g_opt = {.sources = 500,
	   .flows = 64,
	   .size = 40,
	   .warmup_s = 1,
	   .duration_s = 5,
	   .timeout_ms = 200};

static struct flow g_flow[MAX_FLOWS];
static uint64_t g_win_start, g_win_end;
static struct bench_lat g_lat;
static unsigned long g_timeouts, g_errors, g_late;

static bool in_window(uint64_t t)
{
	return t >= g_win_start && t < g_win_end;
}

/* The request of flow @f: QUIC short header or a DNS-like query, tagged. */
static size_t build(const struct flow *f, uint32_t idx, uint8_t *b)
{
	size_t off = 0;

	memset(b, 0x5a, g_opt.size);
	if (f->cid_len) {
		b[off++] = 0x41; /* short header, fixed bit, 2-byte PN */
		memcpy(b + off, f->cid, f->cid_len);
		off += f->cid_len;
		b[off++] = (uint8_t)(f->seq >> 8);
		b[off++] = (uint8_t)f->seq;
	} else {
		/* DNS header: ID, RD, one question. */
		b[0] = (uint8_t)(f->seq >> 8);
		b[1] = (uint8_t)f->seq;
		b[2] = 0x01;
		b[5] = 0x01;
		off = 12;
	}
	memcpy(b + off, &idx, 4);
	memcpy(b + off + 4, &f->seq, 4);
	return g_opt.size;
}

static size_t tag_off(const struct flow *f)
{
	return f->cid_len ? 1 + f->cid_len + 2 : 12;
}

static void send_next(struct flow *f, uint32_t idx)
{
	uint8_t b[MAX_SIZE];
	size_t n;

	f->seq++;
	n = build(f, idx, b);
	f->sent_ns = bench_now_ns();
	if (send(f->fd, b, n, 0) != (ssize_t)n && in_window(f->sent_ns))
		g_errors++;
}

static void on_readable(struct flow *f, uint32_t idx)
{
	uint8_t b[MAX_SIZE];
	size_t t = tag_off(f);

	for (;;) {
		ssize_t n = recv(f->fd, b, sizeof(b), MSG_DONTWAIT);
		uint64_t now = bench_now_ns();
		uint32_t ri, rs;

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR && in_window(now))
				g_errors++; /* ECONNREFUSED: nobody there */
			if (errno != EINTR)
				return;
			continue;
		}
		if ((size_t)n < t + TAG_LEN)
			continue;
		memcpy(&ri, b + t, 4);
		memcpy(&rs, b + t + 4, 4);
		if (ri != idx || rs != f->seq) {
			g_late++;
			continue;
		}
		if (in_window(now))
			bench_lat_add(&g_lat, now - f->sent_ns);
		send_next(f, idx);
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Line @f % lines of --cids into flow @f's CID, for every flow. */
static int load_cids(void)
{
	static uint8_t cid[MAX_FLOWS][MAX_CID];
	static uint8_t len[MAX_FLOWS];
	char line[128];
	unsigned int n = 0;
	FILE *fp = fopen(g_opt.cids, "r");

	if (!fp) {
		perror(g_opt.cids);
		return -1;
	}
	while (n < MAX_FLOWS && fgets(line, sizeof(line), fp)) {
		size_t l = strcspn(line, " \t\r\n");

		if (l < 2 || l % 2 || l / 2 > MAX_CID)
			continue;
		for (size_t i = 0; i < l / 2; i++) {
			int hi = hexval(line[2 * i]),
			    lo = hexval(line[2 * i + 1]);

			if (hi < 0 || lo < 0)
				break;
			cid[n][i] = (uint8_t)(hi << 4 | lo);
		}
		len[n++] = (uint8_t)(l / 2);
	}
	fclose(fp);
	if (!n) {
		fprintf(stderr, "bench_dgram: no CIDs in %s\n", g_opt.cids);
		return -1;
	}
	for (unsigned int f = 0; f < g_opt.flows; f++) {
		memcpy(g_flow[f].cid, cid[f % n], MAX_CID);
		g_flow[f].cid_len = len[f % n];
	}
	return 0;
}

static int open_flows(int ep)
{
	for (unsigned int f = 0; f < g_opt.flows; f++) {
		struct sockaddr_storage src;
		socklen_t sl =
			tool_src_addr(&g_opt.src_base, f % g_opt.sources, &src);
		unsigned int t = f % g_opt.ntargets;
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = f};
		int fd = socket(src.ss_family,
				SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		g_flow[f].fd = fd;
		if (fd < 0 || tool_set_freebind(fd, src.ss_family) ||
		    bind(fd, (struct sockaddr *)&src, sl) ||
		    connect(fd, (struct sockaddr *)&g_opt.target[t],
			    g_opt.target_len[t]) ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
			perror("bench_dgram: flow socket");
			return -1;
		}
	}
	return 0;
}

static void expire(void)
{
	uint64_t limit = (uint64_t)g_opt.timeout_ms * 1000000ull;
	uint64_t now = bench_now_ns();

	/* sent_ns <= now: both read here, after every send so far. */
	for (unsigned int f = 0; f < g_opt.flows; f++)
		if (now - g_flow[f].sent_ns > limit) {
			if (in_window(now))
				g_timeouts++;
			send_next(&g_flow[f], f);
		}
}

static int run(void)
{
	struct epoll_event evs[256];
	uint64_t t0, now, last_expire;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || open_flows(ep))
		return -1;
	t0 = bench_now_ns();
	last_expire = t0;
	g_win_start = t0 + (uint64_t)(g_opt.warmup_s * 1e9);
	g_win_end = g_win_start + (uint64_t)(g_opt.duration_s * 1e9);
	for (unsigned int f = 0; f < g_opt.flows; f++)
		send_next(&g_flow[f], f);
	while ((now = bench_now_ns()) < g_win_end) {
		int n = epoll_wait(ep, evs, 256, 10);

		if (n < 0 && errno != EINTR) {
			perror("bench_dgram: epoll_wait");
			return -1;
		}
		for (int i = 0; i < n; i++)
			on_readable(&g_flow[evs[i].data.u32], evs[i].data.u32);
		if (now - last_expire > 20000000) {
			expire();
			last_expire = now;
		}
	}
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{"target", required_argument, NULL, 't'},
		{"src-base", required_argument, NULL, 's'},
		{"sources", required_argument, NULL, 'n'},
		{"flows", required_argument, NULL, 'f'},
		{"size", required_argument, NULL, 'z'},
		{"cids", required_argument, NULL, 'c'},
		{"warmup", required_argument, NULL, 'w'},
		{"duration", required_argument, NULL, 'd'},
		{"timeout-ms", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned int t = g_opt.ntargets;

		switch (c) {
		case 't':
			if (t == MAX_TARGETS ||
			    tool_parse_hostport(optarg, &g_opt.target[t],
						&g_opt.target_len[t]))
				return -1;
			g_opt.ntargets++;
			break;
		case 's':
			if (tool_parse_ip(optarg, &g_opt.src_base))
				return -1;
			g_opt.have_src = true;
			break;
		case 'n':
			g_opt.sources = strtoul(optarg, NULL, 10);
			break;
		case 'f':
			g_opt.flows = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'z':
			g_opt.size = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'c':
			g_opt.cids = optarg;
			break;
		case 'w':
			g_opt.warmup_s = strtod(optarg, NULL);
			break;
		case 'd':
			g_opt.duration_s = strtod(optarg, NULL);
			break;
		case 'o':
			g_opt.timeout_ms =
				(unsigned int)strtoul(optarg, NULL, 10);
			break;
		default:
			return -1;
		}
	}
	/* Room for the header, the longest CID and the tag. */
	if (!g_opt.ntargets || !g_opt.have_src || !g_opt.sources ||
	    !g_opt.flows || g_opt.flows > MAX_FLOWS || optind != argc ||
	    g_opt.size < 1 + MAX_CID + 2 + TAG_LEN || g_opt.size > MAX_SIZE ||
	    !g_opt.timeout_ms || g_opt.duration_s <= 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	if (parse_args(argc, argv)) {
		fprintf(stderr,
			"usage: bench_dgram --target ADDR:PORT... --src-base "
			"IP "
			"[--sources N] [--flows F]\n"
			"                   [--size BYTES (31..1400)] [--cids "
			"FILE] [--warmup S] [--duration S]\n"
			"                   [--timeout-ms T]\n");
		return 2;
	}
	tool_raise_nofile();
	if (g_opt.cids && load_cids())
		return 1;
	if (run())
		return 1;
	bench_lat_sort(&g_lat);
	printf("dgrams=%zu secs=%.3f rate=%.0f p50_us=%.1f p90_us=%.1f "
	       "p99_us=%.1f p999_us=%.1f max_us=%.1f timeouts=%lu errors=%lu "
	       "late=%lu\n",
	       g_lat.n, g_opt.duration_s, g_lat.n / g_opt.duration_s,
	       bench_lat_us(&g_lat, 0.5), bench_lat_us(&g_lat, 0.9),
	       bench_lat_us(&g_lat, 0.99), bench_lat_us(&g_lat, 0.999),
	       bench_lat_us(&g_lat, 1.0), g_timeouts, g_errors, g_late);
	return g_lat.n ? 0 : 1;
}

// SPDX-License-Identifier: MIT
/*
 * flow_client: established UDP flows for the end-to-end tests of
 * generations (tests/e2e/test_generations.sh).
 *
 *   flow_client --target ADDR:PORT --src-base IP --count N
 *               --port-base P [--dcid HEX] [--interval-ms MS]
 *
 * Flow i (0 .. N-1) is one socket bound to --src-base + i, port
 * --port-base + i, for its whole life: a fixed 4-tuple, as a QUIC
 * connection or any UDP session has. Every --interval-ms (100) each flow
 * sends one datagram: a QUIC 1-RTT packet whose DCID is --dcid, or
 * "hello". Every answer (rs_backend: "NAME <peer-ip>") is printed as
 * "<i> <NAME>" and flushed at once, after a first line "ready" once
 * every flow's socket is bound, so a test can cut the output into phases
 * by its line count. Runs until SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool_net.h"

#define MAX_FLOWS 256
#define MAX_CID	  20
#define REPLY_MAX 192

static struct {
	struct tool_endpoints ep;
	unsigned long count, port_base, interval_ms;
	uint8_t dcid[MAX_CID];
	size_t dcid_len;
} g_opt = {.count = 1, .interval_ms = 100};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: flow_client --target ADDR:PORT --src-base IP "
		   "--count N --port-base P\n"
		   "                   [--dcid HEX] [--interval-ms MS]\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		TOOL_OPTS_ENDPOINTS,
		{"count", required_argument, NULL, 'n'},
		{"port-base", required_argument, NULL, 'p'},
		{"dcid", required_argument, NULL, 'd'},
		{"interval-ms", required_argument, NULL, 'i'},
		TOOL_OPTS_END,
	};
	int c;

	while ((c = tool_client_getopt("flow_client", argc, argv, opts, usage,
				       &g_opt.ep)) != -1) {
		if ((c == 'n' &&
		     tool_parse_ulong("flow_client", "--count", optarg, 1,
				      MAX_FLOWS, &g_opt.count)) ||
		    (c == 'p' &&
		     tool_parse_ulong("flow_client", "--port-base", optarg,
				      1024, 65000, &g_opt.port_base)) ||
		    (c == 'i' &&
		     tool_parse_ulong("flow_client", "--interval-ms", optarg, 1,
				      10000, &g_opt.interval_ms)))
			return -1;
		if (c == 'd') {
			int n = tool_parse_hex("flow_client", "--dcid", optarg,
					       g_opt.dcid, MAX_CID);

			if (n < 0)
				return -1;
			g_opt.dcid_len = (size_t)n;
		}
		if (c == '?' || c == 'h')
			return c == 'h' ? 1 : -1;
	}
	return tool_client_args_done("flow_client", argc, &g_opt.ep, true,
				     usage);
}

/* Flow @i's socket: its own source address and port, connected. */
static int open_flow(unsigned long i)
{
	struct sockaddr_storage src;
	socklen_t len = tool_src_addr(&g_opt.ep.src_base, i, &src);
	uint16_t port = htons((uint16_t)(g_opt.port_base + i));
	int fd = socket(src.ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = port;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = port;
	if (tool_set_freebind(fd, src.ss_family) ||
	    bind(fd, (struct sockaddr *)&src, len) ||
	    connect(fd, (struct sockaddr *)&g_opt.ep.target,
		    g_opt.ep.target_len)) {
		fprintf(stderr, "flow_client: flow %lu: %s\n", i,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A QUIC 1-RTT packet with the DCID, or a plain datagram. */
static size_t datagram(uint8_t *out, unsigned long seq)
{
	size_t n = 0;

	if (!g_opt.dcid_len) {
		memcpy(out, "hello", 5);
		return 5;
	}
	out[n++] = 0x41; /* short header, fixed bit, 2-byte PN */
	memcpy(out + n, g_opt.dcid, g_opt.dcid_len);
	n += g_opt.dcid_len;
	for (int k = 0; k < 24; k++)
		out[n++] = (uint8_t)(seq * 31 + (unsigned long)k * 7);
	return n;
}

static void drain(int fd, unsigned long i)
{
	char buf[REPLY_MAX + 1], name[REPLY_MAX];
	ssize_t r;

	while ((r = recv(fd, buf, REPLY_MAX, 0)) > 0) {
		buf[r] = '\0';
		if (sscanf(buf, "%191s", name) == 1)
			printf("%lu %s\n", i, name);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct pollfd pfd[MAX_FLOWS];
	uint8_t pkt[64];
	unsigned long seq = 0;
	int r = parse_args(argc, argv);

	if (r)
		return r > 0 ? 0 : 2;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	for (unsigned long i = 0; i < g_opt.count; i++) {
		pfd[i].fd = open_flow(i);
		pfd[i].events = POLLIN;
		if (pfd[i].fd < 0)
			return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!g_stop) {
		struct timespec next;
		size_t len = datagram(pkt, seq++);

		clock_gettime(CLOCK_MONOTONIC, &next);
		for (unsigned long i = 0; i < g_opt.count; i++)
			(void)send(pfd[i].fd, pkt, len, 0);
		/* Answers until the next round is due. */
		for (;;) {
			struct timespec now;
			long left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = (long)g_opt.interval_ms -
			       ((now.tv_sec - next.tv_sec) * 1000 +
				(now.tv_nsec - next.tv_nsec) / 1000000);
			if (left <= 0 || g_stop ||
			    poll(pfd, g_opt.count, (int)left) < 0)
				break;
			for (unsigned long i = 0; i < g_opt.count; i++)
				if (pfd[i].revents & POLLIN)
					drain(pfd[i].fd, i);
		}
	}
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * quic_client: sends QUIC-shaped datagrams for the end-to-end tests of the
 * TC cookie path (tests/e2e/test_quic.sh) and says which backend answered.
 *
 *   quic_client --target ADDR:PORT --src-base IP [--count N]
 *               [--port-base P] [--type short|handshake|initial|0rtt]
 *               [--version 1|2] (--dcid HEX | --random-dcid [--cid-len L])
 *               [--size BYTES] [--timeout-ms T]
 *
 * Attempt i (0 .. N-1) uses a fresh UDP socket bound to source address
 * --src-base + i (IP_FREEBIND: the tests make client ranges local with a
 * route) and source port --port-base + i (0: the kernel picks), so one
 * "connection" can be made to migrate: same DCID, new address and port
 * every time. The datagram is a QUIC v1 (or v2) packet of the given type
 * whose destination connection ID is --dcid, or a random one per attempt
 * with --random-dcid (what a client puts in its first Initial). Only the
 * headers matter to ringsteer; the protected payload is random bytes.
 *
 * The backend (rs_backend --udp) answers any datagram with
 * "NAME <peer-ip>"; each attempt prints "<src-ip> <src-port> <NAME>" or
 * "<src-ip> <src-port> ERR:<reason>". A lost datagram is sent again (4
 * tries); the summary on stderr counts the datagrams actually sent
 * ("sent="), which is what the data plane's counters see. Exit status 0
 * when every attempt got an answer, 1 otherwise, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tool_net.h"

#define TRIES	     4
#define MAX_CID	     20
#define MAX_DATAGRAM 1500
#define INITIAL_SIZE 1200 /* RFC 9000 14.1: client Initials are padded */
#define DEFAULT_SIZE 64
#define REPLY_MAX    192
#define SCID_LEN     8
#define PN_LEN_BITS  0x01 /* 2-byte packet numbers */
#define FIXED_BIT    0x40
#define LONG_HDR_BIT 0x80
#define QUIC_V1	     0x00000001u
#define QUIC_V2	     0x6b3343cfu

enum pkt_type { PKT_SHORT, PKT_INITIAL, PKT_0RTT, PKT_HANDSHAKE };

struct options {
	struct tool_endpoints ep;
	unsigned long count;
	unsigned long port_base;
	enum pkt_type type;
	unsigned int version; /* 1 or 2 */
	uint8_t dcid[MAX_CID];
	size_t dcid_len;
	bool random_dcid;
	unsigned long size;
	unsigned long timeout_ms;
};

static struct options g_opt = {
	.count = 1,
	.type = PKT_SHORT,
	.version = 1,
	.dcid_len = 8,
	.timeout_ms = 1000,
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: quic_client --target ADDR:PORT --src-base IP "
		"[--count N] [--port-base P]\n"
		"                   [--type short|handshake|initial|0rtt] "
		"[--version 1|2]\n"
		"                   (--dcid HEX | --random-dcid [--cid-len L]) "
		"[--size BYTES]\n"
		"                   [--timeout-ms T]\n"
		"  ADDR is an IPv4 address or [IPv6 address]\n");
}

static int parse_type(const char *s)
{
	if (!strcmp(s, "short"))
		g_opt.type = PKT_SHORT;
	else if (!strcmp(s, "initial"))
		g_opt.type = PKT_INITIAL;
	else if (!strcmp(s, "0rtt"))
		g_opt.type = PKT_0RTT;
	else if (!strcmp(s, "handshake"))
		g_opt.type = PKT_HANDSHAKE;
	else
		return -1;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		TOOL_OPTS_ENDPOINTS,
		{"count", required_argument, NULL, 'n'},
		{"port-base", required_argument, NULL, 'p'},
		{"type", required_argument, NULL, 'y'},
		{"version", required_argument, NULL, 'v'},
		{"dcid", required_argument, NULL, 'd'},
		{"random-dcid", no_argument, NULL, 'r'},
		{"cid-len", required_argument, NULL, 'l'},
		{"size", required_argument, NULL, 'z'},
		{"timeout-ms", required_argument, NULL, 'o'},
		TOOL_OPTS_END,
	};
	bool have_dcid = false;
	unsigned long v;
	int c, n;

	while ((c = tool_client_getopt("quic_client", argc, argv, opts, usage,
				       &g_opt.ep)) != -1) {
		switch (c) {
		case 'n':
			if (tool_parse_ulong("quic_client", "--count", optarg,
					     1, 100000, &g_opt.count))
				return -1;
			break;
		case 'p':
			if (tool_parse_ulong("quic_client", "--port-base",
					     optarg, 0, 65535,
					     &g_opt.port_base))
				return -1;
			break;
		case 'y':
			if (parse_type(optarg)) {
				fprintf(stderr, "quic_client: --type is short, "
						"handshake, initial or 0rtt\n");
				return -1;
			}
			break;
		case 'v':
			if (tool_parse_ulong("quic_client", "--version", optarg,
					     1, 2, &v))
				return -1;
			g_opt.version = (unsigned int)v;
			break;
		case 'd':
			n = tool_parse_hex("quic_client", "--dcid", optarg,
					   g_opt.dcid, MAX_CID);
			if (n < 0)
				return -1;
			g_opt.dcid_len = (size_t)n;
			have_dcid = true;
			break;
		case 'r':
			g_opt.random_dcid = true;
			break;
		case 'l':
			if (tool_parse_ulong("quic_client", "--cid-len", optarg,
					     1, MAX_CID, &v))
				return -1;
			g_opt.dcid_len = v;
			break;
		case 'z':
			if (tool_parse_ulong("quic_client", "--size", optarg, 1,
					     MAX_DATAGRAM, &g_opt.size))
				return -1;
			break;
		case 'o':
			if (tool_parse_ulong("quic_client", "--timeout-ms",
					     optarg, 10, 60000,
					     &g_opt.timeout_ms))
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (tool_client_args_done("quic_client", argc, &g_opt.ep,
				  have_dcid != g_opt.random_dcid, usage))
		return -1;
	if (g_opt.port_base && g_opt.port_base + g_opt.count - 1 > 65535) {
		fprintf(stderr, "quic_client: --port-base + --count passes "
				"65535\n");
		return -1;
	}
	if (!g_opt.size)
		g_opt.size =
			g_opt.type == PKT_INITIAL ? INITIAL_SIZE : DEFAULT_SIZE;
	return 0;
}

static void random_bytes(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t got = getrandom(p, n, 0);

		if (got <= 0)
			continue;
		p += got;
		n -= (size_t)got;
	}
}

/* Long header type bits: RFC 9000 17.2 (v1), RFC 9369 3.2 (v2). */
static uint8_t long_type(enum pkt_type t)
{
	static const uint8_t v1[] = {
		[PKT_INITIAL] = 0, [PKT_0RTT] = 1, [PKT_HANDSHAKE] = 2};
	static const uint8_t v2[] = {
		[PKT_INITIAL] = 1, [PKT_0RTT] = 2, [PKT_HANDSHAKE] = 3};

	return g_opt.version == 2 ? v2[t] : v1[t];
}

/*
 * A packet whose headers are what a client would send, and whose
 * protected part (packet number, payload) is random. Returns its length.
 */
static size_t build_packet(uint8_t *p, const uint8_t *dcid, size_t dcid_len)
{
	size_t size = g_opt.size, off = 0, rest;
	uint32_t version = g_opt.version == 2 ? QUIC_V2 : QUIC_V1;

	random_bytes(p, size);
	if (g_opt.type == PKT_SHORT) {
		p[off++] = FIXED_BIT | PN_LEN_BITS;
		memcpy(p + off, dcid, dcid_len);
		off += dcid_len;
		return size > off ? size : off;
	}
	p[off++] = LONG_HDR_BIT | FIXED_BIT |
		   (uint8_t)(long_type(g_opt.type) << 4) | PN_LEN_BITS;
	p[off++] = (uint8_t)(version >> 24);
	p[off++] = (uint8_t)(version >> 16);
	p[off++] = (uint8_t)(version >> 8);
	p[off++] = (uint8_t)version;
	p[off++] = (uint8_t)dcid_len;
	memcpy(p + off, dcid, dcid_len);
	off += dcid_len;
	p[off++] = SCID_LEN; /* SCID: already random */
	off += SCID_LEN;
	if (g_opt.type == PKT_INITIAL)
		p[off++] = 0; /* token length */
	/* Length (2-byte varint) covers packet number and payload. */
	if (size < off + 2 + 2)
		size = off + 2 + 2;
	rest = size - off - 2;
	p[off++] = (uint8_t)(0x40 | (rest >> 8));
	p[off++] = (uint8_t)rest;
	return size;
}

/* One attempt; prints its line. Returns 0 when a backend answered. */
static int attempt(unsigned long i, unsigned long *sent)
{
	int family = g_opt.ep.target.ss_family, fd, tries, err = 0;
	uint8_t pkt[MAX_DATAGRAM + 64], dcid[MAX_CID];
	struct sockaddr_storage src;
	char addr[INET6_ADDRSTRLEN], reply[REPLY_MAX];
	bool answered = false;
	socklen_t slen;
	uint16_t port = 0;
	size_t len;

	slen = tool_src_addr(&g_opt.ep.src_base, i, &src);
	if (g_opt.port_base)
		port = (uint16_t)(g_opt.port_base + i);
	if (family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&src)->sin6_port = htons(port);
	tool_addr_str(&src, addr, sizeof(addr));

	if (g_opt.random_dcid)
		random_bytes(dcid, g_opt.dcid_len);
	else
		memcpy(dcid, g_opt.dcid, g_opt.dcid_len);
	len = build_packet(pkt, dcid, g_opt.dcid_len);

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || tool_set_freebind(fd, family) ||
	    bind(fd, (struct sockaddr *)&src, slen) ||
	    connect(fd, (struct sockaddr *)&g_opt.ep.target,
		    g_opt.ep.target_len)) {
		err = errno;
		goto out;
	}
	if (!port) {
		struct sockaddr_storage me;
		socklen_t mlen = sizeof(me);

		if (!getsockname(fd, (struct sockaddr *)&me, &mlen))
			port = ntohs(
				family == AF_INET
					? ((struct sockaddr_in *)&me)->sin_port
					: ((struct sockaddr_in6 *)&me)
						  ->sin6_port);
	}
	for (tries = 0; tries < TRIES && !answered; tries++) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (send(fd, pkt, len, 0) < 0) {
			err = errno;
			break;
		}
		(*sent)++;
		if (poll(&pfd, 1, (int)(g_opt.timeout_ms / TRIES)) <= 0)
			continue;
		n = recv(fd, reply, sizeof(reply) - 1, 0);
		if (n < 0) {
			err = errno;
			break;
		}
		reply[n] = '\0';
		reply[strcspn(reply, " \n")] = '\0';
		answered = reply[0] != '\0';
	}
out:
	if (fd >= 0)
		close(fd);
	if (answered) {
		printf("%s %u %s\n", addr, port, reply);
		return 0;
	}
	if (err)
		printf("%s %u ERR:%s\n", addr, port, tool_errno_name(err));
	else
		printf("%s %u ERR:timeout\n", addr, port);
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long failed = 0, sent = 0;

	if (parse_args(argc, argv))
		return 2;
	for (unsigned long i = 0; i < g_opt.count; i++)
		failed += attempt(i, &sent) != 0;
	fflush(stdout);
	fprintf(stderr,
		"quic_client: attempts=%lu ok=%lu failed=%lu sent=%lu\n",
		g_opt.count, g_opt.count - failed, failed, sent);
	return failed ? 1 : 0;
}

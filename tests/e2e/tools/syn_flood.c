// SPDX-License-Identifier: MIT
/*
 * syn_flood: SYNs from forged IPv4 source addresses, for the end-to-end
 * tests. No handshake ever follows, which is what a SYN flood is.
 *
 *   syn_flood --target ADDR:PORT --src-base IP --count N [--sources S]
 *             [--burst B]
 *
 * Sources are addresses counted up from --src-base (S of them, default
 * N), each sending B SYNs in a row (default 1) before the next source's
 * turn, from a new port each time: every packet is a new connection, so
 * each one reaches the socket lookup. Bursts matter for tables with LRU
 * eviction: a source seen again soon looks like an active client. Sent through
 * a raw socket with IP_HDRINCL: the kernel fills in the IP checksum, the
 * TCP checksum is computed here. Both addresses must lie in 198.18.0.0/15,
 * the benchmarking range the tests keep inside their namespaces: a typo
 * must not send forged packets anywhere else.
 *
 * Prints "sent N" and exits 0 when every packet was handed to the kernel,
 * 1 on a send error, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tool_net.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: syn_flood --target ADDR:PORT --src-base IP "
		   "--count N [--sources S] [--burst B]\n");
}

static int in_test_range(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

	return ss->ss_family == AF_INET &&
	       (ntohl(sin->sin_addr.s_addr) & 0xfffe0000u) == 0xc6120000u;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

struct syn {
	struct iphdr ip;
	struct tcphdr tcp;
};

static void build_syn(struct syn *p, uint32_t saddr, uint32_t daddr,
		      uint16_t sport, uint16_t dport, uint32_t seq)
{
	struct {
		uint32_t saddr, daddr;
		uint8_t zero, proto;
		uint16_t len;
	} __attribute__((packed)) ph;
	uint32_t sum;

	memset(p, 0, sizeof(*p));
	p->ip.version = 4;
	p->ip.ihl = 5;
	p->ip.ttl = 64;
	p->ip.protocol = IPPROTO_TCP;
	p->ip.tot_len = htons(sizeof(*p));
	p->ip.saddr = saddr;
	p->ip.daddr = daddr;
	p->tcp.source = htons(sport);
	p->tcp.dest = htons(dport);
	p->tcp.seq = htonl(seq);
	p->tcp.doff = 5;
	p->tcp.syn = 1;
	p->tcp.window = htons(64240);
	ph.saddr = saddr;
	ph.daddr = daddr;
	ph.zero = 0;
	ph.proto = IPPROTO_TCP;
	ph.len = htons(sizeof(p->tcp));
	sum = csum_add(0, &ph, sizeof(ph));
	sum = csum_add(sum, &p->tcp, sizeof(p->tcp));
	p->tcp.check = htons(csum_fold(sum));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		TOOL_OPTS_ENDPOINTS,
		{"count", required_argument, NULL, 'n'},
		{"sources", required_argument, NULL, 'S'},
		{"burst", required_argument, NULL, 'b'},
		TOOL_OPTS_END,
	};
	struct tool_endpoints ep = {0};
	unsigned long count = 0, sources = 0, burst = 1, sent = 0;
	const struct sockaddr_in *dst;
	int c, fd;

	while ((c = tool_client_getopt("syn_flood", argc, argv, opts, usage,
				       &ep)) != -1) {
		if (c == 'n' && !tool_parse_ulong("syn_flood", "--count",
						  optarg, 1, 100000000, &count))
			continue;
		if (c == 'S' && !tool_parse_ulong("syn_flood", "--sources",
						  optarg, 1, 1 << 17, &sources))
			continue;
		if (c == 'b' && !tool_parse_ulong("syn_flood", "--burst",
						  optarg, 1, 64, &burst))
			continue;
		return 2;
	}
	if (tool_client_args_done("syn_flood", argc, &ep, count > 0, usage))
		return 2;
	if (!in_test_range(&ep.target) || !in_test_range(&ep.src_base)) {
		fprintf(stderr, "syn_flood: target and sources must be IPv4 "
				"in 198.18.0.0/15\n");
		return 2;
	}
	if (!sources)
		sources = count;
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0) {
		fprintf(stderr, "syn_flood: raw socket: %s\n", strerror(errno));
		return 1;
	}
	dst = (const struct sockaddr_in *)&ep.target;
	for (unsigned long i = 0; i < count;) {
		unsigned long n = i / burst % sources,
			      round = i / burst / sources;
		struct sockaddr_storage src;
		struct syn p;

		tool_src_addr(&ep.src_base, n, &src);
		if (!in_test_range(&src)) {
			fprintf(stderr,
				"syn_flood: source %lu leaves "
				"198.18.0.0/15\n",
				n);
			close(fd);
			return 2;
		}
		build_syn(
			&p, ((struct sockaddr_in *)&src)->sin_addr.s_addr,
			dst->sin_addr.s_addr,
			(uint16_t)(10000 + (round * burst + i % burst) % 50000),
			ntohs(dst->sin_port), (uint32_t)(i * 2654435761u));
		if (sendto(fd, &p, sizeof(p), 0, (const struct sockaddr *)dst,
			   sizeof(*dst)) != (ssize_t)sizeof(p)) {
			if (errno == ENOBUFS || errno == EAGAIN) {
				usleep(100); /* the queue is full: let it drain
					      */
				continue;
			}
			fprintf(stderr, "syn_flood: sendto: %s\n",
				strerror(errno));
			close(fd);
			return 1;
		}
		sent++;
		i++;
	}
	close(fd);
	printf("sent %lu\n", sent);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * frames: Ethernet frames around a UDP datagram, and QUIC headers to put
 * in them, built byte by byte for BPF_PROG_TEST_RUN of the TC program.
 *
 * test_steer_tc (hand-made cases) and test_tc_fuzz (random and mutated
 * frames) build their frames here so that both feed the program the same
 * layout: the offsets the tests poke at, such as f->l4 + 8 for the QUIC
 * first byte, mean the same in both, and a fix to one builder cannot miss
 * the other.
 */
#ifndef FRAMES_H
#define FRAMES_H

#include <stddef.h>
#include <stdint.h>

#define ETH_LEN	  14
#define FRAME_MAX 1600

struct frame {
	uint8_t b[FRAME_MAX];
	size_t len;
	size_t l4; /* offset of the UDP header */
};

/* Big-endian fields, as they stand on the wire. */
uint16_t get16(const uint8_t *p);
void put16(uint8_t *p, uint16_t v);
void put32(uint8_t *p, uint32_t v);

/* What goes in front of the payload; see frame_udp_bare(). */
struct udp_headers {
	int family;	      /* AF_INET or AF_INET6 */
	const uint8_t *saddr; /* 4 or 16 bytes, network order */
	const uint8_t *daddr; /* 4 or 16 bytes, network order */
	uint16_t sport;
	uint16_t dport;
	unsigned int opt_words; /* IPv4 only: NOP options, in 4-byte words */
	uint16_t frag_off;	/* IPv4 only: flags and fragment offset */
};

/*
 * Ethernet + IPv4 or IPv6 + UDP around @payload, with nothing the program
 * does not read: source MAC 02:00:00:00:00:00, IPv4 ID and both checksums
 * zero. The fuzzer starts from this and mutates it. Bytes of @f past the
 * headers and the payload are left as they were.
 */
void frame_udp_bare(struct frame *f, const struct udp_headers *h,
		    const uint8_t *payload, size_t plen);

/*
 * A datagram as a real stack would send it, from 198.18.1.1:50000 or
 * [2001:db8:1::1]:50000 to @dst:@dport: IPv4 with DF, an ID and a valid
 * header checksum, and with @opt_words words of options a router alert
 * first, the option a host most likely sees. The destination MAC is
 * 00:00:00:00:00:00, the address of the loopback device the test run
 * parses the frame against, so the skb is PACKET_HOST as on a real
 * ingress.
 */
void frame_udp(struct frame *f, int family, const char *dst, uint16_t dport,
	       int opt_words, const uint8_t *payload, size_t plen);

/* QUIC versions and the raw long header type bits of each (RFC 9369). */
#define V1_INITIAL   0
#define V1_0RTT	     1
#define V1_HANDSHAKE 2
#define V1_RETRY     3
#define V2_RETRY     0
#define V2_INITIAL   1
#define V2_0RTT	     2
#define V2_HANDSHAKE 3
#define QUIC_V1	     0x00000001u
#define QUIC_V2	     0x6b3343cfu

/*
 * The start of a long header, everything the program reads: @first,
 * @version, the DCID length and the DCID. Returns the bytes written.
 */
size_t quic_long_start(uint8_t *out, uint8_t first, uint32_t version,
		       const uint8_t *dcid, size_t dcil);

/* A 1-RTT packet: first byte, DCID, then stand-in protected bytes. */
size_t quic_short(uint8_t *out, const uint8_t *dcid, size_t n);

/* A whole long-header packet with raw type bits @type (0..3). */
size_t quic_long(uint8_t *out, uint32_t version, int type, const uint8_t *dcid,
		 size_t dcil);

#endif /* FRAMES_H */

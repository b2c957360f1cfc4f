/* SPDX-License-Identifier: MIT */
/*
 * QUIC header parsing for the TC program: just enough of RFC 8999 (version
 * invariants), RFC 9000 (v1) and RFC 9369 (v2) to find a destination
 * connection ID that the server chose, and nothing that needs decryption.
 *
 * The header is read in place (pkt.bpf.h): a datagram whose QUIC header
 * lies in page fragments is pulled into the linear part first, and one
 * shorter than its lengths claim fails the bounds checks. A found DCID is
 * left in the linear part too, for quic_lb_server_id() to read in place.
 */
#ifndef RS_BPF_QUIC_H
#define RS_BPF_QUIC_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "pkt.bpf.h"

#define QUIC_MAX_CID_LEN 20   /* RFC 9000 17.2: v1 CIDs are 0..20 bytes */
#define QUIC_LONG_HEADER 0x80 /* header form bit of the first byte */
#define QUIC_FIXED_BIT	 0x40 /* must be 1 in v1/v2 (unless greased) */
#define QUIC_LONG_PREFIX 6    /* first byte, version, DCID length */
/*
 * Where a UDP payload may start: Ethernet, IPv4 with all its options and
 * UDP. A bound the verifier needs for offsets into the packet.
 */
#define QUIC_MAX_OFF	  (14 + 60 + 8)
#define QUIC_MAX_DCID_OFF (QUIC_MAX_OFF + QUIC_LONG_PREFIX)

#define QUIC_VERSION_NEG 0x00000000u
#define QUIC_VERSION_1	 0x00000001u
#define QUIC_VERSION_2	 0x6b3343cfu

/* Long packet types whose DCID the server chose (RFC 9000 17.2 / 9369 3.2). */
#define QUIC_V1_TYPE_HANDSHAKE 2
#define QUIC_V2_TYPE_HANDSHAKE 3

/*
 * QUIC-LB first octet: the top 3 bits carry the config rotation codepoint;
 * 0b111 marks a CID the server deliberately made unroutable.
 */
#define QUIC_LB_CONFIG_SHIFT	  5
#define QUIC_LB_CONFIG_UNROUTABLE 7

enum quic_dcid_result {
	QUIC_DCID_FOUND = 0, /* server-chosen DCID of the configured length */
	QUIC_DCID_NONE,	     /* no server-chosen DCID: Initial, 0-RTT, Retry,
			      * Version Negotiation, unknown version, not QUIC
			      */
	QUIC_DCID_OTHER_LEN, /* long header whose DCID has another length */
	QUIC_DCID_MALFORMED, /* truncated, or DCID length above 20 */
};

/*
 * Is a long-header packet of @version with first byte @b0 one whose DCID
 * the server chose? Only Handshake packets: Initial and 0-RTT carry the
 * client's random DCID, Retry is never sent to a server. Unknown versions
 * say nothing about their packet types, so they are treated as unknown.
 */
static __always_inline int quic_long_server_cid(__u32 version, __u8 b0)
{
	__u8 type = (b0 >> 4) & 3;

	if (version == QUIC_VERSION_1)
		return type == QUIC_V1_TYPE_HANDSHAKE;
	if (version == QUIC_VERSION_2)
		return type == QUIC_V2_TYPE_HANDSHAKE;
	return 0;
}

/*
 * Locate the server-chosen destination connection ID of the QUIC datagram
 * whose UDP payload is @len bytes at @off. @cid_len is the length of the
 * CIDs the service's servers issue (1..20): short headers do not carry
 * their DCID length. On QUIC_DCID_FOUND, *dcid_off is where the DCID
 * starts and all @cid_len bytes of it lie inside the payload and in the
 * linear part. Returns an enum quic_dcid_result.
 *
 * @len must already be checked against the skb; the bounds checks check
 * again. Global, verified once: in line at the cookie step and the
 * fleet's QUIC step, its packet pointers took steer_tc from 81,114 to
 * 91,260 verified instructions on 6.18 (issue 39). Callers hold no packet
 * pointer across it (it may pull).
 */
__noinline int quic_find_dcid(struct __sk_buff *skb, __u32 off, __u32 len,
			      __u32 cid_len, __u32 *dcid_off)
{
	__u32 version, dcil;
	__u8 *hdr;

	if (!skb || !dcid_off)
		return QUIC_DCID_MALFORMED;
	/* An empty datagram on a QUIC port is a QUIC header cut short. */
	if (len < 1 || off > QUIC_MAX_OFF)
		return QUIC_DCID_MALFORMED;
	hdr = rs_pkt_at(skb, off, 1);
	if (!hdr)
		return QUIC_DCID_MALFORMED;

	if (!(hdr[0] & QUIC_LONG_HEADER)) {
		/*
		 * Short header (1-RTT). Without the fixed bit it is not
		 * QUIC: STUN, DTLS and others multiplexed on the port, or a
		 * peer greasing the bit (RFC 9287), see docs/quic.md.
		 */
		if (!(hdr[0] & QUIC_FIXED_BIT))
			return QUIC_DCID_NONE;
		if (len < 1 + cid_len || rs_pkt_linear(skb, off + 1 + cid_len))
			return QUIC_DCID_MALFORMED;
		*dcid_off = off + 1;
		return QUIC_DCID_FOUND;
	}

	if (len < QUIC_LONG_PREFIX)
		return QUIC_DCID_MALFORMED;
	hdr = rs_pkt_at(skb, off, QUIC_LONG_PREFIX);
	if (!hdr)
		return QUIC_DCID_MALFORMED;
	version = ((__u32)hdr[1] << 24) | ((__u32)hdr[2] << 16) |
		  ((__u32)hdr[3] << 8) | hdr[4];
	/* Version Negotiation: the low 7 bits of byte 0 are arbitrary. */
	if (version == QUIC_VERSION_NEG)
		return QUIC_DCID_NONE;
	if (!(hdr[0] & QUIC_FIXED_BIT))
		return QUIC_DCID_NONE;
	if (version != QUIC_VERSION_1 && version != QUIC_VERSION_2)
		return QUIC_DCID_NONE;
	dcil = hdr[5];
	if (dcil > QUIC_MAX_CID_LEN || len < QUIC_LONG_PREFIX + dcil)
		return QUIC_DCID_MALFORMED;
	if (!quic_long_server_cid(version, hdr[0]))
		return QUIC_DCID_NONE;
	if (dcil != cid_len)
		return QUIC_DCID_OTHER_LEN;
	if (rs_pkt_linear(skb, off + QUIC_LONG_PREFIX + dcil))
		return QUIC_DCID_MALFORMED;
	*dcid_off = off + QUIC_LONG_PREFIX;
	return QUIC_DCID_FOUND;
}

#endif /* RS_BPF_QUIC_H */

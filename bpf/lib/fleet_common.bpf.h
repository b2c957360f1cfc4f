/* SPDX-License-Identifier: MIT */
/*
 * What every step of the fleet's TC code (fleet.bpf.h) shares: the packet
 * as parsed, this host as the packet's family sees it, the verdicts that
 * pass a packet on, the counters and the address helpers.
 *
 * IPv4 and IPv6 take one path: addresses are held as struct rs_fleet_addr
 * (IPv4 mapped), and only parsing, the key, the socket lookup and the
 * outer header look at the family. IPv4 travels in IPv4 and IPv6 in IPv6
 * (bpf_redirect_neigh() routes by skb->protocol).
 */
#ifndef RS_BPF_FLEET_COMMON_H
#define RS_BPF_FLEET_COMMON_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"
#include "net.bpf.h"

/* Not a fleet packet, or one to steer here: carry on. */
#define FLEET_CONTINUE (-1)

struct fleet_pkt {
	struct rs_fleet_addr saddr; /* IPv4: mapped */
	struct rs_fleet_addr daddr;
	__u32 hlen;  /* of the IP header */
	__u32 len;   /* of the whole IP packet */
	__u16 sport; /* host order */
	__u16 dport;
	__u8 family; /* RS_AF_INET or RS_AF_INET6 */
	__u8 proto;
	__u8 tos; /* IPv4 TOS, IPv6 traffic class */
	__u8 tcp_flags;
};

/*
 * This host as the packet's family sees it: the table's header, its
 * forwarding address of that family (zero: it has none) and the table.
 */
struct fleet_host {
	struct rs_fleet_header h;
	struct rs_fleet_addr self;
	void *table;
};

#define FLEET_COUNT(field)                                                     \
	do {                                                                   \
		__u32 zero_ = 0;                                               \
		struct rs_fleet_stats *st_ =                                   \
			bpf_map_lookup_elem(&rs_fleet_stats, &zero_);          \
		if (st_)                                                       \
			st_->field++;                                          \
	} while (0)

static __always_inline void fleet_addr_v4(struct rs_fleet_addr *a, __u32 v4)
{
	a->w[0] = 0;
	a->w[1] = 0;
	a->w[2] = bpf_htonl(0xffff);
	a->w[3] = v4;
}

static __always_inline int fleet_addr_eq(const struct rs_fleet_addr *a,
					 const struct rs_fleet_addr *b)
{
	/* Without branches: each one would be a verifier state more. */
	return !((a->w[0] ^ b->w[0]) | (a->w[1] ^ b->w[1]) |
		 (a->w[2] ^ b->w[2]) | (a->w[3] ^ b->w[3]));
}

static __always_inline int fleet_addr_none(const struct rs_fleet_addr *a)
{
	return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]);
}

/* Outer header bytes of a forwarded packet of @family. */
static __always_inline __u32 fleet_encap_len(__u8 family)
{
	return family == RS_AF_INET6 ? RS_FLEET_ENCAP6_LEN : RS_FLEET_ENCAP_LEN;
}

/* The address words rs_match_bind() takes: one for IPv4, four for IPv6. */
static __always_inline const __u32 *fleet_bind_addr(const struct fleet_pkt *p)
{
	return p->family == RS_AF_INET6 ? p->daddr.w : &p->daddr.w[3];
}

#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_ACK 0x10

static __always_inline int fleet_is_syn(const struct fleet_pkt *p)
{
	return (p->tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN;
}

#endif /* RS_BPF_FLEET_COMMON_H */

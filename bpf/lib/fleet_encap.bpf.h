/* SPDX-License-Identifier: MIT */
/*
 * Encapsulation: the outer headers of a forwarded packet (outer IP of the
 * packet's own family, UDP to the fleet port, struct rs_fleet_encap with
 * its tag) and the send out of the interface it came in on. A first
 * forward (fleet_encap()) makes room for them; a second chance
 * (fleet_reforward()) rewrites the ones the packet came with.
 */
#ifndef RS_BPF_FLEET_ENCAP_H
#define RS_BPF_FLEET_ENCAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "fleet_tag.bpf.h"
#include "maps.bpf.h"

/* The outer headers of a forwarded packet, written in one store. */
struct fleet_outer {
	struct iphdr ip;
	struct udphdr udp;
	struct rs_fleet_encap encap;
};

struct fleet_outer6 {
	struct ipv6hdr ip6;
	struct udphdr udp;
	struct rs_fleet_encap encap;
};

_Static_assert(sizeof(struct fleet_outer) == RS_FLEET_ENCAP_LEN,
	       "outer headers are RS_FLEET_ENCAP_LEN bytes");
_Static_assert(sizeof(struct fleet_outer6) == RS_FLEET_ENCAP6_LEN,
	       "outer IPv6 headers are RS_FLEET_ENCAP6_LEN bytes");

/*
 * The outer headers are built here, not on fleet_send()'s stack: with them
 * there, steer_tc's frame and fleet_send()'s came to 544 bytes on 6.1,
 * whose verifier rounds every frame up to 32. Per CPU, like the tag's
 * scratch; steer_tc's own, so not pinned.
 */
union fleet_outers {
	struct fleet_outer o4;
	struct fleet_outer6 o6;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, union fleet_outers);
} rs_fleet_outer SEC(".maps");

static __always_inline __u16 ipv4_csum(const struct iphdr *ip)
{
	const __u16 *w = (const __u16 *)ip;
	__u32 sum = 0;

	for (int i = 0; i < (int)(sizeof(*ip) / 2); i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/*
 * Forwarded packets leave through the interface they came in on (a PoP
 * host's uplink to the router); bpf_redirect_neigh() routes the outer
 * destination out of it and resolves the next hop's address. Not
 * bpf_fib_lookup(): it refuses (FWD_DISABLED) on hosts that do not
 * forward, which edge hosts need not.
 */
static __always_inline int fleet_route(struct __sk_buff *skb)
{
	return skb->ingress_ifindex ? (int)skb->ingress_ifindex : -1;
}

/*
 * UDP, then our header: the flow's hash in the source port, so that ECMP
 * spreads forwarded flows. The checksum is 0 in both families: optional
 * over IPv4, and allowed over IPv6 for tunnels (RFC 6935, 6936): only
 * this program reads the outer header, and the inner packet carries its
 * own checksum (docs/fleet.md).
 */
static __always_inline void fleet_udp_fill(struct udphdr *udp,
					   struct rs_fleet_encap *encap,
					   const struct rs_fleet_header *h,
					   __u32 flow, __u32 inner_len,
					   __u8 hops,
					   const struct fleet_sig *sig)
{
	udp->source = bpf_htons(49152 | (flow & 0x3fff));
	udp->dest = bpf_htons(h->port);
	udp->len = bpf_htons(inner_len + sizeof(struct udphdr) +
			     sizeof(struct rs_fleet_encap));
	udp->check = 0;
	encap->magic = bpf_htonl(RS_FLEET_MAGIC);
	encap->version = sig->version;
	encap->hops = hops;
	encap->key_id = sig->key_id;
	encap->pad = 0;
	encap->tag[0] = bpf_htonl((__u32)(sig->tag >> 32));
	encap->tag[1] = bpf_htonl((__u32)sig->tag);
}

static __always_inline void fleet_outer_fill(struct fleet_outer *o,
					     const struct rs_fleet_header *h,
					     __u32 flow, __u32 dst,
					     __u32 inner_len, __u8 tos,
					     __u8 hops,
					     const struct fleet_sig *sig)
{
	o->ip.version = 4;
	o->ip.ihl = 5;
	o->ip.tos = tos;
	o->ip.tot_len = bpf_htons(inner_len + RS_FLEET_ENCAP_LEN);
	o->ip.ttl = 64;
	o->ip.protocol = IPPROTO_UDP;
	o->ip.saddr = h->self_addr;
	o->ip.daddr = dst;
	o->ip.check = 0;
	o->ip.check = ipv4_csum(&o->ip);
	fleet_udp_fill(&o->udp, &o->encap, h, flow, inner_len, hops, sig);
}

static __always_inline void fleet_outer6_fill(
	struct fleet_outer6 *o, const struct fleet_host *fh, __u32 flow,
	const struct rs_fleet_addr *dst, __u32 inner_len, __u8 tclass,
	__u8 hops, const struct fleet_sig *sig)
{
	o->ip6.version = 6;
	o->ip6.priority = tclass >> 4;
	o->ip6.flow_lbl[0] = (__u8)(tclass << 4 | ((flow >> 16) & 0xf));
	o->ip6.flow_lbl[1] = (__u8)(flow >> 8);
	o->ip6.flow_lbl[2] = (__u8)flow;
	o->ip6.payload_len = bpf_htons(inner_len + RS_FLEET_ENCAP6_LEN -
				       sizeof(struct ipv6hdr));
	o->ip6.nexthdr = IPPROTO_UDP;
	o->ip6.hop_limit = 64;
	__builtin_memcpy(&o->ip6.saddr, &fh->self, sizeof(fh->self));
	__builtin_memcpy(&o->ip6.daddr, dst, sizeof(*dst));
	fleet_udp_fill(&o->udp, &o->encap, &fh->h, flow, inner_len, hops, sig);
}

/*
 * The flow's value for the outer UDP source port and IPv6 flow label (the
 * router's ECMP hash spreads flows by them; one flow keeps one path): a
 * mix of the 5-tuple already parsed. Not bpf_get_hash_recalc(): with no
 * hash from the NIC (veth, many virtual NICs) it runs the flow dissector
 * over the packet again, the costliest step of a forwarded packet after
 * the encapsulation itself (issue 21).
 */
static __attribute__((noinline)) __u32 fleet_flow_hash(
	const struct fleet_pkt *p)
{
	__u32 h = ((__u32)p->sport << 16 | p->dport) ^ p->proto;

	h ^= p->saddr.w[0] ^ p->saddr.w[1] ^ p->saddr.w[2] ^ p->saddr.w[3];
	h ^= p->daddr.w[0] ^ p->daddr.w[1] ^ p->daddr.w[2] ^ p->daddr.w[3];
	h *= 0x9e3779b1u;
	return h ^ (h >> 15);
}

/*
 * Write the outer headers for an inner packet of @inner_len bytes of
 * @family to @dst and send it. Returns the TC verdict.
 */
struct fleet_send_args {
	__u32 inner_len;
	__u32 flow;
	int ifindex;
	__u32 member; /* of @dst in the table in force, or RS_NONE */
	__u8 family;
	__u8 tos;
	__u8 hops;
};

/*
 * Not inline: its headers and signature would sit in steer_tc's own frame,
 * which then leaves the QUIC-LB cipher's frame no room (quic_lb.bpf.h).
 */
static __noinline int fleet_send(struct __sk_buff *skb,
				 const struct fleet_host *fh,
				 const struct rs_fleet_addr *dst,
				 const struct fleet_send_args *a)
{
	__u32 inner_len = a->inner_len, flow = a->flow;
	__u8 family = a->family, tos = a->tos, hops = a->hops;
	int ifindex = a->ifindex;
	union fleet_outers *o;
	struct fleet_sig sig;
	__u32 zero = 0;

	if (fleet_sign(skb, fh, family, dst, a->member, inner_len, hops, &sig))
		return TC_ACT_SHOT; /* it lies about its length */
	o = bpf_map_lookup_elem(&rs_fleet_outer, &zero);
	if (!o)
		return TC_ACT_SHOT; /* room made, no headers: never deliver */
	__builtin_memset(o, 0, sizeof(*o));
	if (family == RS_AF_INET6) {
		fleet_outer6_fill(&o->o6, fh, flow, dst, inner_len, tos, hops,
				  &sig);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &o->o6, sizeof(o->o6),
					0))
			return TC_ACT_SHOT; /* half-built: never deliver it */
	} else {
		fleet_outer_fill(&o->o4, &fh->h, flow, dst->w[3], inner_len,
				 tos, hops, &sig);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &o->o4, sizeof(o->o4),
					0))
			return TC_ACT_SHOT;
	}
	return (int)bpf_redirect_neigh(ifindex, NULL, 0, 0);
}

/*
 * Encapsulate the plain packet @p to @dst (@member of the table in force,
 * or RS_NONE) and send it. Returns the TC verdict, or FLEET_CONTINUE when
 * it cannot be sent (left unchanged, then steered here).
 */
static __always_inline int fleet_encap(struct __sk_buff *skb,
				       const struct fleet_host *fh,
				       const struct fleet_pkt *p,
				       const struct rs_fleet_addr *dst,
				       __u32 member, __u8 hops)
{
	__u64 flags = BPF_F_ADJ_ROOM_ENCAP_L4_UDP;
	int ifindex;

	ifindex = fleet_route(skb);
	if (ifindex <= 0)
		return FLEET_CONTINUE;
	flags |= p->family == RS_AF_INET6 ? BPF_F_ADJ_ROOM_ENCAP_L3_IPV6
					  : BPF_F_ADJ_ROOM_ENCAP_L3_IPV4;
	if (bpf_skb_adjust_room(skb, (__s32)fleet_encap_len(p->family),
				BPF_ADJ_ROOM_MAC, flags))
		return FLEET_CONTINUE;
	struct fleet_send_args a = {
		.inner_len = p->len,
		.flow = fleet_flow_hash(p),
		.ifindex = ifindex,
		.member = member,
		.family = p->family,
		.tos = p->tos,
		.hops = hops,
	};

	return fleet_send(skb, fh, dst, &a);
}

/*
 * An encapsulated packet that must go on (second chance): new outer
 * addresses and one more hop, the rest as it came.
 */
static __always_inline int fleet_reforward(struct __sk_buff *skb,
					   const struct fleet_host *fh,
					   const struct fleet_pkt *outer,
					   const struct rs_fleet_addr *dst,
					   __u32 member, __u8 hops)
{
	struct fleet_send_args a = {};
	int ifindex;

	ifindex = fleet_route(skb);
	if (ifindex <= 0)
		return FLEET_CONTINUE;
	a.inner_len = outer->len - fleet_encap_len(outer->family);
	a.flow = fleet_flow_hash(outer);
	a.ifindex = ifindex;
	a.member = member;
	a.family = outer->family;
	a.tos = outer->tos;
	a.hops = hops;
	return fleet_send(skb, fh, dst, &a);
}

#endif /* RS_BPF_FLEET_ENCAP_H */

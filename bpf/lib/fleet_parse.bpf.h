/* SPDX-License-Identifier: MIT */
/*
 * The IP and L4 headers of a packet the fleet step looks at, into struct
 * fleet_pkt: once for a plain packet, once more for the packet inside a
 * forwarded one (fleet_receive()).
 */
#ifndef RS_BPF_FLEET_PARSE_H
#define RS_BPF_FLEET_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "net.bpf.h"
#include "pkt.bpf.h"

static __always_inline int fleet_parse_ip4(struct __sk_buff *skb, __u32 off,
					   struct fleet_pkt *p)
{
	void *end = (void *)(long)skb->data_end;
	struct iphdr *ip = (void *)(long)skb->data + off;

	if ((void *)(ip + 1) > end)
		return -1;
	if (ip->version != 4 || ip->ihl < 5)
		return -1;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return -1;
	p->proto = ip->protocol;
	p->hlen = ip->ihl * 4;
	p->len = bpf_ntohs(ip->tot_len);
	p->tos = ip->tos;
	fleet_addr_v4(&p->saddr, ip->saddr);
	fleet_addr_v4(&p->daddr, ip->daddr);
	return 0;
}

/*
 * No extension headers: TCP or UDP right after the fixed header (a
 * fragment or an option header is not steered by the fleet, as IPv4
 * fragments are not).
 */
static __always_inline int fleet_parse_ip6(struct __sk_buff *skb, __u32 off,
					   struct fleet_pkt *p)
{
	void *end = (void *)(long)skb->data_end;
	struct ipv6hdr *ip6 = (void *)(long)skb->data + off;

	if ((void *)(ip6 + 1) > end)
		return -1;
	if (ip6->version != 6)
		return -1;
	p->proto = ip6->nexthdr;
	p->hlen = sizeof(*ip6);
	p->len = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
	p->tos = (__u8)(ip6->priority << 4 | ip6->flow_lbl[0] >> 4);
	__builtin_memcpy(&p->saddr, &ip6->saddr, sizeof(p->saddr));
	__builtin_memcpy(&p->daddr, &ip6->daddr, sizeof(p->daddr));
	return 0;
}

/* What fleet_parse() reads of the L4 header: the ports, TCP's flags. */
#define FLEET_L4_PORTS 4
#define FLEET_L4_TCP   14

/*
 * An unfragmented TCP or UDP packet of @family at @off, its ports in the
 * frame. Reads the headers in place (rs_pkt_linear()); @off is at most
 * ETH_HLEN + RS_FLEET_ENCAP6_LEN, and callers hold no packet pointer
 * across a call (a pull moves the data). Global, verified once: in line,
 * its packet pointers took steer_tc's call chain past the 512 bytes of
 * stack the verifier allows, and as a static function 6.1 verified it at
 * both call sites on every path into them (steer_tc 106,905 -> 188,909
 * instructions).
 */
__noinline int fleet_parse(struct __sk_buff *skb, __u32 off, __u8 family,
			   struct fleet_pkt *p)
{
	__u32 l4, need;
	__u8 *h;

	if (!skb || !p || off > ETH_HLEN + RS_FLEET_ENCAP6_LEN)
		return -1;
	p->family = family;
	if (rs_pkt_linear(skb,
			  off + (family == RS_AF_INET6 ? sizeof(struct ipv6hdr)
						       : sizeof(struct iphdr))))
		return -1;
	if (family == RS_AF_INET6 ? fleet_parse_ip6(skb, off, p)
				  : fleet_parse_ip4(skb, off, p))
		return -1;
	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP)
		return -1;
	/* Bounded for the verifier: the IPv4 header is at most 60 bytes. */
	l4 = off + (p->hlen & 0x7c);
	if (l4 > ETH_HLEN + RS_FLEET_ENCAP6_LEN + 60)
		return -1;
	need = p->proto == IPPROTO_TCP ? FLEET_L4_TCP : FLEET_L4_PORTS;
	if (rs_pkt_linear(skb, l4 + need))
		return -1;
	h = (__u8 *)(long)skb->data + l4;
	if (h + FLEET_L4_PORTS > (__u8 *)(long)skb->data_end)
		return -1;
	p->sport = (__u16)(h[0] << 8 | h[1]);
	p->dport = (__u16)(h[2] << 8 | h[3]);
	p->tcp_flags = 0;
	if (p->proto == IPPROTO_TCP) {
		if (h + FLEET_L4_TCP > (__u8 *)(long)skb->data_end)
			return -1;
		p->tcp_flags = h[13];
	}
	return 0;
}

#endif /* RS_BPF_FLEET_PARSE_H */

/* SPDX-License-Identifier: MIT */
/*
 * Fleet forwarding at TC ingress (docs/fleet.md). For a packet of a fleet
 * service the same affinity key the rings use picks the owner host from
 * the fleet table; a packet for another host is encapsulated and sent
 * there, and the owner takes the outer headers off so that sk_lookup
 * steers the inner packet as on a single host. The kernel's own tunnel
 * devices are not used: hosts without the FOU/IPIP modules (these
 * machines) cannot decapsulate with them, so both ends are done here.
 *
 * One header per concern, each including what it uses:
 *   fleet_common   the parsed packet, this host, counters, addresses
 *   fleet_parse    IP and L4 headers into struct fleet_pkt
 *   fleet_owner    the table's owner of a key, a member's address, and
 *                  whether this host holds the connection
 *   fleet_flows    the entry host's memory of where SYNs went
 *   fleet_tag      signing and verifying forwarded packets
 *   fleet_encap    the outer headers and the send
 *   fleet_receive  a forwarded packet at the owner: checked, unwrapped
 *   fleet_quic     QUIC datagrams to the member whose ID they carry
 *   fleet_entry    a plain packet: which owner, then forward or stay
 * Included in that order, the global functions keep one order in the
 * object (fleet_parse(), fleet_tag_of(), quic_find_dcid(),
 * quic_lb_server_id()) whoever includes this header.
 */
#ifndef RS_BPF_FLEET_H
#define RS_BPF_FLEET_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "fleet_parse.bpf.h"
#include "fleet_owner.bpf.h"
#include "fleet_flows.bpf.h"
#include "fleet_tag.bpf.h"
#include "fleet_encap.bpf.h"
#include "fleet_receive.bpf.h"
#include "fleet_quic.bpf.h"
#include "fleet_entry.bpf.h"
#include "maps.bpf.h"

/*
 * The fleet step of steer_tc: a TC verdict, or FLEET_CONTINUE to carry on
 * with the (possibly decapsulated) packet. What it did for the trace goes
 * in the packet's note (trace_note.bpf.h).
 */
static __always_inline int fleet_steer(struct __sk_buff *skb)
{
	__u32 zero = 0, slot = RS_FLEET_SLOT_ADDR6;
	struct rs_fleet_slot *hs, *self6;
	struct fleet_pkt p = {};
	struct fleet_host fh;
	struct ethhdr *eth;
	__be16 proto;
	__u8 family;

	fh.table = bpf_map_lookup_elem(&rs_fleet, &zero);
	if (!fh.table)
		return FLEET_CONTINUE;
	hs = bpf_map_lookup_elem(fh.table, &zero);
	if (!hs || !hs->hdr.self_addr)
		return FLEET_CONTINUE;
	fh.h = hs->hdr;
	if (skb->pkt_type != PACKET_HOST)
		return FLEET_CONTINUE;
	if (rs_pkt_linear(skb, ETH_HLEN))
		return FLEET_CONTINUE;
	eth = (void *)(long)skb->data;
	if ((void *)(eth + 1) > (void *)(long)skb->data_end)
		return FLEET_CONTINUE;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_IP)) {
		family = RS_AF_INET;
		fleet_addr_v4(&fh.self, fh.h.self_addr);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		family = RS_AF_INET6;
		self6 = bpf_map_lookup_elem(fh.table, &slot);
		if (!self6)
			return FLEET_CONTINUE;
		fh.self = self6->addr6.addr;
	} else {
		return FLEET_CONTINUE;
	}
	if (fleet_parse(skb, ETH_HLEN, family, &p))
		return FLEET_CONTINUE;
	if (p.proto == IPPROTO_UDP && p.dport == fh.h.port &&
	    !fleet_addr_none(&fh.self) && fleet_addr_eq(&p.daddr, &fh.self))
		return fleet_receive(skb, &fh, &p);
	return fleet_entry(skb, &fh, &p);
}

#endif /* RS_BPF_FLEET_H */

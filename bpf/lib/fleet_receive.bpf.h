/* SPDX-License-Identifier: MIT */
/*
 * The receiving end of a forward: the owner takes the outer headers off
 * so that sk_lookup steers the inner packet as on a single host. Only
 * what a member sent gets that far; a non-SYN TCP segment of no
 * connection here goes on to the host that may hold it (second chance).
 */
#ifndef RS_BPF_FLEET_RECEIVE_H
#define RS_BPF_FLEET_RECEIVE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bind_match.bpf.h"
#include "fleet_common.bpf.h"
#include "fleet_encap.bpf.h"
#include "fleet_owner.bpf.h"
#include "fleet_parse.bpf.h"
#include "fleet_tag.bpf.h"
#include "maps.bpf.h"
#include "trace_note.bpf.h"

/*
 * Whether the outer headers of @outer make a forwarded packet from a
 * member: all the frame its length claims (longer: padding), IPv4 without
 * options, our magic and version, a source in rs_fleet_peers (of the
 * outer header's family): the member's index in the table in force by
 * rs_fleet_peers (RS_FLEET_MAX_MEMBERS: only in the previous one), or -1.
 */
static __always_inline int fleet_outer_ok(struct __sk_buff *skb,
					  const struct fleet_pkt *outer,
					  struct rs_fleet_encap *e)
{
	const struct rs_fleet_peer *peer;
	__u32 elen = fleet_encap_len(outer->family);

	if (outer->family == RS_AF_INET && outer->hlen != sizeof(struct iphdr))
		return -1;
	/* An IPv6 source ::ffff:a.b.c.d would pass as member a.b.c.d. */
	if (outer->family == RS_AF_INET6 &&
	    !(outer->saddr.w[0] | outer->saddr.w[1]) &&
	    outer->saddr.w[2] == bpf_htonl(0xffff))
		return -1;
	if (outer->len <= elen + outer->hlen ||
	    skb->len < ETH_HLEN + outer->len ||
	    bpf_skb_load_bytes(skb,
			       ETH_HLEN + elen - sizeof(struct rs_fleet_encap),
			       e, sizeof(*e)) ||
	    e->magic != bpf_htonl(RS_FLEET_MAGIC) ||
	    (e->version != RS_FLEET_WIRE_VERSION &&
	     e->version != RS_FLEET_WIRE_MAX))
		return -1;
	peer = bpf_map_lookup_elem(&rs_fleet_peers, &outer->saddr);
	if (!peer)
		return -1;
	return peer->member < RS_FLEET_MAX_MEMBERS ? (int)peer->member
						   : RS_FLEET_MAX_MEMBERS;
}

/*
 * A packet to our fleet port. Only members send them, with our header
 * and a hop count in range, around a packet of the outer header's family
 * for a service here; anything else is dropped and counted. A non-SYN TCP
 * packet for which this host has no connection gets its second chance
 * (fleet_next_owner()); everything else loses its outer headers and goes
 * up the stack, where sk_lookup steers it.
 */
static __always_inline int fleet_receive(struct __sk_buff *skb,
					 const struct fleet_host *fh,
					 const struct fleet_pkt *outer)
{
	struct rs_affinity_key key __attribute__((aligned(8))) = {};
	__u32 elen = fleet_encap_len(outer->family);
	struct rs_fleet_addr next;
	struct rs_fleet_encap e;
	struct fleet_pkt in = {};
	struct rs_bind *bind;
	int verdict;

	int from = fleet_outer_ok(skb, outer, &e);

	if (from < 0)
		goto forged;
	if (!fleet_verify(skb, fh, outer, &e, (__u32)from)) {
		FLEET_COUNT(unauthenticated);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_UNAUTH, RS_NONE, 0);
		return TC_ACT_SHOT;
	}
	if (e.hops == 0 || e.hops > RS_FLEET_MAX_HOPS) {
		FLEET_COUNT(hop_limit);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_HOP_LIMIT, RS_NONE, 0);
		return TC_ACT_SHOT;
	}
	if (fleet_parse(skb, ETH_HLEN + elen, outer->family, &in) ||
	    in.len + elen != outer->len)
		goto forged;
	bind = rs_match_bind(in.proto, in.family, in.dport,
			     fleet_bind_addr(&in));
	if (!bind)
		goto forged;
	RS_TRACE_SERVICE(skb, bind->service);
	if (in.proto == IPPROTO_TCP && !fleet_is_syn(&in) &&
	    !fleet_local_conn(skb, &in)) {
		if (e.hops < RS_FLEET_MAX_HOPS &&
		    !fleet_key(bind->service, &in, &key) &&
		    !fleet_next_owner(fh, bind->service, &key, &outer->saddr,
				      &next)) {
			verdict = fleet_reforward(skb, fh, outer, &next,
						  RS_NONE, e.hops + 1);
			if (verdict != FLEET_CONTINUE) {
				FLEET_COUNT(second_chance);
				RS_TRACE_NOTE(skb, RS_TRACE_FLEET_SECOND_CHANCE,
					      RS_NONE, 1);
				return verdict;
			}
		}
		/* Nowhere left to try: this host's TCP will reset it. */
		FLEET_COUNT(stray);
	}
	if (bpf_skb_adjust_room(skb, -(__s32)elen, BPF_ADJ_ROOM_MAC, 0)) {
		FLEET_COUNT(errors);
		return TC_ACT_SHOT;
	}
	FLEET_COUNT(received);
	RS_TRACE_NOTE(skb, RS_TRACE_FLEET_RECEIVED, RS_NONE, 0);
	return FLEET_CONTINUE;

	/* One drop path for the four ways a packet shows it is no member's. */
forged:
	FLEET_COUNT(forged);
	RS_TRACE_NOTE(skb, RS_TRACE_FLEET_FORGED, RS_NONE, 0);
	return TC_ACT_SHOT;
}

#endif /* RS_BPF_FLEET_RECEIVE_H */

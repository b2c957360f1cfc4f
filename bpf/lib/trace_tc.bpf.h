/* SPDX-License-Identifier: MIT */
/*
 * Trace events of steer_tc (abi.h "Tracing"): QUIC cookie decisions and
 * the fleet step's forwards, receptions, second chances and drops. The
 * program notes what happened in the packet's struct rs_trace_tc_note
 * (trace_note.bpf.h); at its end, when a step noted something, it reads
 * rs_trace_ctl.enabled, and only when a trace runs calls rs_trace_tc(), a
 * global function the verifier checks once on its own, as
 * rs_trace_lookup() is. The emitter reads the 4-tuple from the packet as
 * it is then, so the fleet code need not carry it to the end.
 */
#ifndef RS_TRACE_TC_BPF_H
#define RS_TRACE_TC_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "maps.bpf.h"
#include "trace_gate.bpf.h"
#include "trace_note.bpf.h"

/*
 * The emitter's working memory. steer_tc's own stack leaves a called
 * function 40 bytes of the 512, so the headers it reads go where the
 * forwarding tag's message is built (rs_fleet_scratch, per CPU): that
 * message is done with by the time the trace runs.
 */
struct rs_trace_tc_scratch {
	union {
		struct iphdr ip;
		struct ipv6hdr ip6;
	} h;
	__be16 ports[2];
	__u8 local[16];
	struct rs_trace_gate_in g;
};

_Static_assert(sizeof(struct rs_trace_tc_scratch) <=
		       sizeof(struct rs_fleet_tag_msg),
	       "the trace's scratch fits in rs_fleet_scratch");

/*
 * The packet's addresses and protocol into @w, its ports into w->ports
 * (left zero when it has none): the IP header at @off, of @family.
 */
static __always_inline __u8 rs_trace_tc_parse(struct __sk_buff *skb, __u32 off,
					      __u8 family,
					      struct rs_trace_tc_scratch *w)
{
	__u32 hlen = sizeof(struct ipv6hdr);
	__u8 proto;

	if (family == RS_AF_INET6) {
		if (bpf_skb_load_bytes(skb, off, &w->h.ip6, sizeof(w->h.ip6)))
			return 0;
		__builtin_memcpy(w->g.client, &w->h.ip6.saddr, 16);
		__builtin_memcpy(w->local, &w->h.ip6.daddr, 16);
		proto = w->h.ip6.nexthdr;
	} else {
		if (bpf_skb_load_bytes(skb, off, &w->h.ip, sizeof(w->h.ip)))
			return 0;
		w->g.client[0] = w->h.ip.saddr;
		__builtin_memcpy(w->local, &w->h.ip.daddr, 4);
		proto = w->h.ip.protocol;
		hlen = (w->h.ip.ihl & 0xf) * 4;
	}
	if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP) &&
	    bpf_skb_load_bytes(skb, off + hlen, w->ports, sizeof(w->ports)))
		w->ports[0] = w->ports[1] = 0;
	return proto;
}

/*
 * The event of the cookie step (@cookie) or the fleet step of packet
 * @skb, from its note. Global (not static): see the header comment. Returns 1
 * when an event was written.
 */
__attribute__((noinline)) int rs_trace_tc(struct __sk_buff *skb, int cookie)
{
	const struct rs_trace_tc_note *n = rs_trace_note_of(skb);
	struct rs_trace_tc_note b;
	__u8 reason;

	struct rs_trace_tc_scratch *w;
	struct rs_trace_event *e;
	__u32 zero = 0, off = ETH_HLEN;
	__u8 family;
	__be16 proto;

	/*
	 * One read of the four bytes: the verifier refuses a context
	 * pointer that the compiler moved to choose between two of them.
	 */
	b.word = n->word;
	reason = cookie ? b.cookie : b.reason;
	if (!reason)
		return 0;
	w = bpf_map_lookup_elem(&rs_fleet_scratch, &zero);
	if (!w)
		return 0;
	__builtin_memset(w, 0, sizeof(*w));
	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
			       sizeof(proto)))
		return 0;
	family = proto == bpf_htons(ETH_P_IPV6) ? RS_AF_INET6 : RS_AF_INET;
	if (b.inner && !cookie)
		off += fleet_encap_len(family);
	/* Unparsable (a forged packet may be): the event has no 4-tuple. */
	proto = rs_trace_tc_parse(skb, off, family, w);
	w->g.family = family;
	w->g.service = n->service;
	w->g.backend = cookie ? n->backend : RS_NONE;
	w->g.reason = reason;
	e = rs_trace_gate(&w->g, RS_TRACE_HOOK_TC);
	if (!e)
		return 0;
	__builtin_memcpy(e->local, w->local, sizeof(e->local));
	e->client_port = bpf_ntohs(w->ports[0]);
	e->local_port = bpf_ntohs(w->ports[1]);
	e->protocol = (__u8)proto;
	if (cookie) {
		e->flags = b.flags;
	} else {
		e->member = n->member;
	}
	/* SK_PASS / SK_DROP, as steer_lookup's events have it. */
	e->verdict = reason < RS_TRACE_FLEET_FORGED ||
		     reason > RS_TRACE_FLEET_HOP_LIMIT;
	bpf_ringbuf_submit(e, 0);
	return 1;
}

#endif /* RS_TRACE_TC_BPF_H */

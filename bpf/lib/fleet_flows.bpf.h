/* SPDX-License-Identifier: MIT */
/*
 * The entry host's flow memory (rs_fleet_flows, abi.h says why): a TCP
 * SYN forwarded leaves its owner there, and the connection's later
 * packets go where it went whatever the table says meanwhile. A flow
 * this host forwarded is not held here: a SYN steered here deletes its
 * 4-tuple's entry.
 */
#ifndef RS_BPF_FLEET_FLOWS_H
#define RS_BPF_FLEET_FLOWS_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "fleet_owner.bpf.h"
#include "maps.bpf.h"

static __always_inline void fleet_flow_key(const struct fleet_pkt *p,
					   struct rs_fleet_flow_key *k)
{
	k->saddr = p->saddr;
	k->daddr = p->daddr;
	k->sport = bpf_htons(p->sport);
	k->dport = bpf_htons(p->dport);
}

/*
 * The entry of a later packet's connection when this host sent its SYN to
 * another member, or NULL. Checked before the key's hash and the table:
 * most packets this host forwards are the later packets of a connection
 * whose SYN it forwarded (issue 21: a third less work for them).
 */
static __always_inline struct rs_fleet_flow *fleet_flow_sent(
	const struct fleet_host *fh, const struct rs_fleet_flow_key *fk)
{
	struct rs_fleet_flow *known = bpf_map_lookup_elem(&rs_fleet_flows, fk);

	if (known && !fleet_addr_none(&known->owner) &&
	    !fleet_addr_eq(&known->owner, &fh->self))
		return known;
	return NULL;
}

/*
 * The entry of the SYN @p when it is a retransmission of one this host
 * sent to a member the current table still has at that address (then in
 * @to), or NULL. It must follow the first one: if the table changed in
 * between, the new owner would answer it too and reset the handshake the
 * old one completes (docs/fleet.md). Its sequence number, read into @isn
 * for fleet_flow_remember(), tells a retransmission from a new connection
 * reusing the 4-tuple (clients and NATs do). @to holds the owner by the
 * table, and is left so unless the entry is followed: then it is the
 * entry's owner. (It once took the entry's member's address whether that
 * matched or not, and a SYN by the table then went to that member.)
 */
static __always_inline struct rs_fleet_flow *fleet_flow_resent(
	struct __sk_buff *skb, const struct fleet_host *fh,
	const struct fleet_pkt *p, const struct rs_fleet_flow_key *fk,
	__u32 *isn, struct rs_fleet_addr *to)
{
	struct rs_fleet_flow *known;
	struct rs_fleet_addr now;

	if (bpf_skb_load_bytes(skb, ETH_HLEN + p->hlen + 4, isn, sizeof(*isn)))
		*isn = 0;
	known = bpf_map_lookup_elem(&rs_fleet_flows, fk);
	if (known && known->isn == *isn && !fleet_addr_none(&known->owner) &&
	    !fleet_addr_eq(&known->owner, &fh->self) &&
	    bpf_ktime_get_ns() - known->syn_ns < RS_FLEET_SYN_RETRY_NS &&
	    !fleet_member_addr(fh->table, known->member, p->family, &now) &&
	    fleet_addr_eq(&now, &known->owner)) {
		*to = known->owner;
		return known;
	}
	return NULL;
}

/* A SYN about to be forwarded to @to, member @member. */
static __always_inline void fleet_flow_remember(
	const struct rs_fleet_flow_key *fk, struct rs_fleet_flow *flow,
	const struct rs_fleet_addr *to, __u32 member, const __u32 *isn)
{
	flow->owner = *to;
	flow->syn_ns = bpf_ktime_get_ns();
	flow->member = member;
	flow->isn = *isn;
	bpf_map_update_elem(&rs_fleet_flows, fk, flow, BPF_ANY);
}

/*
 * A SYN steered here: no earlier flow of its 4-tuple may send its ACKs
 * elsewhere.
 */
static __always_inline void fleet_flow_forget(
	const struct rs_fleet_flow_key *fk)
{
	bpf_map_delete_elem(&rs_fleet_flows, fk);
}

#endif /* RS_BPF_FLEET_FLOWS_H */

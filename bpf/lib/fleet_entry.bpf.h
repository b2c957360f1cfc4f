/* SPDX-License-Identifier: MIT */
/*
 * The entry host: a plain packet of a fleet service goes to the host that
 * owns its flow, or stays here. fleet_entry() is the order in which the
 * owners are asked; each step below decides one thing, and fleet_entry()
 * acts on it.
 *
 * A step reads what an earlier one wrote (the owner's index, the SYN's
 * sequence number, the zeroed flow entry) through a pointer, where and
 * when the code read it before it was split into steps: steer_tc then
 * compiles to the same instructions, so the verifier counts measured on
 * 6.1 and 6.18 (tests/bpf/verifier_budget.txt) still hold.
 */
#ifndef RS_BPF_FLEET_ENTRY_H
#define RS_BPF_FLEET_ENTRY_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

#include "bind_match.bpf.h"
#include "fleet_common.bpf.h"
#include "fleet_encap.bpf.h"
#include "fleet_flows.bpf.h"
#include "fleet_owner.bpf.h"
#include "fleet_quic.bpf.h"
#include "maps.bpf.h"
#include "trace_note.bpf.h"

/*
 * Encapsulate @p to @dst for fleet_entry(), counting the outcome: the
 * verdict, or FLEET_CONTINUE (not sent, steered here).
 */
static __always_inline int fleet_forward(struct __sk_buff *skb,
					 const struct fleet_host *fh,
					 const struct fleet_pkt *p,
					 const struct rs_fleet_addr *dst,
					 __u32 member)
{
	int verdict = fleet_encap(skb, fh, p, dst, member, 1);

	if (verdict == FLEET_CONTINUE)
		FLEET_COUNT(errors);
	return verdict;
}

/*
 * Forward @p to @dst, member @member: counted as forwarded, and as a flow
 * hit when the flow memory chose the member (@flow_hit).
 */
static __always_inline int fleet_forward_to(struct __sk_buff *skb,
					    const struct fleet_host *fh,
					    const struct fleet_pkt *p,
					    const struct rs_fleet_addr *dst,
					    __u32 member, int flow_hit)
{
	int verdict = fleet_forward(skb, fh, p, dst, member);

	if (verdict != FLEET_CONTINUE) {
		FLEET_COUNT(forwarded);
		if (flow_hit)
			FLEET_COUNT(flow_hits);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_FORWARD, member, 1);
	}
	return verdict;
}

/*
 * The service of @p into @svc_id: 0, or -1 when no fleet step applies. A
 * packet shorter than its IP header says is not forwarded (the stack here
 * drops it), since the owner would drop it too and its tag could not
 * cover the bytes it claims.
 */
static __always_inline int fleet_service_of(struct __sk_buff *skb,
					    const struct fleet_pkt *p,
					    __u32 *svc_id)
{
	struct rs_bind *bind;

	if (skb->len < ETH_HLEN + p->len)
		return -1;
	bind = rs_match_bind(p->proto, p->family, p->dport, fleet_bind_addr(p));
	if (!bind)
		return -1;
	*svc_id = bind->service;
	RS_TRACE_SERVICE(skb, *svc_id);
	return 0;
}

/*
 * The owner of @p's key (into @key) in the current table: 0, its member
 * index and address of @p's family, or -1 when the table does not steer
 * the service.
 */
static __always_inline int fleet_table_owner(
	const struct fleet_host *fh, __u32 svc_id, const struct fleet_pkt *p,
	struct rs_affinity_key *key, __u32 *idx, struct rs_fleet_addr *addr)
{
	return fleet_key(svc_id, p, key) ||
	       fleet_owner(fh->table, RS_FLEET_CURRENT, svc_id, key, p->family,
			   idx, addr);
}

/*
 * Whether the non-SYN TCP packet @p belongs to a connection this host
 * holds: it stays here whoever owns it (counted when the table says
 * another member, @idx). Asked after the flow memory: the socket lookup,
 * which runs sk_lookup when it misses, is the costliest step of this
 * program.
 */
static __always_inline int fleet_held_here(struct __sk_buff *skb,
					   const struct fleet_host *fh,
					   const struct fleet_pkt *p,
					   const __u32 *idx)
{
	if (!fleet_local_conn(skb, p))
		return 0;
	if (*idx != fh->h.self)
		FLEET_COUNT(local_socket);
	return 1;
}

/* Whether the table's owner (@idx at @addr) is this host. */
static __always_inline int fleet_owned_here(const struct fleet_host *fh,
					    const __u32 *idx,
					    const struct rs_fleet_addr *addr)
{
	return *idx == fh->h.self ||
	       (!fleet_addr_none(addr) && fleet_addr_eq(addr, &fh->self));
}

/*
 * Whether the table before the current one names another host with an
 * address (into @prev) for @key: where a TCP segment that is ours by the
 * table, but of no connection here, may belong.
 */
static __always_inline int fleet_previous_elsewhere(
	const struct fleet_host *fh, __u32 svc_id,
	const struct rs_affinity_key *key, __u8 family,
	struct rs_fleet_addr *prev)
{
	return !fleet_previous_owner(fh->table, svc_id, key, family, prev) &&
	       !fleet_addr_none(prev) && !fleet_addr_eq(prev, &fh->self);
}

/* Forward @p to the previous owner @prev (second chance), counted. */
static __always_inline int fleet_second_chance(struct __sk_buff *skb,
					       const struct fleet_host *fh,
					       const struct fleet_pkt *p,
					       const struct rs_fleet_addr *prev)
{
	int verdict = fleet_forward(skb, fh, p, prev, RS_NONE);

	if (verdict != FLEET_CONTINUE) {
		FLEET_COUNT(second_chance);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_SECOND_CHANCE, RS_NONE, 1);
	}
	return verdict;
}

/*
 * Whether the owner at @addr or this host has no forwarding address of
 * the packet's family: an IPv6 packet then stays here (no_address6).
 */
static __always_inline int fleet_no_address(const struct fleet_host *fh,
					    const struct rs_fleet_addr *addr)
{
	return fleet_addr_none(addr) || fleet_addr_none(&fh->self);
}

/*
 * A plain packet: forward it when its flow belongs to another host. Who
 * decides, first to last: the QUIC connection ID's issuer, the flow
 * memory (later packets, then a retransmitted SYN), a connection held
 * here, the current table, and for a TCP segment that is ours by the
 * table but of no connection here, the previous table.
 */
static __always_inline int fleet_entry(struct __sk_buff *skb,
				       const struct fleet_host *fh,
				       const struct fleet_pkt *p)
{
	struct rs_affinity_key key __attribute__((aligned(8))) = {};
	struct rs_fleet_flow_key fk __attribute__((aligned(4))) = {};
	struct rs_fleet_flow flow = {}, *known;
	__u32 isn = 0;
	struct rs_fleet_addr addr, prev;
	__u32 svc_id, idx;
	int tcp = p->proto == IPPROTO_TCP, syn, verdict;

	if (fleet_service_of(skb, p, &svc_id))
		return FLEET_CONTINUE;
	verdict = fleet_quic_entry(skb, fh, p, svc_id);
	if (verdict != FLEET_BY_TABLE)
		return verdict;
	syn = tcp && fleet_is_syn(p);
	if (tcp)
		fleet_flow_key(p, &fk);
	if (tcp && !syn && (known = fleet_flow_sent(fh, &fk)))
		return fleet_forward_to(skb, fh, p, &known->owner,
					known->member, 1);
	if (fleet_table_owner(fh, svc_id, p, &key, &idx, &addr))
		return FLEET_CONTINUE;
	if (syn && (known = fleet_flow_resent(skb, fh, p, &fk, &isn, &addr)))
		return fleet_forward_to(skb, fh, p, &addr, known->member, 1);
	if (tcp && !syn && fleet_held_here(skb, fh, p, &idx))
		return FLEET_CONTINUE;
	if (fleet_owned_here(fh, &idx, &addr)) {
		if (syn)
			fleet_flow_forget(&fk);
		if (!tcp || syn)
			return FLEET_CONTINUE;
		if (!fleet_previous_elsewhere(fh, svc_id, &key, p->family,
					      &prev)) {
			/* Nowhere else to try: this host's TCP resets it. */
			FLEET_COUNT(stray);
			return FLEET_CONTINUE;
		}
		return fleet_second_chance(skb, fh, p, &prev);
	}
	if (fleet_no_address(fh, &addr)) {
		if (syn)
			fleet_flow_forget(&fk);
		FLEET_COUNT(no_address6);
		return FLEET_CONTINUE;
	}
	if (syn)
		fleet_flow_remember(&fk, &flow, &addr, idx, &isn);
	return fleet_forward_to(skb, fh, p, &addr, idx, 0);
}

#endif /* RS_BPF_FLEET_ENTRY_H */

/* SPDX-License-Identifier: MIT */
/*
 * QUIC connection IDs across fleet hosts (docs/fleet.md "QUIC"). A
 * datagram of a fleet service with cookie = quic whose destination
 * connection ID carries a server ID some member's backend issued goes to
 * that member, whatever the fleet table says about its (possibly new)
 * client address: the member's own cookie step (steer_tc) then gives it to
 * the backend. This host's IDs stay here for that same step; unknown,
 * conflicting, unroutable or unparsable IDs, Initial and 0-RTT packets go
 * by the table like any UDP datagram. Nothing is ever forwarded by cookie
 * twice: a decapsulated datagram is always taken in (fleet_receive()).
 */
#ifndef RS_BPF_FLEET_QUIC_H
#define RS_BPF_FLEET_QUIC_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "fleet_encap.bpf.h"
#include "maps.bpf.h"
#include "quic.bpf.h"
#include "quic_lb.bpf.h"
#include "trace_note.bpf.h"
#include "xxh64.bpf.h"

/* Not decided by a connection ID: on to the fleet table. */
#define FLEET_BY_TABLE (-2)

/*
 * The server ID of the datagram @p of service @svc into @want (len and
 * the ID, the rest zero), as steer_tc's cookie step reads it: 0, or -1
 * when it carries none this service routes (not QUIC, Initial, 0-RTT,
 * another config rotation, 0b111, truncated or inconsistent lengths).
 */
static __always_inline int fleet_quic_server_id(struct __sk_buff *skb,
						const struct fleet_pkt *p,
						__u32 svc_id,
						const struct rs_service *svc,
						struct rs_fleet_cid *want)
{
	__u32 sid_len = svc->quic_server_id_len, cid_len = svc->quic_cid_len;
	__u32 tot = p->len, ulen, dcid_off = 0;
	struct udphdr uh;

	if (sid_len < 1 || sid_len > RS_QUIC_MAX_SERVER_ID ||
	    cid_len <= sid_len || cid_len > QUIC_MAX_CID_LEN)
		return -1;
	if (tot < p->hlen + sizeof(uh) || skb->len < ETH_HLEN + tot ||
	    bpf_skb_load_bytes(skb, ETH_HLEN + p->hlen, &uh, sizeof(uh)))
		return -1;
	ulen = bpf_ntohs(uh.len);
	if (ulen < sizeof(uh) || ulen > tot - p->hlen)
		return -1;
	if (quic_find_dcid(skb, ETH_HLEN + p->hlen + sizeof(uh),
			   ulen - sizeof(uh), cid_len,
			   &dcid_off) != QUIC_DCID_FOUND)
		return -1;
	_Static_assert(sizeof(struct quic_lb_sid) == 16, "rs_fleet_cid head");
	if (quic_lb_server_id(
		    skb, dcid_off, svc_id,
		    QUIC_LB_LENS(sid_len, cid_len, svc->quic_config_id),
		    (struct quic_lb_sid *)want) != QUIC_SID_FOUND)
		return -1;
	quic_sid_memo_put(skb, svc_id, dcid_off, (struct quic_lb_sid *)want);
	return 0;
}

/*
 * The entry of server ID @want of service @svc_id in @table (abi.h
 * RS_FLEET_SLOT_CIDS: open addressing, at most RS_FLEET_CID_PROBES slots
 * from its home slot, a free slot ends the search), or NULL.
 */
static __always_inline const struct rs_fleet_cid *fleet_quic_find(
	void *table, __u32 svc_id, const struct rs_fleet_cid *want)
{
	struct rs_affinity_key k __attribute__((aligned(8))) = {};
	const __u64 *w = (const __u64 *)want;
	struct rs_fleet_slot *s;
	__u32 home, slot;

	k.service = svc_id;
	k.port = want->len;
	__builtin_memcpy(k.addr, want->server_id, RS_QUIC_MAX_SERVER_ID);
	home = (__u32)rs_xxh64_key(&k, RS_FLEET_CID_SEED);
#pragma unroll
	for (__u32 i = 0; i < RS_FLEET_CID_PROBES; i++) {
		const __u64 *c;

		slot = RS_FLEET_SLOT_CIDS +
		       ((home + i) & (RS_FLEET_CID_SLOTS - 1));
		s = bpf_map_lookup_elem(table, &slot);
		if (!s || !s->cid.len)
			return NULL;
		c = (const __u64 *)&s->cid;
		if (s->cid.service == svc_id && c[0] == w[0] && c[1] == w[1])
			return &s->cid;
	}
	return NULL;
}

/*
 * The QUIC step of fleet_entry() for the plain datagram @p of service
 * @svc_id: FLEET_BY_TABLE, FLEET_CONTINUE (an ID of this host's: the
 * cookie step here takes it) or the verdict of its forward to the member
 * that issued the ID.
 */
static __always_inline int fleet_quic_entry(struct __sk_buff *skb,
					    const struct fleet_host *fh,
					    const struct fleet_pkt *p,
					    __u32 svc_id)
{
	struct rs_fleet_cid want __attribute__((aligned(8))) = {};
	const struct rs_fleet_cid *c;
	struct rs_fleet_addr dst;
	struct rs_fleet_slot *m;
	struct rs_service *svc;
	__u32 slot;
	int verdict;

	if (p->proto != IPPROTO_UDP)
		return FLEET_BY_TABLE;
	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (!svc || svc->cookie != RS_COOKIE_QUIC ||
	    fleet_quic_server_id(skb, p, svc_id, svc, &want))
		return FLEET_BY_TABLE;
	c = fleet_quic_find(fh->table, svc_id, &want);
	/* Two members claim it: neither gets it (docs/fleet.md). */
	if (!c || (c->flags & RS_FLEET_CID_CONFLICT) ||
	    c->member == RS_FLEET_NO_OWNER || c->member > RS_FLEET_MAX_MEMBERS)
		return FLEET_BY_TABLE;
	if (c->member - 1 == fh->h.self)
		return FLEET_CONTINUE;
	/* The member's address of the datagram's family (abi.h slots). */
	slot = c->member;
	if (p->family == RS_AF_INET6)
		slot = RS_FLEET_SLOT_ADDR6 + c->member;
	m = bpf_map_lookup_elem(fh->table, &slot);
	if (!m)
		return FLEET_BY_TABLE;
	if (p->family == RS_AF_INET6) {
		dst = m->addr6.addr;
	} else {
		if (!m->member.addr)
			return FLEET_BY_TABLE;
		fleet_addr_v4(&dst, m->member.addr);
	}
	/* No address6 to send it to: the table (and its counting) decides. */
	if (fleet_addr_none(&dst))
		return FLEET_BY_TABLE;
	if (fleet_addr_eq(&dst, &fh->self))
		return FLEET_CONTINUE;
	verdict = fleet_encap(skb, fh, p, &dst, c->member - 1, 1);
	if (verdict == FLEET_CONTINUE) {
		FLEET_COUNT(errors);
	} else {
		FLEET_COUNT(forwarded);
		FLEET_COUNT(cookie_forwarded);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_FORWARD, c->member - 1, 1);
	}
	return verdict;
}

#endif /* RS_BPF_FLEET_QUIC_H */

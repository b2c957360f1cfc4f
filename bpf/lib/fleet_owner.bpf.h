/* SPDX-License-Identifier: MIT */
/*
 * Who owns a flow: the member the fleet table names for a packet's key
 * (in the current table and in the one before it), a member's forwarding
 * address, and whether this host holds the connection itself, which
 * outranks both tables. The flow memory (fleet_flows.bpf.h) comes before
 * all of them at the entry host.
 */
#ifndef RS_BPF_FLEET_OWNER_H
#define RS_BPF_FLEET_OWNER_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "maps.bpf.h"
#include "net.bpf.h"
#include "xxh64.bpf.h"

/*
 * The fleet-wide key: as the service's rings build it, but with service 0
 * (local service ids differ between hosts; the fleet seed, made from the
 * service's name, tells services apart).
 */
static __always_inline int fleet_key(__u32 svc_id, const struct fleet_pkt *p,
				     struct rs_affinity_key *key)
{
	struct rs_service *svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	__u32 *w = (__u32 *)key->addr;

	if (!svc)
		return -1;
	key->service = 0;
	key->family = p->family;
	if (svc->key_policy == RS_KEY_SRC_IP_PORT)
		key->port = p->sport;
	if (p->family == RS_AF_INET) {
		w[0] = p->saddr.w[3] & rs_prefix_mask32(svc->prefix4);
		return 0;
	}
	w[0] = p->saddr.w[0] & rs_prefix_mask32(svc->prefix6);
	w[1] = p->saddr.w[1] & rs_prefix_mask32(svc->prefix6 - 32);
	w[2] = p->saddr.w[2] & rs_prefix_mask32(svc->prefix6 - 64);
	w[3] = p->saddr.w[3] & rs_prefix_mask32(svc->prefix6 - 96);
	return 0;
}

/*
 * The owner of @key for service @svc_id in the fleet table at slot @base
 * of @t (RS_FLEET_CURRENT or RS_FLEET_PREVIOUS): 0, its member index and
 * its forwarding address of @family (all zero when it publishes no IPv6
 * address), or -1 (the table does not steer this service or names
 * nobody).
 */
static __always_inline int fleet_owner(void *t, __u32 base, __u32 svc_id,
				       const struct rs_affinity_key *key,
				       __u8 family, __u32 *idx,
				       struct rs_fleet_addr *addr)
{
	struct rs_fleet_slot *s;
	__u32 slot, b;
	__u8 o;

	if (!t || svc_id >= RS_MAX_SERVICES)
		return -1;
	slot = base + RS_FLEET_SLOT_SERVICES + svc_id;
	s = bpf_map_lookup_elem(t, &slot);
	if (!s || !s->service.owners)
		return -1;
	b = rs_fleet_bucket(rs_xxh64_key(key, s->service.seed));
	slot = base + rs_fleet_row_slot(svc_id, b);
	s = bpf_map_lookup_elem(t, &slot);
	if (!s)
		return -1;
	o = s->row.owner[b & (RS_FLEET_ROW_OWNERS - 1)];
	if (o == RS_FLEET_NO_OWNER || o > RS_FLEET_MAX_MEMBERS)
		return -1;
	slot = base + o;
	if (family == RS_AF_INET6)
		slot = base + RS_FLEET_SLOT_ADDR6 + o;
	s = bpf_map_lookup_elem(t, &slot);
	if (!s)
		return -1;
	*idx = o - 1;
	if (family == RS_AF_INET6) {
		*addr = s->addr6.addr;
		return 0;
	}
	if (!s->member.addr)
		return -1;
	fleet_addr_v4(addr, s->member.addr);
	return 0;
}

/*
 * Member @idx's forwarding address of @family in the current table of
 * @t: 0, or -1 when it has none (or no such member).
 */
static __always_inline int fleet_member_addr(void *t, __u32 idx, __u8 family,
					     struct rs_fleet_addr *addr)
{
	struct rs_fleet_slot *s;
	__u32 slot;

	if (!t || idx >= RS_FLEET_MAX_MEMBERS)
		return -1;
	slot = RS_FLEET_CURRENT + 1 + idx;
	if (family == RS_AF_INET6)
		slot = RS_FLEET_CURRENT + RS_FLEET_SLOT_ADDR6 + 1 + idx;
	s = bpf_map_lookup_elem(t, &slot);
	if (!s)
		return -1;
	if (family == RS_AF_INET6) {
		*addr = s->addr6.addr;
		return fleet_addr_none(addr) ? -1 : 0;
	}
	if (!s->member.addr)
		return -1;
	fleet_addr_v4(addr, s->member.addr);
	return 0;
}

/* The owner of @key in the table before the current one. */
static __always_inline int fleet_previous_owner(
	void *t, __u32 svc_id, const struct rs_affinity_key *key, __u8 family,
	struct rs_fleet_addr *addr)
{
	__u32 idx;

	return fleet_owner(t, RS_FLEET_PREVIOUS, svc_id, key, family, &idx,
			   addr);
}

/*
 * Whether this host holds a connection for the TCP packet @p: an
 * established, half-open or TIME_WAIT socket (a listener does not count).
 * A miss falls through to the listener lookup and so runs steer_lookup
 * once more for this tuple; that only happens for non-SYN packets without
 * a connection here, which are about to be forwarded anyway.
 */
static __always_inline int fleet_local_conn(struct __sk_buff *skb,
					    const struct fleet_pkt *p)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	__u32 len;
	int found;

	if (p->family == RS_AF_INET6) {
		__builtin_memcpy(t.ipv6.saddr, &p->saddr, sizeof(p->saddr));
		__builtin_memcpy(t.ipv6.daddr, &p->daddr, sizeof(p->daddr));
		t.ipv6.sport = bpf_htons(p->sport);
		t.ipv6.dport = bpf_htons(p->dport);
		len = sizeof(t.ipv6);
	} else {
		t.ipv4.saddr = p->saddr.w[3];
		t.ipv4.daddr = p->daddr.w[3];
		t.ipv4.sport = bpf_htons(p->sport);
		t.ipv4.dport = bpf_htons(p->dport);
		len = sizeof(t.ipv4);
	}
	sk = bpf_skc_lookup_tcp(skb, &t, len, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	found = sk->state != BPF_TCP_LISTEN;
	bpf_sk_release(sk);
	return found;
}

/*
 * Where a non-SYN packet without a connection here goes next: the owner
 * by this host's table, else the owner by the table before it, never back
 * to this host or to the host it came from (0: nowhere, steer it here).
 * The owner by this host's table first: when hosts disagree for a moment,
 * the sender's table may be newer than ours, and ours then names the host
 * the connection was made on.
 */
static __always_inline int fleet_next_owner(const struct fleet_host *fh,
					    __u32 svc_id,
					    const struct rs_affinity_key *key,
					    const struct rs_fleet_addr *from,
					    struct rs_fleet_addr *next)
{
	__u32 idx;

	if (!fleet_owner(fh->table, RS_FLEET_CURRENT, svc_id, key, key->family,
			 &idx, next) &&
	    !fleet_addr_none(next) && !fleet_addr_eq(next, &fh->self) &&
	    !fleet_addr_eq(next, from))
		return 0;
	if (!fleet_previous_owner(fh->table, svc_id, key, key->family, next) &&
	    !fleet_addr_none(next) && !fleet_addr_eq(next, &fh->self) &&
	    !fleet_addr_eq(next, from))
		return 0;
	return -1;
}

#endif /* RS_BPF_FLEET_OWNER_H */

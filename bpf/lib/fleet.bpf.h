/* SPDX-License-Identifier: MIT */
/*
 * Fleet forwarding at TC ingress (docs/fleet.md). For a packet of a fleet
 * service the same affinity key the rings use picks the owner host from
 * the fleet table; a packet for another host is encapsulated (outer IPv4,
 * UDP to the fleet port, struct rs_fleet_encap) and sent there, and the
 * owner takes the outer headers off so that sk_lookup steers the inner
 * packet as on a single host. The kernel's own tunnel devices are not
 * used: hosts without the FOU/IPIP modules (these machines) cannot
 * decapsulate with them, so both ends are done here.
 *
 * IPv4 only: IPv6 clients of a fleet service are steered locally.
 */
#ifndef RS_BPF_FLEET_H
#define RS_BPF_FLEET_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bind_match.bpf.h"
#include "maps.bpf.h"
#include "net.bpf.h"
#include "xxh64.bpf.h"

/* Not a fleet packet, or one to steer here: carry on. */
#define FLEET_CONTINUE (-1)

#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_ACK 0x10

struct fleet_pkt {
	struct iphdr ip;
	__u32 hlen;
	__u16 sport; /* host order */
	__u16 dport;
	__u8 tcp_flags;
};

/* The outer headers of a forwarded packet, written in one store. */
struct fleet_outer {
	struct iphdr ip;
	struct udphdr udp;
	struct rs_fleet_encap encap;
};

_Static_assert(sizeof(struct fleet_outer) == RS_FLEET_ENCAP_LEN,
	       "outer headers are RS_FLEET_ENCAP_LEN bytes");

#define FLEET_COUNT(field)                                                     \
	do {                                                                   \
		__u32 zero_ = 0;                                               \
		struct rs_fleet_stats *st_ =                                   \
			bpf_map_lookup_elem(&rs_fleet_stats, &zero_);          \
		if (st_)                                                       \
			st_->field++;                                          \
	} while (0)

/* An unfragmented IPv4 TCP or UDP packet at @off, its ports in the frame. */
static __always_inline int fleet_parse(struct __sk_buff *skb, __u32 off,
				       struct fleet_pkt *p)
{
	__be16 ports[2];

	if (bpf_skb_load_bytes(skb, off, &p->ip, sizeof(p->ip)))
		return -1;
	if (p->ip.version != 4 || p->ip.ihl < 5)
		return -1;
	if (p->ip.frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return -1;
	if (p->ip.protocol != IPPROTO_TCP && p->ip.protocol != IPPROTO_UDP)
		return -1;
	p->hlen = p->ip.ihl * 4;
	if (bpf_skb_load_bytes(skb, off + p->hlen, ports, sizeof(ports)))
		return -1;
	p->sport = bpf_ntohs(ports[0]);
	p->dport = bpf_ntohs(ports[1]);
	p->tcp_flags = 0;
	if (p->ip.protocol == IPPROTO_TCP &&
	    bpf_skb_load_bytes(skb, off + p->hlen + 13, &p->tcp_flags, 1))
		return -1;
	return 0;
}

static __always_inline int fleet_is_syn(const struct fleet_pkt *p)
{
	return (p->tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN;
}

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
	key->family = RS_AF_INET;
	if (svc->key_policy == RS_KEY_SRC_IP_PORT)
		key->port = p->sport;
	w[0] = p->ip.saddr & prefix_mask32(svc->prefix4);
	return 0;
}

/*
 * The owner of @key for service @svc_id in the fleet table at slot @base
 * of @t (RS_FLEET_CURRENT or RS_FLEET_PREVIOUS): 0 and its member index
 * and address, or -1 (the table does not steer this service or names
 * nobody).
 */
static __always_inline int fleet_owner(void *t, __u32 base, __u32 svc_id,
				       const struct rs_affinity_key *key,
				       __u32 *idx, __u32 *addr)
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
	b = rs_xxh64_key(key, s->service.seed) >> (64 - RS_FLEET_BUCKET_BITS);
	slot = base + RS_FLEET_SLOT_ROWS + svc_id * RS_FLEET_ROWS +
	       b / RS_FLEET_ROW_OWNERS;
	s = bpf_map_lookup_elem(t, &slot);
	if (!s)
		return -1;
	o = s->row.owner[b & (RS_FLEET_ROW_OWNERS - 1)];
	if (o == RS_FLEET_NO_OWNER || o > RS_FLEET_MAX_MEMBERS)
		return -1;
	slot = base + o;
	s = bpf_map_lookup_elem(t, &slot);
	if (!s || !s->member.addr)
		return -1;
	*idx = o - 1;
	*addr = s->member.addr;
	return 0;
}

/* The owner of @key in the table before the current one. */
static __always_inline int fleet_previous_owner(
	void *t, __u32 svc_id, const struct rs_affinity_key *key, __u32 *addr)
{
	__u32 idx;

	return fleet_owner(t, RS_FLEET_PREVIOUS, svc_id, key, &idx, addr);
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
	int found;

	t.ipv4.saddr = p->ip.saddr;
	t.ipv4.daddr = p->ip.daddr;
	t.ipv4.sport = bpf_htons(p->sport);
	t.ipv4.dport = bpf_htons(p->dport);
	sk = bpf_skc_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS,
				0);
	if (!sk)
		return 0;
	found = sk->state != BPF_TCP_LISTEN;
	bpf_sk_release(sk);
	return found;
}

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

static __always_inline void fleet_outer_fill(struct fleet_outer *o,
					     struct __sk_buff *skb,
					     const struct rs_fleet_header *h,
					     __u32 dst, __u32 inner_len,
					     __u8 tos, __u8 hops)
{
	__u32 flow = bpf_get_hash_recalc(skb);

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
	/* The flow's hash in the source port: ECMP spreads forwarded flows. */
	o->udp.source = bpf_htons(49152 | (flow & 0x3fff));
	o->udp.dest = bpf_htons(h->port);
	o->udp.len = bpf_htons(inner_len + sizeof(struct udphdr) +
			       sizeof(struct rs_fleet_encap));
	o->udp.check = 0; /* optional over IPv4; the inner packet has its own */
	o->encap.magic = bpf_htonl(RS_FLEET_MAGIC);
	o->encap.version = RS_FLEET_WIRE_VERSION;
	o->encap.hops = hops;
	o->encap.pad = 0;
}

/*
 * Encapsulate the plain packet @p to @dst and send it. Returns the TC
 * verdict, or FLEET_CONTINUE when it cannot be sent (left unchanged, then
 * steered here).
 */
static __always_inline int fleet_encap(struct __sk_buff *skb,
				       const struct rs_fleet_header *h,
				       const struct fleet_pkt *p, __u32 dst,
				       __u8 hops)
{
	struct fleet_outer o = {};
	__u32 inner_len = bpf_ntohs(p->ip.tot_len);
	int ifindex;

	ifindex = fleet_route(skb);
	if (ifindex <= 0)
		return FLEET_CONTINUE;
	if (bpf_skb_adjust_room(skb, RS_FLEET_ENCAP_LEN, BPF_ADJ_ROOM_MAC,
				BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 |
					BPF_F_ADJ_ROOM_ENCAP_L4_UDP))
		return FLEET_CONTINUE;
	fleet_outer_fill(&o, skb, h, dst, inner_len, p->ip.tos, hops);
	if (bpf_skb_store_bytes(skb, ETH_HLEN, &o, sizeof(o), 0))
		return TC_ACT_SHOT; /* half-built: never deliver it */
	return (int)bpf_redirect_neigh(ifindex, NULL, 0, 0);
}

/*
 * An encapsulated packet that must go on (second chance): new outer
 * addresses and one more hop, the rest as it came.
 */
static __always_inline int fleet_reforward(struct __sk_buff *skb,
					   const struct rs_fleet_header *h,
					   const struct fleet_pkt *outer,
					   __u32 dst, __u8 hops)
{
	struct fleet_outer o = {};
	__u32 inner_len = bpf_ntohs(outer->ip.tot_len) - RS_FLEET_ENCAP_LEN;
	int ifindex;

	ifindex = fleet_route(skb);
	if (ifindex <= 0)
		return FLEET_CONTINUE;
	fleet_outer_fill(&o, skb, h, dst, inner_len, outer->ip.tos, hops);
	if (bpf_skb_store_bytes(skb, ETH_HLEN, &o, sizeof(o), 0))
		return TC_ACT_SHOT;
	return (int)bpf_redirect_neigh(ifindex, NULL, 0, 0);
}

/*
 * Where a non-SYN packet without a connection here goes next: the owner
 * by this host's table, else the owner by the table before it, never back
 * to this host or to the host it came from (0: nowhere, steer it here).
 * The owner by this host's table first: when hosts disagree for a moment,
 * the sender's table may be newer than ours, and ours then names the host
 * the connection was made on.
 */
static __always_inline __u32 fleet_next_owner(const struct rs_fleet_header *h,
					      void *t, __u32 svc_id,
					      const struct rs_affinity_key *key,
					      __u32 from)
{
	__u32 idx, addr;

	if (!fleet_owner(t, RS_FLEET_CURRENT, svc_id, key, &idx, &addr) &&
	    addr != h->self_addr && addr != from)
		return addr;
	if (!fleet_previous_owner(t, svc_id, key, &addr) &&
	    addr != h->self_addr && addr != from)
		return addr;
	return 0;
}

/*
 * A packet to our fleet port. Only members send them, with our header
 * and a hop count in range, around an IPv4 packet for a service here;
 * anything else is dropped and counted. A non-SYN TCP packet for which
 * this host has no connection gets its second chance (fleet_next_owner());
 * everything else loses its outer headers and goes up the stack, where
 * sk_lookup steers it.
 */
static __always_inline int fleet_receive(struct __sk_buff *skb,
					 const struct rs_fleet_header *h,
					 void *table,
					 const struct fleet_pkt *outer)
{
	struct rs_affinity_key key __attribute__((aligned(8))) = {};
	__u32 inner_off = ETH_HLEN + RS_FLEET_ENCAP_LEN, next, saddr;
	struct rs_fleet_encap e;
	struct fleet_pkt in = {};
	struct rs_bind *bind;
	int verdict;

	saddr = outer->ip.saddr;
	/* The frame holds all the outer header claims (longer: padding). */
	if (outer->hlen != sizeof(struct iphdr) ||
	    bpf_ntohs(outer->ip.tot_len) <=
		    RS_FLEET_ENCAP_LEN + sizeof(struct iphdr) ||
	    skb->len < ETH_HLEN + bpf_ntohs(outer->ip.tot_len) ||
	    bpf_skb_load_bytes(skb,
			       ETH_HLEN + sizeof(struct iphdr) +
				       sizeof(struct udphdr),
			       &e, sizeof(e)) ||
	    e.magic != bpf_htonl(RS_FLEET_MAGIC) ||
	    e.version != RS_FLEET_WIRE_VERSION ||
	    !bpf_map_lookup_elem(&rs_fleet_peers, &saddr)) {
		FLEET_COUNT(forged);
		return TC_ACT_SHOT;
	}
	if (e.hops == 0 || e.hops > RS_FLEET_MAX_HOPS) {
		FLEET_COUNT(hop_limit);
		return TC_ACT_SHOT;
	}
	if (fleet_parse(skb, inner_off, &in) ||
	    bpf_ntohs(in.ip.tot_len) + RS_FLEET_ENCAP_LEN !=
		    bpf_ntohs(outer->ip.tot_len)) {
		FLEET_COUNT(forged);
		return TC_ACT_SHOT;
	}
	bind = rs_match_bind(in.ip.protocol, RS_AF_INET, in.dport,
			     &in.ip.daddr);
	if (!bind) {
		FLEET_COUNT(forged);
		return TC_ACT_SHOT;
	}
	if (in.ip.protocol == IPPROTO_TCP && !fleet_is_syn(&in) &&
	    !fleet_local_conn(skb, &in)) {
		next = 0;
		if (e.hops < RS_FLEET_MAX_HOPS &&
		    !fleet_key(bind->service, &in, &key))
			next = fleet_next_owner(h, table, bind->service, &key,
						saddr);
		if (next) {
			verdict = fleet_reforward(skb, h, outer, next,
						  e.hops + 1);
			if (verdict != FLEET_CONTINUE) {
				FLEET_COUNT(second_chance);
				return verdict;
			}
		}
		/* Nowhere left to try: this host's TCP will reset it. */
		FLEET_COUNT(stray);
	}
	if (bpf_skb_adjust_room(skb, -(int)RS_FLEET_ENCAP_LEN, BPF_ADJ_ROOM_MAC,
				0)) {
		FLEET_COUNT(errors);
		return TC_ACT_SHOT;
	}
	FLEET_COUNT(received);
	return FLEET_CONTINUE;
}

/* Uses fleet_encap(): QUIC connection IDs that name another member. */
#include "fleet_quic.bpf.h"

static __always_inline void fleet_flow_key(const struct fleet_pkt *p,
					   struct rs_fleet_flow_key *k)
{
	k->saddr = p->ip.saddr;
	k->daddr = p->ip.daddr;
	k->sport = bpf_htons(p->sport);
	k->dport = bpf_htons(p->dport);
}

/*
 * A plain packet: forward it when the table names another owner. A TCP
 * SYN forwarded leaves its owner in rs_fleet_flows; the connection's later
 * packets go there too (abi.h says why).
 */
static __always_inline int fleet_entry(struct __sk_buff *skb,
				       const struct rs_fleet_header *h,
				       void *table, const struct fleet_pkt *p)
{
	struct rs_affinity_key key __attribute__((aligned(8))) = {};
	struct rs_fleet_flow_key fk __attribute__((aligned(4))) = {};
	struct rs_fleet_flow flow = {}, *known;
	__u32 svc_id, idx, addr, prev;
	struct rs_bind *bind;
	int tcp = p->ip.protocol == IPPROTO_TCP, syn, verdict;

	bind = rs_match_bind(p->ip.protocol, RS_AF_INET, p->dport,
			     &p->ip.daddr);
	if (!bind)
		return FLEET_CONTINUE;
	svc_id = bind->service;
	verdict = fleet_quic_entry(skb, h, table, p, svc_id);
	if (verdict != FLEET_BY_TABLE)
		return verdict;
	if (fleet_key(svc_id, p, &key) ||
	    fleet_owner(table, RS_FLEET_CURRENT, svc_id, &key, &idx, &addr))
		return FLEET_CONTINUE;
	syn = tcp && fleet_is_syn(p);
	if (tcp)
		fleet_flow_key(p, &fk);
	if (tcp && !syn) {
		/*
		 * First the SYN's owner: a flow this host forwarded is not
		 * held here (a SYN steered here deletes the entry), and the
		 * socket lookup below, which runs sk_lookup when it misses,
		 * is the costliest step of this program.
		 */
		known = bpf_map_lookup_elem(&rs_fleet_flows, &fk);
		if (known && known->owner && known->owner != h->self_addr) {
			verdict = fleet_encap(skb, h, p, known->owner, 1);
			if (verdict == FLEET_CONTINUE) {
				FLEET_COUNT(errors);
			} else {
				FLEET_COUNT(forwarded);
				FLEET_COUNT(flow_hits);
			}
			return verdict;
		}
		/* A connection this host holds stays here, whoever owns it. */
		if (fleet_local_conn(skb, p)) {
			if (idx != h->self)
				FLEET_COUNT(local_socket);
			return FLEET_CONTINUE;
		}
	}
	if (idx == h->self || addr == h->self_addr) {
		if (syn)
			bpf_map_delete_elem(&rs_fleet_flows, &fk);
		/* Ours, but not a connection of ours: the previous owner's? */
		if (!tcp || syn)
			return FLEET_CONTINUE;
		if (fleet_previous_owner(table, svc_id, &key, &prev) ||
		    prev == h->self_addr) {
			FLEET_COUNT(stray);
			return FLEET_CONTINUE;
		}
		verdict = fleet_encap(skb, h, p, prev, 1);
		if (verdict == FLEET_CONTINUE)
			FLEET_COUNT(errors);
		else
			FLEET_COUNT(second_chance);
		return verdict;
	}
	if (syn) {
		flow.owner = addr;
		bpf_map_update_elem(&rs_fleet_flows, &fk, &flow, BPF_ANY);
	}
	verdict = fleet_encap(skb, h, p, addr, 1);
	if (verdict == FLEET_CONTINUE)
		FLEET_COUNT(errors);
	else
		FLEET_COUNT(forwarded);
	return verdict;
}

/*
 * The fleet step of steer_tc: a TC verdict, or FLEET_CONTINUE to carry on
 * with the (possibly decapsulated) packet.
 */
static __always_inline int fleet_steer(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct rs_fleet_header h;
	struct rs_fleet_slot *hs;
	struct fleet_pkt p = {};
	void *table;
	__be16 proto;

	table = bpf_map_lookup_elem(&rs_fleet, &zero);
	if (!table)
		return FLEET_CONTINUE;
	hs = bpf_map_lookup_elem(table, &zero);
	if (!hs || !hs->hdr.self_addr)
		return FLEET_CONTINUE;
	h = hs->hdr;
	if (skb->pkt_type != PACKET_HOST)
		return FLEET_CONTINUE;
	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
			       sizeof(proto)) ||
	    proto != bpf_htons(ETH_P_IP))
		return FLEET_CONTINUE;
	if (fleet_parse(skb, ETH_HLEN, &p))
		return FLEET_CONTINUE;
	if (p.ip.protocol == IPPROTO_UDP && p.dport == h.port &&
	    p.ip.daddr == h.self_addr)
		return fleet_receive(skb, &h, table, &p);
	return fleet_entry(skb, &h, table, &p);
}

#endif /* RS_BPF_FLEET_H */

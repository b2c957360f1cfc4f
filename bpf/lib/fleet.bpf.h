/* SPDX-License-Identifier: MIT */
/*
 * Fleet forwarding at TC ingress (docs/fleet.md). For a packet of a fleet
 * service the same affinity key the rings use picks the owner host from
 * the fleet table; a packet for another host is encapsulated (outer IP of
 * the packet's own family, UDP to the fleet port, struct rs_fleet_encap)
 * and sent there, and the owner takes the outer headers off so that
 * sk_lookup steers the inner packet as on a single host. The kernel's own
 * tunnel devices are not used: hosts without the FOU/IPIP modules (these
 * machines) cannot decapsulate with them, so both ends are done here.
 *
 * IPv4 and IPv6 take one path: addresses are held as struct rs_fleet_addr
 * (IPv4 mapped), and only parsing, the key, the socket lookup and the
 * outer header look at the family. IPv4 travels in IPv4 and IPv6 in IPv6
 * (bpf_redirect_neigh() routes by skb->protocol).
 */
#ifndef RS_BPF_FLEET_H
#define RS_BPF_FLEET_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bind_match.bpf.h"
#include "maps.bpf.h"
#include "net.bpf.h"
#include "trace_note.bpf.h"
#include "xxh64.bpf.h"

/* Not a fleet packet, or one to steer here: carry on. */
#define FLEET_CONTINUE (-1)

#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_ACK 0x10

struct fleet_pkt {
	struct rs_fleet_addr saddr; /* IPv4: mapped */
	struct rs_fleet_addr daddr;
	__u32 hlen;  /* of the IP header */
	__u32 len;   /* of the whole IP packet */
	__u16 sport; /* host order */
	__u16 dport;
	__u8 family; /* RS_AF_INET or RS_AF_INET6 */
	__u8 proto;
	__u8 tos; /* IPv4 TOS, IPv6 traffic class */
	__u8 tcp_flags;
};

/*
 * This host as the packet's family sees it: the table's header, its
 * forwarding address of that family (zero: it has none) and the table.
 */
struct fleet_host {
	struct rs_fleet_header h;
	struct rs_fleet_addr self;
	void *table;
};

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

#define FLEET_COUNT(field)                                                     \
	do {                                                                   \
		__u32 zero_ = 0;                                               \
		struct rs_fleet_stats *st_ =                                   \
			bpf_map_lookup_elem(&rs_fleet_stats, &zero_);          \
		if (st_)                                                       \
			st_->field++;                                          \
	} while (0)

static __always_inline void fleet_addr_v4(struct rs_fleet_addr *a, __u32 v4)
{
	a->w[0] = 0;
	a->w[1] = 0;
	a->w[2] = bpf_htonl(0xffff);
	a->w[3] = v4;
}

static __always_inline int fleet_addr_eq(const struct rs_fleet_addr *a,
					 const struct rs_fleet_addr *b)
{
	/* Without branches: each one would be a verifier state more. */
	return !((a->w[0] ^ b->w[0]) | (a->w[1] ^ b->w[1]) |
		 (a->w[2] ^ b->w[2]) | (a->w[3] ^ b->w[3]));
}

static __always_inline int fleet_addr_none(const struct rs_fleet_addr *a)
{
	return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]);
}

/* Outer header bytes of a forwarded packet of @family. */
static __always_inline __u32 fleet_encap_len(__u8 family)
{
	return family == RS_AF_INET6 ? RS_FLEET_ENCAP6_LEN : RS_FLEET_ENCAP_LEN;
}

/* The address words rs_match_bind() takes: one for IPv4, four for IPv6. */
static __always_inline const __u32 *fleet_bind_addr(const struct fleet_pkt *p)
{
	return p->family == RS_AF_INET6 ? p->daddr.w : &p->daddr.w[3];
}

/*
 * The first @len bytes of the packet in its linear part, where they can be
 * read in place: they nearly always are (headers), and a bpf_skb_load_bytes()
 * per header is a helper call each, about 10 ns on hosts whose returns pass
 * through a mitigation thunk (issue 21). A packet shorter than @len fails,
 * as the copy would have.
 */
static __always_inline int fleet_linear(struct __sk_buff *skb, __u32 len)
{
	if ((long)skb->data + len <= (long)skb->data_end)
		return 0;
	if (len > skb->len)
		return -1;
	return bpf_skb_pull_data(skb, len) ? -1 : 0;
}

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
 * frame. Reads the headers in place (fleet_linear()); @off is at most
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
	if (fleet_linear(skb,
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
	if (fleet_linear(skb, l4 + need))
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
 * Authenticated forwarding (docs/fleet.md): with a fleet key, every
 * forwarded packet carries a SipHash-2-4 tag (rs_fleet_tag()) under the
 * table's first key, and a member takes in only packets whose tag one of
 * the table's keys verifies. The keys live in the table, so a rotation is
 * the one swap that installs it.
 */
struct fleet_sig {
	__u64 tag;
	__u8 key_id;
	__u8 version; /* of the wire header, as the tag's message has it */
};

/*
 * @n (1..64 already) as 6.1's verifier can see it: clang folds the two
 * checks of a range into one compare of n - 1, after which that verifier
 * no longer knows n >= 1 and refuses the load ("R3 min value is outside
 * of the allowed memory range"). Hidden from clang, then rebuilt from a
 * mask the verifier follows, n stays n.
 */
static __always_inline __u32 fleet_len_bound(__u32 n)
{
	asm volatile("" : "+r"(n));
	return ((n - 1) & 63) + 1;
}

/*
 * The header of the message the tag of a packet with these outer
 * addresses and @hops covers (the inner packet is @inner_len bytes),
 * built in rs_fleet_scratch; fleet_tag_of() reads the inner bytes.
 */
static __always_inline struct rs_fleet_tag_msg *fleet_tag_head(
	__u8 family, const struct rs_fleet_addr *src,
	const struct rs_fleet_addr *dst, __u8 version, __u8 hops, __u8 key_id,
	__u32 inner_len)
{
	struct rs_fleet_tag_meta *meta;
	struct rs_fleet_tag_msg *m;
	__u32 zero = 0;

	m = bpf_map_lookup_elem(&rs_fleet_scratch, &zero);
	if (!m)
		return m;
	if (family == RS_AF_INET6) {
		m->v6.src = *src;
		m->v6.dst = *dst;
		meta = &m->v6.meta;
	} else {
		m->v4.src = src->w[3];
		m->v4.dst = dst->w[3];
		meta = &m->v4.meta;
	}
	/* Field by field into the map: no struct on steer_tc's stack. */
	meta->version = version;
	meta->hops = hops;
	meta->key_id = key_id;
	meta->pad = 0;
	meta->inner_len = inner_len;
	return m;
}

/*
 * The inner bytes of a short or non-linear packet into @m's own, zero
 * padded; -1 when the frame holds less than @len bytes at @off.
 */
static __always_inline int fleet_tag_copy(struct __sk_buff *skb, __u8 *inner,
					  __u32 size, __u32 off, __u32 len)
{
	__u32 n = len < size ? len : size;

	__builtin_memset(inner, 0, size);
	if (n < 1)
		return -1;
	n = fleet_len_bound(n);
	return bpf_skb_load_bytes(skb, off, inner, n) ? -1 : 0;
}

/*
 * fleet_tag_of()'s @at: the inner packet's offset, its family, and
 * whether the tag signs a packet (the wire version is then chosen).
 */
#define FLEET_TAG_V6   0x10000u
#define FLEET_TAG_SIGN 0x20000u

/*
 * The tag of @m's header and the inner bytes at @inner under @k, SipHash
 * started from rs_fleet_sip entry @e when it fits, else from the key, in
 * the wire version of @m's meta. Signing (@at & FLEET_TAG_SIGN), that
 * version is chosen first: 3 when @e fits and says the member takes it,
 * else 2, which every member takes.
 */
static __always_inline __u64 fleet_tag_from(const struct rs_fleet_sip *e,
					    const struct rs_fleet_auth *k,
					    struct rs_fleet_tag_msg *m,
					    const void *inner, int ipv6,
					    __u32 at)
{
	struct rs_fleet_tag_meta *meta = ipv6 ? &m->v6.meta : &m->v4.meta;
	struct rs_sip s;
	int fits = rs_fleet_tag_begin(&s, e, k, m, ipv6);

	if (at & FLEET_TAG_SIGN)
		meta->version = fits && e->wire == RS_FLEET_WIRE_MAX
					? RS_FLEET_WIRE_MAX
					: RS_FLEET_WIRE_VERSION;
	if (meta->version == RS_FLEET_WIRE_MAX)
		return rs_fleet_tag_finish(&s, m, inner, ipv6, 1);
	return rs_fleet_tag_finish(&s, m, inner, ipv6, 0);
}

/*
 * The tag (rs_fleet_tag_split()) of @m's header and the inner packet at
 * offset @at (| FLEET_TAG_V6 for IPv6, | FLEET_TAG_SIGN to sign), read
 * where it lies when the frame's linear part holds the bytes the tag
 * covers (every TCP segment with options, every QUIC packet worth
 * forwarding): no copy and no helper call per packet. A shorter inner
 * packet, or one beyond the linear part, is copied into @m first.
 * SipHash starts from entry @sip of rs_fleet_sip when it fits the
 * packet's outer addresses and @k. 0 when @k or @m is missing or the
 * frame is too short, which no signed packet's tag is with more than a
 * 2^-64 chance.
 *
 * A global function: the verifier checks it once, not once for each of
 * the paths that sign or verify (entry, second chance, QUIC, receive),
 * which would add about 25,000 verified instructions. Its frame must stay
 * within 32 bytes (steer_tc, fleet_send() and it are 512 on 6.1), so
 * nothing of SipHash's state lives across a helper call: the copy and the
 * entry's lookup come first.
 */
__attribute__((noinline)) __u64 fleet_tag_of(struct __sk_buff *skb,
					     const struct rs_fleet_auth *k,
					     struct rs_fleet_tag_msg *m,
					     __u32 at, __u32 sip)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 inner_off = at & 0xffff;
	const struct rs_fleet_sip *e;
	void *inner;

	if (!k || !m || inner_off > 256)
		return 0;
	inner = data + inner_off;
	if (at & FLEET_TAG_V6) {
		if (m->v6.meta.inner_len < RS_FLEET_TAG_INNER6 ||
		    inner + RS_FLEET_TAG_INNER6 > end) {
			if (fleet_tag_copy(skb, m->v6.inner,
					   RS_FLEET_TAG_INNER6, inner_off,
					   m->v6.meta.inner_len))
				return 0;
			inner = m->v6.inner;
		}
		e = bpf_map_lookup_elem(&rs_fleet_sip, &sip);
		return fleet_tag_from(e, k, m, inner, 1, at);
	}
	if (m->v4.meta.inner_len < RS_FLEET_TAG_INNER4 ||
	    inner + RS_FLEET_TAG_INNER4 > end) {
		if (fleet_tag_copy(skb, m->v4.inner, RS_FLEET_TAG_INNER4,
				   inner_off, m->v4.meta.inner_len))
			return 0;
		inner = m->v4.inner;
	}
	e = bpf_map_lookup_elem(&rs_fleet_sip, &sip);
	return fleet_tag_from(e, k, m, inner, 0, at);
}

static __always_inline struct rs_fleet_auth *fleet_key_slot(void *table,
							    __u32 k)
{
	__u32 slot = RS_FLEET_CURRENT + RS_FLEET_SLOT_KEYS + k;
	struct rs_fleet_slot *s = bpf_map_lookup_elem(table, &slot);

	return s ? &s->auth : (struct rs_fleet_auth *)0;
}

/*
 * The signature of a packet about to leave for @dst, member @member of
 * the table in force as far as the caller knows (its rs_fleet_sip entry
 * is taken only if it fits), its inner packet already behind the outer
 * headers' room: key id 0 and no tag when this host has no fleet key.
 */
static __always_inline int fleet_sign(struct __sk_buff *skb,
				      const struct fleet_host *fh, __u8 family,
				      const struct rs_fleet_addr *dst,
				      __u32 member, __u32 inner_len, __u8 hops,
				      struct fleet_sig *sig)
{
	struct rs_fleet_auth *k = fleet_key_slot(fh->table, 0);
	struct rs_fleet_tag_msg *m;

	sig->tag = 0;
	sig->key_id = 0;
	sig->version = RS_FLEET_WIRE_VERSION;
	if (!k || !k->id)
		return 0;
	m = fleet_tag_head(family, &fh->self, dst, RS_FLEET_WIRE_VERSION, hops,
			   k->id, inner_len);
	if (!m)
		return -1;
	sig->key_id = k->id;
	sig->tag = fleet_tag_of(
		skb, k, m,
		(ETH_HLEN + fleet_encap_len(family)) | FLEET_TAG_SIGN |
			(family == RS_AF_INET6 ? FLEET_TAG_V6 : 0),
		rs_fleet_sip_index(fh->h.gen, member, family == RS_AF_INET6,
				   0));
	/* The version fleet_tag_of() chose for the message. */
	sig->version =
		family == RS_AF_INET6 ? m->v6.meta.version : m->v4.meta.version;
	return sig->tag ? 0 : -1;
}

/*
 * Whether a packet with our header @e from a member (@member of the table
 * in force, by rs_fleet_peers) passes: this host has no fleet key, or the
 * key the packet names is one of ours and its tag is right. Key ids are
 * distinct within a key file (the daemon refuses one whose keys share an
 * id), so the first key with the id is the only one.
 */
static __always_inline int fleet_verify(struct __sk_buff *skb,
					const struct fleet_host *fh,
					const struct fleet_pkt *outer,
					const struct rs_fleet_encap *e,
					__u32 member)
{
	__u32 elen = fleet_encap_len(outer->family);
	struct rs_fleet_auth *k = fleet_key_slot(fh->table, 0);
	struct rs_fleet_tag_msg *m;
	__u32 i;

	if (!k || !k->id)
		return 1;
	if (!e->key_id)
		return 0;
	/* The signing key first: outside a rotation, the only lookup. */
	for (i = 1; k->id != e->key_id && i < RS_FLEET_AUTH_KEYS; i++) {
		k = fleet_key_slot(fh->table, i);
		if (!k)
			return 0;
	}
	if (k->id != e->key_id)
		return 0;
	m = fleet_tag_head(outer->family, &outer->saddr, &outer->daddr,
			   e->version, e->hops, e->key_id, outer->len - elen);
	if (!m)
		return 0;
	/* i: 1 + the slot of the key found (the loop stops past it). */
	return fleet_tag_of(skb, k, m,
			    (ETH_HLEN + elen) |
				    (outer->family == RS_AF_INET6 ? FLEET_TAG_V6
								  : 0),
			    rs_fleet_sip_index(fh->h.gen, member,
					       outer->family == RS_AF_INET6,
					       i)) ==
	       ((__u64)bpf_ntohl(e->tag[0]) << 32 | bpf_ntohl(e->tag[1]));
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

/* Uses fleet_encap(): QUIC connection IDs that name another member. */
#include "fleet_quic.bpf.h"

static __always_inline void fleet_flow_key(const struct fleet_pkt *p,
					   struct rs_fleet_flow_key *k)
{
	k->saddr = p->saddr;
	k->daddr = p->daddr;
	k->sport = bpf_htons(p->sport);
	k->dport = bpf_htons(p->dport);
}

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
 * Forward @p to @dst, member @member, by the flow memory (its SYN's owner):
 * counted as forwarded and as a flow hit.
 */
static __always_inline int fleet_forward_flow(struct __sk_buff *skb,
					      const struct fleet_host *fh,
					      const struct fleet_pkt *p,
					      const struct rs_fleet_addr *dst,
					      __u32 member)
{
	int verdict = fleet_forward(skb, fh, p, dst, member);

	if (verdict != FLEET_CONTINUE) {
		FLEET_COUNT(forwarded);
		FLEET_COUNT(flow_hits);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_FORWARD, member, 1);
	}
	return verdict;
}

/*
 * A plain packet: forward it when the table names another owner. A TCP
 * SYN forwarded leaves its owner in rs_fleet_flows; the connection's later
 * packets go there too (abi.h says why). An IPv6 packet whose owner (or
 * this host) has no IPv6 forwarding address cannot be forwarded: it is
 * steered here and counted (no_address6).
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
	struct rs_bind *bind;
	int tcp = p->proto == IPPROTO_TCP, syn, verdict;

	/*
	 * Shorter than its IP header says: not forwarded (the stack here
	 * drops it), since the owner would drop it too and its tag could
	 * not cover the bytes it claims.
	 */
	if (skb->len < ETH_HLEN + p->len)
		return FLEET_CONTINUE;
	bind = rs_match_bind(p->proto, p->family, p->dport, fleet_bind_addr(p));
	if (!bind)
		return FLEET_CONTINUE;
	svc_id = bind->service;
	RS_TRACE_SERVICE(skb, svc_id);
	verdict = fleet_quic_entry(skb, fh, p, svc_id);
	if (verdict != FLEET_BY_TABLE)
		return verdict;
	syn = tcp && fleet_is_syn(p);
	if (tcp)
		fleet_flow_key(p, &fk);
	if (tcp && !syn) {
		/*
		 * First the SYN's owner, before the key's hash and the table:
		 * most packets this host forwards are the later packets of a
		 * connection whose SYN it forwarded (issue 21: a third less
		 * work for them). A flow this host forwarded is not held here
		 * (a SYN steered here deletes the entry).
		 */
		known = bpf_map_lookup_elem(&rs_fleet_flows, &fk);
		if (known && !fleet_addr_none(&known->owner) &&
		    !fleet_addr_eq(&known->owner, &fh->self)) {
			return fleet_forward_flow(skb, fh, p, &known->owner,
						  known->member);
		}
	}
	if (fleet_key(svc_id, p, &key) ||
	    fleet_owner(fh->table, RS_FLEET_CURRENT, svc_id, &key, p->family,
			&idx, &addr))
		return FLEET_CONTINUE;
	if (syn) {
		/*
		 * A retransmitted SYN follows the first one, to a host that
		 * is still a member: if the table changed in between, the new
		 * owner would answer it too and reset the handshake the old
		 * one completes (docs/fleet.md). Its sequence number tells a
		 * retransmission from a new connection reusing the 4-tuple
		 * (clients and NATs do).
		 */
		if (bpf_skb_load_bytes(skb, ETH_HLEN + p->hlen + 4, &isn,
				       sizeof(isn)))
			isn = 0;
		known = bpf_map_lookup_elem(&rs_fleet_flows, &fk);
		if (known && known->isn == isn &&
		    !fleet_addr_none(&known->owner) &&
		    !fleet_addr_eq(&known->owner, &fh->self) &&
		    bpf_ktime_get_ns() - known->syn_ns <
			    RS_FLEET_SYN_RETRY_NS &&
		    !fleet_member_addr(fh->table, known->member, p->family,
				       &addr) &&
		    fleet_addr_eq(&addr, &known->owner)) {
			return fleet_forward_flow(skb, fh, p, &addr,
						  known->member);
		}
	}
	if (tcp && !syn) {
		/*
		 * A connection this host holds stays here, whoever owns it.
		 * After the flow memory above: the socket lookup, which runs
		 * sk_lookup when it misses, is the costliest step of this
		 * program.
		 */
		if (fleet_local_conn(skb, p)) {
			if (idx != fh->h.self)
				FLEET_COUNT(local_socket);
			return FLEET_CONTINUE;
		}
	}
	if (idx == fh->h.self ||
	    (!fleet_addr_none(&addr) && fleet_addr_eq(&addr, &fh->self))) {
		if (syn)
			bpf_map_delete_elem(&rs_fleet_flows, &fk);
		/* Ours, but not a connection of ours: the previous owner's? */
		if (!tcp || syn)
			return FLEET_CONTINUE;
		if (fleet_previous_owner(fh->table, svc_id, &key, p->family,
					 &prev) ||
		    fleet_addr_none(&prev) || fleet_addr_eq(&prev, &fh->self)) {
			FLEET_COUNT(stray);
			return FLEET_CONTINUE;
		}
		verdict = fleet_forward(skb, fh, p, &prev, RS_NONE);
		if (verdict != FLEET_CONTINUE) {
			FLEET_COUNT(second_chance);
			RS_TRACE_NOTE(skb, RS_TRACE_FLEET_SECOND_CHANCE,
				      RS_NONE, 1);
		}
		return verdict;
	}
	if (fleet_addr_none(&addr) || fleet_addr_none(&fh->self)) {
		/* Steered here: no earlier flow of this 4-tuple may send its
		 * ACKs elsewhere. */
		if (syn)
			bpf_map_delete_elem(&rs_fleet_flows, &fk);
		FLEET_COUNT(no_address6);
		return FLEET_CONTINUE;
	}
	if (syn) {
		flow.owner = addr;
		flow.syn_ns = bpf_ktime_get_ns();
		flow.member = idx;
		flow.isn = isn;
		bpf_map_update_elem(&rs_fleet_flows, &fk, &flow, BPF_ANY);
	}
	verdict = fleet_forward(skb, fh, p, &addr, idx);
	if (verdict != FLEET_CONTINUE) {
		FLEET_COUNT(forwarded);
		RS_TRACE_NOTE(skb, RS_TRACE_FLEET_FORWARD, idx, 1);
	}
	return verdict;
}

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
	if (fleet_linear(skb, ETH_HLEN))
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

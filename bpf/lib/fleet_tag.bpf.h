/* SPDX-License-Identifier: MIT */
/*
 * Authenticated forwarding (docs/fleet.md): with a fleet key, every
 * forwarded packet carries a SipHash-2-4 tag (rs_fleet_tag()) under the
 * table's first key, and a member takes in only packets whose tag one of
 * the table's keys verifies. The keys live in the table, so a rotation is
 * the one swap that installs it. fleet_sign() is the sending side
 * (fleet_send()), fleet_verify() the receiving one (fleet_receive()).
 */
#ifndef RS_BPF_FLEET_TAG_H
#define RS_BPF_FLEET_TAG_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fleet_common.bpf.h"
#include "maps.bpf.h"

/* What fleet_sign() gives the outer header it signs. */
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

#endif /* RS_BPF_FLEET_TAG_H */

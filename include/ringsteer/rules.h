/* SPDX-License-Identifier: MIT */
/*
 * Rules the BPF programs and userspace both apply, each once, as an inline
 * both sides compile (like rs_load_bound() in abi.h): the kernel decides
 * with them, and the daemon's replica (`ringsteer lookup`, sim, the ring
 * choice, the fleet table) predicts with the very same code, so the two
 * cannot drift apart. Nothing here reads a map: callers pass values.
 */
#ifndef RINGSTEER_RULES_H
#define RINGSTEER_RULES_H

#include <ringsteer/abi.h>

#define RS_NS_PER_S 1000000000ull

/*
 * For rules that run per packet: inlined and unrolled in BPF, where clang
 * otherwise makes a static inline a subprogram of its own (a call, its
 * state spilled to the stack, a loop per word).
 */
#define RS_HOT static inline __attribute__((__always_inline__))
#ifdef __bpf__
#define RS_UNROLL _Pragma("unroll")
#else
#define RS_UNROLL
#endif

/* ---- the load gauge's TCP states ---- */

/*
 * Whether a counted connection in TCP state @state is still in the load:
 * steer_sockops counts it down at its first state callback outside these,
 * and the daemon's reconciliation looks for uncounted connections in these
 * alone, so the two agree on what the gauge holds.
 */
RS_HOT int rs_load_tcp_state(__u32 state)
{
	return state < 32 && (RS_LOAD_TCP_STATES >> state & 1);
}

/* ---- which listen owns a destination ---- */

/*
 * The trie key's prefix length of a whole destination: the port's 32
 * bits and every address bit of @family (RS_AF_INET or RS_AF_INET6).
 */
RS_HOT __u32 rs_bind_full_prefixlen(__u8 family)
{
	return 32 + (family == RS_AF_INET ? 32 : 128);
}

/*
 * Of the trie's answers for the destination's own port (@port_match) and
 * for port 0 (@any_port), either of them absent (NULL): the longest
 * address prefix wins, and at equal length the exact port.
 */
RS_HOT const struct rs_bind *rs_bind_pick(const struct rs_bind *port_match,
					  const struct rs_bind *any_port)
{
	if (port_match && any_port)
		return any_port->addr_prefixlen > port_match->addr_prefixlen
			       ? any_port
			       : port_match;
	return port_match ? port_match : any_port;
}

/* ---- the sticky rule ---- */

/*
 * A sticky entry stamped @last_seen_ns is live at @now_ns (both
 * CLOCK_MONOTONIC, precise or coarse) under a TTL of @ttl_s seconds.
 * An entry stamped after @now_ns (another CPU's or userspace's clock read
 * a moment later) is fresh, never 2^64 ns old.
 */
static inline int rs_sticky_live(__u64 last_seen_ns, __u64 now_ns, __u32 ttl_s)
{
	/*
	 * The data plane reads CLOCK_MONOTONIC through a per-jiffy cache
	 * (bpf/lib/coarse_clock.bpf.h), which lags the clock userspace
	 * writes with by about a tick, two at worst.
	 */
	return now_ns < last_seen_ns ||
	       now_ns - last_seen_ns <= (__u64)ttl_s * RS_NS_PER_S;
}

/*
 * Sliding timeout, refreshed at 1/16 of the TTL: most hits of a busy
 * client read the entry without writing it, and an entry is never older
 * than 1/16 TTL more than its client's last connection.
 */
static inline int rs_sticky_refresh_due(__u64 last_seen_ns, __u64 now_ns,
					__u32 ttl_s)
{
	return now_ns > last_seen_ns &&
	       now_ns - last_seen_ns > (__u64)ttl_s * (RS_NS_PER_S / 16);
}

/*
 * Backend states that honour a live entry: UP and DRAIN (a draining
 * backend keeps its clients). DOWN honours nothing.
 */
static inline int rs_sticky_state_honours(__u32 state)
{
	return state == RS_BACKEND_UP || state == RS_BACKEND_DRAIN;
}

/*
 * Whether a UDP datagram for @be, whose socket slot for @v6 is empty,
 * waits for it (dropped) instead of going to another backend: the slot is
 * one the backend is restarting on (held_slots, set by the daemon within
 * the service's restart_grace), and the backend takes that flow: UP, or
 * DRAIN for a flow it already has (a sticky entry, a QUIC cookie). A TCP
 * connection is never held: the next backend serves it at once, and its
 * sticky entry stands (rs_sticky_stands()).
 */
static inline int rs_restart_holds(const struct rs_backend *be, int v6,
				   __u8 protocol)
{
	return protocol == 17 && ((be->held_slots >> (v6 ? 1 : 0)) & 1) &&
	       (be->state == RS_BACKEND_UP || be->state == RS_BACKEND_DRAIN);
}

/*
 * A sticky entry that stands: live, naming a backend of its service in a
 * state that honours it. No other decision overwrites it: a client spilled
 * off it for load, or sent elsewhere while its backend's socket is gone
 * for a moment (a restart), goes back once the backend takes it again.
 * steer_sockops applies it to TCP entries at establishment, steer_lookup
 * to UDP entries (a flow's datagram during a backend's restart).
 */
static inline int rs_sticky_stands(int live, __u32 entry_service, __u32 service,
				   __u32 state)
{
	return live && entry_service == service &&
	       rs_sticky_state_honours(state);
}

/*
 * Whether the load bound applies to a live entry: then an entry whose
 * backend is at its bound is passed over (the client spills for load).
 * Only for a TCP client (@protocol 6), whose entry outlives its
 * connections: a UDP entry is the flow itself (the load a UDP backend
 * carries is its live entries), and a flow never moves. Only at an UP
 * backend: a DRAIN one takes no new clients, so its load only falls.
 */
static inline int rs_sticky_bound_applies(__u32 state, __u8 protocol)
{
	return state == RS_BACKEND_UP && protocol == 6;
}

/* ---- generations (rs_udp_flows) ---- */

/*
 * Which generation a recorded flow of backend @b goes to: the one it
 * started on (@e_cookie) while that is not the working one (@working) and
 * the flow is still this backend's. Then its socket is looked up; once
 * that socket is gone the flow goes to the working one (a handover).
 */
static inline int rs_gen_draining(__u32 e_backend, __u64 e_cookie, __u32 b,
				  __u64 working)
{
	return e_backend == b && e_cookie && e_cookie != working;
}

/* A flow entry's seen is written once a second at most, not per datagram. */
static inline int rs_gen_refresh_due(__u32 seen_s, __u32 now_s)
{
	return (__s32)(now_s - seen_s) >= 1;
}

/*
 * Idle for @idle_s seconds: the daemon may delete it. An entry stamped
 * "in the future" (another CPU's clock reading) is not idle.
 */
static inline int rs_gen_flow_idle(__u32 seen_s, __u32 now_s, __u32 idle_s)
{
	return (__s32)(now_s - seen_s) >= (__s32)idle_s;
}

/*
 * What a key-policy change (key, prefix4, prefix6, seed: all carried by
 * the ring header) does to old entries: nothing is rewritten. The key is
 * the client address masked by the policy in force, so an entry written
 * under another policy is found only by a client whose key has the very
 * same bytes (a /24 network address and the /32 client that is that
 * address): the same group of clients it was written for, still sent to
 * the backend it had. Everything else lapses within the TTL, unread.
 * Userspace and BPF mask the key's address with the same words
 * (rs_prefix_mask32()), from the same header fields.
 */

/*
 * The mask of the first @bits bits of a 32-bit word of an address, in
 * network order: an address word & this keeps the prefix. Negative and
 * zero @bits give 0, 32 and more all ones, so the words of an IPv6
 * address take rs_prefix_mask32(prefix6 - 32 * i).
 */
static inline __u32 rs_prefix_mask32(int bits)
{
	__u32 m;

	if (bits <= 0)
		return 0;
	if (bits >= 32)
		return 0xffffffffu;
	m = 0xffffffffu << (32 - bits);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	m = __builtin_bswap32(m);
#endif
	return m;
}

/*
 * The address words of an affinity key: @w (network order, IPv4 in w[0])
 * masked in place to the prefix the key keeps (the ring header's prefix4
 * and prefix6). steer_sockops and rs_affinity_key_build() apply it;
 * steer_lookup's build_key() applies the same masks as it reads the
 * sk_lookup context, and tests/bpf compares the two.
 */
static inline void rs_key_mask_addr(__u32 w[4], __u8 family, __u8 prefix4,
				    __u8 prefix6)
{
	if (family == RS_AF_INET) {
		w[0] &= rs_prefix_mask32(prefix4);
		w[1] = w[2] = w[3] = 0;
		return;
	}
	w[0] &= rs_prefix_mask32(prefix6);
	w[1] &= rs_prefix_mask32(prefix6 - 32);
	w[2] &= rs_prefix_mask32(prefix6 - 64);
	w[3] &= rs_prefix_mask32(prefix6 - 96);
}

/* ---- ring points ---- */

/* Points a backend of weight @weight has in a ring of @vnodes per weight. */
static inline __u64 rs_backend_points(__u32 weight, __u32 vnodes)
{
	return (__u64)weight * vnodes;
}

/* ---- every candidate at its bound ---- */

/*
 * When every backend the walk met is at its bound, the connection goes to
 * the one least loaded relative to its bound. A gauge below zero (a
 * close counted before its open) counts as 0, above RS_LOAD_CLAMP as that.
 */
static inline __u64 rs_load_clamped(__s64 active)
{
	return active < 0		? 0
	       : active > RS_LOAD_CLAMP ? (__u64)RS_LOAD_CLAMP
					: (__u64)active;
}

/*
 * Whether a candidate with @load against @bound beats the best so far
 * (@best_load, @best_bound): load / bound < best_load / best_bound,
 * compared without division. The first candidate (best_bound 0, any
 * best_load above 0) always wins; a tie keeps the earlier one, the one
 * nearer clockwise.
 */
static inline int rs_bound_better(__u64 load, __u64 bound, __u64 best_load,
				  __u64 best_bound)
{
	return load * best_bound < best_load * bound;
}

/* ---- the fleet owner ---- */

/*
 * Bucket of a fleet key's hash (XXH64 of the affinity key with the
 * service's fleet seed): its top RS_FLEET_BUCKET_BITS. The table names
 * the owner of each bucket.
 */
static inline __u32 rs_fleet_bucket(__u64 hash)
{
	return (__u32)(hash >> (64 - RS_FLEET_BUCKET_BITS));
}

/* Slot of bucket @b's owner byte among the rows of service @svc_id. */
static inline __u32 rs_fleet_row_slot(__u32 svc_id, __u32 b)
{
	return RS_FLEET_SLOT_ROWS + svc_id * RS_FLEET_ROWS +
	       b / RS_FLEET_ROW_OWNERS;
}

/* ---- the forwarding tag ---- */

/*
 * SipHash-2-4 (Aumasson and Bernstein) of @nwords 64-bit words, little
 * endian as the algorithm reads its input, under key (@k0, @k1): a keyed
 * MAC short enough to run per packet in BPF, as the kernel itself uses it
 * for SYN cookies and socket hashes. Whole words only: the message is a
 * fixed struct, so the length block carries no tail bytes.
 */
#define RS_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define RS_SIPROUND(v0, v1, v2, v3)                                            \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = RS_ROTL64(v1, 13);                                        \
		v1 ^= v0;                                                      \
		v0 = RS_ROTL64(v0, 32);                                        \
		v2 += v3;                                                      \
		v3 = RS_ROTL64(v3, 16);                                        \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = RS_ROTL64(v3, 21);                                        \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = RS_ROTL64(v1, 17);                                        \
		v1 ^= v2;                                                      \
		v2 = RS_ROTL64(v2, 32);                                        \
	} while (0)

static inline __u64 rs_le64(__u64 w)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(w);
#else
	return w;
#endif
}

/*
 * The words of a message that is a struct of other types: may_alias, or
 * an optimising compiler may read them before the struct's fields are
 * written (strict aliasing; seen at -O2: tags over stale bytes).
 */
typedef __u64 __attribute__((__may_alias__)) rs_word_t;

/*
 * SipHash's state, fed a word at a time: the data plane reads the words
 * of a tag's message from two places (the header it builds, the inner
 * packet where it lies), and userspace reads them from one struct.
 */
struct rs_sip {
	__u64 v0, v1, v2, v3;
};

RS_HOT void rs_sip_init(struct rs_sip *s, __u64 k0, __u64 k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ull;
	s->v1 = k1 ^ 0x646f72616e646f6dull;
	s->v2 = k0 ^ 0x6c7967656e657261ull;
	s->v3 = k1 ^ 0x7465646279746573ull;
}

/* One 8-byte word of the message, as it lies in memory. */
RS_HOT void rs_sip_word(struct rs_sip *s, __u64 w)
{
	__u64 m = rs_le64(w);

	s->v3 ^= m;
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	s->v0 ^= m;
}

/*
 * The hash of a message of @len bytes whose whole words were fed and whose
 * last @len % 8 bytes are @tail (little endian, as the algorithm reads
 * them: the first byte lowest).
 */
RS_HOT __u64 rs_sip_final_tail(struct rs_sip *s, __u32 len, __u64 tail)
{
	__u64 b = (__u64)len << 56 | tail;

	s->v3 ^= b;
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	s->v0 ^= b;
	s->v2 ^= 0xff;
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	RS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* The hash of the @nwords words fed. */
RS_HOT __u64 rs_sip_final(struct rs_sip *s, __u32 nwords)
{
	return rs_sip_final_tail(s, nwords * 8, 0);
}

static inline __u64 rs_siphash24(__u64 k0, __u64 k1, const rs_word_t *w,
				 __u32 nwords)
{
	struct rs_sip s;

	rs_sip_init(&s, k0, k1);
	for (__u32 i = 0; i < nwords; i++)
		rs_sip_word(&s, w[i]);
	return rs_sip_final(&s, nwords);
}

/*
 * The words of a tag's message that are the outer addresses: a pair of
 * members' own, the same for every packet between them under a key, so
 * the daemon hashes them once (struct rs_fleet_sip).
 */
#define RS_FLEET_TAG_ADDRW4 1
#define RS_FLEET_TAG_ADDRW6 4

/* SipHash under @k after the outer addresses of @msg's header. */
RS_HOT void rs_fleet_tag_start(struct rs_sip *s, const struct rs_fleet_auth *k,
			       const struct rs_fleet_tag_msg *msg, int ipv6)
{
	const rs_word_t *head = (const rs_word_t *)msg;
	__u32 na = ipv6 ? RS_FLEET_TAG_ADDRW6 : RS_FLEET_TAG_ADDRW4;

	rs_sip_init(s, k->k0, k->k1);
	RS_UNROLL
	for (__u32 i = 0; i < na; i++)
		rs_sip_word(s, head[i]);
}

/*
 * The tag from @s, SipHash's state after the outer addresses
 * (rs_fleet_tag_start(), or a struct rs_fleet_sip that fits): the rest
 * of @msg's header (struct rs_fleet_tag_msg says what it covers), then
 * the inner bytes at @inner. @ipv6: the message's v6 member, else v4;
 * @v3: wire version 3's message (the meta in the final block; abi.h), a
 * constant for the data plane, like @ipv6. @inner may be @msg's own
 * inner bytes or, in the data plane, the packet where the inner packet
 * lies (no copy per packet). Whether a packet is signed at all is its
 * key id (0: unsigned), never the tag's value.
 */
RS_HOT __u64 rs_fleet_tag_finish(struct rs_sip *s,
				 const struct rs_fleet_tag_msg *msg,
				 const rs_word_t *inner, int ipv6, int v3)
{
	const rs_word_t *head = (const rs_word_t *)msg;
	__u32 na = ipv6 ? RS_FLEET_TAG_ADDRW6 : RS_FLEET_TAG_ADDRW4;
	__u32 nh = ipv6 ? RS_FLEET_TAG_HEAD6 / 8 : RS_FLEET_TAG_HEAD4 / 8;
	__u32 ni = ipv6 ? RS_FLEET_TAG_INNER6 / 8 : RS_FLEET_TAG_INNER4 / 8;

	if (v3) {
		ni = ipv6 ? RS_FLEET_TAG3_INNER6 / 8 : RS_FLEET_TAG_INNER4 / 8;
		RS_UNROLL
		for (__u32 i = 0; i < ni; i++)
			rs_sip_word(s, inner[i]);
		/* The meta word is the one after the addresses. */
		return rs_sip_final_tail(s, (na + ni) * 8 + 7,
					 rs_le64(head[na]) &
						 0x00ffffffffffffffull);
	}

	RS_UNROLL
	for (__u32 i = na; i < nh; i++)
		rs_sip_word(s, head[i]);
	RS_UNROLL
	for (__u32 i = 0; i < ni; i++)
		rs_sip_word(s, inner[i]);
	return rs_sip_final(s, nh + ni);
}

/* Whether @msg is wire version 3's message (its meta's version). */
static inline int rs_fleet_tag_v3(const struct rs_fleet_tag_msg *msg, int ipv6)
{
	return (ipv6 ? msg->v6.meta.version : msg->v4.meta.version) ==
	       RS_FLEET_WIRE_MAX;
}

/*
 * The tag of @msg's header and the inner bytes at @inner, under key @k,
 * in the wire version its meta names.
 */
RS_HOT __u64 rs_fleet_tag_split(const struct rs_fleet_auth *k,
				const struct rs_fleet_tag_msg *msg,
				const rs_word_t *inner, int ipv6)
{
	struct rs_sip s;

	rs_fleet_tag_start(&s, k, msg, ipv6);
	if (rs_fleet_tag_v3(msg, ipv6))
		return rs_fleet_tag_finish(&s, msg, inner, ipv6, 1);
	return rs_fleet_tag_finish(&s, msg, inner, ipv6, 0);
}

/*
 * Slot of rs_fleet_sip for the table of @gen, member @member, @ipv6, key
 * @k (abi.h); RS_NONE for a member out of range, which no entry is.
 */
static inline __u32 rs_fleet_sip_index(__u64 gen, __u32 member, int ipv6,
				       __u32 k)
{
	if (member >= RS_FLEET_MAX_MEMBERS || k >= RS_FLEET_SIP_KEYS)
		return RS_NONE;
	return (__u32)(gen & 1) * RS_FLEET_SIP_HALF +
	       (member * 2 + (ipv6 ? 1 : 0)) * RS_FLEET_SIP_KEYS + k;
}

/* @e, written for the header words and key of @msg and @k. */
static inline void rs_fleet_sip_make(struct rs_fleet_sip *e,
				     const struct rs_fleet_auth *k,
				     const struct rs_fleet_tag_msg *msg,
				     int ipv6)
{
	const rs_word_t *head = (const rs_word_t *)msg;
	__u32 na = ipv6 ? RS_FLEET_TAG_ADDRW6 : RS_FLEET_TAG_ADDRW4;
	struct rs_sip s;

	__builtin_memset(e, 0, sizeof(*e));
	e->wire = RS_FLEET_WIRE_VERSION;
	for (__u32 i = 0; i < 4; i++)
		e->head[i] = i < na ? head[i] : 0;
	e->k0 = k->k0;
	e->k1 = k->k1;
	rs_fleet_tag_start(&s, k, msg, ipv6);
	e->v[0] = s.v0;
	e->v[1] = s.v1;
	e->v[2] = s.v2;
	e->v[3] = s.v3;
}

/*
 * Whether @e holds SipHash's state after @msg's outer addresses under @k:
 * its words and key are theirs. Only then may a tag start from it.
 */
RS_HOT int rs_fleet_sip_fits(const struct rs_fleet_sip *e,
			     const struct rs_fleet_auth *k,
			     const struct rs_fleet_tag_msg *msg, int ipv6)
{
	const rs_word_t *head = (const rs_word_t *)msg;

	if (e->k0 != k->k0 || e->k1 != k->k1 || e->head[0] != head[0])
		return 0;
	if (!ipv6)
		return 1;
	return e->head[1] == head[1] && e->head[2] == head[2] &&
	       e->head[3] == head[3];
}

/*
 * SipHash's state after @msg's outer addresses under @k: @e's when it
 * fits (a member pair's, struct rs_fleet_sip), else hashed here. @e may be
 * NULL. Returns whether @e was taken.
 */
RS_HOT int rs_fleet_tag_begin(struct rs_sip *s, const struct rs_fleet_sip *e,
			      const struct rs_fleet_auth *k,
			      const struct rs_fleet_tag_msg *msg, int ipv6)
{
	if (e && rs_fleet_sip_fits(e, k, msg, ipv6)) {
		s->v0 = e->v[0];
		s->v1 = e->v[1];
		s->v2 = e->v[2];
		s->v3 = e->v[3];
		return 1;
	}
	rs_fleet_tag_start(s, k, msg, ipv6);
	return 0;
}

RS_HOT __u64 rs_fleet_tag(const struct rs_fleet_auth *k,
			  const struct rs_fleet_tag_msg *msg, int ipv6)
{
	return rs_fleet_tag_split(
		k, msg,
		(const rs_word_t *)(ipv6 ? msg->v6.inner : msg->v4.inner),
		ipv6);
}

/* ---- tracing (abi.h "Tracing") ---- */

/* Longest gap the bucket credits: keeps elapsed x rate within 64 bits. */
#define RS_TRACE_REFILL_MAX_NS (16ull * RS_NS_PER_S)
#define RS_TRACE_RATE_MAX      1000000u

/*
 * Whether a client at @addr (four words, network order; IPv4 in the
 * first) of @family passes the client filter of @t.
 */
static inline int rs_trace_client_match(const struct rs_trace_ctl *t,
					__u8 family, const __u32 *addr)
{
	const __u32 *want = (const __u32 *)t->client;

	if (!t->client_family)
		return 1;
	if (t->client_family != family)
		return 0;
	return !((addr[0] ^ want[0]) & rs_prefix_mask32(t->client_plen)) &&
	       !((addr[1] ^ want[1]) & rs_prefix_mask32(t->client_plen - 32)) &&
	       !((addr[2] ^ want[2]) & rs_prefix_mask32(t->client_plen - 64)) &&
	       !((addr[3] ^ want[3]) & rs_prefix_mask32(t->client_plen - 96));
}

/*
 * The token bucket of one CPU: @rate events a second, at most @burst at
 * once. Returns 1 and takes a token, or 0 when the bucket is empty. The
 * refill time advances by the whole tokens credited only, so a steady
 * stream of decisions faster than the rate still earns @rate a second.
 * Always inlined: clang made it a BPF subprogram of its own inside
 * steer_tc's rs_trace_tc(), and 6.1's verifier counts every frame of a
 * call chain as at least 32 bytes of stack: 448 + 64 + 32 > 512 ("combined
 * stack size of 3 calls is 544. Too large"), steer_tc refused.
 */
static inline __attribute__((always_inline)) int rs_trace_take(
	struct rs_trace_cpu *c, __u32 rate, __u32 burst, __u64 now)
{
	__u64 elapsed, add;

	if (!rate)
		return 1;
	if (rate > RS_TRACE_RATE_MAX)
		rate = RS_TRACE_RATE_MAX;
	if (!burst)
		burst = 1;
	elapsed = now - c->refill_ns;
	if (!c->refill_ns || elapsed > RS_TRACE_REFILL_MAX_NS) {
		c->tokens = burst;
		c->refill_ns = now;
	} else {
		add = elapsed * rate / RS_NS_PER_S;
		if (add) {
			c->tokens += add;
			c->refill_ns += add * RS_NS_PER_S / rate;
		}
	}
	/* Also when a new trace set a smaller burst than the last one's. */
	if (c->tokens > burst)
		c->tokens = burst;
	if (!c->tokens)
		return 0;
	c->tokens--;
	return 1;
}

#endif /* RINGSTEER_RULES_H */

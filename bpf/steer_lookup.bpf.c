// SPDX-License-Identifier: MIT
/*
 * sk_lookup data plane: match the destination to a service, hash the
 * client's affinity key into the service's vnode ring and hand the
 * connection to the first backend clockwise that may take it.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bind_match.bpf.h"
#include "coarse_clock.bpf.h"
#include "generations.bpf.h"
#include "maps.bpf.h"
#include "net.bpf.h"
#include "trace.bpf.h"
#include "xxh64.bpf.h"

/* Longest address prefix wins; at equal length the exact port wins. */
static __always_inline struct rs_bind *match_bind(struct bpf_sk_lookup *ctx)
{
	/*
	 * Volatile reads: otherwise clang selects a pointer into the context
	 * (ctx + 36 or ctx + 40) and loads through it, which the verifier
	 * refuses ("dereference of modified ctx ptr").
	 */
	__u32 addr[4] = {};

	if (ctx->family == RS_AF_INET) {
		addr[0] = *(volatile __u32 *)&ctx->local_ip4;
	} else {
		addr[0] = *(volatile __u32 *)&ctx->local_ip6[0];
		addr[1] = *(volatile __u32 *)&ctx->local_ip6[1];
		addr[2] = *(volatile __u32 *)&ctx->local_ip6[2];
		addr[3] = *(volatile __u32 *)&ctx->local_ip6[3];
	}
	return rs_match_bind(ctx->protocol, ctx->family, ctx->local_port, addr);
}

/* The key as the ring's header says to build it (see rs_ring_header). */
static __always_inline void build_key(struct bpf_sk_lookup *ctx, __u32 svc_id,
				      const struct rs_ring_header *h,
				      struct rs_affinity_key *key)
{
	__u32 *w = (__u32 *)key->addr;

	key->service = svc_id;
	key->family = ctx->family;
	if (h->key_policy == RS_KEY_SRC_IP_PORT)
		key->port = bpf_ntohs(ctx->remote_port);
	if (ctx->family == RS_AF_INET) {
		w[0] = ctx->remote_ip4 & rs_prefix_mask32(h->prefix4);
		return;
	}
	w[0] = ctx->remote_ip6[0] & rs_prefix_mask32(h->prefix6);
	w[1] = ctx->remote_ip6[1] & rs_prefix_mask32(h->prefix6 - 32);
	w[2] = ctx->remote_ip6[2] & rs_prefix_mask32(h->prefix6 - 64);
	w[3] = ctx->remote_ip6[3] & rs_prefix_mask32(h->prefix6 - 96);
}

/* Points of a ring whose header checks out, else 0. */
static __always_inline __u32 ring_npoints(const struct rs_ring_slot *hdr)
{
	if (!hdr || hdr->hdr.npoints > RS_MAX_RING_POINTS)
		return 0;
	return hdr->hdr.npoints;
}

/*
 * Where the walk starts for @hash, from the flat table when the ring has
 * one: a bucket that lies on one arc gives its owner's slot, backend and
 * ordinal (returns 1: @b and @ordinal are set, no point is read); a
 * bucket holding points narrows the search to them. Without a table, or
 * with a malformed entry, the whole ring is searched. Returns 0 when @idx
 * is set and the point is to be read, -1 on a failed lookup.
 */
static __always_inline int ring_start(void *ring, __u32 npoints, __u8 bits,
				      __u64 hash, __u32 *idx, __u32 *b,
				      __u32 *ordinal)
{
	__u32 lo = 1, hi = npoints + 1, k, slot, point, owner;
	struct rs_ring_slot *s;

	k = bits & RS_RING_BITS_MASK;
	if ((bits & RS_RING_FLAT) && k > 0 && k <= RS_MAX_BUCKET_BITS) {
		k = hash >> (64 - k);
		slot = npoints + 1 + k / 2;
		s = bpf_map_lookup_elem(ring, &slot);
		if (!s)
			return -1;
		point = s->buckets.flat[k & 1].point;
		owner = s->buckets.flat[k & 1].owner;
		if (!(owner & RS_FLAT_SPLIT)) {
			if (point >= 1 && point <= npoints) {
				*idx = point;
				*b = (owner >> RS_FLAT_BACKEND_SHIFT) &
				     RS_FLAT_BACKEND_MASK;
				*ordinal = owner & RS_FLAT_ORDINAL_MASK;
				return 1;
			}
		} else if (point >= 1 && point <= npoints + 1 &&
			   (owner & ~RS_FLAT_SPLIT) <= npoints + 1 - point) {
			lo = point;
			hi = point + (owner & ~RS_FLAT_SPLIT);
		}
	}
	for (int i = 0; i < RS_SEARCH_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		s = bpf_map_lookup_elem(ring, &mid);
		if (!s)
			return -1;
		if (s->point.pos < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	*idx = lo > npoints ? 1 : lo;
	return 0;
}

static __always_inline struct rs_service_stats *service_stats(__u32 id)
{
	return bpf_map_lookup_elem(&rs_service_stats, &id);
}

static __always_inline void count_assigned(__u32 backend, int spill)
{
	struct rs_backend_stats *st;

	st = bpf_map_lookup_elem(&rs_backend_stats, &backend);
	if (!st)
		return;
	st->assigned++;
	if (spill)
		st->spills++;
}

/* What steer_sticky() found (one pointer: five arguments at most). */
struct sticky_io {
	__u32 ttl;   /* in: the service's sticky_ttl (seconds, not 0) */
	__u32 named; /* out: backend of a live entry, else RS_NONE */
	__u32 over;  /* out: 1 if that backend was at its bound */
	__u32 kept;  /* out: 1 if the entry stands (rs_sticky_stands()) */
	__u32 held;  /* out: 1 if its backend restarts: the flow waits */
};

static __always_inline __s64 backend_load(__u32 backend)
{
	struct rs_load *l = bpf_map_lookup_elem(&rs_backend_load, &backend);

	return l ? l->active : 0;
}

static __always_inline void count_load_spill(__u32 backend)
{
	struct rs_backend_stats *st;

	st = bpf_map_lookup_elem(&rs_backend_stats, &backend);
	if (st)
		st->load_spills++;
}

/*
 * An UP backend at its bound is passed over like a DOWN one. noinline
 * for the reason steer_sticky() gives: the walk's state then differs by
 * r0 alone, and the verifier still checks the loop body once.
 */
static __attribute__((noinline)) int walk_at_bound(__u32 b,
						   const struct rs_backend *be)
{
	__u32 svc_id;
	struct rs_load *sl;

	if (!be || !be->balance_milli)
		return 0;
	/* Read here, not carried in the walk: one less value to track. */
	svc_id = be->service;
	sl = bpf_map_lookup_elem(&rs_service_load, &svc_id);
	return rs_load_at_bound(be, backend_load(b), sl ? sl->active : 0);
}

/*
 * The sticky table, when the service has one: a client seen within the TTL
 * goes back to its backend while that backend is UP or DRAIN (and an UP
 * one is under its bound), whatever the ring says now. Returns 0 when
 * assigned. A DRAIN backend has no bound: it takes no new clients, so its
 * load only falls.
 *
 * noinline on purpose: every way out of here (miss, expired, backend gone,
 * assign refused) leaves different values in the caller's registers and
 * stack, and the verifier would then walk the ring loop once per way (20x
 * the instructions). A call returns with only r0 differing.
 */
static __attribute__((noinline)) int steer_sticky(
	struct bpf_sk_lookup *ctx, const struct rs_affinity_key *key,
	void *sticky, struct sticky_io *io)
{
	__u32 svc_id = key->service, b, ttl = io->ttl;
	struct rs_backend_stats *bst;
	struct rs_sticky_entry *e;
	struct rs_backend *be;
	__u64 now;
	int r;

	e = bpf_map_lookup_elem(sticky, key);
	if (!e)
		return -1;
	/*
	 * The time as of this jiffy's first run, without a helper call on
	 * most hits (coarse_clock.bpf.h): the TTL is in seconds.
	 * rs_sticky_live() takes an entry written a tick later.
	 */
	now = rs_coarse_now();
	if (!rs_sticky_live(e->last_seen_ns, now, ttl))
		return -1;
	b = e->backend;
	be = bpf_map_lookup_elem(&rs_backends, &b);
	if (!be || be->service != svc_id)
		return -1;
	io->named = b;
	if (!rs_sticky_stands(1, be->service, svc_id, be->state))
		return -1;
	/* Kept even if this one goes elsewhere (its socket is gone). */
	io->kept = 1;
	/* No bound in the word: no call (a sticky hit's common case). */
	if (be->balance_milli &&
	    rs_sticky_bound_applies(be->state, ctx->protocol) &&
	    walk_at_bound(b, be)) {
		io->over = 1;
		count_load_spill(b);
		return -1;
	}
	r = rs_assign(ctx, b, svc_id);
	if (r == 1 &&
	    rs_restart_holds(be, ctx->family == RS_AF_INET6, ctx->protocol))
		io->held = 1;
	if (r)
		return -1;
	if (rs_sticky_refresh_due(e->last_seen_ns, now, ttl))
		e->last_seen_ns = now;
	bst = bpf_map_lookup_elem(&rs_backend_stats, &b);
	if (bst) {
		bst->assigned++;
		bst->sticky_hits++;
	}
	return 0;
}

/* A full LRU evicts its oldest entry: steering stays correct. */
static __always_inline int sticky_store(void *sticky,
					const struct rs_affinity_key *key,
					const struct rs_sticky_entry *entry)
{
	return bpf_map_update_elem(sticky, key, entry, BPF_ANY);
}

/*
 * After a decision: the client's sticky entry. A SYN proves nothing about
 * its source address, so while steer_sockops runs a TCP connection's
 * sticky entry is written only once the handshake completes (SYNs from
 * forged addresses then cannot evict real clients from the LRU), by
 * steer_sockops, from what the accepting listener's rs_listen storage
 * says (issue 21: nothing is written here for a TCP decision). UDP has
 * no handshake to wait for; its entry is written now, and datagrams from
 * forged addresses can still churn a UDP service's table.
 * @write_sticky: 0 for a sticky hit (refreshed already) and for a client
 * spilled off its sticky backend for load (its entry stays);
 * REMEMBER_FLOW for a new UDP flow of a service with a bound, which the
 * load gauge counts at once (the daemon recounts live entries every
 * second and takes back the ones that lapsed).
 */
#define REMEMBER_FLOW 2

static __always_inline void count_flow(__u32 backend, __u32 service)
{
	struct rs_load *l = bpf_map_lookup_elem(&rs_backend_load, &backend);

	if (l)
		__sync_fetch_and_add(&l->active, 1);
	l = bpf_map_lookup_elem(&rs_service_load, &service);
	if (l)
		__sync_fetch_and_add(&l->active, 1);
}

static __attribute__((noinline)) int remember(const struct rs_affinity_key *key,
					      void *sticky, __u32 backend,
					      __u32 write_sticky)
{
	struct rs_sticky_entry e = {.backend = backend};

	if (!write_sticky || !sticky)
		return 0;
	if (write_sticky == REMEMBER_FLOW)
		count_flow(backend, key->service);
	e.last_seen_ns = rs_coarse_now();
	return sticky_store(sticky, key, &e);
}

/*
 * Whether steer_sockops writes this TCP decision's sticky entry at
 * establishment (then nothing is written here). Asked in line before
 * calling remember(): a call costs a decision that has nothing to
 * remember several ns.
 */
static __always_inline int sockops_writes(struct bpf_sk_lookup *ctx)
{
	struct rs_meta *meta;
	__u32 zero = 0;

	if (ctx->protocol != IPPROTO_TCP)
		return 0;
	meta = bpf_map_lookup_elem(&rs_meta, &zero);
	return meta && meta->handoff;
}

struct walk_state {
	struct bpf_sk_lookup *ctx;
	void *ring;
	struct rs_service_stats *sst;
	__u32 npoints;
	__u32 idx;
	__u32 svc_id;
	__u32 primary;
	__u32 rejected;
	__u32 chosen;
	__u32 stop;
	__u32 held; /* the owner restarts: the flow waits (rs_restart_holds) */
};

/*
 * Point @b/@ordinal of the clockwise walk (w->idx already past it); sets
 * w->stop when the walk is over. Reads the backend's word, no point.
 */
static __always_inline void walk_consider(struct walk_state *w, __u32 b,
					  __u32 ordinal)
{
	struct rs_backend *be;
	int r;

	if (b == w->rejected)
		return;
	be = bpf_map_lookup_elem(&rs_backends, &b);
	if (!be || ordinal >= be->active_points)
		return;
	if (w->primary == RS_NONE)
		w->primary = b;
	/* The bound's word in line: without a bound, no call (~5 ns). */
	if (be->state != RS_BACKEND_UP ||
	    (be->balance_milli && walk_at_bound(b, be))) {
		w->rejected = b;
		return;
	}
	r = rs_assign(w->ctx, b, w->svc_id);
	if (r == 1 && rs_restart_holds(be, w->ctx->family == RS_AF_INET6,
				       w->ctx->protocol)) {
		w->held = 1;
		w->stop = 1;
		return;
	}
	if (r) {
		w->rejected = b;
		return;
	}
	w->chosen = b;
	w->stop = 1;
}

/* The point at w->idx, then on to the next. */
static __always_inline void walk_point(struct walk_state *w)
{
	struct rs_ring_slot *slot;
	__u32 idx = w->idx;

	slot = bpf_map_lookup_elem(w->ring, &idx);
	if (!slot) {
		w->stop = 1;
		return;
	}
	w->idx = idx >= w->npoints ? 1 : idx + 1;
	walk_consider(w, slot->point.backend, slot->point.ordinal);
}

/*
 * The rest of the walk runs through bpf_loop() so the verifier checks this
 * body once instead of unrolling a copy of it for every path that leads
 * into the walk. That also lets the walk go round the whole ring: it never
 * gives up while any point's backend can take the connection, whatever
 * mix of weights and states the daemon has not yet rebuilt the ring for.
 */
static long walk_step(__u32 step, struct walk_state *w)
{
	walk_point(w);
	/*
	 * bpf_loop() wants exactly 0 or 1 from the callback. Its own index
	 * counts the points, not a counter in @w: the verifier would track
	 * such a counter's every value and never see the loop converge.
	 */
	return w->stop || step + 2 >= w->npoints ? 1 : 0;
}

/*
 * Every backend that could take the connection is at its bound (rounding,
 * or loads changing under the walk): the least loaded relative to its
 * bound takes it, so the bound never refuses a client. A second pass,
 * run only then, so the common walk carries none of this state. Ties:
 * the first met clockwise from the key.
 */
struct best_state {
	struct bpf_sk_lookup *ctx;
	void *ring;
	__s64 svc_active;
	__u32 npoints;
	__u32 idx;
	__u32 best;
	__u64 best_load, best_bound;
};

static int has_socket(struct bpf_sk_lookup *ctx, __u32 b)
{
	__u32 slot = rs_socket_slot(b, ctx->family == RS_AF_INET6);
	struct bpf_sock *sk = bpf_map_lookup_elem(&rs_sockets, &slot);

	if (!sk)
		return 0;
	bpf_sk_release(sk);
	return 1;
}

/*
 * One point of the second pass, in a call of its own: the verifier then
 * sees the loop body's state change by what this returns alone.
 */
static __attribute__((noinline)) int best_consider(struct best_state *w,
						   __u32 b, __u32 ordinal)
{
	struct rs_backend *be = bpf_map_lookup_elem(&rs_backends, &b);
	__u64 bound, load;

	if (!be || ordinal >= be->active_points || be->state != RS_BACKEND_UP)
		return 0;
	bound = rs_load_bound(be, w->svc_active);
	if (bound == RS_LOAD_UNBOUNDED || !has_socket(w->ctx, b))
		return 0;
	load = rs_load_clamped(backend_load(b));
	/* best_bound starts at 0: the first candidate always wins. */
	if (rs_bound_better(load, bound, w->best_load, w->best_bound)) {
		w->best = b;
		w->best_load = load;
		w->best_bound = bound;
	}
	return 0;
}

static long best_step(__u32 step, struct best_state *w)
{
	struct rs_ring_slot *slot;
	__u32 idx = w->idx;

	slot = bpf_map_lookup_elem(w->ring, &idx);
	if (!slot)
		return 1;
	w->idx = idx >= w->npoints ? 1 : idx + 1;
	best_consider(w, slot->point.backend, slot->point.ordinal);
	return step + 1 >= w->npoints ? 1 : 0;
}

static __attribute__((noinline)) __u32 least_loaded(struct bpf_sk_lookup *ctx,
						    void *ring, __u32 npoints,
						    __u32 idx, __u32 svc_id)
{
	struct rs_load *sl = bpf_map_lookup_elem(&rs_service_load, &svc_id);
	struct best_state w = {
		.ctx = ctx,
		.ring = ring,
		.svc_active = sl ? sl->active : 0,
		.npoints = npoints,
		.idx = idx,
		.best = RS_NONE,
		.best_load = 1,
	};

	bpf_loop(RS_MAX_RING_POINTS, best_step, &w, 0);
	return w.best;
}

/* A primary passed over at its bound is counted (load_spills). */
static __attribute__((noinline)) void count_primary(__u32 primary)
{
	struct rs_backend *be = bpf_map_lookup_elem(&rs_backends, &primary);

	if (be && be->state == RS_BACKEND_UP && walk_at_bound(primary, be))
		count_load_spill(primary);
}

/*
 * Clockwise from @idx; returns the backend assigned, or RS_NONE, and
 * leaves the ring's owner in @dec->primary (and whether the least-loaded
 * pass chose in @dec->least). @known: the flat table named the first
 * point's @b and @ordinal, so it is not read. *@held set: the backend
 * the flow goes to restarts, and the flow waits for it (RS_NONE).
 */
static __always_inline __u32 ring_walk(struct bpf_sk_lookup *ctx, void *ring,
				       __u32 npoints, __u32 idx, int known,
				       __u32 b, __u32 ordinal,
				       struct rs_service_stats *sst,
				       __u32 svc_id,
				       struct rs_trace_decision *dec, int *held)
{
	struct walk_state w = {
		.ctx = ctx,
		.ring = ring,
		.sst = sst,
		.npoints = npoints,
		.idx = idx,
		.svc_id = svc_id,
		.primary = RS_NONE,
		.rejected = RS_NONE,
		.chosen = RS_NONE,
	};
	__u32 best;
	long steps = 1;

	/* Nearly every decision ends at its first point: no loop for it. */
	if (known) {
		w.idx = idx >= npoints ? 1 : idx + 1;
		walk_consider(&w, b, ordinal);
	} else {
		walk_point(&w);
	}
	/*
	 * A constant count, the loop ending itself after npoints: with a
	 * variable one the verifier cannot prune the states around it.
	 */
	if (!w.stop && npoints > 1)
		steps += bpf_loop(RS_MAX_RING_POINTS, walk_step, &w, 0);
	/* Slow, not wrong: the daemon rebuilds rings to keep this at 0. */
	if (steps > RS_WALK_MAX && sst)
		sst->walk_limit++;
	dec->primary = w.primary;
	if (w.held) {
		*held = 1;
		return RS_NONE;
	}
	if (w.chosen == RS_NONE) {
		best = least_loaded(ctx, ring, npoints, idx, svc_id);
		if (best != RS_NONE && rs_assign(ctx, best, svc_id) == 0) {
			w.chosen = best;
			dec->least = 1;
		}
	}
	if (w.chosen == RS_NONE)
		return RS_NONE;
	if (w.chosen != w.primary && w.primary != RS_NONE)
		count_primary(w.primary);
	count_assigned(w.chosen, w.chosen != w.primary);
	return w.chosen;
}

/*
 * The decision for a connection to service @svc_id; what it found goes to
 * @dec (the trace event's material; its key is the affinity key). 0:
 * assigned; 1: held for a restarting backend (dropped: the client's next
 * datagram reaches it); -1: no backend (the fallback applies).
 */
static __always_inline int steer(struct bpf_sk_lookup *ctx, __u32 svc_id,
				 struct rs_service_stats *sst,
				 struct rs_trace_decision *dec)
{
	struct rs_affinity_key *key = &dec->key;
	struct sticky_io io = {.named = RS_NONE};
	__u32 zero = 0, idx = 0, chosen, b = 0, ordinal = 0;
	struct rs_ring_slot *hdr;
	struct rs_service *svc;
	void *ring, *sticky = NULL;
	__u64 hash;
	__u32 npoints;
	int known, held = 0;

	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (!svc || !svc->enabled)
		return -1;
	/*
	 * The ring first: its header says how to build and hash the key, so
	 * the sticky table and the ring see the same key in any reload.
	 */
	ring = bpf_map_lookup_elem(&rs_rings, &svc_id);
	if (!ring)
		return -1;
	hdr = bpf_map_lookup_elem(ring, &zero);
	if (!hdr)
		return -1;
	build_key(ctx, svc_id, &hdr->hdr, key);
	io.ttl = svc->sticky_ttl;
	if (io.ttl)
		sticky = bpf_map_lookup_elem(&rs_sticky, &svc_id);
	if (sticky && steer_sticky(ctx, key, sticky, &io) == 0) {
		dec->named = dec->chosen = io.named;
		dec->sticky_hit = 1;
		return 0;
	}
	if (io.held) {
		dec->held = 1;
		return 1;
	}
	dec->named = io.named;
	dec->over = io.over;

	npoints = ring_npoints(hdr);
	if (npoints == 0)
		return -1;

	hash = rs_xxh64_key(key, hdr->hdr.seed);
	known = ring_start(ring, npoints, hdr->hdr.bucket_bits, hash, &idx, &b,
			   &ordinal);
	if (known < 0)
		return -1;

	dec->point = idx;
	chosen = ring_walk(ctx, ring, npoints, idx, known, b, ordinal, sst,
			   svc_id, dec, &held);
	if (held) {
		dec->held = 1;
		return 1;
	}
	if (chosen == RS_NONE)
		return -1;
	dec->chosen = chosen;
	/* Not where the client's affinity names: a reassignment. */
	if (sst && chosen != (io.named != RS_NONE ? io.named : dec->primary))
		sst->reassigned++;
	if (sticky && !io.over && !io.kept && !sockops_writes(ctx))
		remember(key, sticky, chosen,
			 ctx->protocol == IPPROTO_UDP && svc->balance_milli
				 ? REMEMBER_FLOW
				 : 1);
	return 0;
}

/*
 * A QUIC generations service: the backend TC found in this 4-tuple's
 * connection ID (it wrote it in the flow entry) takes the datagram, on
 * the flow's generation. 0: assigned; -1: steer() decides.
 */
static __always_inline int steer_cid_flow(struct bpf_sk_lookup *ctx,
					  __u32 svc_id,
					  struct rs_trace_decision *dec)
{
	__u32 b = RS_NONE;

	if (rs_gen_on(ctx, svc_id) == 2)
		b = rs_gen_flow_steer(ctx, svc_id);
	if (b == RS_NONE)
		return -1;
	count_assigned(b, 0);
	/* Traced as an affinity entry honoured, which the flow entry is. */
	dec->named = dec->chosen = b;
	dec->sticky_hit = 1;
	return 0;
}

SEC("sk_lookup")
int steer_lookup(struct bpf_sk_lookup *ctx)
{
	struct rs_trace_decision dec __attribute__((aligned(8))) = {
		.chosen = RS_NONE,
		.primary = RS_NONE,
		.named = RS_NONE,
	};
	struct rs_service_stats *sst;
	struct rs_service *svc;
	struct rs_bind *bind;
	__u32 svc_id;
	int verdict = SK_PASS, err;

	/* Another program in the chain already chose: leave it be. */
	if (ctx->sk)
		return SK_PASS;
	bind = match_bind(ctx);
	if (!bind)
		return SK_PASS;
	svc_id = bind->service;
	sst = service_stats(svc_id);
	if (sst)
		sst->lookups++;
	err = steer_cid_flow(ctx, svc_id, &dec);
	if (err)
		err = steer(ctx, svc_id, sst, &dec);
	if (err > 0) {
		if (sst)
			sst->held++;
		dec.chosen = RS_NONE;
		verdict = SK_DROP;
	} else if (err) {
		if (sst)
			sst->no_backend++;
		dec.chosen = RS_NONE;
		svc = bpf_map_lookup_elem(&rs_services, &svc_id);
		if (svc && svc->fallback == RS_FALLBACK_DROP)
			verdict = SK_DROP;
	}
	/* Tracing off: this one read is all a decision pays for it. */
	if (rs_trace_wants(RS_TRACE_HOOK_LOOKUP, svc_id, dec.chosen)) {
		dec.verdict = verdict;
		rs_trace_lookup(ctx, &dec, svc_id);
	}
	return verdict;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

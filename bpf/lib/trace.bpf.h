/* SPDX-License-Identifier: MIT */
/*
 * Trace events of steer_lookup's decisions (abi.h "Tracing"). The program
 * keeps what it decided in a struct rs_trace_decision on its stack and,
 * at the decision's end, reads one word: rs_trace_ctl.enabled. Only when a
 * tracer set it does it call rs_trace_lookup(), a global function: the
 * verifier checks it once, on its own, instead of once for every path
 * into the decision's end, and the filters, the reason, the sampling, the
 * bucket and the event cost nothing while tracing is off.
 */
#ifndef RS_TRACE_BPF_H
#define RS_TRACE_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"
#include "net.bpf.h"
#include "trace_gate.bpf.h"
#include "xxh64.bpf.h"

/* What a decision leaves for its trace event. Zeroed whole at the start. */
struct rs_trace_decision {
	struct rs_affinity_key key; /* built (key.service set) or all zero */
	__u32 chosen;		    /* RS_NONE: no backend */
	__u32 primary;		    /* RS_NONE: the walk found none */
	__u32 named;		    /* live sticky entry's backend or RS_NONE */
	__u32 point;		    /* slot the walk started at, 0 if none */
	__u8 sticky_hit;	    /* the sticky entry's backend took it */
	__u8 over;		    /* that entry's backend was at its bound */
	__u8 least;		    /* the least-loaded pass chose */
	__u8 verdict;		    /* SK_PASS or SK_DROP */
	__u8 held;		    /* dropped for a restarting backend */
	__u8 pad[3];
};

/*
 * Why backend @b did not take the connection, as its word and load say
 * now (the trace reads them again instead of the walk carrying them).
 */
struct rs_trace_skip_load {
	__u32 load;
	__u32 bound;
};

static __always_inline __u8 rs_trace_skip_of(struct bpf_sk_lookup *ctx, __u32 b,
					     struct rs_trace_skip_load *e)
{
	__u32 slot = rs_socket_slot(b, ctx->family == RS_AF_INET6), svc;
	struct rs_backend *be = bpf_map_lookup_elem(&rs_backends, &b);
	struct rs_load *bl, *sl;
	struct bpf_sock *sk;
	__u64 bound;
	__s64 load;

	if (!be)
		return RS_TRACE_SKIP_NONE;
	if (be->state == RS_BACKEND_DOWN)
		return RS_TRACE_SKIP_DOWN;
	sk = bpf_map_lookup_elem(&rs_sockets, &slot);
	if (!sk)
		return RS_TRACE_SKIP_NO_SOCKET;
	bpf_sk_release(sk);
	svc = be->service;
	sl = bpf_map_lookup_elem(&rs_service_load, &svc);
	bl = bpf_map_lookup_elem(&rs_backend_load, &b);
	load = bl ? bl->active : 0;
	bound = rs_load_bound(be, sl ? sl->active : 0);
	if (bound != RS_LOAD_UNBOUNDED && load >= 0 && (__u64)load >= bound) {
		e->load = (__u32)rs_load_clamped(load);
		e->bound = bound > RS_LOAD_CLAMP ? RS_LOAD_CLAMP : (__u32)bound;
		return RS_TRACE_SKIP_BOUND;
	}
	/* UP or DRAIN with a socket and room: a DRAIN owner of a new key. */
	return be->state == RS_BACKEND_DRAIN ? RS_TRACE_SKIP_DRAIN
					     : RS_TRACE_SKIP_NONE;
}

/*
 * The key's hash and the ring's generation, from the service's ring as it
 * is now: its header's seed (the seed the decision hashed with, unless a
 * swap came between) and a flat ring's trailer.
 */
static __always_inline void rs_trace_ring(__u32 svc,
					  const struct rs_affinity_key *key,
					  struct rs_trace_event *e)
{
	struct rs_ring_slot *hdr, *tr;
	__u32 zero = 0, last, bits;
	void *ring;

	ring = bpf_map_lookup_elem(&rs_rings, &svc);
	if (!ring)
		return;
	hdr = bpf_map_lookup_elem(ring, &zero);
	if (!hdr)
		return;
	if (key->service == svc)
		e->hash = rs_xxh64_key(key, hdr->hdr.seed);
	if (!(hdr->hdr.bucket_bits & RS_RING_FLAT))
		return;
	bits = hdr->hdr.bucket_bits & RS_RING_BITS_MASK;
	if (bits > RS_MAX_BUCKET_BITS || hdr->hdr.npoints > RS_MAX_RING_POINTS)
		return;
	/* ring_map_slots() - 1 (userspace/core/ring.c) */
	last = hdr->hdr.npoints + 1 + ((1u << bits) + 1) / 2;
	tr = bpf_map_lookup_elem(ring, &last);
	if (tr)
		e->generation = tr->trailer.generation;
}

static __always_inline void rs_trace_addrs(struct bpf_sk_lookup *ctx, __u32 *r,
					   __u32 *l)
{
	/* Volatile reads: see match_bind() in steer_lookup.bpf.c. */
	if (ctx->family == RS_AF_INET) {
		r[0] = *(volatile __u32 *)&ctx->remote_ip4;
		l[0] = *(volatile __u32 *)&ctx->local_ip4;
		return;
	}
	r[0] = *(volatile __u32 *)&ctx->remote_ip6[0];
	r[1] = *(volatile __u32 *)&ctx->remote_ip6[1];
	r[2] = *(volatile __u32 *)&ctx->remote_ip6[2];
	r[3] = *(volatile __u32 *)&ctx->remote_ip6[3];
	l[0] = *(volatile __u32 *)&ctx->local_ip6[0];
	l[1] = *(volatile __u32 *)&ctx->local_ip6[1];
	l[2] = *(volatile __u32 *)&ctx->local_ip6[2];
	l[3] = *(volatile __u32 *)&ctx->local_ip6[3];
}

/*
 * One decision of service @svc: filters, reason, sampling, bucket, event.
 * Global (not static) for the reason the header comment gives; returns 1
 * when an event was written.
 */
__attribute__((noinline)) int rs_trace_lookup(struct bpf_sk_lookup *ctx,
					      const struct rs_trace_decision *d,
					      __u32 svc)
{
	struct rs_trace_skip_load sl = {};
	struct rs_trace_event *e;
	struct rs_trace_cpu *c;
	struct rs_trace_ctl *t;
	__u32 zero = 0, client[4] = {}, local[4] = {}, skipped;
	__u8 reason, skip = RS_TRACE_SKIP_NONE;
	__u64 now;

	t = bpf_map_lookup_elem(&rs_trace_ctl, &zero);
	if (!t || !d || !t->enabled)
		return 0;
	if (t->hook_mask && !(t->hook_mask & (1u << RS_TRACE_HOOK_LOOKUP)))
		return 0;
	if (t->service != RS_NONE && t->service != svc)
		return 0;
	if (t->backend != RS_NONE && t->backend != d->chosen)
		return 0;
	rs_trace_addrs(ctx, client, local);
	if (!rs_trace_client_match(t, ctx->family, client))
		return 0;

	/*
	 * Whose refusal explains the choice: the sticky entry's backend's,
	 * else the ring owner's.
	 */
	skipped = d->named != RS_NONE && !d->sticky_hit ? d->named
		  : d->chosen != d->primary		? d->primary
							: RS_NONE;
	if (skipped != RS_NONE)
		skip = rs_trace_skip_of(ctx, skipped, &sl);
	if (d->held)
		reason = RS_TRACE_HELD;
	else if (d->chosen == RS_NONE)
		reason = RS_TRACE_NO_BACKEND;
	else if (d->sticky_hit)
		reason = RS_TRACE_STICKY;
	else if (d->least)
		reason = RS_TRACE_LEAST_LOADED;
	else if (d->chosen == d->primary)
		reason = RS_TRACE_PRIMARY;
	else if (d->over || skip == RS_TRACE_SKIP_BOUND)
		reason = RS_TRACE_SPILL_LOAD;
	else
		reason = RS_TRACE_SPILL;
	if (t->reason_mask && !(t->reason_mask & (1u << reason)))
		return 0;

	c = bpf_map_lookup_elem(&rs_trace_cpu, &zero);
	if (!c)
		return 0;
	c->matched++;
	if (t->sample > 1 && c->matched % t->sample)
		return 0;
	now = bpf_ktime_get_ns();
	if (!rs_trace_take(c, t->rate, t->burst, now)) {
		c->lost_rate++;
		return 0;
	}
	e = bpf_ringbuf_reserve(&rs_trace_events, sizeof(*e), 0);
	if (!e) {
		c->lost_full++;
		return 0;
	}
	c->emitted++;
	/* Ring buffer memory is not zeroed: no byte of it goes out unset. */
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = now;
	rs_trace_ring(svc, &d->key, e);
	__builtin_memcpy(e->client, client, sizeof(e->client));
	__builtin_memcpy(e->local, local, sizeof(e->local));
	e->client_port = bpf_ntohs(ctx->remote_port);
	e->local_port = ctx->local_port;
	e->cpu = bpf_get_smp_processor_id();
	e->service = svc;
	e->backend = d->chosen;
	e->primary = d->primary;
	e->sticky = d->named;
	e->point = d->point;
	e->load = sl.load;
	e->bound = sl.bound;
	e->hook = RS_TRACE_HOOK_LOOKUP;
	e->family = ctx->family;
	e->protocol = ctx->protocol;
	e->reason = reason;
	e->skip = skip;
	e->verdict = d->verdict;
	e->flags = d->over ? RS_TRACE_F_STICKY_OVER : 0;
	bpf_ringbuf_submit(e, 0);
	return 1;
}

#endif /* RS_TRACE_BPF_H */

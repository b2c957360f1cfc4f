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
#include "maps.bpf.h"
#include "xxh64.h"

#define AF_INET	 2
#define AF_INET6 10
#define RS_NONE	 0xffffffffu

static __always_inline __u32 prefix_mask32(int bits)
{
	if (bits <= 0)
		return 0;
	if (bits >= 32)
		return 0xffffffffu;
	return bpf_htonl(0xffffffffu << (32 - bits));
}

/* Longest address prefix wins; at equal length the exact port wins. */
static __always_inline struct rs_bind *match_bind(struct bpf_sk_lookup *ctx)
{
	/*
	 * Volatile reads: otherwise clang selects a pointer into the context
	 * (ctx + 36 or ctx + 40) and loads through it, which the verifier
	 * refuses ("dereference of modified ctx ptr").
	 */
	__u32 addr[4] = {};

	if (ctx->family == AF_INET) {
		addr[0] = *(volatile __u32 *)&ctx->local_ip4;
	} else {
		addr[0] = *(volatile __u32 *)&ctx->local_ip6[0];
		addr[1] = *(volatile __u32 *)&ctx->local_ip6[1];
		addr[2] = *(volatile __u32 *)&ctx->local_ip6[2];
		addr[3] = *(volatile __u32 *)&ctx->local_ip6[3];
	}
	return rs_match_bind(ctx->protocol, ctx->family, ctx->local_port, addr);
}

static __always_inline void build_key(struct bpf_sk_lookup *ctx,
				      const struct rs_service *svc,
				      struct rs_affinity_key *key)
{
	__u32 *w = (__u32 *)key->addr;

	key->service = svc->id;
	key->family = ctx->family;
	if (svc->key_policy == RS_KEY_SRC_IP_PORT)
		key->port = bpf_ntohs(ctx->remote_port);
	if (ctx->family == AF_INET) {
		w[0] = ctx->remote_ip4 & prefix_mask32(svc->prefix4);
		return;
	}
	w[0] = ctx->remote_ip6[0] & prefix_mask32(svc->prefix6);
	w[1] = ctx->remote_ip6[1] & prefix_mask32(svc->prefix6 - 32);
	w[2] = ctx->remote_ip6[2] & prefix_mask32(svc->prefix6 - 64);
	w[3] = ctx->remote_ip6[3] & prefix_mask32(svc->prefix6 - 96);
}

/*
 * A real (noinline) function on purpose: clang emits only a forward
 * declaration for a type reachable solely through a map-in-map template, and
 * libbpf then cannot size the inner map. A parameter of this type makes clang
 * emit it in full.
 */
static __attribute__((noinline)) __u32 ring_npoints(
	const struct rs_ring_slot *hdr)
{
	if (!hdr || hdr->hdr.magic != RS_RING_MAGIC)
		return 0;
	if (hdr->hdr.npoints > RS_MAX_RING_POINTS)
		return 0;
	return hdr->hdr.npoints;
}

/* First point index in [1, npoints] with pos >= hash, wrapping to 1. */
static __always_inline int ring_lower_bound(void *ring, __u32 npoints,
					    __u64 hash, __u32 *out)
{
	__u32 lo = 1, hi = npoints + 1;

	for (int i = 0; i < RS_SEARCH_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct rs_ring_slot *slot = bpf_map_lookup_elem(ring, &mid);

		if (!slot)
			return -1;
		if (slot->point.pos < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	*out = lo > npoints ? 1 : lo;
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

/*
 * Try one backend: it must hold a socket for the client's family. Returns 0
 * when the connection was assigned to it.
 */
static __always_inline int try_assign(struct bpf_sk_lookup *ctx, __u32 backend,
				      struct rs_service_stats *sst)
{
	__u32 slot = rs_socket_slot(backend, ctx->family == AF_INET6);
	struct bpf_sock *sk;
	long err;

	sk = bpf_map_lookup_elem(&rs_sockets, &slot);
	if (!sk)
		return -1;
	err = bpf_sk_assign(ctx, sk, 0);
	bpf_sk_release(sk);
	if (err && sst)
		sst->errors++;
	return err ? -1 : 0;
}

static __always_inline int steer(struct bpf_sk_lookup *ctx, __u32 svc_id,
				 struct rs_service_stats *sst)
{
	struct rs_affinity_key key __attribute__((aligned(8))) = {};
	__u32 zero = 0, idx = 0, primary = RS_NONE, rejected = RS_NONE;
	struct rs_ring_slot *hdr;
	struct rs_service *svc;
	__u32 npoints;
	void *ring;
	__u64 hash;

	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (!svc || !svc->enabled)
		return -1;
	ring = bpf_map_lookup_elem(&rs_rings, &svc_id);
	if (!ring)
		return -1;
	hdr = bpf_map_lookup_elem(ring, &zero);
	if (!hdr)
		return -1;
	npoints = ring_npoints(hdr);
	if (npoints == 0)
		return -1;

	build_key(ctx, svc, &key);
	hash = rs_xxh64_key(&key, svc->seed);
	if (ring_lower_bound(ring, npoints, hash, &idx))
		return -1;

	for (int step = 0; step < RS_WALK_MAX; step++) {
		struct rs_ring_slot *slot = bpf_map_lookup_elem(ring, &idx);
		struct rs_backend *be;
		__u32 b;

		if (!slot)
			return -1;
		idx = idx >= npoints ? 1 : idx + 1;
		b = slot->point.backend;
		if (b == rejected)
			continue;
		be = bpf_map_lookup_elem(&rs_backends, &b);
		if (!be || slot->point.ordinal >= be->active_points)
			continue;
		if (primary == RS_NONE)
			primary = b;
		if (be->state != RS_BACKEND_UP || try_assign(ctx, b, sst)) {
			rejected = b;
			continue;
		}
		count_assigned(b, b != primary);
		return 0;
	}
	if (sst)
		sst->walk_limit++;
	return -1;
}

SEC("sk_lookup")
int steer_lookup(struct bpf_sk_lookup *ctx)
{
	struct rs_service_stats *sst;
	struct rs_service *svc;
	struct rs_bind *bind;
	__u32 svc_id;

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
	if (steer(ctx, svc_id, sst) == 0)
		return SK_PASS;

	if (sst)
		sst->no_backend++;
	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (svc && svc->fallback == RS_FALLBACK_DROP)
		return SK_DROP;
	return SK_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

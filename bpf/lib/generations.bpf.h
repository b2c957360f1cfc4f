/* SPDX-License-Identifier: MIT */
/*
 * Generations at sk_lookup (abi_maps.h, docs/architecture.md
 * "Generations"): once steer_lookup chose backend b for a UDP datagram
 * of a generations service, which of b's sockets takes it. A flow
 * recorded on an older socket of b (a process being replaced) stays on
 * it until it closes; every other flow goes to b's working socket and is
 * recorded there. Every assign here skips the kernel's reuseport pick
 * (BPF_SK_LOOKUP_F_NO_REUSEPORT): the new process binding next to the old
 * one with SO_REUSEPORT would otherwise take a share of the old flows.
 */
#ifndef RS_GENERATIONS_BPF_H
#define RS_GENERATIONS_BPF_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "coarse_clock.bpf.h"
#include "maps.bpf.h"

/*
 * REPLACE: a flow of an old generation whose socket refused falls back to
 * the working one within the same decision.
 */
#define RS_GEN_ASSIGN (BPF_SK_LOOKUP_F_REPLACE | BPF_SK_LOOKUP_F_NO_REUSEPORT)

static __always_inline __u32 rs_gen_now_s(void)
{
	return (__u32)(rs_coarse_now() / RS_NS_PER_S);
}

/*
 * Volatile reads: see match_bind() in steer_lookup.bpf.c. The IPv4 words
 * are read before the branch: read in it, clang 19 joined local_ip4's
 * load with the last of local_ip6's into one load through ctx plus a
 * chosen offset, which the verifier refuses ("dereference of modified
 * ctx ptr"). Reading them from an IPv6 lookup is allowed (they read 0).
 */
static __always_inline void rs_gen_flow_key(struct bpf_sk_lookup *ctx,
					    struct rs_udp_flow_key *k)
{
	__u32 s4 = *(volatile __u32 *)&ctx->remote_ip4;
	__u32 d4 = *(volatile __u32 *)&ctx->local_ip4;

	k->family = ctx->family;
	k->sport = bpf_ntohs(ctx->remote_port);
	k->dport = ctx->local_port;
	if (ctx->family == RS_AF_INET) {
		k->saddr[0] = s4;
		k->daddr[0] = d4;
		return;
	}
	for (int i = 0; i < 4; i++) {
		k->saddr[i] = *(volatile __u32 *)&ctx->remote_ip6[i];
		k->daddr[i] = *(volatile __u32 *)&ctx->local_ip6[i];
	}
}

static __always_inline long rs_gen_assign_cookie(struct bpf_sk_lookup *ctx,
						 __u64 cookie)
{
	struct bpf_sock *sk = bpf_map_lookup_elem(&rs_gen_sockets, &cookie);
	long err;

	if (!sk)
		return -1;
	err = bpf_sk_assign(ctx, sk, RS_GEN_ASSIGN);
	bpf_sk_release(sk);
	return err;
}

/*
 * The working socket of @slot: the one rs_gen_working names, else the
 * slot's rs_sockets socket (*@working then 0: nothing known to record).
 */
static __always_inline long rs_gen_assign_working(struct bpf_sk_lookup *ctx,
						  __u32 slot, __u64 *working)
{
	struct bpf_sock *sk;
	long err;

	if (*working && !rs_gen_assign_cookie(ctx, *working))
		return 0;
	*working = 0;
	sk = bpf_map_lookup_elem(&rs_sockets, &slot);
	if (!sk)
		return 1;
	err = bpf_sk_assign(ctx, sk, RS_GEN_ASSIGN);
	bpf_sk_release(sk);
	return err;
}

/*
 * The socket of backend @b of service @svc_id for this datagram. Returns
 * 0 when assigned, 1 when @b has no socket for the family, -1 when the
 * kernel refused. Global, as rs_trace_lookup(): the verifier checks it
 * once on its own, not once for every path of steer() that reaches it.
 */
__attribute__((noinline)) int rs_gen_steer(struct bpf_sk_lookup *ctx, __u32 b,
					   __u32 svc_id)
{
	struct rs_service_stats *sst =
		bpf_map_lookup_elem(&rs_service_stats, &svc_id);
	__u32 slot = rs_socket_slot(b, ctx->family == RS_AF_INET6), now;
	struct rs_udp_flow_key key = {};
	struct rs_udp_flow *e, v = {};
	__u64 *wp, working = 0;
	int handover = 0;
	long err;

	rs_gen_flow_key(ctx, &key);
	wp = bpf_map_lookup_elem(&rs_gen_working, &slot);
	if (wp)
		working = *wp;
	now = rs_gen_now_s();
	e = bpf_map_lookup_elem(&rs_udp_flows, &key);
	if (e && rs_gen_draining(e->backend, e->cookie, b, working)) {
		if (!rs_gen_assign_cookie(ctx, e->cookie)) {
			if (rs_gen_refresh_due(e->seen, now))
				e->seen = now;
			if (sst)
				sst->gen_draining++;
			return 0;
		}
		/* Its generation closed: on to the working one. */
		handover = 1;
	}
	err = rs_gen_assign_working(ctx, slot, &working);
	if (err) {
		if (err < 0 && sst)
			sst->errors++;
		return err < 0 ? -1 : 1;
	}
	if (e && e->backend == b && e->cookie == working) {
		if (rs_gen_refresh_due(e->seen, now))
			e->seen = now;
		return 0;
	}
	v.backend = b;
	v.seen = now;
	v.cookie = working;
	/*
	 * A full table refuses a new key and evicts nothing: the flow is on
	 * the working socket, where it belongs, just not recorded.
	 */
	if (bpf_map_update_elem(&rs_udp_flows, &key, &v, BPF_ANY)) {
		if (sst)
			sst->flows_full++;
	} else if (handover && sst) {
		sst->gen_handovers++;
	}
	return 0;
}

/*
 * A QUIC generations service: the backend TC wrote for this 4-tuple from
 * the datagram's connection ID (steer_tc.bpf.c), while that backend is UP
 * or DRAIN, takes the datagram on the flow's generation. Returns that
 * backend, or RS_NONE: then steer() decides as for any datagram. Global
 * for the reason rs_gen_steer() gives.
 */
__attribute__((noinline)) __u32 rs_gen_flow_steer(struct bpf_sk_lookup *ctx,
						  __u32 svc_id)
{
	struct rs_udp_flow_key key = {};
	struct rs_udp_flow *e;
	struct rs_backend *be;
	__u32 b;

	rs_gen_flow_key(ctx, &key);
	e = bpf_map_lookup_elem(&rs_udp_flows, &key);
	if (!e)
		return RS_NONE;
	b = e->backend;
	be = bpf_map_lookup_elem(&rs_backends, &b);
	if (!be || be->service != svc_id || !rs_sticky_state_honours(be->state))
		return RS_NONE;
	return rs_gen_steer(ctx, b, svc_id) ? RS_NONE : b;
}

/*
 * Try backend @b of service @svc_id: it must hold a socket for the
 * client's family. Returns 0 when the connection was assigned to it, 1
 * when it has no socket for the family (rs_restart_holds() may then hold
 * the flow for it), -1 when the kernel refused the socket (counted). A
 * generations service's datagram goes to its flow's generation
 * (rs_gen_steer()), the decision's one assign; any other connection to
 * the slot's socket with flags 0 (the kernel's reuseport pick within the
 * slot's group). Global, and the service's flag read here: the ring walk
 * that calls it then sees r0 change, not a flag it branched on (carried
 * through the walk, the flag doubled what the verifier walks).
 */
__attribute__((noinline)) int rs_assign(struct bpf_sk_lookup *ctx, __u32 b,
					__u32 svc_id)
{
	struct rs_service *svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	__u32 slot = rs_socket_slot(b, ctx->family == RS_AF_INET6);
	struct rs_service_stats *sst;
	struct bpf_sock *sk;
	long err;

	/* generations implies UDP: the config refuses it on TCP. */
	if (svc && svc->generations)
		return rs_gen_steer(ctx, b, svc_id);
	sk = bpf_map_lookup_elem(&rs_sockets, &slot);
	if (!sk)
		return 1;
	err = bpf_sk_assign(ctx, sk, 0);
	bpf_sk_release(sk);
	if (!err)
		return 0;
	sst = bpf_map_lookup_elem(&rs_service_stats, &svc_id);
	if (sst)
		sst->errors++;
	return -1;
}

/*
 * Whether service @svc_id has generations (0 / 1, the QUIC flavour 2).
 * Read afresh where asked, not carried from an earlier read: a flag held
 * across steer() would have the verifier walk it once per value.
 */
static __always_inline int rs_gen_on(struct bpf_sk_lookup *ctx, __u32 svc_id)
{
	struct rs_service *svc;

	if (ctx->protocol != IPPROTO_UDP)
		return 0;
	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (!svc || !svc->generations)
		return 0;
	return svc->cookie == RS_COOKIE_QUIC ? 2 : 1;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Trace events of steer_sockops (abi.h "Tracing"): a connection
 * steer_lookup steered became established (and what followed: counted in
 * the load gauge, sticky entry written), and a counted one closed. The
 * program runs for every TCP socket of the host, so it reads
 * rs_trace_ctl.enabled only at those two points, which only the steered
 * connections reach: the host's other sockets pay nothing. The event is
 * built in rs_trace_sock(), a global function the verifier checks once on
 * its own, as rs_trace_lookup() is.
 */
#ifndef RS_TRACE_SOCKOPS_BPF_H
#define RS_TRACE_SOCKOPS_BPF_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"
#include "trace_gate.bpf.h"

/*
 * One event, reason @reason, of connection @ctx of service @svc on
 * backend @backend. Global (not static): see the header comment. Returns
 * 1 when an event was written.
 */
__attribute__((noinline)) int rs_trace_sock(struct bpf_sock_ops *ctx, __u32 svc,
					    __u32 backend, __u32 reason,
					    __u32 flags)
{
	struct rs_trace_gate_in g = {};
	struct rs_trace_event *e;
	__u32 l[4] = {};

	/*
	 * Volatile reads: clang would otherwise pick the field with a moved
	 * context pointer, which the verifier refuses (as in trace.bpf.h).
	 */
	g.family = ctx->family;
	if (g.family == RS_AF_INET) {
		g.client[0] = *(volatile __u32 *)&ctx->remote_ip4;
		l[0] = *(volatile __u32 *)&ctx->local_ip4;
	} else {
		g.client[0] = *(volatile __u32 *)&ctx->remote_ip6[0];
		g.client[1] = *(volatile __u32 *)&ctx->remote_ip6[1];
		g.client[2] = *(volatile __u32 *)&ctx->remote_ip6[2];
		g.client[3] = *(volatile __u32 *)&ctx->remote_ip6[3];
		l[0] = *(volatile __u32 *)&ctx->local_ip6[0];
		l[1] = *(volatile __u32 *)&ctx->local_ip6[1];
		l[2] = *(volatile __u32 *)&ctx->local_ip6[2];
		l[3] = *(volatile __u32 *)&ctx->local_ip6[3];
	}
	g.service = svc;
	g.backend = backend;
	g.reason = (__u8)reason;
	e = rs_trace_gate(&g, RS_TRACE_HOOK_SOCKOPS);
	if (!e)
		return 0;
	__builtin_memcpy(e->local, l, sizeof(e->local));
	/* remote_port holds the network-order port in its upper half. */
	e->client_port = (__u16)bpf_ntohl(ctx->remote_port);
	e->local_port = (__u16)ctx->local_port;
	e->protocol = IPPROTO_TCP;
	e->flags = (__u8)flags;
	e->verdict = 1;
	bpf_ringbuf_submit(e, 0);
	return 1;
}

#endif /* RS_TRACE_SOCKOPS_BPF_H */

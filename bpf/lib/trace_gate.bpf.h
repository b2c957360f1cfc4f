/* SPDX-License-Identifier: MIT */
/*
 * What every hook's trace emitter but steer_lookup's does alike (abi.h
 * "Tracing"): the filters of rs_trace_ctl, the 1-in-N sampling, the
 * per-CPU token bucket and the counting of what was lost, then a zeroed
 * event in the ring buffer. Only the global emitters of steer_tc and
 * steer_sockops (trace_tc.bpf.h, trace_sockops.bpf.h) call it, after the
 * program's one read of `enabled`, so none of it runs while tracing is off.
 */
#ifndef RS_TRACE_GATE_BPF_H
#define RS_TRACE_GATE_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"

/* The one read a traced hook makes while no trace runs. */
static __always_inline int rs_trace_on(void)
{
	__u32 zero = 0;
	struct rs_trace_ctl *t = bpf_map_lookup_elem(&rs_trace_ctl, &zero);

	return t && t->enabled;
}

/*
 * A trace runs and its hook, service and backend filters let @svc's
 * decision for @backend through: that much of the filter in line, so a
 * trace of another service costs a decision a few compares and no call of
 * the event's builder (issue 24: at most +10 ns; with the call, +16).
 */
static __always_inline int rs_trace_wants(__u32 hook, __u32 svc, __u32 backend)
{
	__u32 zero = 0;
	struct rs_trace_ctl *t = bpf_map_lookup_elem(&rs_trace_ctl, &zero);

	if (!t || !t->enabled)
		return 0;
	if (t->hook_mask && !(t->hook_mask & (1u << hook)))
		return 0;
	if (t->service != RS_NONE && t->service != svc)
		return 0;
	return t->backend == RS_NONE || t->backend == backend;
}

/* One event's filter inputs; client in network order, IPv4 in [0]. */
struct rs_trace_gate_in {
	__u32 client[4];
	__u32 service;
	__u32 backend;
	__u8 family;
	__u8 reason;
};

/*
 * A reserved, zeroed event stamped with time, CPU, hook and the gate's
 * inputs, or NULL when a filter, the sampling, the bucket or a full ring
 * buffer said no. The caller fills in the rest and submits it.
 */
static __always_inline struct rs_trace_event *rs_trace_gate(
	const struct rs_trace_gate_in *g, __u8 hook)
{
	struct rs_trace_event *e;
	struct rs_trace_cpu *c;
	struct rs_trace_ctl *t;
	__u32 zero = 0;
	__u64 now;

	t = bpf_map_lookup_elem(&rs_trace_ctl, &zero);
	if (!t || !t->enabled)
		return NULL;
	if (t->hook_mask && !(t->hook_mask & (1u << (hook & 7))))
		return NULL;
	if (t->service != RS_NONE && t->service != g->service)
		return NULL;
	if (t->backend != RS_NONE && t->backend != g->backend)
		return NULL;
	if (!rs_trace_client_match(t, g->family, g->client))
		return NULL;
	if (t->reason_mask && !(t->reason_mask & (1u << (g->reason & 31))))
		return NULL;
	c = bpf_map_lookup_elem(&rs_trace_cpu, &zero);
	if (!c)
		return NULL;
	c->matched++;
	if (t->sample > 1 && c->matched % t->sample)
		return NULL;
	now = bpf_ktime_get_ns();
	if (!rs_trace_take(c, t->rate, t->burst, now)) {
		c->lost_rate++;
		return NULL;
	}
	e = bpf_ringbuf_reserve(&rs_trace_events, sizeof(*e), 0);
	if (!e) {
		c->lost_full++;
		return NULL;
	}
	c->emitted++;
	/* Ring buffer memory is not zeroed: no byte of it goes out unset. */
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = now;
	e->cpu = bpf_get_smp_processor_id();
	e->hook = hook;
	e->family = g->family;
	e->reason = g->reason;
	e->service = g->service;
	e->backend = g->backend;
	e->primary = RS_NONE;
	e->sticky = RS_NONE;
	e->member = RS_NONE;
	__builtin_memcpy(e->client, g->client, sizeof(e->client));
	return e;
}

#endif /* RS_TRACE_GATE_BPF_H */

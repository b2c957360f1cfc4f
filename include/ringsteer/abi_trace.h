/* SPDX-License-Identifier: MIT */
/*
 * Tracing's events and controls, and the self-test programs' inputs
 * and outputs (hash, clock).
 */
#ifndef RINGSTEER_ABI_TRACE_H
#define RINGSTEER_ABI_TRACE_H

#include "abi_maps.h"

/*
 * Tracing (`ringsteer trace`, issue 24): the data plane's own decisions as
 * events in a ring buffer. Off unless a tracer set rs_trace_ctl.enabled;
 * then each decision that passes the filters, the 1-in-N sampling and the
 * per-CPU token bucket becomes one struct rs_trace_event in rs_trace_events
 * (BPF_MAP_TYPE_RINGBUF, RS_TRACE_RING_BYTES). What the filters let through
 * but the bucket or a full buffer refused is counted in rs_trace_cpu.
 */
#define RS_TRACE_RING_BYTES (1u << 20)

enum rs_trace_hook {
	RS_TRACE_HOOK_LOOKUP = 1, /* steer_lookup (sk_lookup) */
	RS_TRACE_HOOK_TC = 2,	  /* steer_tc (TC ingress) */
	RS_TRACE_HOOK_SOCKOPS = 3,
};

/* Why the connection went where it went (one per event). */
enum rs_trace_reason {
	RS_TRACE_STICKY = 1,	   /* a live sticky entry's backend took it */
	RS_TRACE_PRIMARY = 2,	   /* the key's ring owner took it */
	RS_TRACE_SPILL = 3,	   /* owner down, drained, or no socket */
	RS_TRACE_SPILL_LOAD = 4,   /* owner (or sticky backend) at its bound */
	RS_TRACE_LEAST_LOADED = 5, /* every taker at its bound */
	RS_TRACE_NO_BACKEND = 6,   /* nobody could: fallback applied */
	/* steer_tc, QUIC cookie services */
	RS_TRACE_COOKIE_HIT = 7,     /* the DCID's server ID chose @backend */
	RS_TRACE_COOKIE_UNKNOWN = 8, /* no backend of the service has it */
	RS_TRACE_COOKIE_DOWN = 9,    /* its backend is down or has no socket */
	/* steer_tc, fleet (docs/fleet.md) */
	RS_TRACE_FLEET_FORWARD = 10,	   /* sent to fleet member @member */
	RS_TRACE_FLEET_RECEIVED = 11,	   /* from a member, unwrapped here */
	RS_TRACE_FLEET_SECOND_CHANCE = 12, /* no connection here: sent on */
	RS_TRACE_FLEET_FORGED = 13,	   /* dropped: not a member's packet */
	RS_TRACE_FLEET_UNAUTH = 14,	   /* dropped: its tag did not verify */
	RS_TRACE_FLEET_HOP_LIMIT = 15,	   /* dropped: hops out of range */
	/* steer_sockops, connections steer_lookup steered */
	RS_TRACE_ESTABLISHED = 16, /* handshake done; flags say what followed */
	RS_TRACE_CLOSED = 17,	   /* a counted connection reached TCP_CLOSE */
	/* dropped: its backend restarts, the flow waits (restart_grace) */
	RS_TRACE_HELD = 18,
	RS_TRACE_REASONS = 19, /* one past the last (reason_mask: 32 bits) */
};

/* Why the backend the client's affinity named did not take it. */
enum rs_trace_skip {
	RS_TRACE_SKIP_NONE = 0,
	RS_TRACE_SKIP_DOWN = 1,
	RS_TRACE_SKIP_DRAIN = 2,
	RS_TRACE_SKIP_NO_SOCKET = 3,
	RS_TRACE_SKIP_BOUND = 4,
};

/* rs_trace_event.flags */
#define RS_TRACE_F_STICKY_OVER 0x1u /* a live sticky entry at its bound */
#define RS_TRACE_F_COUNTED     0x2u /* ESTABLISHED: load gauge counted up */
#define RS_TRACE_F_STICKY_SET  0x4u /* ESTABLISHED: sticky entry written */
#define RS_TRACE_F_ASSIGNED    0x8u /* COOKIE_HIT: the kernel took the socket */

struct rs_trace_event {
	__u64 ts_ns;	   /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 hash;	   /* XXH64 of the affinity key */
	__u64 generation;  /* of the ring decided on (its trailer) */
	__u8 client[16];   /* network order; IPv4 in the first 4 bytes */
	__u8 local[16];	   /* the address the client dialled */
	__u16 client_port; /* host order */
	__u16 local_port;  /* host order */
	__u32 cpu;
	__u32 service;
	__u32 backend; /* chosen, RS_NONE for no backend */
	/* The key's ring owner (first point with an active ordinal). */
	__u32 primary;
	__u32 sticky; /* backend of a live sticky entry, else RS_NONE */
	__u32 point;  /* ring slot the walk started at (0: sticky hit) */
	/* With RS_TRACE_SKIP_BOUND: the passed-over backend's load, bound */
	__u32 load;
	__u32 bound;
	__u8 hook;     /* enum rs_trace_hook */
	__u8 family;   /* AF_INET or AF_INET6 */
	__u8 protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 reason;   /* enum rs_trace_reason */
	__u8 skip;     /* enum rs_trace_skip, of sticky, else of primary */
	__u8 verdict;  /* SK_PASS or SK_DROP */
	__u8 flags;    /* RS_TRACE_F_* */
	__u8 pad;
	/* FLEET_FORWARD, FLEET_SECOND_CHANCE: member index, RS_NONE unknown */
	__u32 member;
};

/*
 * rs_trace_ctl (ARRAY, one entry): what to trace. `enabled` first: with
 * tracing off it is the one word a decision reads. Written whole by the
 * tracer (one update), so a decision sees old or new filters, never half.
 */
struct rs_trace_ctl {
	__u32 enabled;
	__u32 service;	    /* RS_NONE: any */
	__u32 backend;	    /* chosen backend; RS_NONE: any */
	__u32 reason_mask;  /* bit 1 << reason; 0: any */
	__u32 sample;	    /* 1 in @sample of the matching decisions; 0: all */
	__u32 rate;	    /* events per second per CPU; 0: no bucket */
	__u32 burst;	    /* the bucket's depth (events) */
	__u32 owner;	    /* pid of the tracer, for the refusal message */
	__u8 client_family; /* 0: any client */
	__u8 client_plen;   /* prefix of @client */
	__u8 hook_mask;	    /* bit 1 << enum rs_trace_hook; 0: any */
	__u8 pad[5];
	__u8 client[16]; /* network order */
};

/*
 * rs_trace_cpu (PERCPU_ARRAY, one entry): the sampling counter and token
 * bucket of this CPU beside its counters, so an event costs one per-CPU
 * lookup. Counters only grow; the daemon shows their sums.
 */
struct rs_trace_cpu {
	__u64 emitted;	 /* events in the ring buffer */
	__u64 lost_full; /* matched, but the ring buffer was full */
	__u64 lost_rate; /* matched and sampled, but the bucket was empty */
	__u64 matched;	 /* passed the filters (sampling counts these) */
	__u64 tokens;	 /* bucket state */
	__u64 refill_ns; /* bucket state: time of the last refill */
};

/* Input/output of the hash self-test program (BPF_PROG_TEST_RUN). */
struct rs_hash_probe {
	struct rs_affinity_key key;
	__u64 seed;
	__u64 hash;
};

/*
 * Output of the clock self-test program: CLOCK_MONOTONIC, then the sticky
 * TTLs' cached reading of it (bpf/lib/coarse_clock.bpf.h), then
 * CLOCK_MONOTONIC again, in one run.
 */
struct rs_clock_probe {
	__u64 before_ns;
	__u64 cached_ns;
	__u64 after_ns;
};

RS_ABI_SIZE(rs_hash_probe, 40);
RS_ABI_SIZE(rs_clock_probe, 24);
RS_ABI_SIZE(rs_trace_event, 104);
RS_ABI_OFFSET(rs_trace_event, client, 24);
RS_ABI_SIZE(rs_trace_ctl, 56);
RS_ABI_OFFSET(rs_trace_ctl, enabled, 0);
RS_ABI_SIZE(rs_trace_cpu, 48);

#endif /* RINGSTEER_ABI_TRACE_H */

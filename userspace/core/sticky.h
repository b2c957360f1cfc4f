/* SPDX-License-Identifier: MIT */
/*
 * The data plane's sticky rule, for userspace: when steer_lookup honours
 * a sticky entry (steer_sticky in bpf/steer_lookup.bpf.c).
 * tests/bpf/test_steer_handoff.c checks the two against each other.
 */
#ifndef RS_STICKY_H
#define RS_STICKY_H

#include <stdbool.h>
#include <stdint.h>

#include <ringsteer/abi.h>

#include "ring.h"

/*
 * True when @e wins over the ring at @now_ns (CLOCK_MONOTONIC, as
 * bpf_ktime_get_ns()) for service @svc_id with a TTL of @ttl_s seconds:
 * seen within the TTL, and its backend belongs to the service, is UP or
 * DRAIN (a draining backend keeps its clients), is not UP at its bound
 * (with a load in @view; TCP only: a UDP entry is the flow the load
 * counts, and a flow never moves) and has a socket for the client's
 * family in @view.
 */
bool sticky_honoured(const struct rs_sticky_entry *e, uint64_t now_ns,
		     uint32_t ttl_s, uint32_t svc_id, uint8_t protocol,
		     const struct rs_ring_view *view);

#endif /* RS_STICKY_H */

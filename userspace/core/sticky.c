// SPDX-License-Identifier: MIT
#include <ringsteer/rules.h>

#include "sticky.h"

/* steer_sticky() in bpf/steer_lookup.bpf.c, rule for rule. */
bool sticky_honoured(const struct rs_sticky_entry *e, uint64_t now_ns,
		     uint32_t ttl_s, uint32_t svc_id, uint8_t protocol,
		     const struct rs_ring_view *view)
{
	const struct rs_backend *be;

	if (!rs_sticky_live(e->last_seen_ns, now_ns, ttl_s))
		return false;
	if (e->backend >= view->nbackends)
		return false;
	be = &view->backends[e->backend];
	if (be->service != svc_id || !rs_sticky_state_honours(be->state))
		return false;
	if (rs_sticky_bound_applies(be->state, protocol) &&
	    ring_at_bound(view, e->backend))
		return false;
	return !view->has_socket || view->has_socket[e->backend];
}

// SPDX-License-Identifier: MIT
#include <netinet/in.h>

#include "sticky.h"

bool sticky_honoured(const struct rs_sticky_entry *e, uint64_t now_ns,
		     uint32_t ttl_s, uint32_t svc_id, uint8_t protocol,
		     const struct rs_ring_view *view)
{
	const struct rs_backend *be;

	/* Unsigned, as in BPF: an entry stamped after @now_ns is stale. */
	if (now_ns - e->last_seen_ns > (uint64_t)ttl_s * 1000000000ull)
		return false;
	if (e->backend >= view->nbackends)
		return false;
	be = &view->backends[e->backend];
	if (be->service != svc_id ||
	    (be->state != RS_BACKEND_UP && be->state != RS_BACKEND_DRAIN))
		return false;
	/* A DRAIN backend has no bound: it takes no new clients. */
	if (protocol == IPPROTO_TCP && be->state == RS_BACKEND_UP &&
	    ring_at_bound(view, e->backend))
		return false;
	return !view->has_socket || view->has_socket[e->backend];
}

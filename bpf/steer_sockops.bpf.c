// SPDX-License-Identifier: MIT
/*
 * sockops at the root of a cgroup2 hierarchy: sees every TCP connection
 * of the host become established, whatever process or namespace owns it
 * (an accepted socket inherits its listener's cgroup). For the ones that
 * steer_lookup steered, it turns the decision left in rs_handoff into the
 * client's sticky entry: only a completed handshake proves the client
 * address, so SYNs from forged addresses never reach the sticky table.
 * It also keeps the load gauge: +1 for the backend and its service when
 * a steered connection is established, -1 when that socket reaches
 * TCP_CLOSE, by whatever path (FIN, RST, timeout, the backend exiting,
 * an unaccepted child of a closed listener). A SYN that never completes
 * never gets here, so it never counts. Both become trace events when a
 * trace runs (trace_sockops.bpf.h).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"
#include "net.bpf.h"
#include "trace_sockops.bpf.h"

/* The 4-tuple as steer_lookup keyed it (struct rs_handoff_key). */
static __always_inline void handoff_key(struct bpf_sock_ops *ctx,
					struct rs_handoff_key *hk)
{
	__u32 *r = (__u32 *)hk->remote_addr, *l = (__u32 *)hk->local_addr;

	hk->family = ctx->family;
	/* remote_port holds the network-order port in its upper half. */
	hk->remote_port = bpf_ntohl(ctx->remote_port);
	hk->local_port = ctx->local_port;
	if (ctx->family == RS_AF_INET) {
		r[0] = ctx->remote_ip4;
		l[0] = ctx->local_ip4;
		return;
	}
	r[0] = ctx->remote_ip6[0];
	r[1] = ctx->remote_ip6[1];
	r[2] = ctx->remote_ip6[2];
	r[3] = ctx->remote_ip6[3];
	l[0] = ctx->local_ip6[0];
	l[1] = ctx->local_ip6[1];
	l[2] = ctx->local_ip6[2];
	l[3] = ctx->local_ip6[3];
}

/*
 * Between SYN and ACK the configuration may have moved on: the service
 * may have lost its sticky table, or the backend id may have been retired
 * and given to another service. Then the decision is stale and dropped.
 * RS_TRACE_F_STICKY_SET when the entry was written (for the trace).
 */
static __always_inline __u32 sticky_commit(const struct rs_handoff *h)
{
	__u32 svc_id = h->key.service, b = h->backend;
	struct rs_sticky_entry e = {.backend = b}, *cur;
	struct rs_service *svc;
	struct rs_backend *be;
	void *sticky;
	__u64 now;

	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (!svc || !svc->enabled || !svc->sticky_ttl)
		return 0;
	be = bpf_map_lookup_elem(&rs_backends, &b);
	if (!be || be->service != svc_id)
		return 0;
	sticky = bpf_map_lookup_elem(&rs_sticky, &svc_id);
	if (!sticky)
		return 0;
	now = bpf_ktime_get_ns();
	cur = bpf_map_lookup_elem(sticky, &h->key);
	/* Same refresh granularity as a sticky hit in steer_lookup. */
	if (cur && cur->backend == b &&
	    !rs_sticky_refresh_due(cur->last_seen_ns, now, svc->sticky_ttl))
		return 0;
	e.last_seen_ns = now;
	return bpf_map_update_elem(sticky, &h->key, &e, BPF_ANY)
		       ? 0
		       : RS_TRACE_F_STICKY_SET;
}

static __always_inline void load_add(__u32 backend, __u32 service, __s64 d)
{
	struct rs_load *l;

	l = bpf_map_lookup_elem(&rs_backend_load, &backend);
	if (l)
		__sync_fetch_and_add(&l->active, d);
	l = bpf_map_lookup_elem(&rs_service_load, &service);
	if (l)
		__sync_fetch_and_add(&l->active, d);
}

/*
 * Count the connection up and remember, in the socket itself, what it
 * was counted for. The state callback is asked for only here, so only
 * counted sockets ever call back at close. RS_TRACE_F_COUNTED when
 * counted (for the trace).
 */
static __always_inline __u32 load_up(struct bpf_sock_ops *ctx,
				     const struct rs_handoff *h)
{
	__u32 svc_id = h->key.service, b = h->backend;
	struct bpf_sock *sk = ctx->sk;
	struct rs_backend *be;
	struct rs_conn *c;

	be = bpf_map_lookup_elem(&rs_backends, &b);
	if (!sk || !be || be->service != svc_id)
		return 0;
	c = bpf_sk_storage_get(&rs_conn, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!c)
		return 0;
	c->backend = b;
	c->service = svc_id;
	load_add(b, svc_id, 1);
	bpf_sock_ops_cb_flags_set(ctx, ctx->bpf_sock_ops_cb_flags |
					       BPF_SOCK_OPS_STATE_CB_FLAG);
	return RS_TRACE_F_COUNTED;
}

/*
 * Every way a TCP socket ends passes tcp_set_state(TCP_CLOSE) once. The
 * storage is deleted as it is counted down, so a second callback (none is
 * expected) finds nothing to count.
 */
static __always_inline void load_down(struct bpf_sock_ops *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct rs_conn *c;

	if (!sk || ctx->args[1] != BPF_TCP_CLOSE)
		return;
	c = bpf_sk_storage_get(&rs_conn, sk, 0, 0);
	if (!c)
		return;
	load_add(c->backend, c->service, -1);
	if (rs_trace_on())
		rs_trace_sock(ctx, c->service, c->backend, RS_TRACE_CLOSED, 0);
	bpf_sk_storage_delete(&rs_conn, sk);
}

SEC("sockops")
int steer_sockops(struct bpf_sock_ops *ctx)
{
	struct rs_handoff_key hk __attribute__((aligned(8))) = {};
	struct rs_handoff *h, copy;
	struct rs_meta *meta;
	__u32 zero = 0, flags = 0;

	if (ctx->op == BPF_SOCK_OPS_STATE_CB) {
		load_down(ctx);
		return 1;
	}
	if (ctx->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	/* Another namespace's connection: its 4-tuple is not ours. */
	meta = bpf_map_lookup_elem(&rs_meta, &zero);
	if (meta && meta->netns_cookie &&
	    bpf_get_netns_cookie(ctx) != meta->netns_cookie)
		return 1;
	handoff_key(ctx, &hk);
	h = bpf_map_lookup_elem(&rs_handoff, &hk);
	if (!h)
		return 1;
	/* Copied first: the delete frees the element h points into. */
	__builtin_memcpy(&copy, h, sizeof(copy));
	bpf_map_delete_elem(&rs_handoff, &hk);
	if (copy.flags & RS_HANDOFF_STICKY)
		flags = sticky_commit(&copy);
	flags |= load_up(ctx, &copy);
	if (rs_trace_on())
		rs_trace_sock(ctx, copy.key.service, copy.backend,
			      RS_TRACE_ESTABLISHED, flags);
	return 1;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

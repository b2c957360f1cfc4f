// SPDX-License-Identifier: MIT
/*
 * sockops at the root of a cgroup2 hierarchy: sees every TCP connection
 * of the host become established, whatever process or namespace owns it
 * (an accepted socket inherits its listener's cgroup). The ones steered
 * to a backend carry a copy of their listener's rs_listen storage (the
 * daemon writes it on each backend's listening sockets; BPF_F_CLONE has
 * the kernel copy it into every child), which names the backend and the
 * service: nothing is written at the SYN (issue 21). For those it writes
 * the client's sticky entry, since only a completed handshake proves the
 * client address (SYNs from forged addresses never reach the sticky
 * table), and keeps the load gauge: +1 for the backend and its service at
 * establishment, -1 when that socket reaches TCP_CLOSE, by whatever path
 * (FIN, RST, timeout, the backend exiting, an unaccepted child of a
 * closed listener). A SYN that never completes never gets here, so it
 * never counts. Both become trace events when a trace runs
 * (trace_sockops.bpf.h). Every other socket of the host leaves at the
 * first test (the op) or the second (no rs_listen storage).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bind_match.bpf.h"
#include "coarse_clock.bpf.h"
#include "maps.bpf.h"
#include "net.bpf.h"
#include "trace_sockops.bpf.h"

/* The child's addresses, read once (volatile: see trace_sockops.bpf.h). */
struct conn_addrs {
	__u32 local[4];
	__u32 remote[4];
	__u16 local_port;  /* host byte order */
	__u16 remote_port; /* host byte order */
	__u8 family;
};

static __always_inline void conn_addrs(struct bpf_sock_ops *ctx,
				       struct conn_addrs *a)
{
	a->family = (__u8)ctx->family;
	/* remote_port holds the network-order port in its upper half. */
	a->remote_port = (__u16)bpf_ntohl(ctx->remote_port);
	a->local_port = (__u16)ctx->local_port;
	if (a->family == RS_AF_INET) {
		a->remote[0] = *(volatile __u32 *)&ctx->remote_ip4;
		a->local[0] = *(volatile __u32 *)&ctx->local_ip4;
		return;
	}
	a->remote[0] = *(volatile __u32 *)&ctx->remote_ip6[0];
	a->remote[1] = *(volatile __u32 *)&ctx->remote_ip6[1];
	a->remote[2] = *(volatile __u32 *)&ctx->remote_ip6[2];
	a->remote[3] = *(volatile __u32 *)&ctx->remote_ip6[3];
	a->local[0] = *(volatile __u32 *)&ctx->local_ip6[0];
	a->local[1] = *(volatile __u32 *)&ctx->local_ip6[1];
	a->local[2] = *(volatile __u32 *)&ctx->local_ip6[2];
	a->local[3] = *(volatile __u32 *)&ctx->local_ip6[3];
}

/*
 * The sticky key as steer_lookup's build_key() makes it, from the ring's
 * header (the key policy and prefixes of the ring installed now).
 */
static __always_inline int sticky_key(const struct conn_addrs *a, __u32 svc_id,
				      struct rs_affinity_key *key)
{
	struct rs_ring_slot *hdr;
	__u32 zero = 0, *w = (__u32 *)key->addr;
	void *ring;

	ring = bpf_map_lookup_elem(&rs_rings, &svc_id);
	if (!ring)
		return -1;
	hdr = bpf_map_lookup_elem(ring, &zero);
	if (!hdr)
		return -1;
	key->service = svc_id;
	key->family = a->family;
	if (hdr->hdr.key_policy == RS_KEY_SRC_IP_PORT)
		key->port = a->remote_port;
	w[0] = a->remote[0];
	w[1] = a->remote[1];
	w[2] = a->remote[2];
	w[3] = a->remote[3];
	rs_key_mask_addr(w, a->family, hdr->hdr.prefix4, hdr->hdr.prefix6);
	return 0;
}

/*
 * An entry that steer_lookup honours names another backend: live, of the
 * service, UP or DRAIN. The client was then spilled off it for load (its
 * entry stays, as it did when the SYN's decision travelled in a hand-off),
 * or another connection of the same key wrote it meanwhile.
 */
static __always_inline int entry_kept(const struct rs_sticky_entry *e,
				      __u32 svc_id, __u32 ttl, __u64 now)
{
	__u32 other = e->backend;
	struct rs_backend *be;

	if (!rs_sticky_live(e->last_seen_ns, now, ttl))
		return 0;
	be = bpf_map_lookup_elem(&rs_backends, &other);
	return be && rs_sticky_stands(1, be->service, svc_id, be->state);
}

/*
 * The client's sticky entry for backend @b of service @svc_id, when the
 * service keeps one. Between SYN and ACK the configuration may have moved
 * on (the backend id retired and given to another service): then nothing
 * is written. RS_TRACE_F_STICKY_SET when the entry was written (for the
 * trace).
 */
static __always_inline __u32 sticky_commit(const struct conn_addrs *a,
					   __u32 svc_id, __u32 b)
{
	struct rs_affinity_key key __attribute__((aligned(8))) = {};
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
	if (!sticky || sticky_key(a, svc_id, &key))
		return 0;
	now = rs_coarse_now(); /* as steer_lookup's sticky hit */
	cur = bpf_map_lookup_elem(sticky, &key);
	if (cur && cur->backend != b &&
	    entry_kept(cur, svc_id, svc->sticky_ttl, now))
		return 0;
	/* Same refresh granularity as a sticky hit in steer_lookup. */
	if (cur && cur->backend == b &&
	    !rs_sticky_refresh_due(cur->last_seen_ns, now, svc->sticky_ttl))
		return 0;
	e.last_seen_ns = now;
	return bpf_map_update_elem(sticky, &key, &e, BPF_ANY)
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
 * Count the connection up, and mark the child's own copy of its
 * listener's rs_listen storage (the kernel cloned it at the handshake's
 * end) as counted: the mark says, at close and to the daemon's
 * reconciliation, that this socket is in the gauge. Nothing is
 * allocated: a second storage per connection (rs_conn, until issue 21's
 * profile) cost an allocation at establishment and an RCU-deferred free
 * at close, on every connection (docs/benchmarks.md, section 5). The state
 * callback is asked for only here, so only counted sockets call back at close.
 * RS_TRACE_F_COUNTED when counted (for the trace).
 */
static __always_inline __u32 load_up(struct bpf_sock_ops *ctx,
				     struct rs_conn *c, __u32 svc_id, __u32 b)
{
	struct rs_backend *be;

	be = bpf_map_lookup_elem(&rs_backends, &b);
	if (!be || be->service != svc_id)
		return 0;
	c->service = svc_id | RS_CONN_COUNTED;
	if (!(ctx->bpf_sock_ops_cb_flags & BPF_SOCK_OPS_STATE_CB_FLAG))
		c->service |= RS_CONN_STATE_CB;
	load_add(b, svc_id, 1);
	bpf_sock_ops_cb_flags_set(ctx, ctx->bpf_sock_ops_cb_flags |
					       BPF_SOCK_OPS_STATE_CB_FLAG);
	return RS_TRACE_F_COUNTED;
}

/*
 * Counted down at the first state outside rs_load_tcp_state(): the
 * backend's FIN (FIN_WAIT1, or LAST_ACK after the client's), or the end
 * (every way a TCP socket ends passes tcp_set_state(TCP_CLOSE)). The mark
 * is taken off as the socket is counted down, so a later callback finds
 * nothing to count; and the state callbacks, when this program turned
 * them on, are turned off: the two or three left in a close would only
 * run it for nothing.
 */
static __always_inline void load_down(struct bpf_sock_ops *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct rs_conn *c;
	__u32 svc_id;

	if (!sk || rs_load_tcp_state(ctx->args[1]))
		return;
	c = bpf_sk_storage_get(&rs_listen, sk, 0, 0);
	if (c && c->service & RS_CONN_COUNTED) {
		svc_id = c->service & ~RS_CONN_FLAGS;
		if (c->service & RS_CONN_STATE_CB)
			bpf_sock_ops_cb_flags_set(
				ctx, ctx->bpf_sock_ops_cb_flags &
					     ~BPF_SOCK_OPS_STATE_CB_FLAG);
		c->service = svc_id;
		load_add(c->backend, svc_id, -1);
		if (rs_trace_on())
			rs_trace_sock(ctx, svc_id, c->backend, RS_TRACE_CLOSED,
				      0);
		return;
	}
	/* Counted by a build before the mark (maps.bpf.h, rs_conn). */
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
	struct conn_addrs a __attribute__((aligned(8))) = {};
	struct bpf_sock *sk;
	struct rs_conn *l;
	struct rs_bind *bind;
	__u32 svc_id, b, flags;

	if (ctx->op == BPF_SOCK_OPS_STATE_CB) {
		load_down(ctx);
		return 1;
	}
	if (ctx->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	sk = ctx->sk;
	if (!sk)
		return 1;
	/* Not accepted by one of our backends' listeners: not ours. */
	l = bpf_sk_storage_get(&rs_listen, sk, 0, 0);
	if (!l || l->service & RS_CONN_COUNTED)
		return 1;
	svc_id = l->service;
	b = l->backend;
	/*
	 * Steered: dialled the service's own address, the one steer_lookup
	 * answers for. A health check or a client of the backend's own
	 * address is the backend's business, not the service's load.
	 */
	conn_addrs(ctx, &a);
	bind = rs_match_bind(IPPROTO_TCP, a.family, a.local_port, a.local);
	if (!bind || bind->service != svc_id)
		return 1;
	flags = sticky_commit(&a, svc_id, b);
	flags |= load_up(ctx, l, svc_id, b);
	if (rs_trace_on())
		rs_trace_sock(ctx, svc_id, b, RS_TRACE_ESTABLISHED, flags);
	return 1;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

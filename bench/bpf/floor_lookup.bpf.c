// SPDX-License-Identifier: MIT
/*
 * The floor of a steering decision: an sk_lookup program that hands every
 * connection to the one socket in slot 0 of its SOCKMAP. No service match,
 * no hash, no ring, no counters: one map lookup, bpf_sk_assign and the
 * release. bench/decision_cost.c reports steer_lookup's cost as a ratio to
 * this program's, measured side by side.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2); /* 0: IPv4 socket, 1: IPv6 socket */
	__type(key, __u32);
	__type(value, __u64);
} floor_sockets SEC(".maps"); // cppcheck-suppress unknownMacro

// cppcheck-suppress unknownMacro
SEC("sk_lookup")
int floor_lookup(struct bpf_sk_lookup *ctx)
{
	__u32 slot = ctx->family == 10 /* AF_INET6 */;
	struct bpf_sock *sk;

	sk = bpf_map_lookup_elem(&floor_sockets, &slot);
	if (!sk)
		return SK_PASS;
	bpf_sk_assign(ctx, sk, 0);
	bpf_sk_release(sk);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/*
 * A kernel feature probe, not part of the data plane: does bpf_sk_assign at
 * TC ingress take a SO_REUSEPORT socket? Linux before 6.6 refuses one with
 * -ESOCKTNOSUPPORT, and steer_tc then cannot honour a QUIC cookie for a
 * backend whose socket is in a reuseport group. Helper probes cannot see
 * this (the helper exists either way) and BPF_PROG_TEST_RUN cannot either
 * (its skb is not at ingress), so userspace/dataplane/dataplane_probe.c
 * attaches this program to lo in a throwaway network namespace, sends one
 * datagram and reads what the helper returned.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Slot 0: the probed socket. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} probe_sock SEC(".maps");

/* Slot 0: bpf_sk_assign's return value; 1 until a datagram was seen. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} probe_result SEC(".maps");

SEC("tc")
int steer_probe(struct __sk_buff *skb)
{
	__u32 k = 0;
	struct bpf_sock *sk;
	__s64 *r;

	/* Only the probe's own IPv4 datagram: the namespace is private. */
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	r = bpf_map_lookup_elem(&probe_result, &k);
	sk = bpf_map_lookup_elem(&probe_sock, &k);
	if (!r || !sk) {
		if (sk)
			bpf_sk_release(sk);
		return TC_ACT_OK;
	}
	*r = bpf_sk_assign(skb, sk, 0);
	bpf_sk_release(sk);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";

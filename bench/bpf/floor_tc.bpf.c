// SPDX-License-Identifier: MIT
/*
 * The floor of a datagram's steering at TC: parse Ethernet, IP and UDP,
 * one SOCKMAP lookup, bpf_sk_assign and the release. No service match, no
 * QUIC header, no counters. bench/quic_lb_cost.c reports steer_tc's rows
 * as ratios to floor_tc, measured in the same rounds.
 *
 * floor_tc reads the headers in place (direct packet access), the least a
 * program can do; floor_tc_copy copies them out with bpf_skb_load_bytes,
 * as steer_tc did until issue 39: the difference is what that way of
 * reading costs.
 *
 * Both return TC_ACT_OK when they found the socket and TC_ACT_UNSPEC
 * otherwise, so the benchmark sees that the lookup hit (under
 * BPF_PROG_TEST_RUN bpf_sk_assign itself always fails: not at ingress).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2); /* 0: IPv4 socket, 1: IPv6 socket */
	__type(key, __u32);
	__type(value, __u64);
} floor_tc_sockets SEC(".maps"); // cppcheck-suppress unknownMacro

static __always_inline int assign(struct __sk_buff *skb, __u32 slot)
{
	struct bpf_sock *sk = bpf_map_lookup_elem(&floor_tc_sockets, &slot);

	if (!sk)
		return TC_ACT_UNSPEC;
	bpf_sk_assign(skb, sk, 0);
	bpf_sk_release(sk);
	return TC_ACT_OK;
}

// cppcheck-suppress unknownMacro
SEC("tc")
int floor_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u32 slot = 0;

	if ((void *)(eth + 1) > end)
		return TC_ACT_UNSPEC;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP ||
		    ip->ihl < 5)
			return TC_ACT_UNSPEC;
		udp = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return TC_ACT_UNSPEC;
		udp = (void *)(ip6 + 1);
		slot = 1;
	} else {
		return TC_ACT_UNSPEC;
	}
	if ((void *)(udp + 1) > end || !udp->dest)
		return TC_ACT_UNSPEC;
	return assign(skb, slot);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int floor_tc_copy(struct __sk_buff *skb)
{
	struct iphdr ip;
	struct udphdr udp;
	__be16 proto;

	/* IPv4 only: the rows it is compared with are IPv4. */
	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
			       sizeof(proto)) ||
	    proto != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) ||
	    ip.protocol != IPPROTO_UDP || ip.ihl < 5)
		return TC_ACT_UNSPEC;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + ip.ihl * 4, &udp, sizeof(udp)) ||
	    !udp.dest)
		return TC_ACT_UNSPEC;
	return assign(skb, 0);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

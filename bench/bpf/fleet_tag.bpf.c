// SPDX-License-Identifier: MIT
/*
 * A forwarded packet's tag, alone: bench/fleet_tag_cost.c runs these
 * under BPF_PROG_TEST_RUN with a large repeat count, which steer_tc's own
 * forwarding paths cannot have (they change the packet, so each run must
 * start from the original: bench/fleet_cost.c runs them once per call,
 * and the harness's noise is larger than the tag). tag4 and tag6 compute
 * what fleet_tag_of() computes for a forwarded TCP segment (the header
 * from the map, the inner bytes where they lie), with the product's
 * rs_fleet_tag_split() from rules.h; tag_floor does everything else they
 * do (the lookups, the bounds check, the return), so the difference is
 * the tag. A host pays it once per packet it forwards (fleet_sign) and
 * once per packet it receives from a member (fleet_verify). tag4_pair
 * and tag6_pair start from the member pair's SipHash state as the data
 * plane does (fleet_tag_from(): the entry's lookup and check included),
 * and tag4_v3 and tag6_v3 do the same for wire version 3's message.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <ringsteer/abi.h>
#include <ringsteer/rules.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2); /* the message in wire version 2, 3 */
	__type(key, __u32);
	__type(value, struct rs_fleet_tag_msg);
} tag_msg SEC(".maps"); // cppcheck-suppress unknownMacro

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_fleet_auth);
} tag_key SEC(".maps"); // cppcheck-suppress unknownMacro

/*
 * The pair's state for IPv4 (0) and IPv6 (1), as rs_fleet_sip holds it;
 * 2 and 3 for version 3's message (a union: its version byte is an IPv6
 * address byte of the other's).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct rs_fleet_sip);
} tag_sip SEC(".maps"); // cppcheck-suppress unknownMacro

/* The inner packet starts after Ethernet, as in a received frame. */
#define INNER_OFF 14

static __always_inline int tag_run(struct __sk_buff *skb, int ipv6, int hash)
{
	const struct rs_fleet_sip *e;
	struct rs_sip s;
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 size = ipv6 ? RS_FLEET_TAG_INNER6 : RS_FLEET_TAG_INNER4;
	struct rs_fleet_tag_msg *m;
	struct rs_fleet_auth *k;
	__u32 zero = 0;
	void *inner;

	m = bpf_map_lookup_elem(&tag_msg, &zero);
	k = bpf_map_lookup_elem(&tag_key, &zero);
	inner = data + INNER_OFF;
	if (!m || !k || inner + size > end)
		return 0;
	if (!hash)
		return (int)(*(__u8 *)inner + k->id);
	if (hash == 1)
		return (int)rs_fleet_tag_split(k, m, inner, ipv6) | 1;
	if (hash == 3) {
		zero = 1;
		m = bpf_map_lookup_elem(&tag_msg, &zero);
		if (!m)
			return 0;
	}
	zero = (hash == 3 ? 2 : 0) + ipv6;
	e = bpf_map_lookup_elem(&tag_sip, &zero);
	rs_fleet_tag_begin(&s, e, k, m, ipv6);
	if (hash == 3)
		return (int)rs_fleet_tag_finish(&s, m, inner, ipv6, 1) | 1;
	return (int)rs_fleet_tag_finish(&s, m, inner, ipv6, 0) | 1;
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag_floor(struct __sk_buff *skb)
{
	return tag_run(skb, 0, 0);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag4(struct __sk_buff *skb)
{
	return tag_run(skb, 0, 1);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag6(struct __sk_buff *skb)
{
	return tag_run(skb, 1, 1);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag4_pair(struct __sk_buff *skb)
{
	return tag_run(skb, 0, 2);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag6_pair(struct __sk_buff *skb)
{
	return tag_run(skb, 1, 2);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag4_v3(struct __sk_buff *skb)
{
	return tag_run(skb, 0, 3);
}

// cppcheck-suppress unknownMacro
SEC("tc")
int tag6_v3(struct __sk_buff *skb)
{
	return tag_run(skb, 1, 3);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

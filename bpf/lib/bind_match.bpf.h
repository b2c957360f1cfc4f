/* SPDX-License-Identifier: MIT */
/*
 * Which service owns a destination: shared by the sk_lookup and TC
 * programs so both agree on every packet.
 */
#ifndef RS_BPF_BIND_MATCH_H
#define RS_BPF_BIND_MATCH_H

#include <ringsteer/rules.h>

#include "maps.bpf.h"
#include "net.bpf.h"

/*
 * @addr: destination address words in network order (one word for IPv4).
 * Longest address prefix wins; at equal length the exact port wins. An
 * exact address and port is the most specific match there is, so the hash
 * table answers first, and the trie (two lookups) only when it holds
 * anything: prefixes and port 0. A port no service uses is turned away
 * before either (rs_ports).
 */
static __always_inline struct rs_bind *rs_match_bind(__u8 protocol, __u8 family,
						     __u16 port,
						     const __u32 *addr)
{
	struct rs_bind_exact_key ekey __attribute__((aligned(8))) = {};
	struct rs_bind_key key __attribute__((aligned(8))) = {};
	__u32 *ew = (__u32 *)ekey.addr, *w = (__u32 *)key.addr, zero = 0;
	__u32 word = rs_port_word(protocol, port);
	struct rs_bind *exact, *any;
	struct rs_meta *meta;
	__u64 *unused;

	unused = bpf_map_lookup_elem(&rs_ports, &word);
	if (unused && (*unused >> (port % 64)) & 1)
		return NULL;
	ekey.protocol = protocol;
	ekey.family = family;
	ekey.port = port;
	ew[0] = addr[0];
	if (family == RS_AF_INET6) {
		ew[1] = addr[1];
		ew[2] = addr[2];
		ew[3] = addr[3];
	}
	exact = bpf_map_lookup_elem(&rs_binds_exact, &ekey);
	if (exact)
		return exact;
	meta = bpf_map_lookup_elem(&rs_meta, &zero);
	if (!meta || !meta->lpm_binds)
		return NULL;

	key.protocol = protocol;
	key.family = family;
	key.prefixlen = rs_bind_full_prefixlen(family);
	w[0] = addr[0];
	if (family == RS_AF_INET6) {
		w[1] = addr[1];
		w[2] = addr[2];
		w[3] = addr[3];
	}
	key.port = port;
	exact = bpf_map_lookup_elem(&rs_binds, &key);
	key.port = 0;
	any = bpf_map_lookup_elem(&rs_binds, &key);
	return (struct rs_bind *)rs_bind_pick(exact, any);
}

#endif /* RS_BPF_BIND_MATCH_H */

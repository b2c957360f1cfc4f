/* SPDX-License-Identifier: MIT */
/*
 * Address families and IP constants for the BPF programs, which cannot
 * include the libc headers that define them: the values are the kernel's
 * (linux/socket.h, include/net/ip.h).
 */
#ifndef RS_NET_BPF_H
#define RS_NET_BPF_H

#include <linux/types.h>
#include <bpf/bpf_endian.h>

#define RS_AF_INET  2
#define RS_AF_INET6 10

/* include/net/ip.h, not exported to uapi. */
#define IP_MF	  0x2000
#define IP_OFFSET 0x1fff

/* The first @bits bits of an IPv4 word in network order. */
static __always_inline __u32 prefix_mask32(int bits)
{
	if (bits <= 0)
		return 0;
	if (bits >= 32)
		return 0xffffffffu;
	return bpf_htonl(0xffffffffu << (32 - bits));
}

#endif /* RS_NET_BPF_H */

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

#include <ringsteer/abi.h> /* RS_AF_INET, RS_AF_INET6 */

/* include/net/ip.h, not exported to uapi. */
#define IP_MF	  0x2000
#define IP_OFFSET 0x1fff

#endif /* RS_NET_BPF_H */

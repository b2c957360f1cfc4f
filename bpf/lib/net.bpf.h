/* SPDX-License-Identifier: MIT */
/*
 * Address families for the BPF programs, which cannot include the libc
 * headers that define AF_INET: the values are the kernel's (linux/socket.h).
 */
#ifndef RS_NET_BPF_H
#define RS_NET_BPF_H

#define RS_AF_INET  2
#define RS_AF_INET6 10

#endif /* RS_NET_BPF_H */

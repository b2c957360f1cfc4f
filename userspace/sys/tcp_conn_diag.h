/* SPDX-License-Identifier: MIT */
/*
 * Every TCP socket of the caller's network namespace in chosen states, as
 * sock_diag reports it, with the value a BPF socket-storage map holds for
 * it (INET_DIAG_REQ_SK_BPF_STORAGES, Linux 5.2).
 */
#ifndef RS_TCP_CONN_DIAG_H
#define RS_TCP_CONN_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCP_CONN_VALUE_MAX 32

struct tcp_conn_seen {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t state;		/* TCP_ESTABLISHED, ... as in <netinet/tcp.h> */
	uint16_t local_port;	/* host order */
	uint8_t local_addr[16]; /* network order; IPv4 in the first 4 bytes */
	uint64_t inode;		/* 0 for an orphan or a timewait socket */
	uint64_t cookie;
	/* The storage map's value on this socket, when it has one. */
	bool has_value;
	uint8_t value[TCP_CONN_VALUE_MAX];
	size_t value_len;
};

/* Return non-zero to stop the dump (that value is returned). */
typedef int (*tcp_conn_fn)(const struct tcp_conn_seen *c, void *arg);

/*
 * Dump IPv4 and IPv6 TCP sockets whose state is in the bit mask @states
 * (1 << TCP_ESTABLISHED | ...), each with its value in SK_STORAGE map
 * @storage_fd (-1: none asked). Negative errno on failure.
 */
int tcp_conn_dump(uint32_t states, int storage_fd, tcp_conn_fn fn, void *arg);

#endif /* RS_TCP_CONN_DIAG_H */

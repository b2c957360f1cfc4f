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
#define TCP_CONN_MAPS_MAX  2

/* An SK_STORAGE map to report each socket's value of. */
struct tcp_conn_map {
	int fd;
	uint32_t id; /* the map's id, as sock_diag names it in replies */
};

struct tcp_conn_value {
	bool has; /* the socket has storage in this map */
	uint8_t b[TCP_CONN_VALUE_MAX];
	size_t len;
};

struct tcp_conn_seen {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t state;		/* TCP_ESTABLISHED, ... as in <netinet/tcp.h> */
	uint16_t local_port;	/* host order */
	uint8_t local_addr[16]; /* network order; IPv4 in the first 4 bytes */
	uint64_t inode;		/* 0 for an orphan or a timewait socket */
	uint64_t cookie;
	uint64_t cgroup_id; /* its cgroup2 id (Linux 5.7), 0 unknown */
	/* Its value in each map asked for, in the order asked. */
	struct tcp_conn_value value[TCP_CONN_MAPS_MAX];
};

/* Return non-zero to stop the dump (that value is returned). */
typedef int (*tcp_conn_fn)(const struct tcp_conn_seen *c, void *arg);

/*
 * Dump IPv4 and IPv6 TCP sockets whose state is in the bit mask @states
 * (1 << TCP_ESTABLISHED | ...), each with its values in the @n (at most
 * TCP_CONN_MAPS_MAX) SK_STORAGE maps @maps. Negative errno on failure.
 */
int tcp_conn_dump(uint32_t states, const struct tcp_conn_map *maps, size_t n,
		  tcp_conn_fn fn, void *arg);

#endif /* RS_TCP_CONN_DIAG_H */

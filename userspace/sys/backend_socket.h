/* SPDX-License-Identifier: MIT */
/*
 * Taking a backend's listening socket from the unmodified process that owns
 * it: sock_diag finds the socket, /proc finds a process holding it, and
 * pidfd_getfd duplicates it into ringsteerd.
 */
#ifndef RS_BACKEND_SOCKET_H
#define RS_BACKEND_SOCKET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rs_sock_addr {
	uint8_t protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	uint8_t family;
	uint16_t port;	  /* host order */
	uint8_t addr[16]; /* network order; zero = wildcard */
};

struct rs_sock_found {
	uint64_t inode;
	uint64_t
		cookie; /* the kernel's socket cookie, as the SOCKMAP reports */
	bool v6only;	/* AF_INET6 socket that refuses IPv4 clients */
};

/*
 * Find the TCP listener or unconnected UDP socket bound exactly to @addr in
 * the caller's network namespace. -ENOENT when nothing is bound there.
 */
int sock_diag_find(const struct rs_sock_addr *addr, struct rs_sock_found *out);

/* A process and fd number that hold socket @inode. -ESRCH when none. */
int sock_owner_find(uint64_t inode, pid_t *pid, int *fd);

/*
 * Duplicate @fd of @pid into this process and check it is still socket
 * @inode (the process may have closed and reused the number meanwhile).
 * Returns the new fd or a negative errno.
 */
int sock_take(pid_t pid, int fd, uint64_t inode);

/* sock_diag_find + sock_owner_find + sock_take in one step. */
int sock_acquire(const struct rs_sock_addr *addr, struct rs_sock_found *found,
		 pid_t *owner);

#endif /* RS_BACKEND_SOCKET_H */

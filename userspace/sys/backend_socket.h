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
	/* Its cgroup2 id (Linux 5.7; 0 unknown): its children's cgroup. */
	uint64_t cgroup_id;
	/* The user that made it (sk_uid): who serves on that address. */
	uint32_t uid;
};

/*
 * Find the TCP listener or unconnected UDP socket bound exactly to @addr in
 * the caller's network namespace. -ENOENT when nothing is bound there.
 */
int sock_diag_find(const struct rs_sock_addr *addr, struct rs_sock_found *out);

/*
 * Between begin and end (nested: the outermost pair counts),
 * sock_diag_find() answers from one dump per family and protocol made at
 * its first call, not one dump per address: a reconcile pass over 1,000
 * backends without a socket made 1,000 dumps a second, and held the
 * event loop long enough for health checks to time out. A socket bound
 * after the dump is found by the next pass. For the event loop's thread
 * only.
 */
void sock_diag_batch_begin(void);
void sock_diag_batch_end(void);

/*
 * Every socket sock_diag_find() could answer for @addr, not the first
 * only: up to @max into @out. Returns how many (0: none), or a negative
 * errno. From the pass's dump between batch begin and end.
 */
int sock_diag_find_all(const struct rs_sock_addr *addr,
		       struct rs_sock_found *out, size_t max);

/* sock_diag dumps made so far (the metrics show what a pass costs). */
uint64_t sock_diag_dumps(void);

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

/*
 * Every socket bound exactly to @addr (the whole SO_REUSEPORT group of a
 * TCP listener, the first RS_SOCK_EACH_MAX of it), each duplicated into
 * this process for the length of a call of @fn (which returns 0 when it
 * used the socket; the fd is closed after it). Returns how many @fn used,
 * -ENOENT when nothing is bound there, or a negative errno.
 */
#define RS_SOCK_EACH_MAX 256
int sock_each_listener(const struct rs_sock_addr *addr,
		       int (*fn)(int fd, void *arg), void *arg);

#endif /* RS_BACKEND_SOCKET_H */

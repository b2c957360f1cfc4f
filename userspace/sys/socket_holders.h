/* SPDX-License-Identifier: MIT */
/*
 * Which processes hold which sockets: one pass over /proc/PID/fd for a
 * whole set of socket inodes (a connection and the listener it came from
 * are held by the same backend process).
 */
#ifndef RS_SOCKET_HOLDERS_H
#define RS_SOCKET_HOLDERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Called for each (inode's index in the set, process holding it, the fd
 * number it holds it under); a non-zero return ends the scan.
 */
typedef int (*socket_holder_fn)(size_t idx, pid_t pid, int fd, void *arg);

/*
 * @inodes: sorted ascending, @n of them. Every process but the caller is
 * looked at; one calls back per (inode, pid) pair, a pid holding an
 * inode through several fds included once per fd. Negative errno when
 * /proc cannot be read.
 */
int socket_holders_scan(const uint64_t *inodes, size_t n, socket_holder_fn fn,
			void *arg);

/*
 * Between begin and end (nested: the outermost pair counts), the first
 * scan walks /proc once for every socket of the host and the others
 * answer from that index: a pass that takes many backends' sockets (a
 * start) walks once, not once per address (issue 39: a start at 1,000
 * backends took 42 s, nearly all in these walks). A socket opened after
 * the index was made is not found until the next pass, which retries.
 * For the event loop's thread only.
 */
void socket_holders_batch_begin(void);
void socket_holders_batch_end(void);

#endif /* RS_SOCKET_HOLDERS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The sockets of one backend address in the order their processes came:
 * a service with generations (docs/architecture.md "Generations") gives
 * new flows to the newest and leaves each older one its own flows.
 */
#ifndef RS_SOCKET_GENERATIONS_H
#define RS_SOCKET_GENERATIONS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend_socket.h"

struct rs_sock_gen {
	struct rs_sock_found found;
	pid_t pid;	/* the oldest process holding it */
	int fd;		/* its fd number in that process */
	uint64_t start; /* that process's start, clock ticks after boot */
};

/* Sockets one address may hold at once; more are not steered to. */
#define RS_GEN_PER_ADDR 8

/*
 * Up to @max sockets bound exactly on @addr, oldest generation first:
 * ordered by the start time of the oldest process holding each (a socket
 * a newer process inherited keeps its generation), ties by inode.
 * Sockets no process holds (closing) are left out. Returns how many, or
 * a negative errno.
 */
int sock_generations(const struct rs_sock_addr *addr, struct rs_sock_gen *out,
		     size_t max);

#endif /* RS_SOCKET_GENERATIONS_H */

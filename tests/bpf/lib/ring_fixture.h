/* SPDX-License-Identifier: MIT */
/*
 * ring_fixture: one TCP service (198.18.0.10:80, fallback drop) whose ring
 * holds N backends, each with a listening loopback socket in its SOCKMAP
 * slot and a state word, for the BPF tests that drive the walk through
 * histories of words and compare the kernel's choice with the userspace
 * replica. The test changes f->backends and f->has_socket, writes them,
 * and asks ring_fixture_choice() what the kernel did.
 */
#ifndef RING_FIXTURE_H
#define RING_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane.h"
#include "ring.h"

#define RING_FIXTURE_MAX 16
#define RING_FIXTURE_SVC 0

struct ring_fixture {
	struct rs_dataplane dp;
	int n;
	int fds[RING_FIXTURE_MAX];
	uint64_t cookies[RING_FIXTURE_MAX];
	bool has_socket[RING_FIXTURE_MAX];
	struct rs_backend backends[RING_FIXTURE_MAX];
	struct rs_service service;
	struct rs_ring ring; /* as built: every backend at @points */
};

/*
 * Backends @names[0..@n) with @points points each, UP, ring seeded with
 * @seed. Returns 0 or -1.
 */
int ring_fixture_setup(struct ring_fixture *f, const char *const *names, int n,
		       uint32_t points, uint64_t seed);
void ring_fixture_teardown(struct ring_fixture *f);

/*
 * Runs steer_lookup for a TCP client at @src (IPv4, network byte order).
 * Returns the backend whose socket it chose, -1 for none, -2 when the run
 * failed; @retval (if not NULL) gets SK_PASS or SK_DROP.
 */
int ring_fixture_choice(struct ring_fixture *f, uint32_t src, int *retval);

#endif /* RING_FIXTURE_H */

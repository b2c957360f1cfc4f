/* SPDX-License-Identifier: MIT */
/*
 * dgram_lookup: a plain UDP service's datagram through the real
 * steer_lookup (sk_lookup), the same with generations, and through
 * bench/bpf/floor_lookup.bpf.c, for
 * bench/quic_lb_cost.c's table of datagram costs.
 */
#ifndef DGRAM_LOOKUP_H
#define DGRAM_LOOKUP_H

#include <stdbool.h>

enum dgram_row {
	DGRAM_FLOOR, /* floor_lookup */
	DGRAM_PLAIN, /* steer_lookup, a plain UDP service */
	DGRAM_GEN,   /* steer_lookup, the same with generations */
};

/*
 * steer_lookup with two UDP services of @nb backends x @points each, one
 * with generations; the floor.
 */
int dgram_lookup_setup(unsigned int nb, unsigned int points);

/*
 * Mean ns per run of @repeat runs of one client's datagram through @row;
 * -1 when it did not pick one of the service's sockets (the floor: its
 * own).
 */
double dgram_lookup_run(enum dgram_row row, unsigned int client,
			unsigned int repeat);

#endif /* DGRAM_LOOKUP_H */

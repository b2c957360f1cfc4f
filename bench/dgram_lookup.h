/* SPDX-License-Identifier: MIT */
/*
 * dgram_lookup: a plain UDP service's datagram through the real
 * steer_lookup (sk_lookup) and through bench/bpf/floor_lookup.bpf.c, for
 * bench/quic_lb_cost.c's table of datagram costs.
 */
#ifndef DGRAM_LOOKUP_H
#define DGRAM_LOOKUP_H

#include <stdbool.h>

/* steer_lookup with one UDP service of @nb backends x @points; the floor. */
int dgram_lookup_setup(unsigned int nb, unsigned int points);

/*
 * Mean ns per run of @repeat runs of one client's datagram through the
 * floor (@floor) or steer_lookup; -1 when it did not pick one of the
 * service's sockets (the floor: its own).
 */
double dgram_lookup_run(bool floor, unsigned int client, unsigned int repeat);

#endif /* DGRAM_LOOKUP_H */

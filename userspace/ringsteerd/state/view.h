/* SPDX-License-Identifier: MIT */
/*
 * The desired state's view: what the data plane should hold for a state
 * (struct rs_state), computed from the state alone. Pure: no clock read
 * (the caller passes @now, the loop's time), no map read, no write; the
 * writer compares what these return with what it last wrote. Unit-tested
 * without a kernel (tests/unit/daemon/test_view.c).
 */
#ifndef RS_VIEW_H
#define RS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rs_state.h"

/* Index in st->cfg of the backend or service named @name, or -ENOENT. */
int view_find_backend(const struct rs_state *st, const char *name);
int view_find_service(const struct rs_state *st, const char *name);

/* The points @be's weight in force gives it at its service's vnodes. */
uint32_t view_full_points(const struct rs_state *st, const struct be_rt *be);

/*
 * @be's word in rs_backends at time @now (seconds, the loop's clock):
 * state from operator state and health, active points from slow start,
 * and the service's bound when it has balance_factor.
 */
void view_backend_word(const struct rs_state *st, const struct be_rt *be,
		       double now, struct rs_backend *out);

/*
 * The socket slots whose UDP flows wait for @be at @now (its word's
 * held_slots): those its sockets fill, and those of a socket gone less
 * than its service's restart_grace ago. 0 without restart_grace.
 */
uint32_t view_held_slots(const struct rs_state *st, const struct be_rt *be,
			 double now);

/* @be has no socket now, but its flows wait for it (a restart). */
bool view_restarting(const struct rs_state *st, const struct be_rt *be,
		     double now);

/*
 * Whether backend @i can take a new connection, and how many of service
 * @svc's can: the one rule (all_out.c says why it is this one).
 */
bool view_takes_new(const struct rs_state *st, size_t i, double now);
uint32_t view_service_takers(const struct rs_state *st, size_t svc, double now);

#endif /* RS_VIEW_H */

/* SPDX-License-Identifier: MIT */
/*
 * Exact ring arithmetic over the 64-bit hash space: each backend's share,
 * and the fraction of clients that a change would move. Computed from arc
 * lengths, not by sampling keys.
 */
#ifndef RS_RING_STATS_H
#define RS_RING_STATS_H

#include "ring.h"

/*
 * @share[backend id] = fraction of the hash space the walk gives that
 * backend under @view (RS_MAX_BACKENDS entries). Returns the fraction
 * that finds no backend within the walk bound.
 */
double ring_shares(const struct rs_ring *ring, const struct rs_ring_view *view,
		   double *share);

/* Fraction of the hash space whose backend differs between the two. */
double ring_moved_fraction(const struct rs_ring *a,
			   const struct rs_ring_view *va,
			   const struct rs_ring *b,
			   const struct rs_ring_view *vb);

#endif /* RS_RING_STATS_H */

/* SPDX-License-Identifier: MIT */
/*
 * Which ring a service should have installed: the full ring, or the full
 * ring trimmed to the points in use. Pure: the daemon builds the full ring
 * and the view, asks, and writes the answer (ringsteerd/rings.c).
 */
#ifndef RS_RING_CHOICE_H
#define RS_RING_CHOICE_H

#include <stdbool.h>

#include "ring.h"

/*
 * A skipped run longer than this gets the trimmed ring. Half of
 * RS_WALK_MAX, the walk's fast-path bound, so that the run a walk meets
 * stays well inside it between two refreshes.
 */
#define WALK_SAFE_RUN (RS_WALK_MAX / 2)

enum rs_ring_shape {
	RS_RING_FULL,	 /* every backend at its built points */
	RS_RING_TRIMMED, /* only the points the walk would not skip */
};

/* Does no walk over @ring under @view meet over WALK_SAFE_RUN skips? */
bool ring_walks_short(const struct rs_ring *ring,
		      const struct rs_ring_view *view);

/*
 * The ring to install for @full under @view. RS_RING_FULL: @full itself,
 * while walks over it stay short (and for an empty ring); @trimmed is left
 * empty. RS_RING_TRIMMED: @full trimmed to the points in use, in @trimmed
 * (to be freed with ring_free()), which maps every key as @full does under
 * @view; empty when no backend may take a client. Returns the shape, or
 * -ENOMEM.
 */
int ring_choose(const struct rs_ring *full, const struct rs_ring_view *view,
		struct rs_ring *trimmed);

#endif /* RS_RING_CHOICE_H */

// SPDX-License-Identifier: MIT
/*
 * The full ring keeps every backend's points, so a health change or a
 * lowered weight is one state-word write and no ring swap. The cost is
 * the points the walk skips; once a run of them gets long (a weight far
 * below its built maximum, most backends down), the walk would approach
 * its bound, and the ring without the skipped points is installed
 * instead. It maps every key the same way (ring_trim()), so the choice is
 * about the walk's speed, never about which backend a client gets.
 */
#include <errno.h>
#include <string.h>

#include "ring_choice.h"

bool ring_walks_short(const struct rs_ring *ring,
		      const struct rs_ring_view *view)
{
	return ring_max_skip_run(ring, view) <= WALK_SAFE_RUN;
}

int ring_choose(const struct rs_ring *full, const struct rs_ring_view *view,
		struct rs_ring *trimmed)
{
	int err;

	memset(trimmed, 0, sizeof(*trimmed));
	if (full->npoints == 0 || ring_walks_short(full, view))
		return RS_RING_FULL;
	/* Unavailable backends go too: they are the long runs. */
	err = ring_trim(full, view, true, trimmed);
	if (err)
		return err;
	return RS_RING_TRIMMED;
}

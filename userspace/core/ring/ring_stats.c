// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "ring_stats.h"

#define TWO64 18446744073709551616.0

static uint32_t owner_at(const struct rs_ring *ring,
			 const struct rs_ring_view *view, uint64_t hash)
{
	struct rs_ring_choice c;

	if (ring_lookup(ring, view, hash, &c, NULL))
		return RS_NONE;
	return c.backend;
}

/* Keys in (prev, cur], on the circle. */
static double arc(uint64_t prev, uint64_t cur)
{
	return (double)(uint64_t)(cur - prev) / TWO64;
}

double ring_shares(const struct rs_ring *ring, const struct rs_ring_view *view,
		   double *share)
{
	double lost = 0;

	memset(share, 0, RS_MAX_BACKENDS * sizeof(*share));
	if (ring->npoints == 0)
		return 1.0;
	for (uint32_t i = 0; i < ring->npoints; i++) {
		uint64_t cur = ring->points[i].pos;
		uint64_t prev = ring->points[i ? i - 1 : ring->npoints - 1].pos;
		double len = ring->npoints == 1 ? 1.0 : arc(prev, cur);
		uint32_t o = owner_at(ring, view, cur);

		if (o == RS_NONE || o >= RS_MAX_BACKENDS)
			lost += len;
		else
			share[o] += len;
	}
	return lost;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

double ring_moved_fraction(const struct rs_ring *a,
			   const struct rs_ring_view *va,
			   const struct rs_ring *b,
			   const struct rs_ring_view *vb)
{
	size_t n = (size_t)a->npoints + b->npoints, k = 0;
	double moved = 0;
	uint64_t *pos;

	if (n == 0)
		return 0;
	pos = malloc(n * sizeof(*pos));
	if (!pos)
		return -1;
	for (uint32_t i = 0; i < a->npoints; i++)
		pos[k++] = a->points[i].pos;
	for (uint32_t i = 0; i < b->npoints; i++)
		pos[k++] = b->points[i].pos;
	qsort(pos, n, sizeof(*pos), cmp_u64);
	/*
	 * Between two consecutive boundaries of either ring, both rings'
	 * lower bounds are constant, so one probe per interval is exact.
	 */
	for (size_t i = 0; i < n; i++) {
		uint64_t cur = pos[i], prev = pos[i ? i - 1 : n - 1];
		double len = arc(prev, cur);

		if (i && cur == prev)
			continue;
		if (n == 1)
			len = 1.0;
		if (owner_at(a, va, cur) != owner_at(b, vb, cur))
			moved += len;
	}
	free(pos);
	return moved;
}

/* SPDX-License-Identifier: MIT */
/*
 * The last full ring built for a service, with what it was built from:
 * the same members build it again by copying it, and a few changed
 * members (a weight, a backend added or removed) by merging their points
 * into it. Either way the ring is, point for point, what ring_build()
 * makes from the same members (tests/unit/ring/test_ring_cache.c).
 */
#ifndef RS_RING_CACHE_H
#define RS_RING_CACHE_H

#include "ring.h"

struct ring_cache_member {
	char name[RS_NAME_MAX];
	uint32_t backend, points;
};

struct ring_cache {
	struct rs_ring ring; /* as ring_build() made it */
	uint32_t cap;	     /* points ring.points has room for */
	/*
	 * The buffer of the ring before: a merge writes into it (its pages
	 * are in memory) and the two trade places, so the ring is never
	 * copied to be kept.
	 */
	struct rs_point *spare;
	uint32_t spare_cap;
	struct ring_cache_member *members;
	size_t n;
	/* Rings held so far: which one a ring was made from (never 0). */
	uint64_t serial;
	bool valid; /* members say what ring was built from */
};

enum ring_cache_how {
	RING_CACHE_SAME,   /* the members the cached ring was built from */
	RING_CACHE_MERGED, /* changed members' points merged into it */
	RING_CACHE_BUILT,  /* built whole (nothing cached, or another seed) */
};

/*
 * ring_build(@m, @n, @seed) through @c, which then holds the ring: *@out
 * points at it, valid until the next call on @c or ring_cache_free().
 * Returns how (enum ring_cache_how) or what ring_build() returns.
 */
int ring_cache_get(struct ring_cache *c, const struct rs_ring_member *m,
		   size_t n, uint64_t seed, struct rs_ring **out);
/* The same, into @out, a copy the caller owns. */
int ring_cache_build(struct ring_cache *c, const struct rs_ring_member *m,
		     size_t n, uint64_t seed, struct rs_ring *out);
void ring_cache_free(struct ring_cache *c);

#endif /* RS_RING_CACHE_H */

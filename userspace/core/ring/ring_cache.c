// SPDX-License-Identifier: MIT
/*
 * A full ring again from the last one (ring_cache.h). A ring of 200
 * backends at the default vnodes has 819,200 points: hashing and sorting
 * them all for a reload that changes nothing, or one weight, kept the
 * daemon's loop busy for most of a second (issue 39).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ringsteer/abi.h>

#include "ring_cache.h"

void ring_cache_free(struct ring_cache *c)
{
	ring_free(&c->ring);
	free(c->spare);
	free(c->members);
	memset(c, 0, sizeof(*c));
}

/* What the cached ring keeps of each backend id: ordinals below it. */
struct keep {
	uint32_t *limit; /* by backend id, RS_MAX_BACKENDS */
	uint64_t added, kept;
	bool same;
};

/*
 * A member keeps its cached points when its id names the same backend
 * (by name) as before: the ordinals both rings have. Everything else
 * about it is added.
 */
static int plan(const struct ring_cache *c, const struct rs_ring_member *m,
		size_t n, struct keep *k)
{
	const struct ring_cache_member **old =
		calloc(RS_MAX_BACKENDS, sizeof(*old));

	k->limit = calloc(RS_MAX_BACKENDS, sizeof(*k->limit));
	if (!old || !k->limit) {
		free(old);
		free(k->limit);
		k->limit = NULL;
		return -ENOMEM;
	}
	k->same = n == c->n;
	for (size_t i = 0; i < c->n; i++)
		if (c->members[i].backend < RS_MAX_BACKENDS)
			old[c->members[i].backend] = &c->members[i];
	for (size_t i = 0; i < n; i++) {
		const struct ring_cache_member *o =
			m[i].backend < RS_MAX_BACKENDS ? old[m[i].backend]
						       : NULL;
		uint32_t keep = 0;

		if (o && !strcmp(o->name, m[i].name))
			keep = o->points < m[i].points ? o->points
						       : m[i].points;
		if (!o || keep != o->points || keep != m[i].points)
			k->same = false;
		if (m[i].backend < RS_MAX_BACKENDS)
			k->limit[m[i].backend] = keep;
		k->kept += keep;
		k->added += m[i].points - keep;
	}
	free(old);
	return 0;
}

/* The cached points @k keeps, and the new ones @add, merged into @out. */
static void merge(const struct rs_ring *ring, const struct keep *k,
		  const struct rs_point *add, size_t nadd,
		  const char *const *names, struct rs_point *out)
{
	size_t i = 0, j = 0, o = 0;

	for (;;) {
		while (i < ring->npoints &&
		       ring->points[i].ordinal >=
			       k->limit[ring->points[i].backend])
			i++;
		if (i == ring->npoints || j == nadd)
			break;
		if (ring_point_cmp(&ring->points[i], &add[j], names) < 0)
			out[o++] = ring->points[i++];
		else
			out[o++] = add[j++];
	}
	for (; i < ring->npoints; i++)
		if (ring->points[i].ordinal < k->limit[ring->points[i].backend])
			out[o++] = ring->points[i];
	while (j < nadd)
		out[o++] = add[j++];
}

/*
 * Members @m as what the ring @c holds was built from; false when they
 * cannot stand for it (out of memory: the ring is right, the next call
 * builds it whole).
 */
static bool members_keep(struct ring_cache *c, const struct rs_ring_member *m,
			 size_t n)
{
	struct ring_cache_member *cm = calloc(n ? n : 1, sizeof(*cm));

	free(c->members);
	c->members = cm;
	c->n = cm ? n : 0;
	for (size_t i = 0; cm && i < n; i++) {
		strncpy(cm[i].name, m[i].name, sizeof(cm[i].name) - 1);
		cm[i].backend = m[i].backend;
		cm[i].points = m[i].points;
	}
	return cm != NULL;
}

/* Points a buffer keeps past @total: weights may go up an eighth. */
static uint32_t room_past(uint64_t total)
{
	return (uint32_t)(total / 8 + 1);
}

/* @ring (taken) becomes the ring @c holds; its buffer before, the spare. */
static void hold(struct ring_cache *c, struct rs_ring *ring, uint32_t cap)
{
	free(c->spare);
	c->spare = c->ring.points;
	c->spare_cap = c->cap;
	c->ring = *ring;
	c->cap = cap;
	c->serial++;
	memset(ring, 0, sizeof(*ring));
}

/*
 * The cached ring with the changes @k describes, merged into the spare
 * buffer when the points fit (the room kept past them lets weights go up
 * an eighth without a new one), which then holds the ring.
 */
static int merged(struct ring_cache *c, const struct rs_ring_member *m,
		  size_t n, const struct keep *k)
{
	struct rs_point *add = malloc(k->added ? k->added * sizeof(*add) : 1);
	const char **names = ring_names_by_id(m, n);
	uint64_t total = k->added + k->kept;
	struct rs_ring out = c->ring;
	uint32_t cap = c->spare_cap;
	size_t a = 0;
	int err = -ENOMEM;

	out.points = c->spare;
	if (!out.points || cap < total) {
		cap = (uint32_t)total + room_past(total);
		out.points = malloc((size_t)cap * sizeof(*out.points));
	}
	if (!add || !names || !out.points)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t from = m[i].backend < RS_MAX_BACKENDS
					? k->limit[m[i].backend]
					: 0;

		ring_add_points(add + a, &m[i], from, c->ring.seed);
		a += m[i].points - from;
	}
	err = ring_sort_points(&add, a, names);
	if (err)
		goto out;
	merge(&c->ring, k, add, a, names, out.points);
	out.npoints = (uint32_t)total;
	if (out.points == c->spare)
		c->spare = NULL;
	hold(c, &out, cap);
	c->valid = members_keep(c, m, n);
out:
	if (out.points && out.points != c->spare)
		free(out.points);
	free(add);
	free(names);
	return err;
}

/* Members the cache can stand for: ids in range, no name cut short. */
static bool cacheable(const struct rs_ring_member *m, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		if (m[i].backend >= RS_MAX_BACKENDS ||
		    strlen(m[i].name) >= RS_NAME_MAX)
			return false;
		total += m[i].points;
	}
	return total <= RS_MAX_RING_POINTS;
}

/*
 * Built whole, and held, with the build's other buffer as the spare:
 * both with the room a merge keeps past the points.
 */
static int built(struct ring_cache *c, const struct rs_ring_member *m, size_t n,
		 uint64_t seed)
{
	uint64_t total = 0;
	struct rs_point *spare;
	struct rs_ring ring;
	uint32_t room, cap;
	int err;

	for (size_t i = 0; i < n; i++)
		total += m[i].points;
	room = total <= RS_MAX_RING_POINTS ? room_past(total) : 0;
	err = ring_build_spare(m, n, seed, room, &ring, &spare);
	if (err)
		return err;
	cap = ring.npoints + room;
	hold(c, &ring, cap);
	free(c->spare);
	c->spare = spare;
	c->spare_cap = spare ? cap : 0;
	c->valid = cacheable(m, n) && members_keep(c, m, n);
	return RING_CACHE_BUILT;
}

int ring_cache_get(struct ring_cache *c, const struct rs_ring_member *m,
		   size_t n, uint64_t seed, struct rs_ring **out)
{
	struct keep k = {0};
	int err;

	if (!c->valid || c->ring.seed != seed || !cacheable(m, n)) {
		err = built(c, m, n, seed);
	} else {
		err = plan(c, m, n, &k);
		if (!err && !k.same)
			err = merged(c, m, n, &k);
		if (!err)
			err = k.same ? RING_CACHE_SAME : RING_CACHE_MERGED;
		free(k.limit);
	}
	if (err >= 0)
		*out = &c->ring;
	return err;
}

int ring_cache_build(struct ring_cache *c, const struct rs_ring_member *m,
		     size_t n, uint64_t seed, struct rs_ring *out)
{
	struct rs_ring *ring;
	int how = ring_cache_get(c, m, n, seed, &ring), err;

	if (how < 0)
		return how;
	err = ring_dup(out, ring);
	return err ? err : how;
}

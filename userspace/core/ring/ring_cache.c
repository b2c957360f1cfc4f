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

/* The cached ring with the changes @k describes, into @out. */
static int merged(const struct ring_cache *c, const struct rs_ring_member *m,
		  size_t n, const struct keep *k, struct rs_ring *out)
{
	struct rs_point *add = malloc(k->added ? k->added * sizeof(*add) : 1);
	const char **names = ring_names_by_id(m, n);
	size_t a = 0;
	int err = -ENOMEM;

	*out = c->ring;
	out->points = malloc((k->added + k->kept + 1) * sizeof(*out->points));
	if (!add || !names || !out->points)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t from = m[i].backend < RS_MAX_BACKENDS
					? k->limit[m[i].backend]
					: 0;

		ring_add_points(add + a, &m[i], from, c->ring.seed);
		a += m[i].points - from;
	}
	err = ring_sort_points(&add, a, names);
	if (!err)
		merge(&c->ring, k, add, a, names, out->points);
	out->npoints = (uint32_t)(k->added + k->kept);
out:
	if (err) {
		free(out->points);
		memset(out, 0, sizeof(*out));
	}
	free(add);
	free(names);
	return err;
}

/*
 * The points go into the buffer the cache already holds when they fit:
 * its pages are in memory, where a fresh 13 MB buffer (200 backends) is
 * 3,300 page faults, about as long as the merge itself. The room kept
 * past the points lets weights go up an eighth without a new buffer.
 */
static int remember(struct ring_cache *c, const struct rs_ring_member *m,
		    size_t n, const struct rs_ring *ring)
{
	struct ring_cache_member *cm = calloc(n ? n : 1, sizeof(*cm));
	struct rs_point *points = c->ring.points;
	uint32_t cap = c->cap;

	if (cm && (!c->valid || cap < ring->npoints)) {
		cap = ring->npoints + ring->npoints / 8 + 1;
		points = malloc((size_t)cap * sizeof(*points));
		if (points) {
			free(c->ring.points);
			c->ring.points = NULL;
		}
	}
	if (!cm || !points) {
		free(cm);
		ring_cache_free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		strncpy(cm[i].name, m[i].name, sizeof(cm[i].name) - 1);
		cm[i].backend = m[i].backend;
		cm[i].points = m[i].points;
	}
	if (ring->npoints)
		memcpy(points, ring->points,
		       (size_t)ring->npoints * sizeof(*points));
	free(c->members);
	c->ring = *ring;
	c->ring.points = points;
	c->cap = cap;
	c->members = cm;
	c->n = n;
	c->valid = true;
	return 0;
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

int ring_cache_build(struct ring_cache *c, const struct rs_ring_member *m,
		     size_t n, uint64_t seed, struct rs_ring *out)
{
	struct keep k = {0};
	int err, how;

	if (!cacheable(m, n)) {
		ring_cache_free(c);
		return ring_build(m, n, seed, out);
	}
	if (!c->valid || c->ring.seed != seed) {
		err = ring_build(m, n, seed, out);
		how = RING_CACHE_BUILT;
	} else {
		err = plan(c, m, n, &k);
		if (!err && k.same)
			err = ring_dup(out, &c->ring);
		else if (!err)
			err = merged(c, m, n, &k, out);
		how = k.same ? RING_CACHE_SAME : RING_CACHE_MERGED;
		free(k.limit);
	}
	if (err)
		return err;
	/* On -ENOMEM only the cache is lost: the ring is right. */
	if (how != RING_CACHE_SAME)
		(void)remember(c, m, n, out);
	return how;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <ringsteer/rules.h>

#include "hash.h"
#include "ring.h"

/* Ties in position are broken by name so the order never depends on ids. */
static int point_cmp(const void *a, const void *b, void *arg)
{
	const struct rs_point *pa = a, *pb = b;
	const char *const *names = arg;
	int c;

	if (pa->pos != pb->pos)
		return pa->pos < pb->pos ? -1 : 1;
	c = strcmp(names[pa->backend], names[pb->backend]);
	if (c)
		return c;
	return pa->ordinal < pb->ordinal ? -1 : pa->ordinal > pb->ordinal;
}

int ring_point_cmp(const struct rs_point *a, const struct rs_point *b,
		   const char *const *names)
{
	return point_cmp(a, b, (void *)names);
}

/* Runs longer than this (never, for hashed positions) go to qsort_r(). */
#define SORT_SMALL_RUN 32

/* @a[0..@n) into point_cmp() order: insertion, as runs are short. */
static void sort_run(struct rs_point *a, size_t n, const char *const *names)
{
	if (n > SORT_SMALL_RUN) {
		qsort_r(a, n, sizeof(*a), point_cmp, (void *)names);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		struct rs_point p = a[i];
		size_t j = i;

		for (; j > 0 && point_cmp(&a[j - 1], &p, (void *)names) > 0;
		     j--)
			a[j] = a[j - 1];
		a[j] = p;
	}
}

/*
 * A comparison sort of a ring of 200 backends (819,200 points) took most
 * of a reload's and a start's time, and an LSD radix sort four passes of
 * scattered 13 MB writes. Positions are hashes, so spread evenly: one
 * pass puts each point in the bucket of its top bits, and each bucket is then
 * put in point_cmp() order, which makes the result the comparison sort's.
 */
/* @a[0..@n) sorted into @out (both of @n points). */
static int sort_into(const struct rs_point *a, size_t n,
		     const char *const *names, struct rs_point *out)
{
	unsigned bits = 1;
	uint32_t *start, *next;

	/* About ten points a bucket: the counts stay in the cache. */
	while (bits < 16 && ((size_t)16 << bits) < n)
		bits++;
	start = calloc(((size_t)1 << bits) + 1, sizeof(*start));
	next = malloc(((size_t)1 << bits) * sizeof(*next));
	if (!start || !next) {
		free(start);
		free(next);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		start[(a[i].pos >> (64 - bits)) + 1]++;
	for (size_t d = 1; d <= (size_t)1 << bits; d++)
		start[d] += start[d - 1];
	memcpy(next, start, ((size_t)1 << bits) * sizeof(*next));
	for (size_t i = 0; i < n; i++)
		out[next[a[i].pos >> (64 - bits)]++] = a[i];
	for (size_t d = 0; d < (size_t)1 << bits; d++)
		if (start[d + 1] - start[d] > 1)
			sort_run(out + start[d], start[d + 1] - start[d],
				 names);
	free(start);
	free(next);
	return 0;
}

int ring_sort_points(struct rs_point **pts, size_t n, const char *const *names)
{
	struct rs_point *b = malloc(n ? n * sizeof(*b) : 1);
	int err = b ? sort_into(*pts, n, names, b) : -ENOMEM;

	if (err) {
		free(b);
		return err;
	}
	free(*pts);
	*pts = b;
	return 0;
}

const char **ring_names_by_id(const struct rs_ring_member *members, size_t n)
{
	uint32_t max = 0;
	const char **names;

	for (size_t i = 0; i < n; i++)
		if (members[i].backend > max)
			max = members[i].backend;
	names = calloc((size_t)max + 1, sizeof(*names));
	if (!names)
		return NULL;
	for (size_t i = 0; i < n; i++)
		names[members[i].backend] = members[i].name;
	return names;
}

void ring_add_points(struct rs_point *pts, const struct rs_ring_member *m,
		     uint32_t from, uint64_t seed)
{
	for (uint32_t o = from; o < m->points; o++) {
		pts[o - from].pos = rs_vnode_pos(m->name, o, seed);
		pts[o - from].backend = m->backend;
		pts[o - from].ordinal = o;
	}
}

int ring_build_spare(const struct rs_ring_member *members, size_t n,
		     uint64_t seed, uint32_t room, struct rs_ring *ring,
		     struct rs_point **spare)
{
	const char **names;
	struct rs_point *a;
	uint64_t total = 0;
	size_t k = 0;
	int err;

	memset(ring, 0, sizeof(*ring));
	*spare = NULL;
	ring->seed = seed;
	ring->key_policy = RS_KEY_SRC_IP;
	ring->prefix4 = 32;
	ring->prefix6 = 64;
	for (size_t i = 0; i < n; i++)
		total += members[i].points;
	if (total > RS_MAX_RING_POINTS)
		return -EINVAL;
	if (total == 0)
		return 0;
	names = ring_names_by_id(members, n);
	a = malloc((total + room) * sizeof(*a));
	ring->points = malloc((total + room) * sizeof(*ring->points));
	err = names && a && ring->points ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		ring_add_points(a + k, &members[i], 0, seed);
		k += members[i].points;
	}
	if (!err)
		err = sort_into(a, total, names, ring->points);
	free(names);
	if (err) {
		free(a);
		ring_free(ring);
		return err;
	}
	ring->npoints = (uint32_t)total;
	*spare = a;
	return 0;
}

int ring_build(const struct rs_ring_member *members, size_t n, uint64_t seed,
	       struct rs_ring *ring)
{
	struct rs_point *spare;
	int err = ring_build_spare(members, n, seed, 0, ring, &spare);

	free(spare);
	return err;
}

void ring_set_key(struct rs_ring *ring, const struct rs_service *svc)
{
	ring->seed = svc->seed;
	ring->key_policy = svc->key_policy;
	ring->prefix4 = svc->prefix4;
	ring->prefix6 = svc->prefix6;
}

void ring_free(struct rs_ring *ring)
{
	if (ring->mapping)
		munmap(ring->mapping, ring->mapping_len);
	else
		free(ring->points);
	memset(ring, 0, sizeof(*ring));
}

int ring_dup(struct rs_ring *dst, const struct rs_ring *src)
{
	*dst = *src;
	dst->points = NULL;
	dst->mapping = NULL;
	dst->mapping_len = 0;
	if (!src->npoints)
		return 0;
	dst->points = malloc(src->npoints * sizeof(*src->points));
	if (!dst->points) {
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	memcpy(dst->points, src->points, src->npoints * sizeof(*src->points));
	return 0;
}

/* First index in [lo, hi) with pos >= hash, wrapping past the end to 0. */
static uint32_t search(const struct rs_ring *ring, uint32_t lo, uint32_t hi,
		       uint64_t hash)
{
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ring->points[mid].pos < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo >= ring->npoints ? 0 : lo;
}

uint32_t ring_lower_bound(const struct rs_ring *ring, uint64_t hash)
{
	return search(ring, 0, ring->npoints, hash);
}

enum rs_ring_skip ring_point_skip(const struct rs_point *p,
				  const struct rs_ring_view *view)
{
	const struct rs_backend *be;

	if (p->backend >= view->nbackends)
		return RS_RING_SKIP_UNKNOWN;
	be = &view->backends[p->backend];
	if (p->ordinal >= be->active_points)
		return RS_RING_SKIP_INACTIVE;
	if (be->state != RS_BACKEND_UP)
		return RS_RING_SKIP_NOT_UP;
	if (view->has_socket && !view->has_socket[p->backend])
		return RS_RING_SKIP_NO_SOCKET;
	return RS_RING_USABLE;
}

const char *ring_skip_name(enum rs_ring_skip why)
{
	switch (why) {
	case RS_RING_USABLE:
		return "usable";
	case RS_RING_SKIP_UNKNOWN:
		return "unknown backend";
	case RS_RING_SKIP_INACTIVE:
		return "inactive point";
	case RS_RING_SKIP_NOT_UP:
		return "not UP";
	case RS_RING_SKIP_NO_SOCKET:
		return "no socket";
	case RS_RING_SKIP_REJECTED:
		return "backend rejected just before";
	case RS_RING_SKIP_AT_BOUND:
		return "at its bound";
	}
	return "?";
}

static void trace_step(struct rs_ring_trace *trace, const struct rs_point *p,
		       enum rs_ring_skip why)
{
	if (!trace || trace->n >= trace->cap)
		return;
	trace->steps[trace->n++] = (struct rs_ring_step){
		.backend = p->backend, .ordinal = p->ordinal, .why = why};
}

bool ring_at_bound(const struct rs_ring_view *view, uint32_t b)
{
	if (!view->load || b >= view->nbackends)
		return false;
	return rs_load_at_bound(&view->backends[b], view->load[b],
				view->service_active);
}

/* The least loaded relative to its bound, as walk_at_bound() keeps it. */
struct bound_best {
	uint32_t backend;
	uint64_t load, bound;
};

static void bound_consider(struct bound_best *best,
			   const struct rs_ring_view *view, uint32_t b)
{
	uint64_t bound = rs_load_bound(&view->backends[b],
				       view->service_active),
		 load = rs_load_clamped(view->load[b]);

	if (view->has_socket && !view->has_socket[b])
		return;
	/* best_consider() in bpf/steer_lookup.bpf.c. */
	if (best->backend == RS_NONE ||
	    rs_bound_better(load, bound, best->load, best->bound))
		*best = (struct bound_best){b, load, bound};
}

int ring_lookup(const struct rs_ring *ring, const struct rs_ring_view *view,
		uint64_t hash, struct rs_ring_choice *choice,
		struct rs_ring_trace *trace)
{
	uint32_t idx, primary = RS_NONE, rejected = RS_NONE;
	struct bound_best best = {.backend = RS_NONE};
	bool primary_over = false;

	if (trace)
		trace->n = 0;
	if (ring->npoints == 0)
		return -ENOENT;
	idx = ring_lower_bound(ring, hash);
	for (uint32_t step = 0; step < ring->npoints; step++) {
		const struct rs_point *p = &ring->points[idx];
		uint32_t b = p->backend;
		enum rs_ring_skip why = b == rejected
						? RS_RING_SKIP_REJECTED
						: ring_point_skip(p, view);

		idx = idx + 1 >= ring->npoints ? 0 : idx + 1;
		/* The first point in use names the owner, taker or not. */
		if (primary == RS_NONE &&
		    (why == RS_RING_USABLE || why == RS_RING_SKIP_NOT_UP ||
		     why == RS_RING_SKIP_NO_SOCKET))
			primary = b;
		/* The bound is checked before the socket, as in BPF. */
		if ((why == RS_RING_USABLE || why == RS_RING_SKIP_NO_SOCKET) &&
		    ring_at_bound(view, b)) {
			why = RS_RING_SKIP_AT_BOUND;
			primary_over |= b == primary;
			bound_consider(&best, view, b);
		}
		if (why == RS_RING_SKIP_NOT_UP ||
		    why == RS_RING_SKIP_NO_SOCKET ||
		    why == RS_RING_SKIP_AT_BOUND)
			rejected = b;
		if (why != RS_RING_USABLE) {
			trace_step(trace, p, why);
			continue;
		}
		*choice = (struct rs_ring_choice){.backend = b,
						  .primary = primary,
						  .walked = step,
						  .primary_over = primary_over};
		return 0;
	}
	if (best.backend == RS_NONE)
		return -ENOENT;
	*choice = (struct rs_ring_choice){.backend = best.backend,
					  .primary = primary,
					  .walked = ring->npoints,
					  .primary_over = primary_over,
					  .all_at_bound = true};
	return 0;
}

static bool point_usable(const struct rs_point *p,
			 const struct rs_ring_view *view)
{
	return ring_point_skip(p, view) == RS_RING_USABLE;
}

uint32_t ring_max_skip_run(const struct rs_ring *ring,
			   const struct rs_ring_view *view)
{
	uint32_t run = 0, best = 0, first = 0;
	bool any = false;

	for (uint32_t i = 0; i < ring->npoints; i++) {
		if (point_usable(&ring->points[i], view)) {
			if (!any)
				first = run;
			any = true;
			run = 0;
			continue;
		}
		run++;
		if (run > best)
			best = run;
	}
	if (!any)
		return ring->npoints;
	/* The run at the end continues into the one at the start. */
	return run + first > best ? run + first : best;
}

int ring_trim(const struct rs_ring *ring, const struct rs_ring_view *view,
	      bool usable_only, struct rs_ring *out)
{
	uint32_t n = 0;

	*out = *ring;
	out->mapping = NULL;
	out->mapping_len = 0;
	out->points =
		calloc(ring->npoints ? ring->npoints : 1, sizeof(*out->points));
	out->npoints = 0;
	if (!out->points)
		return -ENOMEM;
	for (uint32_t i = 0; i < ring->npoints; i++) {
		const struct rs_point *p = &ring->points[i];

		enum rs_ring_skip why = ring_point_skip(p, view);

		if (why == RS_RING_SKIP_UNKNOWN || why == RS_RING_SKIP_INACTIVE)
			continue;
		if (usable_only && why != RS_RING_USABLE)
			continue;
		out->points[n++] = *p;
	}
	out->npoints = n;
	return 0;
}

bool ring_trim_keeps_all(const struct rs_ring *ring,
			 const struct rs_ring_view *view, bool usable_only)
{
	for (uint32_t i = 0; i < ring->npoints; i++) {
		enum rs_ring_skip why = ring_point_skip(&ring->points[i], view);

		if (why == RS_RING_SKIP_UNKNOWN ||
		    why == RS_RING_SKIP_INACTIVE ||
		    (usable_only && why != RS_RING_USABLE))
			return false;
	}
	return true;
}

bool ring_equal(const struct rs_ring *a, const struct rs_ring *b)
{
	return a->seed == b->seed && a->key_policy == b->key_policy &&
	       a->prefix4 == b->prefix4 && a->prefix6 == b->prefix6 &&
	       a->npoints == b->npoints &&
	       (a->npoints == 0 ||
		!memcmp(a->points, b->points, a->npoints * sizeof(*a->points)));
}

uint8_t ring_bucket_bits(uint32_t npoints)
{
	uint8_t bits = 0;

	if (npoints == 0)
		return 0;
	while (bits < RS_MAX_BUCKET_BITS &&
	       (1ull << bits) < (uint64_t)RING_FLAT_PER_POINT * npoints)
		bits++;
	return bits;
}

uint32_t ring_map_slots(uint32_t npoints, uint8_t bits)
{
	return npoints + 1 + (bits ? ((1u << bits) + 1) / 2 : 0) + 1;
}

/* Slots of a 4 KiB page: a ring map is allocated in whole pages. */
#define RING_PAGE_SLOTS (4096 / sizeof(struct rs_ring_slot))

uint32_t ring_map_capacity(uint32_t slots)
{
	uint64_t cap = (uint64_t)slots + slots / 16;

	cap = (cap + RING_PAGE_SLOTS - 1) / RING_PAGE_SLOTS * RING_PAGE_SLOTS;
	return cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

bool ring_map_fits(uint32_t cap, uint32_t slots)
{
	return slots <= cap && cap / 2 <= slots;
}

/* Buckets [@from, @to) hold no point: each names point @o, the next one. */
static void flat_fill(const struct rs_ring *ring, uint32_t o,
		      struct rs_ring_flat *flat, uint32_t from, uint32_t to)
{
	const struct rs_point *p = &ring->points[o];
	const struct rs_ring_flat e = {
		.point = o + 1,
		.owner = p->backend << RS_FLAT_BACKEND_SHIFT | p->ordinal};

	for (uint32_t b = from; b < to; b++)
		flat[b] = e;
}

/*
 * One pass over the points, not a scan of the points per bucket: at 2^20
 * buckets the exit of that scan was a branch mispredicted about once a
 * bucket, 12 ms of a weight change at 200 backends (issue 39).
 */
void ring_flat(const struct rs_ring *ring, uint8_t bits,
	       struct rs_ring_flat *flat)
{
	uint32_t b = 0, k = 0;

	if (bits == 0 || ring->npoints == 0)
		return;
	while (k < ring->npoints) {
		uint32_t pb = (uint32_t)(ring->points[k].pos >> (64 - bits));
		uint32_t next = k + 1;

		/* Buckets before point k's own lie on the arc it owns. */
		flat_fill(ring, k, flat, b, pb);
		while (next < ring->npoints &&
		       ring->points[next].pos >> (64 - bits) == pb)
			next++;
		flat[pb] = (struct rs_ring_flat){
			.point = k + 1, .owner = RS_FLAT_SPLIT | (next - k)};
		b = pb + 1;
		k = next;
	}
	/* Past the last point the arc wraps to the first. */
	flat_fill(ring, 0, flat, b, 1u << bits);
}

uint32_t ring_flat_lower_bound(const struct rs_ring *ring, uint8_t bits,
			       const struct rs_ring_flat *flat, uint64_t hash,
			       bool *direct)
{
	const struct rs_ring_flat *e = &flat[bits ? hash >> (64 - bits) : 0];
	uint32_t lo, hi;

	*direct = !(e->owner & RS_FLAT_SPLIT);
	if (*direct)
		return e->point - 1;
	lo = e->point - 1;
	hi = lo + (e->owner & ~RS_FLAT_SPLIT);
	return search(ring, lo, hi, hash);
}

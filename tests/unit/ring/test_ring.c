// SPDX-License-Identifier: MIT
/*
 * Ring build and the walk: determinism, shares proportional to weight,
 * minimal disruption on removal and addition, and that skipping points
 * (DOWN, lowered weight) maps keys exactly like a rebuilt ring.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/Basic.h>

#include "hash.h"
#include "ring.h"
#include "ring_stats.h"

#define NKEYS 200000
#define SEED  11

static uint64_t key_hash(uint32_t i)
{
	struct rs_affinity_key k = {.service = 0, .family = AF_INET};

	memcpy(k.addr, &i, sizeof(i));
	return rs_hash_key(&k, SEED);
}

static const char *const names[] = {"cache-a", "cache-b", "cache-c",
				    "cache-d", "cache-e", "cache-f"};

/* Members with backend id == index into names. */
static void members_for(struct rs_ring_member *m, const uint32_t *ids,
			const uint32_t *weights, size_t n, uint32_t vnodes)
{
	for (size_t i = 0; i < n; i++) {
		m[i].name = names[ids[i]];
		m[i].backend = ids[i];
		m[i].points = weights[i] * vnodes;
	}
}

struct view_buf {
	struct rs_backend be[8];
	struct rs_ring_view view;
};

static void view_all_up(struct view_buf *v, const uint32_t *weights, size_t n,
			uint32_t vnodes)
{
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < 8; i++) {
		v->be[i].state = RS_BACKEND_UP;
		v->be[i].active_points = (i < n ? weights[i] : 1) * vnodes;
	}
	v->view.backends = v->be;
	v->view.nbackends = 8;
}

static uint32_t owner(const struct rs_ring *r, const struct view_buf *v,
		      uint32_t key)
{
	struct rs_ring_choice c;

	if (ring_lookup(r, &v->view, key_hash(key), &c, NULL))
		return 0xffffffffu;
	return c.backend;
}

static void test_build_is_deterministic_and_sorted(void)
{
	const uint32_t ids[] = {0, 1, 2, 3}, rev[] = {3, 2, 1, 0};
	const uint32_t w[] = {1, 1, 1, 1};
	struct rs_ring_member m1[4], m2[4];
	struct rs_ring r1, r2;

	members_for(m1, ids, w, 4, 160);
	members_for(m2, rev, w, 4, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m1, 4, SEED, &r1), 0);
	CU_ASSERT_EQUAL_FATAL(ring_build(m2, 4, SEED, &r2), 0);
	CU_ASSERT_EQUAL(r1.npoints, 640);
	CU_ASSERT_EQUAL(r1.npoints, r2.npoints);
	CU_ASSERT_EQUAL(
		memcmp(r1.points, r2.points, r1.npoints * sizeof(*r1.points)),
		0);
	for (uint32_t i = 1; i < r1.npoints; i++)
		CU_ASSERT(r1.points[i - 1].pos <= r1.points[i].pos);
	ring_free(&r1);
	ring_free(&r2);
}

/* The documented order: position, then name, then ordinal. */
static int ref_cmp(const void *a, const void *b, void *arg)
{
	const struct rs_point *pa = a, *pb = b;
	const char *const *by_id = arg;
	int c;

	if (pa->pos != pb->pos)
		return pa->pos < pb->pos ? -1 : 1;
	c = strcmp(by_id[pa->backend], by_id[pb->backend]);
	if (c)
		return c;
	return pa->ordinal < pb->ordinal ? -1 : pa->ordinal > pb->ordinal;
}

/*
 * ring_build sorts by radix (issue 39): a ring of 300 members of mixed
 * weights, listed in a scrambled order, is point for point the ring a
 * comparison sort in the documented order makes.
 */
static void test_build_matches_comparison_sort(void)
{
	enum { N = 300, VN = 1024 };
	static char name[N][16];
	static const char *by_id[N];
	struct rs_ring_member *m = calloc(N, sizeof(*m));
	struct rs_point *ref;
	struct rs_ring r;
	size_t total = 0, k = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t id = (i * 7919) % N;

		snprintf(name[id], sizeof(name[id]), "be-%u", id);
		by_id[id] = name[id];
		m[i].name = name[id];
		m[i].backend = id;
		m[i].points = (1 + id % 3) * VN;
		total += m[i].points;
	}
	ref = calloc(total, sizeof(*ref));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t o = 0; o < m[i].points; o++, k++) {
			ref[k].pos = rs_vnode_pos(m[i].name, o, SEED);
			ref[k].backend = m[i].backend;
			ref[k].ordinal = o;
		}
	qsort_r(ref, total, sizeof(*ref), ref_cmp, (void *)by_id);
	CU_ASSERT_EQUAL_FATAL(ring_build(m, N, SEED, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.npoints, total);
	CU_ASSERT_EQUAL(memcmp(r.points, ref, total * sizeof(*ref)), 0);
	ring_free(&r);
	free(ref);
	free(m);
}

static void test_shares_follow_weights(void)
{
	const uint32_t ids[] = {0, 1, 2, 3}, w[] = {1, 1, 2, 4};
	struct rs_ring_member m[4];
	uint32_t count[8] = {0};
	struct view_buf v;
	struct rs_ring r;

	members_for(m, ids, w, 4, 160);
	view_all_up(&v, w, 4, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 4, SEED, &r), 0);
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint32_t o = owner(&r, &v, k);

		CU_ASSERT_FATAL(o < 4);
		count[o]++;
	}
	for (int i = 0; i < 4; i++) {
		double want = (double)NKEYS * w[i] / 8.0;

		/* 160 points per unit of weight: CV about 10%. */
		CU_ASSERT(count[i] > want * 0.7 && count[i] < want * 1.3);
	}
	ring_free(&r);
}

/* Removing backend 2 of 5 moves exactly its keys, and nothing else. */
static void test_remove_moves_only_its_keys(void)
{
	const uint32_t all[] = {0, 1, 2, 3, 4}, rest[] = {0, 1, 3, 4};
	const uint32_t w[] = {1, 1, 1, 1, 1};
	struct rs_ring_member m5[5], m4[4];
	struct rs_ring r5, r4;
	struct view_buf v;
	uint32_t moved = 0, owned = 0;

	members_for(m5, all, w, 5, 160);
	members_for(m4, rest, w, 4, 160);
	view_all_up(&v, w, 5, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m5, 5, SEED, &r5), 0);
	CU_ASSERT_EQUAL_FATAL(ring_build(m4, 4, SEED, &r4), 0);
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint32_t before = owner(&r5, &v, k), after = owner(&r4, &v, k);

		if (before == 2) {
			owned++;
			CU_ASSERT(after != 2 && after < 5);
		} else if (after != before) {
			moved++;
		}
	}
	CU_ASSERT_EQUAL(moved, 0);
	CU_ASSERT(owned > NKEYS / 10);
	ring_free(&r5);
	ring_free(&r4);
}

/* A DOWN backend's points are skipped: same owners as a rebuilt ring. */
static void test_down_equals_rebuild_without(void)
{
	const uint32_t all[] = {0, 1, 2, 3, 4}, rest[] = {0, 1, 3, 4};
	const uint32_t w[] = {1, 1, 1, 1, 1};
	struct rs_ring_member m5[5], m4[4];
	struct view_buf up, down;
	struct rs_ring r5, r4;
	uint32_t differ = 0;

	members_for(m5, all, w, 5, 160);
	members_for(m4, rest, w, 4, 160);
	view_all_up(&up, w, 5, 160);
	view_all_up(&down, w, 5, 160);
	down.be[2].state = RS_BACKEND_DOWN;
	CU_ASSERT_EQUAL_FATAL(ring_build(m5, 5, SEED, &r5), 0);
	CU_ASSERT_EQUAL_FATAL(ring_build(m4, 4, SEED, &r4), 0);
	for (uint32_t k = 0; k < NKEYS; k++)
		differ += owner(&r5, &down, k) != owner(&r4, &up, k);
	CU_ASSERT_EQUAL(differ, 0);
	ring_free(&r5);
	ring_free(&r4);
}

/* Lowering a weight via active_points equals a ring built at that weight. */
static void test_lower_weight_equals_rebuild(void)
{
	const uint32_t ids[] = {0, 1, 2};
	const uint32_t w_max[] = {4, 2, 3}, w_low[] = {1, 2, 3};
	struct rs_ring_member mmax[3], mlow[3];
	struct view_buf vlow, vfresh;
	struct rs_ring rmax, rlow;
	uint32_t differ = 0;

	members_for(mmax, ids, w_max, 3, 100);
	members_for(mlow, ids, w_low, 3, 100);
	view_all_up(&vlow, w_low, 3, 100);
	view_all_up(&vfresh, w_low, 3, 100);
	CU_ASSERT_EQUAL_FATAL(ring_build(mmax, 3, SEED, &rmax), 0);
	CU_ASSERT_EQUAL_FATAL(ring_build(mlow, 3, SEED, &rlow), 0);
	for (uint32_t k = 0; k < NKEYS; k++)
		differ += owner(&rmax, &vlow, k) != owner(&rlow, &vfresh, k);
	CU_ASSERT_EQUAL(differ, 0);
	ring_free(&rmax);
	ring_free(&rlow);
}

/* Adding a 5th backend moves about 1/5 of the keys, all to it. */
static void test_add_moves_about_one_over_n_plus_one(void)
{
	const uint32_t four[] = {0, 1, 2, 3}, five[] = {0, 1, 2, 3, 4};
	const uint32_t w[] = {1, 1, 1, 1, 1};
	struct rs_ring_member m4[4], m5[5];
	struct rs_ring r4, r5;
	struct view_buf v;
	uint32_t moved = 0, wrong = 0;
	double frac;

	members_for(m4, four, w, 4, 160);
	members_for(m5, five, w, 5, 160);
	view_all_up(&v, w, 5, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m4, 4, SEED, &r4), 0);
	CU_ASSERT_EQUAL_FATAL(ring_build(m5, 5, SEED, &r5), 0);
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint32_t before = owner(&r4, &v, k), after = owner(&r5, &v, k);

		if (before != after) {
			moved++;
			wrong += after != 4;
		}
	}
	frac = (double)moved / NKEYS;
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(frac > 0.2 * 0.7 && frac < 0.2 * 1.3);
	ring_free(&r4);
	ring_free(&r5);
}

static void test_missing_socket_and_limits(void)
{
	const uint32_t ids[] = {0, 1}, w[] = {1, 1};
	struct rs_ring_member m[2];
	bool sockets[8] = {true, false, true, true, true, true, true, true};
	struct rs_ring_member huge = {.name = "x",
				      .points = RS_MAX_RING_POINTS + 1};
	struct rs_ring_choice c;
	struct view_buf v;
	struct rs_ring r, empty = {0};

	members_for(m, ids, w, 2, 50);
	view_all_up(&v, w, 2, 50);
	v.view.has_socket = sockets;
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 2, SEED, &r), 0);
	for (uint32_t k = 0; k < 1000; k++) {
		CU_ASSERT_EQUAL(ring_lookup(&r, &v.view, key_hash(k), &c, NULL),
				0);
		CU_ASSERT_EQUAL(c.backend, 0);
	}
	sockets[0] = false;
	CU_ASSERT_EQUAL(ring_lookup(&r, &v.view, key_hash(1), &c, NULL),
			-ENOENT);
	CU_ASSERT_EQUAL(ring_lookup(&empty, &v.view, 1, &c, NULL), -ENOENT);
	CU_ASSERT_EQUAL(ring_build(&huge, 1, SEED, &empty), -EINVAL);
	ring_free(&r);
}

/* Exact shares and predicted moves agree with sampled keys. */
static void test_shares_and_moved_fraction(void)
{
	const uint32_t all[] = {0, 1, 2, 3, 4}, rest[] = {0, 1, 3, 4};
	const uint32_t w[] = {1, 2, 1, 1, 3}, w4[] = {1, 2, 1, 3};
	struct rs_ring_member m5[5], m4[4];
	struct rs_ring r5, r4;
	struct view_buf v;
	double *share = calloc(RS_MAX_BACKENDS, sizeof(double));
	double sum = 0, predicted, lost;
	uint32_t count[8] = {0}, moved = 0;

	members_for(m5, all, w, 5, 160);
	members_for(m4, rest, w4, 4, 160);
	view_all_up(&v, w, 5, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m5, 5, SEED, &r5), 0);
	CU_ASSERT_EQUAL_FATAL(ring_build(m4, 4, SEED, &r4), 0);
	lost = ring_shares(&r5, &v.view, share);
	CU_ASSERT_DOUBLE_EQUAL(lost, 0, 1e-12);
	for (int i = 0; i < 5; i++)
		sum += share[i];
	CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-9);
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint32_t a = owner(&r5, &v, k);

		count[a]++;
		moved += a != owner(&r4, &v, k);
	}
	/* Sampling error of 200k keys: well under 1%. */
	for (int i = 0; i < 5; i++)
		CU_ASSERT_DOUBLE_EQUAL((double)count[i] / NKEYS, share[i],
				       0.01);
	predicted = ring_moved_fraction(&r5, &v.view, &r4, &v.view);
	CU_ASSERT_DOUBLE_EQUAL(predicted, share[2], 1e-9);
	CU_ASSERT_DOUBLE_EQUAL((double)moved / NKEYS, predicted, 0.01);
	CU_ASSERT_DOUBLE_EQUAL(ring_moved_fraction(&r5, &v.view, &r5, &v.view),
			       0, 1e-12);
	free(share);
	ring_free(&r5);
	ring_free(&r4);
}

/*
 * The daemon watches the longest run of skipped points: with most
 * backends down it grows past the walk bound, and a ring of the remaining
 * ones brings it back to zero while mapping their keys the same.
 */
static void test_max_skip_run(void)
{
	const uint32_t ids[] = {0, 1, 2, 3, 4, 5}, w[] = {1, 1, 1, 1, 1, 1};
	struct rs_ring_member m[6], only5[1];
	struct rs_ring r, r5;
	struct view_buf v;
	uint32_t run_all, run_down, differ = 0;

	members_for(m, ids, w, 6, 160);
	view_all_up(&v, w, 6, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 6, SEED, &r), 0);
	run_all = ring_max_skip_run(&r, &v.view);
	CU_ASSERT_EQUAL(run_all, 0);
	for (int i = 0; i < 5; i++)
		v.be[i].state = RS_BACKEND_DOWN;
	run_down = ring_max_skip_run(&r, &v.view);
	/* 5 of 6 down: runs of about 6 on average, tens at the longest. */
	CU_ASSERT(run_down > 10);
	only5[0] = m[5];
	CU_ASSERT_EQUAL_FATAL(ring_build(only5, 1, SEED, &r5), 0);
	CU_ASSERT_EQUAL(ring_max_skip_run(&r5, &v.view), 0);
	for (uint32_t k = 0; k < 20000; k++)
		differ += owner(&r5, &v, k) != 5;
	CU_ASSERT_EQUAL(differ, 0);
	/* Every point skipped: the run is the whole ring. */
	v.be[5].state = RS_BACKEND_DOWN;
	CU_ASSERT_EQUAL(ring_max_skip_run(&r, &v.view), r.npoints);
	/* A run that wraps around the end of the ring counts as one. */
	{
		struct rs_point pts[6] = {
			{.pos = 10, .backend = 0}, {.pos = 20, .backend = 1},
			{.pos = 30, .backend = 1}, {.pos = 40, .backend = 0},
			{.pos = 50, .backend = 0}, {.pos = 60, .backend = 0},
		};
		struct rs_ring hand = {.points = pts, .npoints = 6};

		for (int i = 0; i < 6; i++)
			v.be[i].state = RS_BACKEND_UP;
		v.be[0].state = RS_BACKEND_DOWN;
		/* Down at 40, 50, 60 and, past the end, 10: four in a row. */
		CU_ASSERT_EQUAL(ring_max_skip_run(&hand, &v.view), 4);
	}
	ring_free(&r);
	ring_free(&r5);
}

/*
 * Through the data plane's flat table a hash reaches the point the full
 * search names, on built rings and on hand-made ones whose points sit on
 * bucket edges, share a bucket or a position, or leave the last buckets
 * empty (they wrap to the first point); an entry that names its point
 * carries that point's backend and ordinal.
 */
static void flat_check(const struct rs_ring *r, uint64_t h, uint32_t *direct)
{
	uint8_t bits = ring_bucket_bits(r->npoints);
	struct rs_ring_flat *flat = calloc(1u << bits, sizeof(*flat));
	uint32_t want = ring_lower_bound(r, h), got, b;
	bool d;

	CU_ASSERT_FATAL(flat != NULL);
	ring_flat(r, bits, flat);
	got = ring_flat_lower_bound(r, bits, flat, h, &d);
	CU_ASSERT_EQUAL(got, want);
	b = (uint32_t)(h >> (64 - bits));
	if (d) {
		(*direct)++;
		CU_ASSERT_EQUAL(flat[b].owner >> RS_FLAT_BACKEND_SHIFT,
				r->points[want].backend);
		CU_ASSERT_EQUAL(flat[b].owner & RS_FLAT_ORDINAL_MASK,
				r->points[want].ordinal);
	}
	free(flat);
}

/*
 * A fresh ring map's room: the ring after next of a weight raised step by
 * step (bench-scale: one backend of 200 at 2, 3, 4, 4,096 points a step)
 * fits into the map made for this one, the room is about 1/16 in whole
 * pages, and a map far larger than a ring is not reused for it.
 */
static void test_map_capacity(void)
{
	const uint32_t step = 4096, pts = 200 * 4096 + 4096;
	uint32_t slots = ring_map_slots(pts, ring_bucket_bits(pts));
	uint32_t cap = ring_map_capacity(slots), after_next;

	CU_ASSERT_EQUAL(slots, 1347586); /* docs/benchmarks.md section 6 */
	after_next = ring_map_slots(pts + 2 * step,
				    ring_bucket_bits(pts + 2 * step));
	CU_ASSERT(ring_map_fits(cap, after_next));
	/* Twenty steps, not twenty-one. */
	CU_ASSERT(ring_map_fits(cap, slots + 20 * step));
	CU_ASSERT(!ring_map_fits(cap, slots + 21 * step));
	CU_ASSERT(cap >= slots + slots / 16 && cap < slots + slots / 16 + 256);
	CU_ASSERT_EQUAL(cap % 256, 0); /* whole 4 KiB pages of 16-byte slots */
	/* A small ring: still whole pages, still 1/16 at least. */
	CU_ASSERT_EQUAL(ring_map_capacity(1 + 64 + 128 + 1), 256);
	CU_ASSERT_EQUAL(ring_map_capacity(4096), 4352);
	CU_ASSERT_EQUAL(ring_map_capacity(0), 0);
	CU_ASSERT_EQUAL(ring_map_capacity(UINT32_MAX), UINT32_MAX);
	/* Fits: not past the map, nor under half of it. */
	CU_ASSERT(ring_map_fits(cap, slots));
	CU_ASSERT(ring_map_fits(cap, cap));
	CU_ASSERT(!ring_map_fits(cap, cap + 1));
	CU_ASSERT(ring_map_fits(cap, cap / 2 + 1));
	CU_ASSERT(!ring_map_fits(cap, cap / 2 - 1));
}

static void test_flat_table(void)
{
	const uint32_t ids[] = {0, 1, 2, 3}, w[] = {1, 2, 1, 3};
	struct rs_ring_member m[4];
	struct rs_ring r;
	uint32_t direct = 0;

	CU_ASSERT_EQUAL(ring_bucket_bits(0), 0);
	CU_ASSERT_EQUAL(ring_bucket_bits(1), 2);
	CU_ASSERT_EQUAL(ring_bucket_bits(5), 5);
	CU_ASSERT_EQUAL(ring_bucket_bits(RS_MAX_RING_POINTS),
			RS_MAX_BUCKET_BITS);
	/* Header, points, two entries a slot, trailer. */
	CU_ASSERT_EQUAL(ring_map_slots(5, 5), 1 + 5 + 16 + 1);

	members_for(m, ids, w, 4, 160);
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 4, SEED, &r), 0);
	CU_ASSERT_EQUAL(ring_bucket_bits(r.npoints), 13); /* 1120 points */
	for (uint32_t k = 0; k < NKEYS / 10; k++)
		flat_check(&r, key_hash(k), &direct);
	/*
	 * 8192 buckets for 1120 points: about 1 - e^(-1120/8192) = 13% of
	 * the keys search, the rest read one entry.
	 */
	CU_ASSERT(direct > NKEYS / 10 * 8 / 10);
	CU_ASSERT(direct < NKEYS / 10 * 95 / 100);
	ring_free(&r);

	/*
	 * Three points (4 bits: buckets of 2^60): one on a bucket's first
	 * hash, two sharing a position in bucket 5, none from bucket 6 on.
	 */
	{
		const uint64_t e = 1ull << 60;
		struct rs_point pts[] = {
			{.pos = 2 * e, .backend = 7, .ordinal = 3},
			{.pos = 5 * e + 9, .backend = 1, .ordinal = 0},
			{.pos = 5 * e + 9, .backend = 2, .ordinal = 1},
		};
		struct rs_ring hand = {.points = pts, .npoints = 3};
		const uint64_t hs[] = {0,	  2 * e - 1,  2 * e,
				       2 * e + 1, 5 * e,      5 * e + 8,
				       5 * e + 9, 5 * e + 10, 6 * e - 1,
				       6 * e,	  UINT64_MAX};

		CU_ASSERT_EQUAL(ring_bucket_bits(3), 4);
		direct = 0;
		for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
			flat_check(&hand, hs[i], &direct);
		/* Buckets 0, 1, 6 and 15 hold no point: 0, 2e-1, 6e, max. */
		CU_ASSERT_EQUAL(direct, 4);
	}
}

/* The flat table as first written: every bucket scans for its points. */
static void flat_by_bucket(const struct rs_ring *ring, uint8_t bits,
			   struct rs_ring_flat *flat)
{
	uint32_t nb = 1u << bits, k = 0, next;

	for (uint32_t b = 0; b < nb; b++) {
		uint64_t end = (uint64_t)(b + 1) << (64 - bits);

		for (next = k; next < ring->npoints &&
			       (b + 1 == nb || ring->points[next].pos < end);
		     next++)
			;
		if (next > k) {
			flat[b] = (struct rs_ring_flat){.point = k + 1,
							.owner = RS_FLAT_SPLIT |
								 (next - k)};
		} else {
			const struct rs_point *p =
				&ring->points[k < ring->npoints ? k : 0];

			flat[b] = (struct rs_ring_flat){
				.point = (k < ring->npoints ? k : 0) + 1,
				.owner = p->backend << RS_FLAT_BACKEND_SHIFT |
					 p->ordinal};
		}
		k = next;
	}
}

static bool flat_same(const struct rs_ring *r)
{
	uint8_t bits = ring_bucket_bits(r->npoints);
	struct rs_ring_flat *a = calloc(1u << bits, sizeof(*a)),
			    *b = calloc(1u << bits, sizeof(*b));
	bool same;

	CU_ASSERT_FATAL(a && b);
	ring_flat(r, bits, a);
	flat_by_bucket(r, bits, b);
	same = !memcmp(a, b, sizeof(*a) << bits);
	free(a);
	free(b);
	return same;
}

/*
 * ring_flat() in one pass over the points (issue 39) writes the table the
 * scan per bucket wrote, entry for entry: built rings of 1 to 8,000
 * points, and hand-made ones with points in the first and the last
 * bucket, on both edges of a bucket, several in one bucket, all in one.
 */
static void test_flat_one_pass(void)
{
	const uint32_t sizes[] = {1, 2, 3, 5, 17, 160, 1000, 8000};
	const uint64_t e = 1ull << 60; /* 3 points: 4 bits, buckets of 2^60 */
	const uint64_t hand[][3] = {
		{0, 1, UINT64_MAX},
		{e - 1, e, e + 1},
		{15 * e, 15 * e + 1, UINT64_MAX},
		{7 * e, 7 * e, 7 * e},
		{0, 0, 0},
		{e, 9 * e - 1, 9 * e},
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rs_ring_member m = {"only", 3, sizes[i]};
		struct rs_ring r;

		CU_ASSERT_EQUAL_FATAL(ring_build(&m, 1, SEED + i, &r), 0);
		CU_ASSERT(flat_same(&r));
		ring_free(&r);
	}
	for (size_t i = 0; i < sizeof(hand) / sizeof(hand[0]); i++) {
		struct rs_point pts[3];
		struct rs_ring r = {.points = pts, .npoints = 3};

		for (uint32_t j = 0; j < 3; j++)
			pts[j] = (struct rs_point){.pos = hand[i][j],
						   .backend = 5 + j,
						   .ordinal = 10 * (uint32_t)i +
							      j};
		CU_ASSERT(flat_same(&r));
	}
}

/*
 * The trace says why each point before the chosen one was skipped, in
 * the walk's order: cache-a DOWN (then its repeats, while it is the last
 * backend rejected),
 * cache-b at weight 0 (every point past its active_points), cache-c
 * without a socket; cache-d takes every key.
 */
static void test_trace_explains_the_walk(void)
{
	const uint32_t ids[] = {0, 1, 2, 3}, w[] = {1, 1, 1, 1};
	bool sockets[8] = {true, true, false, true, true, true, true, true};
	struct rs_ring_member m[4];
	struct rs_ring_step steps[64];
	struct rs_ring_trace tr = {.steps = steps, .cap = 64};
	struct rs_ring_choice c;
	struct view_buf v;
	struct rs_ring r;

	members_for(m, ids, w, 4, 4);
	view_all_up(&v, w, 4, 4);
	v.be[0].state = RS_BACKEND_DOWN;
	v.be[1].active_points = 0;
	v.view.has_socket = sockets;
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 4, SEED, &r), 0);
	for (uint32_t k = 0; k < 200; k++) {
		uint32_t last = UINT32_MAX; /* the walk remembers one */

		CU_ASSERT_EQUAL_FATAL(
			ring_lookup(&r, &v.view, key_hash(k), &c, &tr), 0);
		CU_ASSERT_EQUAL(c.backend, 3);
		CU_ASSERT_EQUAL(tr.n, c.walked);
		for (uint32_t i = 0; i < tr.n; i++) {
			const struct rs_ring_step *st = &steps[i];
			enum rs_ring_skip want =
				st->backend == 1      ? RS_RING_SKIP_INACTIVE
				: st->backend == last ? RS_RING_SKIP_REJECTED
				: st->backend == 0    ? RS_RING_SKIP_NOT_UP
						      : RS_RING_SKIP_NO_SOCKET;

			CU_ASSERT_NOT_EQUAL(st->backend, 3);
			CU_ASSERT_EQUAL(st->why, want);
			if (st->backend != 1)
				last = st->backend;
		}
	}
	ring_free(&r);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ring", NULL, NULL);
	CU_add_test(s, "build is deterministic, sorted, order-independent",
		    test_build_is_deterministic_and_sorted);
	CU_add_test(s, "radix-sorted build == comparison sort",
		    test_build_matches_comparison_sort);
	CU_add_test(s, "shares follow weights", test_shares_follow_weights);
	CU_add_test(s, "removing one of N moves only its keys",
		    test_remove_moves_only_its_keys);
	CU_add_test(s, "DOWN backend == ring rebuilt without it",
		    test_down_equals_rebuild_without);
	CU_add_test(s, "lowered weight == ring rebuilt at that weight",
		    test_lower_weight_equals_rebuild);
	CU_add_test(s, "adding one moves ~1/(N+1), all to the new one",
		    test_add_moves_about_one_over_n_plus_one);
	CU_add_test(s, "exact shares and moved fraction match sampling",
		    test_shares_and_moved_fraction);
	CU_add_test(s, "longest skipped run", test_max_skip_run);
	CU_add_test(s, "the trace explains the walk",
		    test_trace_explains_the_walk);
	CU_add_test(s, "flat table == full search", test_flat_table);
	CU_add_test(s, "ring map room for the ring after next",
		    test_map_capacity);
	CU_add_test(s, "flat table in one pass == scan per bucket",
		    test_flat_one_pass);
	CU_add_test(s, "missing sockets skipped; limits",
		    test_missing_socket_and_limits);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

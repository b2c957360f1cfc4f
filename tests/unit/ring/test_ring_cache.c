// SPDX-License-Identifier: MIT
/*
 * The ring cache (issue 39) never changes a ring: after every step of a
 * sequence of changes (the same members again, weights up and down,
 * members added and removed, a name under another id, another seed) the
 * ring it gives is point for point ring_build()'s from the same members,
 * and it says when it copied, merged or built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "ring_cache.h"

#define N  40
#define VN 256

static char names[N][16];

struct set {
	struct rs_ring_member m[N];
	size_t n;
};

static void set_init(struct set *s, size_t n)
{
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		s->m[i].name = names[i];
		s->m[i].backend = (uint32_t)(i * 3 + 1);
		s->m[i].points = VN;
	}
}

/* The cache's ring == ring_build()'s, and the cache said @want. */
static void expect(struct ring_cache *c, const struct set *s, uint64_t seed,
		   int want)
{
	struct rs_ring got, ref;
	int how = ring_cache_build(c, s->m, s->n, seed, &got);

	CU_ASSERT_EQUAL(how, want);
	CU_ASSERT_EQUAL_FATAL(ring_build(s->m, s->n, seed, &ref), 0);
	CU_ASSERT_FATAL(how >= 0);
	CU_ASSERT(ring_equal(&got, &ref));
	ring_free(&got);
	ring_free(&ref);
}

static void test_cache_equals_build(void)
{
	struct ring_cache c = {0};
	struct set s;

	for (size_t i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "b-%zu", i);
	set_init(&s, 30);
	expect(&c, &s, 7, RING_CACHE_BUILT);
	expect(&c, &s, 7, RING_CACHE_SAME);
	s.m[4].points = 3 * VN; /* weight up */
	expect(&c, &s, 7, RING_CACHE_MERGED);
	expect(&c, &s, 7, RING_CACHE_SAME);
	s.m[4].points = VN / 2; /* below where it was */
	s.m[9].points = 0;	/* weight 0 */
	expect(&c, &s, 7, RING_CACHE_MERGED);
	s.n = 36; /* six added */
	for (size_t i = 30; i < 36; i++)
		s.m[i] = (struct rs_ring_member){names[i], (uint32_t)i * 3 + 1,
						 VN};
	expect(&c, &s, 7, RING_CACHE_MERGED);
	s.m[2] = s.m[35]; /* one removed (moved over), the list reordered */
	s.n = 35;
	expect(&c, &s, 7, RING_CACHE_MERGED);
	s.m[5].backend = 200; /* the same name under another id */
	expect(&c, &s, 7, RING_CACHE_MERGED);
	s.m[6].name = names[39]; /* another name under the same id */
	expect(&c, &s, 7, RING_CACHE_MERGED);
	expect(&c, &s, 8, RING_CACHE_BUILT); /* another seed */
	s.n = 0;
	expect(&c, &s, 8, RING_CACHE_MERGED);
	set_init(&s, 3);
	expect(&c, &s, 8, RING_CACHE_MERGED);
	ring_cache_free(&c);
}

/* ring_cache_get(): the cache's own ring, ring_build()'s, and @want. */
static const struct rs_point *expect_held(struct ring_cache *c,
					  const struct set *s, uint64_t seed,
					  int want)
{
	struct rs_ring *got = NULL, ref;
	int how = ring_cache_get(c, s->m, s->n, seed, &got);

	CU_ASSERT_EQUAL(how, want);
	CU_ASSERT_FATAL(how >= 0);
	CU_ASSERT(got == &c->ring);
	CU_ASSERT_EQUAL_FATAL(ring_build(s->m, s->n, seed, &ref), 0);
	CU_ASSERT(ring_equal(got, &ref));
	ring_free(&ref);
	return got->points;
}

/*
 * The ring is handed out where the cache holds it, never copied (issue
 * 39: a copy was 13 MB at 200 backends, twice a reload). A merge writes
 * into the buffer of the ring before (its pages in memory) and the two
 * trade places; one that does not fit it gets a new buffer. Every ring
 * is ring_build()'s.
 */
static void test_cache_keeps_its_buffer(void)
{
	struct ring_cache c = {0};
	struct set s;
	const struct rs_point *a, *b, *other;

	for (size_t i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "b-%zu", i);
	set_init(&s, 30);
	expect_held(&c, &s, 7, RING_CACHE_BUILT);
	/*
	 * The build's other buffer, as large, is the spare: the first merge
	 * after a start writes into pages in memory too.
	 */
	other = c.spare;
	CU_ASSERT(other != NULL && c.spare_cap == c.cap);
	s.m[1].points = 2 * VN;
	a = expect_held(&c, &s, 7, RING_CACHE_MERGED);
	CU_ASSERT(a == other);
	CU_ASSERT(c.spare_cap >= c.ring.npoints - VN);
	s.m[1].points = VN; /* back: fits the ring before's buffer */
	b = expect_held(&c, &s, 7, RING_CACHE_MERGED);
	CU_ASSERT(a != b);
	CU_ASSERT(c.spare == a);
	CU_ASSERT(expect_held(&c, &s, 7, RING_CACHE_SAME) == b);
	s.m[3].points = VN + VN / 2; /* within the eighth kept past it */
	CU_ASSERT(expect_held(&c, &s, 7, RING_CACHE_MERGED) == a);
	CU_ASSERT(c.spare == b);
	s.m[2].points = 20 * VN; /* far past both */
	expect_held(&c, &s, 7, RING_CACHE_MERGED);
	CU_ASSERT(c.cap >= c.ring.npoints);
	expect_held(&c, &s, 7, RING_CACHE_SAME);
	/* A copy for the caller is the same ring, in its own buffer. */
	expect(&c, &s, 7, RING_CACHE_SAME);
	ring_cache_free(&c);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ring_cache", NULL, NULL);
	CU_add_test(s, "cached ring == built ring, every step",
		    test_cache_equals_build);
	CU_add_test(s, "the ring held, merged between two buffers, no copy",
		    test_cache_keeps_its_buffer);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

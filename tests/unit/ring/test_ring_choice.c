// SPDX-License-Identifier: MIT
/*
 * ring_choose(): which ring the daemon installs for a service. A healthy
 * ring stays full; a long run of skipped points (a weight lowered far
 * below its built maximum, most backends down) gets the trimmed ring,
 * which must send every key where the full ring sends it under the same
 * view, the data plane's walk being the judge (ring_lookup).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/Basic.h>

#include "hash.h"
#include "ring.h"
#include "ring_choice.h"

#define NBACKENDS 8
#define VNODES	  100
#define NKEYS	  50000

/* A service of NBACKENDS backends (id = index), all UP with a socket. */
struct service {
	char names[NBACKENDS][16];
	struct rs_ring_member members[NBACKENDS];
	struct rs_backend words[NBACKENDS];
	bool has_socket[NBACKENDS];
	struct rs_ring_view view;
	struct rs_ring full;
};

/* Builds the full ring with backend i at @built[i] * VNODES points. */
static void service_init(struct service *s, const uint32_t *built)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < NBACKENDS; i++) {
		snprintf(s->names[i], sizeof(s->names[i]), "node-%u", i);
		s->members[i] = (struct rs_ring_member){
			.name = s->names[i],
			.backend = i,
			.points = built[i] * VNODES,
		};
		s->words[i].state = RS_BACKEND_UP;
		s->words[i].active_points = s->members[i].points;
		s->words[i].max_points = s->members[i].points;
		s->has_socket[i] = true;
	}
	s->view = (struct rs_ring_view){
		.backends = s->words,
		.has_socket = s->has_socket,
		.nbackends = NBACKENDS,
	};
	CU_ASSERT_EQUAL_FATAL(ring_build(s->members, NBACKENDS, 7, &s->full),
			      0);
}

static const uint32_t even[NBACKENDS] = {1, 1, 1, 1, 1, 1, 1, 1};

/* Keys that @a and @b send to different backends under @view (or fail). */
static uint32_t keys_moved(const struct rs_ring *a, const struct rs_ring *b,
			   const struct rs_ring_view *view, uint32_t *unmapped)
{
	uint32_t moved = 0;

	*unmapped = 0;
	for (uint32_t i = 0; i < NKEYS; i++) {
		struct rs_affinity_key key = {.family = AF_INET6};
		struct rs_ring_choice ca, cb;
		uint64_t h;
		int ea, eb;

		memcpy(key.addr + 12, &i, sizeof(i));
		h = rs_hash_key(&key, 7);
		ea = ring_lookup(a, view, h, &ca, NULL);
		eb = ring_lookup(b, view, h, &cb, NULL);
		if (ea != eb || (!ea && ca.backend != cb.backend))
			moved++;
		*unmapped += ea == -ENOENT;
	}
	return moved;
}

static void test_healthy_stays_full(void)
{
	struct rs_ring trimmed;
	struct service s;

	service_init(&s, even);
	CU_ASSERT_EQUAL(ring_choose(&s.full, &s.view, &trimmed), RS_RING_FULL);
	CU_ASSERT_EQUAL(trimmed.npoints, 0);
	/* One backend of eight down: short runs, still the full ring. */
	s.words[2].state = RS_BACKEND_DOWN;
	CU_ASSERT_TRUE(ring_walks_short(&s.full, &s.view));
	CU_ASSERT_EQUAL(ring_choose(&s.full, &s.view, &trimmed), RS_RING_FULL);
	ring_free(&trimmed);
	ring_free(&s.full);
}

/* The trimmed ring of @s under its view: shorter, short walks, same keys. */
static void check_trimmed(struct service *s, uint32_t points_in_use)
{
	struct rs_ring trimmed;
	uint32_t unmapped;

	CU_ASSERT_FALSE(ring_walks_short(&s->full, &s->view));
	CU_ASSERT_EQUAL_FATAL(ring_choose(&s->full, &s->view, &trimmed),
			      RS_RING_TRIMMED);
	CU_ASSERT_EQUAL(trimmed.npoints, points_in_use);
	CU_ASSERT_TRUE(ring_walks_short(&trimmed, &s->view));
	CU_ASSERT_EQUAL(trimmed.seed, s->full.seed);
	CU_ASSERT_EQUAL(keys_moved(&s->full, &trimmed, &s->view, &unmapped), 0);
	CU_ASSERT_EQUAL(unmapped, points_in_use ? 0 : NKEYS);
	ring_free(&trimmed);
}

/* Built at weight 100, now at weight 1: runs of its inactive points. */
static void test_lowered_weight_trims(void)
{
	uint32_t built[NBACKENDS] = {1, 1, 1, 100, 1, 1, 1, 1};
	struct service s;

	service_init(&s, built);
	CU_ASSERT_EQUAL(ring_choose(&s.full, &s.view, &(struct rs_ring){0}),
			RS_RING_FULL);
	s.words[3].active_points = VNODES;
	check_trimmed(&s, NBACKENDS * VNODES);
	ring_free(&s.full);
}

/* Six down, one without a socket: only one backend's points are used. */
static void test_most_down_trims(void)
{
	struct service s;

	service_init(&s, even);
	for (int i = 0; i < 6; i++)
		s.words[i].state = i % 2 ? RS_BACKEND_DOWN : RS_BACKEND_DRAIN;
	s.has_socket[6] = false;
	check_trimmed(&s, VNODES);
	ring_free(&s.full);
}

static void test_all_down_is_empty(void)
{
	struct service s;

	service_init(&s, even);
	for (int i = 0; i < NBACKENDS; i++)
		s.words[i].state = RS_BACKEND_DOWN;
	check_trimmed(&s, 0);
	ring_free(&s.full);
}

static void test_empty_ring_stays_full(void)
{
	struct rs_ring empty = {0}, trimmed;
	struct service s;

	service_init(&s, even);
	CU_ASSERT_EQUAL(ring_choose(&empty, &s.view, &trimmed), RS_RING_FULL);
	CU_ASSERT_EQUAL(trimmed.npoints, 0);
	ring_free(&s.full);
}

/*
 * ring_trim_keeps_all() says whether ring_trim() would keep every point
 * (then the daemon installs the ring itself instead of a trimmed copy):
 * it must agree with ring_trim(), never keep a point ring_trim() drops.
 */
static void trim_agrees(const struct service *s, bool usable_only)
{
	struct rs_ring t;

	CU_ASSERT_EQUAL_FATAL(ring_trim(&s->full, &s->view, usable_only, &t),
			      0);
	CU_ASSERT_EQUAL(ring_trim_keeps_all(&s->full, &s->view, usable_only),
			t.npoints == s->full.npoints);
	ring_free(&t);
}

static void test_trim_keeps_all(void)
{
	struct service s;

	service_init(&s, even);
	CU_ASSERT_TRUE(ring_trim_keeps_all(&s.full, &s.view, true));
	trim_agrees(&s, false);
	trim_agrees(&s, true);
	s.words[4].state = RS_BACKEND_DOWN; /* in use, not usable */
	CU_ASSERT_TRUE(ring_trim_keeps_all(&s.full, &s.view, false));
	CU_ASSERT_FALSE(ring_trim_keeps_all(&s.full, &s.view, true));
	trim_agrees(&s, false);
	trim_agrees(&s, true);
	s.words[4].state = RS_BACKEND_UP;
	s.words[1].active_points = VNODES - 1; /* one point past its weight */
	CU_ASSERT_FALSE(ring_trim_keeps_all(&s.full, &s.view, false));
	trim_agrees(&s, false);
	trim_agrees(&s, true);
	ring_free(&s.full);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ring choice", NULL, NULL);
	CU_add_test(s, "a healthy ring stays full", test_healthy_stays_full);
	CU_add_test(s, "a weight far below its maximum: trimmed, same keys",
		    test_lowered_weight_trims);
	CU_add_test(s, "most backends down: trimmed, same keys",
		    test_most_down_trims);
	CU_add_test(s, "all down: an empty ring", test_all_down_is_empty);
	CU_add_test(s, "an empty ring stays full", test_empty_ring_stays_full);
	CU_add_test(s, "keeps-all agrees with ring_trim()",
		    test_trim_keeps_all);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

// SPDX-License-Identifier: MIT
/*
 * The walk never fails closed: over random histories of weights (lowered
 * from the built maximum to anything down to 0), states (UP, DRAIN, DOWN)
 * and sockets coming and going, every client the kernel program sees
 * must land where the userspace replica says, and must land somewhere
 * whenever any backend can take it — with the ring left at its built
 * maximum (the daemon has not rebuilt yet: the worst case for the walk)
 * and with the ring the daemon trims to the points in use, which must map
 * every key the same way.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "replica.h"
#include "bpf_fixture.h"
#include "dataplane.h"
#include "hash.h"
#include "ring_fixture.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define NBACKENDS 8
#define VNODES	  8
#define MAX_W	  64 /* built weight: VNODES * MAX_W points per backend */
#define SVC	  RING_FIXTURE_SVC
#define STEPS	  150
#define CLIENTS	  200

static struct ring_fixture fx;
static const char *const names[NBACKENDS] = {"a", "b", "c", "d",
					     "e", "f", "g", "h"};

static int setup(void)
{
	return ring_fixture_setup(&fx, names, NBACKENDS, VNODES * MAX_W,
				  0x5eed);
}

static void teardown(void)
{
	ring_fixture_teardown(&fx);
}

static int replica_choice(const struct rs_ring *ring, uint32_t src)
{
	struct rs_ring_view view = {.backends = fx.backends,
				    .has_socket = fx.has_socket,
				    .nbackends = NBACKENDS};

	return replica_backend4(ring, &fx.service, &view, src, NULL);
}

static bool any_usable(void)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (fx.backends[i].state == RS_BACKEND_UP && fx.has_socket[i] &&
		    fx.backends[i].active_points > 0)
			return true;
	return false;
}

/* Weights cluster at the extremes, where long skipped runs come from. */
static uint32_t random_weight(uint64_t *rng)
{
	uint64_t r = fixture_rand(rng) % 10;

	if (r < 3)
		return 0 + (uint32_t)(fixture_rand(rng) % 2);
	if (r < 6)
		return MAX_W;
	return (uint32_t)(fixture_rand(rng) % (MAX_W + 1));
}

static void change_one(uint64_t *rng)
{
	int b = (int)(fixture_rand(rng) % NBACKENDS);
	uint64_t what = fixture_rand(rng) % 4;

	if (what == 0) {
		static const uint32_t states[] = {RS_BACKEND_UP, RS_BACKEND_UP,
						  RS_BACKEND_DRAIN,
						  RS_BACKEND_DOWN};

		fx.backends[b].state = states[fixture_rand(rng) % 4];
	} else if (what == 1) {
		uint32_t slot = rs_socket_slot(b, 0);
		int err;

		fx.has_socket[b] = !fx.has_socket[b];
		err = fx.has_socket[b] ? dp_set_socket(&fx.dp, slot, fx.fds[b])
				       : dp_clear_socket(&fx.dp, slot);
		CU_ASSERT_EQUAL(err, 0);
	} else {
		fx.backends[b].active_points = random_weight(rng) * VNODES;
	}
	CU_ASSERT_EQUAL(dp_set_backend(&fx.dp, b, &fx.backends[b]), 0);
}

struct tally {
	int mismatches, refused, long_walks_possible, checked;
};

static void check_clients(const struct rs_ring *ring, uint64_t *rng,
			  struct tally *t)
{
	bool usable = any_usable();

	for (int c = 0; c < CLIENTS; c++) {
		uint32_t src = htonl(0xc6120000u |
				     (uint32_t)(fixture_rand(rng) & 0xffff));
		int retval, got = ring_fixture_choice(&fx, src, &retval);
		int want = replica_choice(ring, src);

		t->checked++;
		if (got != want) {
			if (t->mismatches < 5)
				printf("\n  client %08x: kernel %d, replica %d",
				       ntohl(src), got, want);
			t->mismatches++;
		}
		if (usable && got < 0)
			t->refused++;
	}
}

static void test_random_histories(void)
{
	const char *env = getenv("RS_HISTORY_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
	uint64_t rng = seed ? seed : 1;
	struct tally untrimmed = {0}, trimmed = {0};
	int long_runs = 0;

	for (int step = 0; step < STEPS; step++) {
		struct rs_ring_view view = {.backends = fx.backends,
					    .has_socket = fx.has_socket,
					    .nbackends = NBACKENDS};
		struct rs_ring t;
		int n = 1 + (int)(fixture_rand(&rng) % 3);

		for (int k = 0; k < n; k++)
			change_one(&rng);
		long_runs += ring_max_skip_run(&fx.ring, &view) > RS_WALK_MAX;
		/* The daemon has not rebuilt: the full ring, skipping. */
		CU_ASSERT_FATAL(dp_swap_ring(&fx.dp, SVC, &fx.ring) > 0);
		check_clients(&fx.ring, &rng, &untrimmed);
		/* What the daemon installs: only the points in use. */
		CU_ASSERT_EQUAL_FATAL(ring_trim(&fx.ring, &view, true, &t), 0);
		CU_ASSERT_FATAL(dp_swap_ring(&fx.dp, SVC, &t) > 0);
		check_clients(&t, &rng, &trimmed);
		/* Same keys, same owners as the skipping full ring. */
		for (int c = 0; c < CLIENTS; c++) {
			uint32_t src = htonl(0xc6120000u + (uint32_t)c * 7);

			CU_ASSERT_EQUAL(replica_choice(&t, src),
					replica_choice(&fx.ring, src));
		}
		ring_free(&t);
	}
	printf("\n  seed %#llx: %d steps, %d with a skipped run > %d points, "
	       "%d + %d clients checked",
	       (unsigned long long)seed, STEPS, long_runs, RS_WALK_MAX,
	       untrimmed.checked, trimmed.checked);
	CU_ASSERT_EQUAL(untrimmed.mismatches, 0);
	CU_ASSERT_EQUAL(untrimmed.refused, 0);
	CU_ASSERT_EQUAL(trimmed.mismatches, 0);
	CU_ASSERT_EQUAL(trimmed.refused, 0);
	/* The histories must reach the case that used to refuse clients. */
	CU_ASSERT(long_runs > 10);
}

/*
 * The case from the issue: one backend built at weight 64 lowered to 1
 * beside light ones leaves runs of hundreds of skipped points.
 */
static void test_weight_lowered_to_one(void)
{
	struct rs_ring_member m[2] = {{names[0], 0, VNODES * MAX_W},
				      {names[1], 1, VNODES}};
	struct rs_ring_view view = {.backends = fx.backends,
				    .has_socket = fx.has_socket,
				    .nbackends = NBACKENDS};
	struct rs_ring ring;
	int refused = 0, retval;

	for (int i = 0; i < NBACKENDS; i++) {
		fx.backends[i].state = RS_BACKEND_UP;
		fx.has_socket[i] = true;
		dp_set_socket(&fx.dp, rs_socket_slot(i, 0), fx.fds[i]);
	}
	fx.backends[0].active_points = VNODES; /* weight 64 -> 1 */
	fx.backends[1].active_points = VNODES;
	dp_set_backend(&fx.dp, 0, &fx.backends[0]);
	dp_set_backend(&fx.dp, 1, &fx.backends[1]);
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 2, fx.service.seed, &ring), 0);
	ring_set_key(&ring, &fx.service);
	CU_ASSERT(ring_max_skip_run(&ring, &view) > RS_WALK_MAX);
	CU_ASSERT_FATAL(dp_swap_ring(&fx.dp, SVC, &ring) > 0);
	for (uint32_t c = 0; c < 2000; c++) {
		uint32_t src = htonl(0xc6130000u + c);

		refused += ring_fixture_choice(&fx, src, &retval) < 0;
		CU_ASSERT_EQUAL(retval, SK_PASS);
	}
	CU_ASSERT_EQUAL(refused, 0);
	ring_free(&ring);
}

int main(void)
{
	static const struct fixture_test tests[] = {
		{"weight lowered 64 -> 1: nobody refused",
		 test_weight_lowered_to_one},
		{"random weight/state/socket histories: kernel == replica, "
		 "never refused",
		 test_random_histories},
	};

	return fixture_main("walk_history", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

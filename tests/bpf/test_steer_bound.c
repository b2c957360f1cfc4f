// SPDX-License-Identifier: MIT
/*
 * Bounded loads in the kernel against the userspace replica: with random
 * weights (active points below the built ones, as weights and slow start
 * leave them), states, sockets, balance factors and loads set straight
 * into rs_backend_load / rs_service_load, every client the kernel program
 * sees must land where ring_lookup() says, and nowhere else; none is
 * refused while an UP backend holds a socket; the histories must reach
 * primaries at their bound and the case where every backend is at it.
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

#define NBACKENDS 5
#define VNODES	  16
#define MAX_W	  4
#define SVC	  RING_FIXTURE_SVC
#define STEPS	  300
#define CLIENTS	  100

static struct ring_fixture fx;
static int64_t load[NBACKENDS];
static int64_t service_active;
static const char *const names[NBACKENDS] = {"a", "b", "c", "d", "e"};

static int setup(void)
{
	return ring_fixture_setup(&fx, names, NBACKENDS, VNODES * MAX_W,
				  0xb0a7d);
}

static void teardown(void)
{
	ring_fixture_teardown(&fx);
}

/* The words as the daemon computes them (backends.c) and the loads. */
static void push_state(uint32_t balance_milli)
{
	int lfd = bpf_map__fd(fx.dp.skel->maps.rs_backend_load);
	int sfd = bpf_map__fd(fx.dp.skel->maps.rs_service_load);
	uint32_t total = 0, svc = SVC;
	struct rs_load l;

	for (int i = 0; i < NBACKENDS; i++)
		if (fx.backends[i].state == RS_BACKEND_UP)
			total += fx.backends[i].active_points;
	for (uint32_t i = 0; i < NBACKENDS; i++) {
		fx.backends[i].balance_milli = balance_milli;
		fx.backends[i].bound_points = total;
		CU_ASSERT_EQUAL(dp_set_backend(&fx.dp, i, &fx.backends[i]), 0);
		l.active = load[i];
		CU_ASSERT_EQUAL(bpf_map_update_elem(lfd, &i, &l, BPF_ANY), 0);
	}
	l.active = service_active;
	CU_ASSERT_EQUAL(bpf_map_update_elem(sfd, &svc, &l, BPF_ANY), 0);
}

static int replica_choice(uint32_t src, struct rs_ring_choice *c)
{
	struct rs_ring_view view = {.backends = fx.backends,
				    .has_socket = fx.has_socket,
				    .nbackends = NBACKENDS,
				    .load = load,
				    .service_active = service_active};

	return replica_backend4(&fx.ring, &fx.service, &view, src, c);
}

static void test_formula(void)
{
	struct rs_backend be = {
		.active_points = 16, .bound_points = 64, .balance_milli = 1250};

	/* ceil(1.25 x 100 x 16 / 64) = ceil(31.25) */
	CU_ASSERT_EQUAL(rs_load_bound(&be, 99), 32);
	/* Twice the weight: ceil(1.25 x 10 x 32 / 64) = ceil(6.25) */
	be.active_points = 32;
	CU_ASSERT_EQUAL(rs_load_bound(&be, 9), 7);
	/* An empty service: every backend may take the first connection. */
	be.active_points = 1;
	CU_ASSERT_EQUAL(rs_load_bound(&be, 0), 1);
	CU_ASSERT(!rs_load_at_bound(&be, 0, 0));
	CU_ASSERT(rs_load_at_bound(&be, 1, 0));
	/* Off: no bound at all. */
	be.balance_milli = 0;
	CU_ASSERT_EQUAL(rs_load_bound(&be, 1000), RS_LOAD_UNBOUNDED);
	CU_ASSERT(!rs_load_at_bound(&be, 1000000, 1000));
}

/* Loads near the bounds, where decisions change. */
static void random_loads(uint64_t *rng)
{
	service_active = (int64_t)(fixture_rand(rng) % 200);
	for (int i = 0; i < NBACKENDS; i++) {
		uint64_t b = rs_load_bound(&fx.backends[i], service_active);

		if (b == RS_LOAD_UNBOUNDED)
			b = 10;
		load[i] = (int64_t)(b + fixture_rand(rng) % 5) - 3;
		if (load[i] < 0)
			load[i] = 0;
	}
}

static void random_backend(uint64_t *rng, int b)
{
	uint64_t r = fixture_rand(rng) % 8;

	if (r == 0)
		fx.backends[b].state = RS_BACKEND_DOWN;
	else if (r == 1)
		fx.backends[b].state = RS_BACKEND_DRAIN;
	else
		fx.backends[b].state = RS_BACKEND_UP;
	/* Weight 1..MAX_W, or partway through slow start. */
	fx.backends[b].active_points =
		1 + (uint32_t)(fixture_rand(rng) % (VNODES * MAX_W));
	if (fx.has_socket[b] != (fixture_rand(rng) % 10 != 0)) {
		uint32_t slot = rs_socket_slot(b, 0);

		fx.has_socket[b] = !fx.has_socket[b];
		CU_ASSERT_EQUAL(fx.has_socket[b]
					? dp_set_socket(&fx.dp, slot, fx.fds[b])
					: dp_clear_socket(&fx.dp, slot),
				0);
	}
}

static bool any_usable(void)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (fx.backends[i].state == RS_BACKEND_UP && fx.has_socket[i])
			return true;
	return false;
}

static void test_random_histories(void)
{
	static const uint32_t factors[] = {1001, 1100, 1250, 1500, 2000, 0};
	uint64_t rng = 0x6a09e667f3bcc908ull;
	int mismatches = 0, refused = 0, over = 0, all = 0, checked = 0;

	for (int step = 0; step < STEPS; step++) {
		uint32_t f = factors[fixture_rand(&rng) % 6];

		random_backend(&rng, (int)(fixture_rand(&rng) % NBACKENDS));
		random_loads(&rng);
		push_state(f);
		for (int c = 0; c < CLIENTS; c++) {
			uint32_t src =
				htonl(0xc6120000u |
				      (uint32_t)(fixture_rand(&rng) & 0xffff));
			struct rs_ring_choice rc = {0};
			int got = ring_fixture_choice(&fx, src, NULL);
			int want = replica_choice(src, &rc);

			checked++;
			over += want >= 0 && rc.primary_over;
			all += want >= 0 && rc.all_at_bound;
			if (got != want && mismatches++ < 5)
				printf("\n  step %d client %08x: kernel %d, "
				       "replica %d",
				       step, ntohl(src), got, want);
			refused += any_usable() && got < 0;
		}
	}
	printf("\n  %d clients: %d with the primary at its bound, %d with "
	       "every backend at it",
	       checked, over, all);
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT_EQUAL(refused, 0);
	CU_ASSERT(over > checked / 10);
	CU_ASSERT(all > 0);
}

/*
 * Every UP backend at its bound: the least loaded relative to its bound
 * takes the connection (here backend 2, at half the relative load of the
 * others), whoever owns the key.
 */
static void test_all_at_bound(void)
{
	int to2 = 0;

	for (int i = 0; i < NBACKENDS; i++) {
		fx.backends[i].state = RS_BACKEND_UP;
		fx.backends[i].active_points = VNODES * MAX_W;
		if (!fx.has_socket[i]) {
			fx.has_socket[i] = true;
			dp_set_socket(&fx.dp, rs_socket_slot(i, 0), fx.fds[i]);
		}
	}
	/*
	 * 5 x 64 points, factor 1.001, 99 connections: every bound is
	 * ceil(1.001 x 100 / 5) = 21. Backend 2 holds 21 (1x its bound),
	 * the others 42 (2x).
	 */
	service_active = 99;
	for (int i = 0; i < NBACKENDS; i++)
		load[i] = 42;
	load[2] = 21;
	push_state(1001);
	for (int i = 0; i < NBACKENDS; i++)
		CU_ASSERT_EQUAL(rs_load_bound(&fx.backends[i], service_active),
				21);
	for (uint32_t c = 0; c < 200; c++) {
		uint32_t src = htonl(0xc6130000u + c);
		struct rs_ring_choice rc;
		int got = ring_fixture_choice(&fx, src, NULL);

		CU_ASSERT_EQUAL(got, replica_choice(src, &rc));
		CU_ASSERT(rc.all_at_bound);
		to2 += got == 2;
	}
	CU_ASSERT_EQUAL(to2, 200);
}

int main(void)
{
	static const struct fixture_test tests[] = {
		{"the bound formula (weights, rounding, off)", test_formula},
		{"random weights/states/sockets/factors/loads: kernel == "
		 "replica, never refused",
		 test_random_histories},
		{"every backend at its bound: least loaded relative to it",
		 test_all_at_bound},
	};

	return fixture_main("steer_bound", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

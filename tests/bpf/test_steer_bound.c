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

#include "bpf_fixture.h"
#include "dataplane.h"
#include "hash.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define NBACKENDS 5
#define VNODES	  16
#define MAX_W	  4
#define SVC	  0
#define STEPS	  300
#define CLIENTS	  100

static struct rs_dataplane dp;
static int fds[NBACKENDS];
static uint64_t cookies[NBACKENDS];
static bool has_socket[NBACKENDS];
static struct rs_backend backends[NBACKENDS];
static int64_t load[NBACKENDS];
static int64_t service_active;
static struct rs_service service;
static struct rs_ring ring;
static const char *const names[NBACKENDS] = {"a", "b", "c", "d", "e"};

static int setup(void)
{
	struct rs_ring_member m[NBACKENDS];
	struct rs_bind_key key;
	struct rs_bind val;

	if (dp_open(&dp, NULL))
		return -1;
	for (int i = 0; i < NBACKENDS; i++) {
		fds[i] = fixture_loopback_socket(AF_INET, SOCK_STREAM,
						 &cookies[i]);
		if (fds[i] < 0 ||
		    dp_set_socket(&dp, rs_socket_slot(i, 0), fds[i]))
			return -1;
		has_socket[i] = true;
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i,
					       VNODES * MAX_W};
		backends[i].state = RS_BACKEND_UP;
		backends[i].active_points = VNODES * MAX_W;
		backends[i].max_points = VNODES * MAX_W;
	}
	service.enabled = 1;
	service.seed = 0xb0a7d;
	service.prefix4 = 32;
	service.prefix6 = 64;
	service.protocol = IPPROTO_TCP;
	service.fallback = RS_FALLBACK_DROP;
	if (ring_build(m, NBACKENDS, service.seed, &ring))
		return -1;
	ring_set_key(&ring, &service);
	if (dp_swap_ring(&dp, SVC, &ring) < 0 ||
	    dp_set_service(&dp, SVC, &service))
		return -1;
	if (fixture_bind_entry(&key, &val, IPPROTO_TCP, AF_INET, "198.18.0.10",
			       32, 80, SVC))
		return -1;
	return dp_sync_binds(&dp, &key, &val, 1);
}

static void teardown(void)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	ring_free(&ring);
	dp_close(&dp);
}

/* The words as the daemon computes them (backends.c) and the loads. */
static void push_state(uint32_t balance_milli)
{
	int lfd = bpf_map__fd(dp.skel->maps.rs_backend_load);
	int sfd = bpf_map__fd(dp.skel->maps.rs_service_load);
	uint32_t total = 0, svc = SVC;
	struct rs_load l;

	for (int i = 0; i < NBACKENDS; i++)
		if (backends[i].state == RS_BACKEND_UP)
			total += backends[i].active_points;
	for (uint32_t i = 0; i < NBACKENDS; i++) {
		backends[i].balance_milli = balance_milli;
		backends[i].bound_points = total;
		CU_ASSERT_EQUAL(dp_set_backend(&dp, i, &backends[i]), 0);
		l.active = load[i];
		CU_ASSERT_EQUAL(bpf_map_update_elem(lfd, &i, &l, BPF_ANY), 0);
	}
	l.active = service_active;
	CU_ASSERT_EQUAL(bpf_map_update_elem(sfd, &svc, &l, BPF_ANY), 0);
}

/* The backend the kernel chose for @src, -1 for none. */
static int kernel_choice(uint32_t src)
{
	struct bpf_sk_lookup ctx = {.family = AF_INET,
				    .protocol = IPPROTO_TCP,
				    .remote_ip4 = src,
				    .remote_port = htons(40000),
				    .local_port = 80};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx));

	inet_pton(AF_INET, "198.18.0.10", &ctx.local_ip4);
	if (bpf_prog_test_run_opts(bpf_program__fd(dp.skel->progs.steer_lookup),
				   &opts))
		return -2;
	for (int i = 0; i < NBACKENDS; i++)
		if (ctx.cookie && ctx.cookie == cookies[i])
			return i;
	return -1;
}

static int replica_choice(uint32_t src, struct rs_ring_choice *c)
{
	struct rs_ring_view view = {.backends = backends,
				    .has_socket = has_socket,
				    .nbackends = NBACKENDS,
				    .load = load,
				    .service_active = service_active};
	struct rs_affinity_key key;
	uint8_t addr[16] = {0};

	memcpy(addr, &src, sizeof(src));
	rs_affinity_key_build(&key, &service, AF_INET, addr, 0);
	if (ring_lookup(&ring, &view, rs_hash_key(&key, service.seed), c, NULL))
		return -1;
	return (int)c->backend;
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
		uint64_t b = rs_load_bound(&backends[i], service_active);

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
		backends[b].state = RS_BACKEND_DOWN;
	else if (r == 1)
		backends[b].state = RS_BACKEND_DRAIN;
	else
		backends[b].state = RS_BACKEND_UP;
	/* Weight 1..MAX_W, or partway through slow start. */
	backends[b].active_points =
		1 + (uint32_t)(fixture_rand(rng) % (VNODES * MAX_W));
	if (has_socket[b] != (fixture_rand(rng) % 10 != 0)) {
		uint32_t slot = rs_socket_slot(b, 0);

		has_socket[b] = !has_socket[b];
		CU_ASSERT_EQUAL(has_socket[b] ? dp_set_socket(&dp, slot, fds[b])
					      : dp_clear_socket(&dp, slot),
				0);
	}
}

static bool any_usable(void)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (backends[i].state == RS_BACKEND_UP && has_socket[i])
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
			int got = kernel_choice(src);
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
		backends[i].state = RS_BACKEND_UP;
		backends[i].active_points = VNODES * MAX_W;
		if (!has_socket[i]) {
			has_socket[i] = true;
			dp_set_socket(&dp, rs_socket_slot(i, 0), fds[i]);
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
		CU_ASSERT_EQUAL(rs_load_bound(&backends[i], service_active),
				21);
	for (uint32_t c = 0; c < 200; c++) {
		uint32_t src = htonl(0xc6130000u + c);
		struct rs_ring_choice rc;
		int got = kernel_choice(src);

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

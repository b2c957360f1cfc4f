// SPDX-License-Identifier: MIT
/*
 * steer_lookup's trace events (issue 24) under BPF_PROG_TEST_RUN: off by
 * default; each event's backend is the socket the program chose and its
 * reason the situation built (primary, spill past a DOWN or drained
 * owner, spill for load with the owner's load and bound, sticky hit,
 * least loaded, no backend); the filters (service, backend, client
 * prefix, reason) let through exactly their decisions; 1-in-N sampling;
 * the token bucket and a full ring buffer count what they lose.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_fixture.h"
#include "dataplane.h"
#include "hash.h"
#include "ring_fixture.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define NB	 4
#define VNODES	 64
#define SVC	 RING_FIXTURE_SVC
#define CLIENTS	 64
#define MAX_EVTS 4096

static struct ring_fixture fx;
static const char *const names[NB] = {"a", "b", "c", "d"};
static struct ring_buffer *rb;
static struct rs_trace_event evts[MAX_EVTS];
static int nevts;

static int on_event(void *ctx, void *data, size_t len)
{
	(void)ctx;
	if (len == sizeof(struct rs_trace_event) && nevts < MAX_EVTS)
		memcpy(&evts[nevts++], data, len);
	return 0;
}

static int setup(void)
{
	cpu_set_t one;

	/*
	 * One CPU for the whole run: the bucket and the sampling counter are
	 * per CPU, and the cases count exactly.
	 */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -1;
	if (ring_fixture_setup(&fx, names, NB, VNODES, 0x7ace))
		return -1;
	rb = ring_buffer__new(bpf_map__fd(fx.dp.skel->maps.rs_trace_events),
			      on_event, NULL, NULL);
	return rb ? 0 : -1;
}

static void teardown(void)
{
	ring_buffer__free(rb);
	ring_fixture_teardown(&fx);
}

static uint32_t client(int k)
{
	return htonl(0xc6120100u + (uint32_t)k); /* 198.18.1.k */
}

/* The filters @t (enabled), with the counters and buffer emptied. */
static void trace_set(const struct rs_trace_ctl *t)
{
	int cfd = bpf_map__fd(fx.dp.skel->maps.rs_trace_ctl);
	int sfd = bpf_map__fd(fx.dp.skel->maps.rs_trace_cpu);
	int ncpu = libbpf_num_possible_cpus();
	struct rs_trace_cpu *zero = calloc(ncpu, sizeof(*zero));
	__u32 k = 0;

	CU_ASSERT_EQUAL(bpf_map_update_elem(cfd, &k, t, BPF_ANY), 0);
	CU_ASSERT_EQUAL(bpf_map_update_elem(sfd, &k, zero, BPF_ANY), 0);
	free(zero);
	ring_buffer__consume(rb);
	nevts = 0;
}

static struct rs_trace_ctl trace_all(void)
{
	return (struct rs_trace_ctl){
		.enabled = 1, .service = RS_NONE, .backend = RS_NONE};
}

static struct rs_trace_cpu counters(void)
{
	struct rs_trace_cpu c = {0};

	CU_ASSERT_EQUAL(
		fixture_percpu_sum(bpf_map__fd(fx.dp.skel->maps.rs_trace_cpu),
				   0, &c, sizeof(c)),
		0);
	return c;
}

static void push_backends(void)
{
	for (int i = 0; i < NB; i++)
		CU_ASSERT_EQUAL(dp_set_backend(&fx.dp, i, &fx.backends[i]), 0);
}

static void reset_backends(void)
{
	for (int i = 0; i < NB; i++) {
		fx.backends[i].state = RS_BACKEND_UP;
		fx.backends[i].balance_milli = 0;
		fx.backends[i].bound_points = 0;
	}
	push_backends();
}

/* The replica's primary (owner with every backend UP) of client @src. */
static uint32_t primary_of(uint32_t src)
{
	struct rs_ring_view view = {.backends = fx.backends, .nbackends = NB};
	struct rs_affinity_key key;
	struct rs_ring_choice c;
	uint8_t addr[16] = {0};

	memcpy(addr, &src, 4);
	rs_affinity_key_build(&key, &fx.service, AF_INET, addr, 0);
	if (ring_lookup(&fx.ring, &view, rs_hash_key(&key, fx.service.seed), &c,
			NULL))
		return RS_NONE;
	return c.primary;
}

/* Decisions for clients 0..@n-1; kernel choices into @chosen. */
static void decide(int n, int *chosen)
{
	for (int k = 0; k < n; k++) {
		int rv;

		chosen[k] = ring_fixture_choice(&fx, client(k), &rv);
		CU_ASSERT(chosen[k] >= -1);
	}
	ring_buffer__consume(rb);
}

/* The event of client @k, or NULL. */
static const struct rs_trace_event *event_of(int k)
{
	uint32_t src = client(k);

	for (int i = 0; i < nevts; i++)
		if (!memcmp(evts[i].client, &src, 4))
			return &evts[i];
	return NULL;
}

static void test_off_by_default(void)
{
	struct rs_trace_ctl off = trace_all();
	int chosen[CLIENTS];

	off.enabled = 0;
	trace_set(&off);
	decide(CLIENTS, chosen);
	CU_ASSERT_EQUAL(nevts, 0);
	CU_ASSERT_EQUAL(counters().matched, 0);
}

/* Every UP: each event is its client's primary, with the whole record. */
static void test_primary_event(void)
{
	struct rs_trace_ctl t = trace_all();
	uint64_t gen = dp_ring_generation(&fx.dp, SVC);
	int chosen[CLIENTS];

	reset_backends();
	trace_set(&t);
	decide(CLIENTS, chosen);
	CU_ASSERT_EQUAL(nevts, CLIENTS);
	for (int k = 0; k < CLIENTS; k++) {
		const struct rs_trace_event *e = event_of(k);
		struct rs_affinity_key key;
		uint8_t addr[16] = {0};
		uint32_t src = client(k), local;

		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		memcpy(addr, &src, 4);
		rs_affinity_key_build(&key, &fx.service, AF_INET, addr, 0);
		inet_pton(AF_INET, "198.18.0.10", &local);
		CU_ASSERT_EQUAL(e->reason, RS_TRACE_PRIMARY);
		CU_ASSERT_EQUAL((int)e->backend, chosen[k]);
		CU_ASSERT_EQUAL(e->primary, primary_of(src));
		CU_ASSERT_EQUAL(e->sticky, RS_NONE);
		CU_ASSERT_EQUAL(e->skip, RS_TRACE_SKIP_NONE);
		CU_ASSERT_EQUAL(e->hash, rs_hash_key(&key, fx.service.seed));
		CU_ASSERT_EQUAL(e->generation, gen);
		CU_ASSERT(e->point >= 1 && e->point <= fx.ring.npoints);
		CU_ASSERT_EQUAL(e->hook, RS_TRACE_HOOK_LOOKUP);
		CU_ASSERT_EQUAL(e->family, AF_INET);
		CU_ASSERT_EQUAL(e->protocol, IPPROTO_TCP);
		CU_ASSERT_EQUAL(e->verdict, SK_PASS);
		CU_ASSERT_EQUAL(e->client_port, 40000);
		CU_ASSERT_EQUAL(e->local_port, 80);
		CU_ASSERT_EQUAL(memcmp(e->local, &local, 4), 0);
		CU_ASSERT(e->ts_ns > 0);
	}
	CU_ASSERT_EQUAL(counters().emitted, CLIENTS);
	CU_ASSERT(gen > 0);
}

/* Backend 0 DOWN, then DRAIN: its clients spill, saying why. */
static void test_spill_down_and_drained(void)
{
	static const struct {
		uint32_t state;
		uint8_t skip;
	} cases[] = {
		{RS_BACKEND_DOWN, RS_TRACE_SKIP_DOWN},
		{RS_BACKEND_DRAIN, RS_TRACE_SKIP_DRAIN},
	};
	struct rs_trace_ctl t = trace_all();
	int chosen[CLIENTS];

	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		int spilled = 0;

		reset_backends();
		fx.backends[0].state = cases[c].state;
		push_backends();
		trace_set(&t);
		decide(CLIENTS, chosen);
		CU_ASSERT_EQUAL(nevts, CLIENTS);
		for (int k = 0; k < CLIENTS; k++) {
			const struct rs_trace_event *e = event_of(k);

			CU_ASSERT_PTR_NOT_NULL_FATAL(e);
			CU_ASSERT_EQUAL((int)e->backend, chosen[k]);
			CU_ASSERT_NOT_EQUAL(e->backend, 0);
			if (e->primary != 0) {
				CU_ASSERT_EQUAL(e->reason, RS_TRACE_PRIMARY);
				continue;
			}
			spilled++;
			CU_ASSERT_EQUAL(e->reason, RS_TRACE_SPILL);
			CU_ASSERT_EQUAL(e->skip, cases[c].skip);
		}
		CU_ASSERT(spilled > 0); /* the case was reached */
	}
	reset_backends();
}

/* Backend 0 at its bound: spill for load, with load and bound. */
static void test_spill_for_load(void)
{
	int lfd = bpf_map__fd(fx.dp.skel->maps.rs_backend_load);
	int sfd = bpf_map__fd(fx.dp.skel->maps.rs_service_load);
	struct rs_trace_ctl t = trace_all();
	struct rs_load busy = {.active = 100}, idle = {.active = 0};
	__u32 svc = SVC;
	int chosen[CLIENTS], spilled = 0;

	for (__u32 i = 0; i < NB; i++) {
		fx.backends[i].balance_milli = 1250;
		fx.backends[i].bound_points = NB * VNODES;
		CU_ASSERT_EQUAL(
			bpf_map_update_elem(lfd, &i, i ? &idle : &busy, 0), 0);
	}
	push_backends();
	CU_ASSERT_EQUAL(bpf_map_update_elem(sfd, &svc, &busy, 0), 0);
	trace_set(&t);
	decide(CLIENTS, chosen);
	for (int k = 0; k < CLIENTS; k++) {
		const struct rs_trace_event *e = event_of(k);

		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		CU_ASSERT_EQUAL((int)e->backend, chosen[k]);
		if (e->primary != 0)
			continue;
		spilled++;
		CU_ASSERT_EQUAL(e->reason, RS_TRACE_SPILL_LOAD);
		CU_ASSERT_EQUAL(e->skip, RS_TRACE_SKIP_BOUND);
		CU_ASSERT_EQUAL(e->load, 100);
		/* ceil(1.25 x 101 x 64 / 256) */
		CU_ASSERT_EQUAL(e->bound, 32);
	}
	CU_ASSERT(spilled > 0);
	/* Every backend at its bound: the least loaded pass decides. */
	for (__u32 i = 0; i < NB; i++)
		CU_ASSERT_EQUAL(bpf_map_update_elem(lfd, &i, &busy, 0), 0);
	trace_set(&t);
	decide(8, chosen);
	CU_ASSERT_EQUAL(nevts, 8);
	for (int i = 0; i < nevts; i++)
		CU_ASSERT_EQUAL(evts[i].reason, RS_TRACE_LEAST_LOADED);
	for (__u32 i = 0; i < NB; i++)
		CU_ASSERT_EQUAL(bpf_map_update_elem(lfd, &i, &idle, 0), 0);
	CU_ASSERT_EQUAL(bpf_map_update_elem(sfd, &svc, &idle, 0), 0);
	reset_backends();
}

/*
 * A sticky service (entries written at the SYN: no steer_sockops here):
 * the second decision is a sticky hit, also on a DRAIN backend; with the
 * entry's backend DOWN the ring decides and the event names the entry.
 */
static void test_sticky(void)
{
	struct rs_trace_ctl t = trace_all();
	int chosen[CLIENTS], first[CLIENTS];
	uint32_t b0;

	reset_backends();
	fx.service.sticky_ttl = 600;
	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&fx.dp, SVC, 1024), 0);
	CU_ASSERT_EQUAL_FATAL(dp_set_service(&fx.dp, SVC, &fx.service), 0);
	trace_set(&t);
	decide(CLIENTS, first);
	for (int k = 0; k < CLIENTS; k++)
		CU_ASSERT_EQUAL(event_of(k)->reason, RS_TRACE_PRIMARY);
	trace_set(&t);
	decide(CLIENTS, chosen);
	for (int k = 0; k < CLIENTS; k++) {
		const struct rs_trace_event *e = event_of(k);

		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		CU_ASSERT_EQUAL(e->reason, RS_TRACE_STICKY);
		CU_ASSERT_EQUAL((int)e->backend, first[k]);
		CU_ASSERT_EQUAL((int)e->sticky, first[k]);
		CU_ASSERT_EQUAL(e->point, 0);
	}
	b0 = (uint32_t)first[0];
	fx.backends[b0].state = RS_BACKEND_DRAIN;
	push_backends();
	trace_set(&t);
	decide(1, chosen);
	CU_ASSERT_EQUAL(event_of(0)->reason, RS_TRACE_STICKY);
	CU_ASSERT_EQUAL(event_of(0)->backend, b0);
	fx.backends[b0].state = RS_BACKEND_DOWN;
	push_backends();
	trace_set(&t);
	decide(1, chosen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event_of(0));
	CU_ASSERT_EQUAL(event_of(0)->sticky, b0);
	CU_ASSERT_EQUAL(event_of(0)->skip, RS_TRACE_SKIP_DOWN);
	CU_ASSERT_NOT_EQUAL(event_of(0)->backend, b0);
	CU_ASSERT_EQUAL((int)event_of(0)->backend, chosen[0]);
	fx.service.sticky_ttl = 0;
	CU_ASSERT_EQUAL(dp_set_service(&fx.dp, SVC, &fx.service), 0);
	reset_backends();
}

static void test_no_backend(void)
{
	struct rs_trace_ctl t = trace_all();
	int chosen[4];

	for (int i = 0; i < NB; i++)
		fx.backends[i].state = RS_BACKEND_DOWN;
	push_backends();
	trace_set(&t);
	decide(4, chosen);
	CU_ASSERT_EQUAL(nevts, 4);
	for (int i = 0; i < nevts; i++) {
		CU_ASSERT_EQUAL(evts[i].reason, RS_TRACE_NO_BACKEND);
		CU_ASSERT_EQUAL(evts[i].backend, RS_NONE);
		CU_ASSERT_EQUAL(evts[i].verdict, SK_DROP); /* fallback drop */
	}
	reset_backends();
}

/* Each filter lets through exactly the decisions it names. */
static void test_filters(void)
{
	struct {
		const char *name;
		struct rs_trace_ctl t;
		int want; /* -1: count computed from the choices */
	} cases[] = {
		{"other service",
		 {.enabled = 1, .service = 7, .backend = RS_NONE},
		 0},
		{"this service",
		 {.enabled = 1, .service = SVC, .backend = RS_NONE},
		 CLIENTS},
		{"backend 2",
		 {.enabled = 1, .service = RS_NONE, .backend = 2},
		 -1},
		{"client /28",
		 {.enabled = 1,
		  .service = RS_NONE,
		  .backend = RS_NONE,
		  .client_family = AF_INET,
		  .client_plen = 28},
		 16},
		{"client IPv6",
		 {.enabled = 1,
		  .service = RS_NONE,
		  .backend = RS_NONE,
		  .client_family = AF_INET6,
		  .client_plen = 64},
		 0},
		{"reason spill",
		 {.enabled = 1,
		  .service = RS_NONE,
		  .backend = RS_NONE,
		  .reason_mask = 1u << RS_TRACE_SPILL},
		 0},
		{"reason primary",
		 {.enabled = 1,
		  .service = RS_NONE,
		  .backend = RS_NONE,
		  .reason_mask = 1u << RS_TRACE_PRIMARY},
		 CLIENTS},
	};
	int chosen[CLIENTS];

	reset_backends();
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		uint32_t net = client(16); /* 198.18.1.16/28: clients 16..31 */
		int want = cases[c].want;

		memcpy(cases[c].t.client, &net, 4);
		trace_set(&cases[c].t);
		decide(CLIENTS, chosen);
		if (want < 0) {
			want = 0;
			for (int k = 0; k < CLIENTS; k++)
				want += chosen[k] == 2;
			CU_ASSERT(want > 0);
			for (int i = 0; i < nevts; i++)
				CU_ASSERT_EQUAL(evts[i].backend, 2);
		}
		if (nevts != want)
			fprintf(stderr, "  %s: %d events, want %d\n",
				cases[c].name, nevts, want);
		CU_ASSERT_EQUAL(nevts, want);
		CU_ASSERT_EQUAL(counters().matched, (uint64_t)want);
	}
}

static void test_sampling(void)
{
	struct rs_trace_ctl t = trace_all();
	int chosen[CLIENTS];

	t.sample = 4;
	trace_set(&t);
	decide(CLIENTS, chosen);
	CU_ASSERT_EQUAL(nevts, CLIENTS / 4);
	CU_ASSERT_EQUAL(counters().matched, CLIENTS);
	CU_ASSERT_EQUAL(counters().lost_rate + counters().lost_full, 0);
}

/* 1 a second, 5 at once: a burst of 64 gets 5 events, 59 counted lost. */
static void test_token_bucket(void)
{
	struct rs_trace_ctl t = trace_all();
	struct rs_trace_cpu c;
	int chosen[CLIENTS];

	t.rate = 1;
	t.burst = 5;
	trace_set(&t);
	decide(CLIENTS, chosen);
	c = counters();
	/* A second boundary within the run may add one token. */
	CU_ASSERT(nevts == 5 || nevts == 6);
	CU_ASSERT_EQUAL(c.emitted, (uint64_t)nevts);
	CU_ASSERT_EQUAL(c.lost_rate, (uint64_t)(CLIENTS - nevts));
}

/* Nobody reading: the buffer fills, and the rest are counted lost. */
static void test_ring_full(void)
{
	struct rs_trace_ctl t = trace_all();
	struct bpf_sk_lookup ctx = {.family = AF_INET,
				    .protocol = IPPROTO_TCP,
				    .remote_ip4 = client(1),
				    .remote_port = htons(40000),
				    .local_port = 80};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 20000);
	struct rs_trace_cpu c;

	inet_pton(AF_INET, "198.18.0.10", &ctx.local_ip4);
	trace_set(&t);
	CU_ASSERT_EQUAL(
		bpf_prog_test_run_opts(
			bpf_program__fd(fx.dp.skel->progs.steer_lookup), &opts),
		0);
	c = counters();
	CU_ASSERT(c.emitted > 1000);
	CU_ASSERT(c.lost_full > 0);
	CU_ASSERT_EQUAL(c.emitted + c.lost_full, 20000);
	ring_buffer__consume(rb);
	CU_ASSERT_EQUAL((uint64_t)nevts,
			c.emitted < MAX_EVTS ? c.emitted : MAX_EVTS);
	/* Off again: nothing more. */
	t.enabled = 0;
	trace_set(&t);
}

int main(void)
{
	static const struct fixture_test tests[] = {
		{"off by default: no event, nothing counted",
		 test_off_by_default},
		{"primary: backend, hash, generation, addresses",
		 test_primary_event},
		{"spill past a DOWN and a drained owner",
		 test_spill_down_and_drained},
		{"spill for load, with load and bound; least loaded",
		 test_spill_for_load},
		{"sticky hit, on DRAIN too; a DOWN entry's backend",
		 test_sticky},
		{"no backend: fallback drop", test_no_backend},
		{"filters: service, backend, client, reason", test_filters},
		{"1-in-N sampling", test_sampling},
		{"token bucket: lost events counted", test_token_bucket},
		{"full ring buffer: lost events counted", test_ring_full},
	};

	return fixture_main("trace", setup, teardown, tests, ARRAY_SIZE(tests));
}

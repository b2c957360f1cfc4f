// SPDX-License-Identifier: MIT
/*
 * The desired state's view (userspace/ringsteerd/state/view.c): a backend's
 * word in rs_backends computed from the state alone, and the all-out rule,
 * driven without a kernel or an event loop.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include <ringsteer/rules.h>

#include "health.h"
#include "view.h"

#define NB 4

/*
 * Two services: "web" (vnodes 100, balance_factor 1.25) with backends
 * a, b, c, and "dns" (vnodes 10) with d. All UP, healthy, with a socket,
 * weight 1 and built at it.
 */
static struct rs_service_conf svcs[2];
static struct rs_backend_conf bcs[NB];
static struct svc_rt svc_rts[2];
static struct be_rt bes[NB];
static struct rs_state st;

static void state_reset(void)
{
	static const char *const names[NB] = {"a", "b", "c", "d"};

	memset(svcs, 0, sizeof(svcs));
	memset(bcs, 0, sizeof(bcs));
	memset(svc_rts, 0, sizeof(svc_rts));
	memset(bes, 0, sizeof(bes));
	strcpy(svcs[0].name, "web");
	svcs[0].vnodes = 100;
	svcs[0].balance_milli = 1250;
	strcpy(svcs[1].name, "dns");
	svcs[1].vnodes = 10;
	svc_rts[0].id = 7;
	svc_rts[1].id = 3;
	for (size_t i = 0; i < NB; i++) {
		strcpy(bcs[i].name, names[i]);
		bcs[i].service = i < 3 ? 0 : 1;
		bcs[i].weight = 1;
		bes[i].idx = i;
		bes[i].id = (uint32_t)(20 + i);
		bes[i].op = RS_OP_UP;
		bes[i].health.up = true;
		bes[i].has_socket = true;
		bes[i].weight = 1;
		bes[i].built_points = i < 3 ? 100 : 10;
	}
	st.stopping = false;
	st.cfg.services = svcs;
	st.cfg.n_services = 2;
	st.cfg.backends = bcs;
	st.cfg.n_backends = NB;
	st.svcs = svc_rts;
	st.bes = bes;
}

static struct rs_backend word(size_t i, double now)
{
	struct rs_backend w;

	view_backend_word(&st, &bes[i], now, &w);
	return w;
}

static void test_state_from_operator_and_health(void)
{
	static const struct {
		enum rs_op_state op;
		bool healthy;
		uint32_t want;
	} cases[] = {
		{RS_OP_UP, true, RS_BACKEND_UP},
		{RS_OP_DRAIN, true, RS_BACKEND_DRAIN},
		{RS_OP_DOWN, true, RS_BACKEND_DOWN},
		{RS_OP_UP, false, RS_BACKEND_DOWN},
		/* A failing drained backend is down: its sticky clients go. */
		{RS_OP_DRAIN, false, RS_BACKEND_DOWN},
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		state_reset();
		bes[1].op = cases[k].op;
		bes[1].health.up = cases[k].healthy;
		CU_ASSERT_EQUAL(word(1, 0).state, cases[k].want);
		CU_ASSERT_EQUAL(word(1, 0).op_state, cases[k].op);
		CU_ASSERT_EQUAL(word(1, 0).health, cases[k].healthy);
	}
}

static void test_word_names_its_ids_and_points(void)
{
	struct rs_backend w;

	state_reset();
	w = word(3, 0);
	CU_ASSERT_STRING_EQUAL(w.name, "d");
	CU_ASSERT_EQUAL(w.service, 3); /* the service's data-plane id */
	CU_ASSERT_EQUAL(w.max_points, 10);
	CU_ASSERT_EQUAL(w.active_points, 10);
	/* No balance_factor: no bound. */
	CU_ASSERT_EQUAL(w.balance_milli, 0);
	CU_ASSERT_EQUAL(w.bound_points, 0);
}

static void test_slow_start_ramps_with_the_clock(void)
{
	uint32_t half = slow_start_points(100, 5000, 10000);

	state_reset();
	bcs[0].health.slow_start_ms = 10000;
	bes[0].up_since = 100.0;
	CU_ASSERT(half > 0 && half < 100);
	CU_ASSERT_EQUAL(word(0, 105.0).active_points, half);
	/* Pure: the same state at the same time gives the same word. */
	CU_ASSERT_EQUAL(word(0, 105.0).active_points, half);
	CU_ASSERT_EQUAL(word(0, 111.0).active_points, 100);
	/* up_since 0: not ramping, whatever the window. */
	bes[0].up_since = 0;
	CU_ASSERT_EQUAL(word(0, 105.0).active_points, 100);
}

static void test_weight_above_the_built_points(void)
{
	state_reset();
	/* An operator's weight 3: 300 points wanted, 100 built. */
	bes[2].weight = 3;
	bes[2].weight_override = true;
	CU_ASSERT_EQUAL(view_full_points(&st, &bes[2]), 300);
	CU_ASSERT_EQUAL(word(2, 0).active_points, 100);
	CU_ASSERT_EQUAL(word(2, 0).max_points, 100);
	CU_ASSERT_EQUAL(word(2, 0).weight, 3);
	CU_ASSERT(word(2, 0).weight_set);
	/* Built above the weight (a weight lowered): the weight's points. */
	bes[2].weight = 0;
	CU_ASSERT_EQUAL(word(2, 0).active_points, 0);
	CU_ASSERT_EQUAL(word(2, 0).max_points, 100);
}

static void test_bound_counts_up_backends_of_its_service(void)
{
	state_reset();
	CU_ASSERT_EQUAL(word(0, 0).balance_milli, 1250);
	CU_ASSERT_EQUAL(word(0, 0).bound_points, 300);
	/* A drained backend takes no new clients: out of the bound. */
	bes[1].op = RS_OP_DRAIN;
	CU_ASSERT_EQUAL(word(0, 0).bound_points, 200);
	CU_ASSERT_EQUAL(word(1, 0).bound_points, 200);
	/* Slow start counts what is in use, not the weight. */
	bcs[2].health.slow_start_ms = 10000;
	bes[2].up_since = 100.0;
	CU_ASSERT_EQUAL(word(0, 105.0).bound_points,
			100 + slow_start_points(100, 5000, 10000));
}

static void test_takers_and_the_all_out_rule(void)
{
	state_reset();
	CU_ASSERT_EQUAL(view_service_takers(&st, 0, 0), 3);
	CU_ASSERT_EQUAL(view_service_takers(&st, 1, 0), 1);
	bes[0].op = RS_OP_DRAIN;
	bes[1].weight = 0;
	CU_ASSERT(!view_takes_new(&st, 0, 0));
	CU_ASSERT(!view_takes_new(&st, 1, 0));
	CU_ASSERT_EQUAL(view_service_takers(&st, 0, 0), 1);
	/* No socket: nothing to hand a connection to... */
	bes[2].has_socket = false;
	CU_ASSERT_EQUAL(view_service_takers(&st, 0, 0), 0);
	/* ...unless not known yet (a reload's new backend). */
	bes[2].socket_unknown = true;
	CU_ASSERT_EQUAL(view_service_takers(&st, 0, 0), 1);
	/* The other service is untouched. */
	CU_ASSERT_EQUAL(view_service_takers(&st, 1, 0), 1);
}

/*
 * restart_grace: the slots held for a backend (its word's held_slots)
 * while its socket is there and for the grace after it went; a UDP
 * service's only, and none once the daemon is stopping (its last words
 * clear them); such a backend still counts as taking new clients.
 */
static void test_held_slots_follow_the_grace(void)
{
	static const struct {
		const char *what;
		uint8_t protocol;
		uint32_t grace_ms;
		bool has_socket;
		double gone_since; /* now is 100 */
		bool stopping;
		uint32_t want;
	} cases[] = {
		{"udp, socket there", IPPROTO_UDP, 5000, true, 0, false, 3},
		{"udp, gone 1 s ago", IPPROTO_UDP, 5000, false, 99, false, 3},
		{"udp, gone 6 s ago", IPPROTO_UDP, 5000, false, 94, false, 0},
		{"udp, no grace", IPPROTO_UDP, 0, true, 0, false, 0},
		{"tcp: never", IPPROTO_TCP, 5000, false, 99, false, 0},
		{"udp, never had one", IPPROTO_UDP, 5000, false, 0, false, 0},
		{"udp, socket there, stopping", IPPROTO_UDP, 5000, true, 0,
		 true, 0},
		{"udp, gone 1 s ago, stopping", IPPROTO_UDP, 5000, false, 99,
		 true, 0},
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct rs_addr_rt *rt = &bes[3].sock.addr[0];

		state_reset();
		svcs[1].protocol = cases[k].protocol;
		svcs[1].restart_grace_ms = cases[k].grace_ms;
		bcs[3].n_addrs = 1;
		bes[3].has_socket = rt->has_socket = cases[k].has_socket;
		rt->gone_since = cases[k].gone_since;
		st.stopping = cases[k].stopping;
		/* A dual-stack socket: both slots; "never had one": none. */
		rt->held_mask =
			cases[k].has_socket || cases[k].gone_since ? 3 : 0;
		if (word(3, 100).held_slots != cases[k].want)
			fprintf(stderr, "  %s: held_slots %u, want %u\n",
				cases[k].what, word(3, 100).held_slots,
				cases[k].want);
		CU_ASSERT_EQUAL(word(3, 100).held_slots, cases[k].want);
		CU_ASSERT_EQUAL(view_restarting(&st, &bes[3], 100),
				!cases[k].has_socket && cases[k].want != 0);
		/* Restarting, its clients wait: it still takes new ones. */
		CU_ASSERT_EQUAL(view_takes_new(&st, 3, 100),
				cases[k].has_socket || cases[k].want != 0);
	}
}

static void test_find_by_name(void)
{
	state_reset();
	CU_ASSERT_EQUAL(view_find_backend(&st, "c"), 2);
	CU_ASSERT_EQUAL(view_find_backend(&st, "nope"), -ENOENT);
	CU_ASSERT_EQUAL(view_find_service(&st, "dns"), 1);
	CU_ASSERT(view_find_service(&st, "nope") < 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("view", NULL, NULL);
	CU_add_test(s, "state from operator and health",
		    test_state_from_operator_and_health);
	CU_add_test(s, "the word names its ids and points",
		    test_word_names_its_ids_and_points);
	CU_add_test(s, "slow start ramps with the clock",
		    test_slow_start_ramps_with_the_clock);
	CU_add_test(s, "a weight above the built points",
		    test_weight_above_the_built_points);
	CU_add_test(s, "the bound counts the UP backends of its service",
		    test_bound_counts_up_backends_of_its_service);
	CU_add_test(s, "takers and the all-out rule",
		    test_takers_and_the_all_out_rule);
	CU_add_test(s, "held slots follow the restart grace",
		    test_held_slots_follow_the_grace);
	CU_add_test(s, "find by name", test_find_by_name);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

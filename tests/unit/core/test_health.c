// SPDX-License-Identifier: MIT
/* Health state machine (rise/fall) and the slow-start ramp. */
#include <CUnit/Basic.h>

#include "health.h"

static const struct rs_health_conf conf = {.rise = 2, .fall = 3};

static enum rs_health_event feed(struct rs_health *h, const char *pattern)
{
	enum rs_health_event last = RS_HEALTH_NO_CHANGE, ev;

	for (const char *p = pattern; *p; p++) {
		ev = health_on_result(h, &conf, *p == '+', "refused", 1.0);
		if (ev != RS_HEALTH_NO_CHANGE)
			last = ev;
	}
	return last;
}

static void test_goes_down_after_fall(void)
{
	struct rs_health h;

	health_init(&h, true);
	CU_ASSERT_EQUAL(health_on_result(&h, &conf, false, "refused", 0),
			RS_HEALTH_NO_CHANGE);
	CU_ASSERT_EQUAL(health_on_result(&h, &conf, false, "timeout", 0),
			RS_HEALTH_NO_CHANGE);
	CU_ASSERT_TRUE(h.up);
	CU_ASSERT_EQUAL(health_on_result(&h, &conf, false, "status 503", 0),
			RS_HEALTH_WENT_DOWN);
	CU_ASSERT_FALSE(h.up);
	CU_ASSERT_STRING_EQUAL(h.last_result, "status 503");
	CU_ASSERT_EQUAL(h.transitions, 1);
	CU_ASSERT_EQUAL(h.checks, 3);
}

static void test_comes_back_after_rise(void)
{
	struct rs_health h;

	health_init(&h, false);
	CU_ASSERT_EQUAL(feed(&h, "+"), RS_HEALTH_NO_CHANGE);
	CU_ASSERT_FALSE(h.up);
	CU_ASSERT_EQUAL(feed(&h, "+"), RS_HEALTH_WENT_UP);
	CU_ASSERT_TRUE(h.up);
	CU_ASSERT_STRING_EQUAL(h.last_result, "ok");
}

/* Failures interleaved with successes never reach fall. */
static void test_flapping_below_thresholds_changes_nothing(void)
{
	struct rs_health h;

	health_init(&h, true);
	CU_ASSERT_EQUAL(feed(&h, "--+--+--+--+-+--+"), RS_HEALTH_NO_CHANGE);
	CU_ASSERT_TRUE(h.up);
	health_init(&h, false);
	CU_ASSERT_EQUAL(feed(&h, "+-+-+-+-+-"), RS_HEALTH_NO_CHANGE);
	CU_ASSERT_FALSE(h.up);
	CU_ASSERT_EQUAL(h.transitions, 0);
}

static void test_counters_reset_on_transition(void)
{
	struct rs_health h;

	health_init(&h, true);
	CU_ASSERT_EQUAL(feed(&h, "---"), RS_HEALTH_WENT_DOWN);
	/* One success then failures: still needs rise in a row. */
	CU_ASSERT_EQUAL(feed(&h, "+-+"), RS_HEALTH_NO_CHANGE);
	CU_ASSERT_EQUAL(feed(&h, "+"), RS_HEALTH_WENT_UP);
	CU_ASSERT_EQUAL(feed(&h, "--"), RS_HEALTH_NO_CHANGE);
	CU_ASSERT_TRUE(h.up);
	CU_ASSERT_EQUAL(h.transitions, 2);
}

/* Unproven: up at once, out at its first failure, then rise as usual. */
static void test_unproven_start(void)
{
	struct rs_health h;
	struct rs_health_conf none = conf;

	health_init_unproven(&h, &conf);
	CU_ASSERT_TRUE(h.up);
	CU_ASSERT_EQUAL(feed(&h, "-"), RS_HEALTH_WENT_DOWN);
	health_init_unproven(&h, &conf);
	CU_ASSERT_EQUAL(feed(&h, "+--"), RS_HEALTH_NO_CHANGE);
	CU_ASSERT_TRUE(h.up);
	none.type = RS_CHECK_NONE;
	health_init_unproven(&h, &none);
	CU_ASSERT_EQUAL(h.failures, 0);
}

static void test_slow_start_ramp(void)
{
	/* No window, or past it: full weight. */
	CU_ASSERT_EQUAL(slow_start_points(160, 0, 0), 160);
	CU_ASSERT_EQUAL(slow_start_points(160, 10000, 10000), 160);
	CU_ASSERT_EQUAL(slow_start_points(160, 99999, 10000), 160);
	/* Starts at the floor, never zero. */
	CU_ASSERT_EQUAL(slow_start_points(160, 0, 10000), 8);
	CU_ASSERT_EQUAL(slow_start_points(3, 0, 10000), 1);
	CU_ASSERT_EQUAL(slow_start_points(0, 0, 10000), 0);
	/* Linear in between, never decreasing. */
	CU_ASSERT_EQUAL(slow_start_points(160, 5000, 10000), 80);
	CU_ASSERT_EQUAL(slow_start_points(160, 2500, 10000), 40);
	for (uint64_t t = 0, prev = 0; t <= 10000; t += 100) {
		uint32_t p = slow_start_points(160, t, 10000);

		CU_ASSERT(p >= prev);
		prev = p;
	}
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("health", NULL, NULL);
	CU_add_test(s, "DOWN after fall failures", test_goes_down_after_fall);
	CU_add_test(s, "UP after rise successes", test_comes_back_after_rise);
	CU_add_test(s, "flapping below rise/fall changes nothing",
		    test_flapping_below_thresholds_changes_nothing);
	CU_add_test(s, "streaks reset on transition",
		    test_counters_reset_on_transition);
	CU_add_test(s, "unproven start", test_unproven_start);
	CU_add_test(s, "slow-start ramp", test_slow_start_ramp);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

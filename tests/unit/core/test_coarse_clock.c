// SPDX-License-Identifier: MIT
/*
 * The sticky TTLs' clock (bpf/lib/coarse_clock.bpf.h), run in the kernel
 * through BPF_PROG_TEST_RUN: a reading from the per-jiffy cache is never
 * ahead of CLOCK_MONOTONIC, lags it by a bounded amount, never goes back,
 * and keeps moving with it. A cache stuck at one reading would keep every
 * sticky entry alive forever; one that cached a stale coarse time would
 * hold it for a whole jiffy.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringsteer/abi.h>

#include "test_clock_probe.skel.h"

#define MS 1000000ull
/*
 * A tick is 10 ms at the slowest HZ (100): the cache lags by about one.
 * The bound is wider so that a shared host's steal time (jiffies updated
 * late) cannot fail the test; a stuck or wrong cache is off by far more.
 */
#define LAG_MAX_NS (250 * MS)
#define SPAN_NS	   (600 * MS)

static struct test_clock_probe_bpf *skel;

static struct rs_clock_probe probe_run(void)
{
	struct rs_clock_probe p = {0};
	/* A syscall program's context is written back to ctx_in. */
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &p,
		    .ctx_size_in = sizeof(p));
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.clock_probe),
				     &opts);
	CU_ASSERT_EQUAL_FATAL(err, 0);
	CU_ASSERT_EQUAL(opts.retval, 0);
	return p;
}

static void test_cached_reading_follows_the_clock(void)
{
	struct rs_clock_probe first = probe_run(), p = first;
	uint64_t prev = first.cached_ns;
	int runs = 0, ahead = 0, late = 0, back = 0;
	bool moved;

	/* Runs 200 µs apart over SPAN_NS: hundreds of jiffies. */
	while (p.before_ns - first.before_ns < SPAN_NS) {
		usleep(200);
		p = probe_run();
		runs++;
		ahead += p.cached_ns > p.after_ns;
		late += p.cached_ns + LAG_MAX_NS < p.before_ns;
		back += p.cached_ns < prev;
		prev = p.cached_ns;
	}
	CU_ASSERT(runs > 100);
	CU_ASSERT_EQUAL(ahead, 0);
	CU_ASSERT_EQUAL(late, 0);
	CU_ASSERT_EQUAL(back, 0);
	/* It moved with the clock, not once and then never. */
	moved = p.cached_ns - first.cached_ns + LAG_MAX_NS >=
		p.before_ns - first.before_ns;
	CU_ASSERT(moved);
	if (late || !moved)
		fprintf(stderr,
			"  cached reading %llu ns behind after %d runs "
			"(%d runs over %llu ms behind)\n",
			(unsigned long long)(p.before_ns - p.cached_ns), runs,
			late, (unsigned long long)(LAG_MAX_NS / MS));
}

/* Back-to-back runs inside one jiffy read the cache, not the clock. */
static void test_runs_in_one_jiffy_share_a_reading(void)
{
	struct rs_clock_probe a, b;
	int shared = 0;

	for (int i = 0; i < 200 && !shared; i++) {
		a = probe_run();
		b = probe_run();
		/* Microseconds apart: the same jiffy, nearly always. */
		shared = a.cached_ns == b.cached_ns;
	}
	CU_ASSERT(shared);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	skel = test_clock_probe_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr,
			"test_coarse_clock: cannot load the BPF clock "
			"probe (root and a BPF-capable kernel needed)\n");
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("coarse_clock", NULL, NULL);
	CU_add_test(s,
		    "cached reading: never ahead, bounded lag, never back, "
		    "moves with CLOCK_MONOTONIC",
		    test_cached_reading_follows_the_clock);
	CU_add_test(s, "runs within one jiffy share one reading",
		    test_runs_in_one_jiffy_share_a_reading);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	test_clock_probe_bpf__destroy(skel);
	return failed ? 1 : 0;
}

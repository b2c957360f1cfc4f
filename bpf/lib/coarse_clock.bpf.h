/* SPDX-License-Identifier: MIT */
/*
 * The sticky TTLs' clock: CLOCK_MONOTONIC_COARSE, read through a helper
 * call only at the first run of each jiffy. bpf_jiffies64() is inlined by
 * the JIT (one load), and a helper call costs a sticky hit about 10 ns on
 * hosts whose every return goes through a mitigation thunk (issue 21:
 * 137-145 ns with bpf_ktime_get_coarse_ns() on every hit, 124-131 without,
 * decision_cost at 16 x 1024). The coarse clock moves only when the tick
 * updates the timekeeper, as jiffies do, so one reading serves the jiffy.
 *
 * The cache is this object's .bss, shared by the CPUs and written without
 * a lock: a reader may pair a jiffy with the previous tick's time (the two
 * words are not written at once, and jiffies move just before the
 * timekeeper within a tick). A time read here therefore lags the coarse
 * clock by at most about one tick, and CLOCK_MONOTONIC by about two; the
 * sticky rule takes entries stamped "in the future" by another CPU as
 * fresh (rs_sticky_live()), and a TTL is whole seconds.
 */
#ifndef RS_COARSE_CLOCK_BPF_H
#define RS_COARSE_CLOCK_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static volatile __u64 rs_clock_jiffies, rs_clock_ns;

static __always_inline __u64 rs_coarse_now(void)
{
	__u64 j = bpf_jiffies64(), now;

	if (j == rs_clock_jiffies)
		return rs_clock_ns;
	now = bpf_ktime_get_coarse_ns();
	rs_clock_ns = now;
	rs_clock_jiffies = j;
	return now;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The sticky TTLs' clock: CLOCK_MONOTONIC read through a helper call only
 * at the first run of each jiffy, and that reading served for the rest of
 * it. bpf_jiffies64() is inlined by the JIT (one load), while a helper
 * call costs a sticky hit about 10 ns on hosts whose every return goes
 * through a mitigation thunk (issue 21: 137-145 ns with
 * bpf_ktime_get_coarse_ns() on every hit, 124-131 with this, decision_cost
 * at 16 x 1024). A TTL is whole seconds: a reading up to a tick old is as
 * good as the coarse clock was.
 *
 * The precise clock, not the coarse one, is read at the jiffy's start:
 * jiffies move just before the timekeeper within a tick (and by many ticks
 * at once when a CPU leaves idle), so a coarse reading taken in between
 * could be the old time, and the cache would keep it for the whole jiffy.
 *
 * The cache is this object's .bss, shared by the CPUs and written without
 * a lock, so a reader may pair a jiffy with another CPU's reading of the
 * jiffy before: a time read here lags CLOCK_MONOTONIC by about a tick, two
 * at worst. The sticky rule takes entries stamped "in the future" by
 * another CPU or by userspace as fresh (rs_sticky_live()).
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
	now = bpf_ktime_get_ns();
	rs_clock_ns = now;
	rs_clock_jiffies = j;
	return now;
}

#endif

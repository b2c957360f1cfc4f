// SPDX-License-Identifier: MIT
/* Test-only program: exposes the sticky TTLs' cached clock. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringsteer/abi.h>

#include "coarse_clock.bpf.h"

SEC("syscall")
int clock_probe(struct rs_clock_probe *probe)
{
	probe->before_ns = bpf_ktime_get_ns();
	probe->cached_ns = rs_coarse_now();
	probe->after_ns = bpf_ktime_get_ns();
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

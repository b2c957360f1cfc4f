// SPDX-License-Identifier: MIT
/* Test-only program: exposes the data plane's XXH64 to BPF_PROG_TEST_RUN. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xxh64.bpf.h"

SEC("syscall")
int hash_probe(struct rs_hash_probe *probe)
{
	struct rs_affinity_key key __attribute__((aligned(8)));

	__builtin_memcpy(&key, &probe->key, sizeof(key));
	probe->hash = rs_xxh64_key(&key, probe->seed);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

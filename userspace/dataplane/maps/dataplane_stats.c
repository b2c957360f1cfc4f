// SPDX-License-Identifier: MIT
/*
 * The programs count per CPU, so that counting needs no atomics; readers
 * want one number, so the sum over CPUs is taken here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane_internal.h"

static int percpu_sum(struct bpf_map *map, uint32_t id, void *out, size_t words)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals, *sum = out;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu * words, sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	memset(out, 0, words * sizeof(__u64));
	if (bpf_map_lookup_elem(bpf_map__fd(map), &id, vals)) {
		int err = -errno;

		free(vals);
		return err;
	}
	for (int c = 0; c < ncpu; c++)
		for (size_t w = 0; w < words; w++)
			sum[w] += vals[(size_t)c * words + w];
	free(vals);
	return 0;
}

int dp_backend_stats(struct rs_dataplane *dp, uint32_t id,
		     struct rs_backend_stats *out)
{
	return percpu_sum(dp->skel->maps.rs_backend_stats, id, out,
			  sizeof(*out) / sizeof(__u64));
}

int dp_service_stats(struct rs_dataplane *dp, uint32_t id,
		     struct rs_service_stats *out)
{
	return percpu_sum(dp->skel->maps.rs_service_stats, id, out,
			  sizeof(*out) / sizeof(__u64));
}

/*
 * The load gauge is one shared value per id (struct rs_load), counted with
 * atomics by steer_sockops: read as is, nothing to sum.
 */
static int load_read(struct bpf_map *map, uint32_t id, int64_t *active)
{
	struct rs_load l = {0};

	*active = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(map), &id, &l))
		return -errno;
	*active = l.active;
	return 0;
}

int dp_backend_load(struct rs_dataplane *dp, uint32_t id, int64_t *active)
{
	return load_read(dp->skel->maps.rs_backend_load, id, active);
}

int dp_service_load(struct rs_dataplane *dp, uint32_t id, int64_t *active)
{
	return load_read(dp->skel->maps.rs_service_load, id, active);
}

int dp_fleet_stats(struct rs_dataplane *dp, struct rs_fleet_stats *out)
{
	return percpu_sum(dp->skel->maps.rs_fleet_stats, 0, out,
			  sizeof(*out) / sizeof(__u64));
}

int dp_trace_stats(struct rs_dataplane *dp, struct rs_trace_cpu *out)
{
	return percpu_sum(dp->skel->maps.rs_trace_cpu, 0, out,
			  sizeof(*out) / sizeof(__u64));
}

int dp_trace_ctl(struct rs_dataplane *dp, struct rs_trace_ctl *out)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_trace_ctl), &zero,
				out))
		return -errno;
	return 0;
}

int dp_trace_off(struct rs_dataplane *dp, __u32 owner)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_trace_ctl);
	struct rs_trace_ctl t;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &t))
		return -errno;
	if (!t.enabled || t.owner != owner)
		return -ESTALE;
	t.enabled = 0;
	return bpf_map_update_elem(fd, &zero, &t, BPF_ANY) ? -errno : 0;
}

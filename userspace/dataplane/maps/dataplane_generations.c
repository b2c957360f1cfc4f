// SPDX-License-Identifier: MIT
/*
 * Generations (abi_maps.h): every socket of a generations backend in
 * rs_gen_sockets by its cookie, each slot's working cookie in
 * rs_gen_working, and the flows' table, rs_udp_flows, which the daemon
 * sweeps of idle entries and counts per generation. Like rs_sockets, the
 * SOCKHASH holds its own reference: a socket that closes leaves it by
 * itself, and its flows then go to the working socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ringsteer/rules.h>

#include "dataplane_internal.h"
#include "log.h"

int dp_set_gen_socket(struct rs_dataplane *dp, uint64_t cookie, int sock_fd)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_gen_sockets);
	__u64 value = (__u64)sock_fd;

	if (bpf_map_update_elem(fd, &cookie, &value, BPF_ANY))
		return -errno;
	return 0;
}

int dp_set_gen_working(struct rs_dataplane *dp, uint32_t slot, uint64_t cookie)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_gen_working);

	if (bpf_map_update_elem(fd, &slot, &cookie, BPF_ANY))
		return -errno;
	return 0;
}

#define SWEEP_BATCH 256

/* One batch of keys read: the idle ones of it deleted. */
static size_t sweep_batch(int fd, const struct rs_udp_flow_key *keys,
			  const struct rs_udp_flow *vals, uint32_t n,
			  uint32_t now_s, const uint32_t *idle_s,
			  struct dp_flow_count *count)
{
	size_t deleted = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t b = vals[i].backend;
		uint32_t idle =
			b < RS_MAX_BACKENDS && idle_s[b] ? idle_s[b] : 125;

		if (rs_gen_flow_idle(vals[i].seen, now_s, idle)) {
			deleted += !bpf_map_delete_elem(fd, &keys[i]);
			continue;
		}
		if (count && count->n < count->max) {
			size_t k = 0;

			while (k < count->n &&
			       (count->c[k].backend != b ||
				count->c[k].cookie != vals[i].cookie))
				k++;
			if (k == count->n) {
				count->c[k].backend = b;
				count->c[k].cookie = vals[i].cookie;
				count->c[k].flows = 0;
				count->n++;
			}
			count->c[k].flows++;
		}
	}
	return deleted;
}

int dp_sweep_flows(struct rs_dataplane *dp, uint32_t now_s,
		   const uint32_t *idle_s, struct dp_flow_count *count)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_udp_flows);
	struct rs_udp_flow_key keys[SWEEP_BATCH];
	struct rs_udp_flow vals[SWEEP_BATCH];
	__u64 in = 0, out = 0;
	size_t deleted = 0;
	bool first = true;

	if (count)
		count->n = 0;
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 n = SWEEP_BATCH;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out,
					       keys, vals, &n, &opts);

		if (err && errno != ENOENT) {
			err = -errno;
			rs_err("bpf: reading rs_udp_flows failed: %s",
			       strerror(-err));
			return err;
		}
		deleted += sweep_batch(fd, keys, vals, n, now_s, idle_s, count);
		if (err)
			break;
		in = out;
		first = false;
	}
	return (int)deleted;
}

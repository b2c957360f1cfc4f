// SPDX-License-Identifier: MIT
/*
 * Fleet tables (abi.h) are written like rings: whole, into a fresh inner
 * map, then swapped into rs_fleet with one update, so steer_tc sees the old
 * table or the new one. The table it replaces moves to the previous slot
 * first (the second chance asks it), unless only the version changed.
 * rs_fleet_peers, who may send us encapsulated packets, always holds the
 * members of both tables: new addresses are added before the swap, stale
 * ones removed after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"

static int fleet_map_create(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int fd;

	dp_inner_map_btf(dp, "rs_fleet_slot", &opts);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rs_fleet_table", sizeof(__u32),
			    sizeof(struct rs_fleet_slot), RS_FLEET_SLOTS,
			    &opts);
	if (fd < 0) {
		fd = -errno;
		rs_err("bpf: cannot create a fleet table: %s", strerror(-fd));
	}
	return fd;
}

static int fleet_map_fill(int fd, const struct rs_fleet_slot *slots)
{
	__u32 count = RS_FLEET_SLOTS, *keys = calloc(count, sizeof(*keys));
	int err = 0;

	if (!keys)
		return -ENOMEM;
	for (__u32 i = 0; i < count; i++)
		keys[i] = i;
	if (bpf_map_update_batch(fd, keys, slots, &count, NULL)) {
		err = -errno;
		rs_err("bpf: filling a fleet table failed: %s", strerror(-err));
	}
	free(keys);
	return err;
}

/* Member addresses of the table in slot @which into @addrs (up to max). */
static size_t table_members(struct rs_dataplane *dp, __u32 which, __u32 *addrs,
			    size_t max)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, which);
	struct rs_fleet_slot s;
	__u32 zero = 0;
	size_t n = 0;

	if (fd < 0)
		return 0;
	if (!bpf_map_lookup_elem(fd, &zero, &s)) {
		__u32 nm = s.hdr.nmembers;

		for (__u32 i = 1;
		     i <= nm && i <= RS_FLEET_MAX_MEMBERS && n < max; i++)
			if (!bpf_map_lookup_elem(fd, &i, &s) && s.member.addr)
				addrs[n++] = s.member.addr;
	}
	close(fd);
	return n;
}

static bool in_list(const __u32 *a, size_t n, __u32 v)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] == v)
			return true;
	return false;
}

/* rs_fleet_peers := members of the current and the previous table. */
static void sync_peers(struct rs_dataplane *dp, bool add_only)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_fleet_peers);
	__u32 want[2 * RS_FLEET_MAX_MEMBERS], key, next,
		stale[2 * RS_FLEET_MAX_MEMBERS];
	size_t n, ns = 0;
	struct rs_fleet_peer peer = {.member = RS_NONE};
	void *prev = NULL;

	n = table_members(dp, RS_FLEET_CURRENT, want, RS_FLEET_MAX_MEMBERS);
	n += table_members(dp, RS_FLEET_PREVIOUS, want + n,
			   RS_FLEET_MAX_MEMBERS);
	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(fd, &want[i], &peer, BPF_ANY);
	if (add_only)
		return;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!in_list(want, n, key) && ns < 2 * RS_FLEET_MAX_MEMBERS)
			stale[ns++] = key;
	}
	for (size_t i = 0; i < ns; i++)
		bpf_map_delete_elem(fd, &stale[i]);
}

int dp_fleet_install(struct rs_dataplane *dp, const struct rs_fleet_slot *slots,
		     bool rotate)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_fleet), fd, old, err;
	__u32 cur = RS_FLEET_CURRENT, prev = RS_FLEET_PREVIOUS;
	int peers = bpf_map__fd(dp->skel->maps.rs_fleet_peers);
	struct rs_fleet_peer peer = {.member = RS_NONE};

	fd = fleet_map_create(dp);
	if (fd < 0)
		return fd;
	err = fleet_map_fill(fd, slots);
	if (err)
		goto out;
	/* The newcomers may send to us as soon as the table names them. */
	for (__u32 i = 0; i < slots[0].hdr.nmembers && i < RS_FLEET_MAX_MEMBERS;
	     i++)
		if (slots[i + 1].member.addr)
			bpf_map_update_elem(peers, &slots[i + 1].member.addr,
					    &peer, BPF_ANY);
	old = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, cur);
	if (rotate && old >= 0 &&
	    bpf_map_update_elem(outer, &prev, &old, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: keeping the previous fleet table failed: %s",
		       strerror(-err));
	}
	if (old >= 0)
		close(old);
	if (!err && bpf_map_update_elem(outer, &cur, &fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: swapping the fleet table failed: %s",
		       strerror(-err));
	}
	if (!err)
		sync_peers(dp, false);
out:
	close(fd);
	return err;
}

int dp_fleet_clear(struct rs_dataplane *dp)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_fleet);

	for (__u32 i = 0; i < 2; i++)
		if (bpf_map_delete_elem(outer, &i) && errno != ENOENT)
			return -errno;
	sync_peers(dp, false);
	return 0;
}

int dp_fleet_header(struct rs_dataplane *dp, uint32_t which,
		    struct rs_fleet_header *out)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, which);
	struct rs_fleet_slot s;
	__u32 zero = 0;
	int err = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &zero, &s))
		err = -errno;
	else
		*out = s.hdr;
	close(fd);
	return err;
}

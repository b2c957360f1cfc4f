// SPDX-License-Identifier: MIT
/*
 * Fleet tables (abi.h) are written like rings: whole, into a fresh inner
 * map, then swapped into rs_fleet with one update, so steer_tc sees the old
 * tables or the new ones. The map carries the table in force and the one
 * before it (the second chance asks it): the table being replaced moves
 * to the previous half in the same swap, unless only the version changed.
 * rs_fleet_peers, who may send us encapsulated packets, always holds the
 * members of both: new addresses are added before the swap, stale ones
 * removed after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"

static const __u32 outer_key;

static int fleet_map_create(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int fd;

	dp_inner_map_btf(dp, "rs_fleet_slot", &opts);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rs_fleet_table", sizeof(__u32),
			    sizeof(struct rs_fleet_slot), RS_FLEET_MAP_SLOTS,
			    &opts);
	if (fd < 0) {
		fd = -errno;
		rs_err("bpf: cannot create a fleet table: %s", strerror(-fd));
	}
	return fd;
}

static int fleet_map_fill(int fd, const struct rs_fleet_slot *slots)
{
	__u32 count = RS_FLEET_MAP_SLOTS, *keys = calloc(count, sizeof(*keys));
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

/* Member addresses of the table at slot @base of map @fd (up to max). */
static size_t table_members(int fd, __u32 base, __u32 *addrs, size_t max)
{
	struct rs_fleet_slot s;
	size_t n = 0;
	__u32 nm;

	if (fd < 0 || bpf_map_lookup_elem(fd, &base, &s))
		return 0;
	nm = s.hdr.nmembers;
	for (__u32 i = 1; i <= nm && i <= RS_FLEET_MAX_MEMBERS && n < max;
	     i++) {
		__u32 k = base + i;

		if (!bpf_map_lookup_elem(fd, &k, &s) && s.member.addr)
			addrs[n++] = s.member.addr;
	}
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
static void sync_peers(struct rs_dataplane *dp)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_fleet_peers);
	int tfd = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, outer_key);
	__u32 want[2 * RS_FLEET_MAX_MEMBERS], key, next,
		stale[2 * RS_FLEET_MAX_MEMBERS];
	struct rs_fleet_peer peer = {.member = RS_NONE};
	size_t n, ns = 0;
	void *prev = NULL;

	n = table_members(tfd, RS_FLEET_CURRENT, want, RS_FLEET_MAX_MEMBERS);
	n += table_members(tfd, RS_FLEET_PREVIOUS, want + n,
			   RS_FLEET_MAX_MEMBERS);
	if (tfd >= 0)
		close(tfd);
	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(fd, &want[i], &peer, BPF_ANY);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!in_list(want, n, key) && ns < 2 * RS_FLEET_MAX_MEMBERS)
			stale[ns++] = key;
	}
	for (size_t i = 0; i < ns; i++)
		bpf_map_delete_elem(fd, &stale[i]);
}

/* RS_FLEET_SLOTS slots of map @fd from slot @base into @out. */
static int table_read(int fd, __u32 base, struct rs_fleet_slot *out)
{
	for (__u32 i = 0; i < RS_FLEET_SLOTS; i++) {
		__u32 k = base + i;

		if (bpf_map_lookup_elem(fd, &k, &out[i]))
			return -errno;
	}
	return 0;
}

int dp_fleet_install(struct rs_dataplane *dp, const struct rs_fleet_slot *slots,
		     bool rotate)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_fleet), fd, old, err = 0;
	int peers = bpf_map__fd(dp->skel->maps.rs_fleet_peers);
	struct rs_fleet_peer peer = {.member = RS_NONE};
	struct rs_fleet_slot *both;

	both = calloc(RS_FLEET_MAP_SLOTS, sizeof(*both));
	if (!both)
		return -ENOMEM;
	memcpy(both, slots, RS_FLEET_SLOTS * sizeof(*slots));
	/* The previous half: the table in force now, or its own previous. */
	old = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, outer_key);
	if (old >= 0) {
		err = table_read(old,
				 rotate ? RS_FLEET_CURRENT : RS_FLEET_PREVIOUS,
				 both + RS_FLEET_PREVIOUS);
		close(old);
		if (err)
			rs_warn("bpf: cannot read the fleet table in force "
				"(%s); "
				"the new one has no previous table",
				strerror(-err));
		if (err)
			memset(both + RS_FLEET_PREVIOUS, 0,
			       RS_FLEET_SLOTS * sizeof(*both));
		err = 0;
	}
	fd = fleet_map_create(dp);
	if (fd < 0) {
		free(both);
		return fd;
	}
	err = fleet_map_fill(fd, both);
	if (err)
		goto out;
	/* The newcomers may send to us as soon as the table names them. */
	for (__u32 i = 0; i < slots[0].hdr.nmembers && i < RS_FLEET_MAX_MEMBERS;
	     i++)
		if (slots[i + 1].member.addr)
			bpf_map_update_elem(peers, &slots[i + 1].member.addr,
					    &peer, BPF_ANY);
	if (bpf_map_update_elem(outer, &outer_key, &fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: swapping the fleet table failed: %s",
		       strerror(-err));
	}
	if (!err)
		sync_peers(dp);
out:
	close(fd);
	free(both);
	return err;
}

int dp_fleet_clear(struct rs_dataplane *dp)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_fleet);

	if (bpf_map_delete_elem(outer, &outer_key) && errno != ENOENT)
		return -errno;
	sync_peers(dp);
	return 0;
}

int dp_fleet_header(struct rs_dataplane *dp, uint32_t which,
		    struct rs_fleet_header *out)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, outer_key);
	struct rs_fleet_slot s;
	int err = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &which, &s))
		err = -errno;
	else
		*out = s.hdr;
	close(fd);
	return err;
}

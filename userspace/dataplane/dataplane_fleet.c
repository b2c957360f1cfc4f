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
#include <arpa/inet.h>
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

/* IPv4 as rs_fleet_peers keys it: mapped (abi.h). */
static struct rs_fleet_addr addr_v4(__u32 v4)
{
	return (struct rs_fleet_addr){.w = {0, 0, htonl(0xffff), v4}};
}

static bool addr_none(const struct rs_fleet_addr *a)
{
	return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]);
}

/*
 * Forwarding addresses (IPv4 and IPv6) of the members of the table at
 * slot @base of @slots (a whole map's worth), up to @max.
 */
static size_t slots_members(const struct rs_fleet_slot *slots, __u32 base,
			    struct rs_fleet_addr *addrs, size_t max)
{
	__u32 nm = slots[base].hdr.nmembers;
	size_t n = 0;

	for (__u32 i = 0; i < nm && i < RS_FLEET_MAX_MEMBERS && n + 2 <= max;
	     i++) {
		const struct rs_fleet_addr *a6 =
			&slots[base + RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr;

		if (slots[base + 1 + i].member.addr)
			addrs[n++] = addr_v4(slots[base + 1 + i].member.addr);
		if (!addr_none(a6))
			addrs[n++] = *a6;
	}
	return n;
}

static bool in_list(const struct rs_fleet_addr *a, size_t n,
		    const struct rs_fleet_addr *v)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(&a[i], v, sizeof(*v)))
			return true;
	return false;
}

#define PEERS_MAX (4 * RS_FLEET_MAX_MEMBERS)

/*
 * rs_fleet_peers := members of both tables of @slots (NULL: none, fleet
 * mode is off).
 */
static void sync_peers(struct rs_dataplane *dp,
		       const struct rs_fleet_slot *slots)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_fleet_peers);
	struct rs_fleet_addr want[PEERS_MAX], key, next, stale[PEERS_MAX];
	struct rs_fleet_peer peer = {.member = RS_NONE};
	size_t n = 0, ns = 0;
	void *prev = NULL;

	if (slots) {
		n = slots_members(slots, RS_FLEET_CURRENT, want, PEERS_MAX / 2);
		n += slots_members(slots, RS_FLEET_PREVIOUS, want + n,
				   PEERS_MAX / 2);
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(fd, &want[i], &peer, BPF_ANY);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!in_list(want, n, &key) && ns < PEERS_MAX)
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
	struct rs_fleet_addr fresh[PEERS_MAX / 2];
	struct rs_fleet_slot *both;
	size_t n;

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
	n = slots_members(both, RS_FLEET_CURRENT, fresh, PEERS_MAX / 2);
	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(peers, &fresh[i], &peer, BPF_ANY);
	if (bpf_map_update_elem(outer, &outer_key, &fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: swapping the fleet table failed: %s",
		       strerror(-err));
	}
	if (!err)
		sync_peers(dp, both);
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
	sync_peers(dp, NULL);
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

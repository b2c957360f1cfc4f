// SPDX-License-Identifier: MIT
/*
 * Fleet tables (abi.h) are written like rings: whole, into a fresh inner
 * map, then swapped into rs_fleet with one update, so steer_tc sees the old
 * tables or the new ones. The map carries the table in force and the one
 * before it (the second chance asks it): the table being replaced moves
 * to the previous half in the same swap, unless only the version changed.
 * rs_fleet_peers, who may send us encapsulated packets, always holds the
 * members of both: new addresses are added before the swap, stale ones
 * removed after. Each table is numbered (header gen), and the SipHash
 * states of its member pairs (rs_fleet_sip) are written into the half of
 * that map the table's number picks, before the swap: the half in use is
 * never written.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringsteer/rules.h>

#include "dataplane_internal.h"
#include "fleet_sip.h"
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
 * slot @base of @slots (a whole map's worth), up to @max, and each one's
 * member index in @idx (NULL: not wanted).
 */
static size_t slots_members(const struct rs_fleet_slot *slots, __u32 base,
			    struct rs_fleet_addr *addrs, __u32 *idx, size_t max)
{
	__u32 nm = slots[base].hdr.nmembers;
	size_t n = 0;

	for (__u32 i = 0; i < nm && i < RS_FLEET_MAX_MEMBERS && n + 2 <= max;
	     i++) {
		const struct rs_fleet_addr *a6 =
			&slots[base + RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr;

		if (slots[base + 1 + i].member.addr) {
			if (idx)
				idx[n] = i;
			addrs[n++] = addr_v4(slots[base + 1 + i].member.addr);
		}
		if (!addr_none(a6)) {
			if (idx)
				idx[n] = i;
			addrs[n++] = *a6;
		}
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
 * mode is off), each with its index in the current one (RS_NONE: only in
 * the previous one). The data plane takes an index only as a hint of
 * where the member's rs_fleet_sip entries are, and checks each entry.
 */
static void sync_peers(struct rs_dataplane *dp,
		       const struct rs_fleet_slot *slots)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_fleet_peers);
	struct rs_fleet_addr want[PEERS_MAX], key, next, stale[PEERS_MAX];
	__u32 idx[PEERS_MAX];
	size_t n = 0, nc = 0, ns = 0;
	void *prev = NULL;

	if (slots) {
		nc = slots_members(slots, RS_FLEET_CURRENT, want, idx,
				   PEERS_MAX / 2);
		n = nc + slots_members(slots, RS_FLEET_PREVIOUS, want + nc,
				       NULL, PEERS_MAX / 2);
	}
	for (size_t i = 0; i < n; i++) {
		struct rs_fleet_peer peer = {.member = RS_NONE};

		if (i >= nc && in_list(want, nc, &want[i]))
			continue; /* a member of both: its current index */
		if (i < nc)
			peer.member = idx[i];
		bpf_map_update_elem(fd, &want[i], &peer, BPF_ANY);
	}
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!in_list(want, n, &key) && ns < PEERS_MAX)
			stale[ns++] = key;
	}
	for (size_t i = 0; i < ns; i++)
		bpf_map_delete_elem(fd, &stale[i]);
}

/*
 * @n entries of rs_fleet_sip from @first: @e, or zeros when @e is NULL.
 * They hold key words, so the copy is wiped.
 */
static int sip_write(struct rs_dataplane *dp, __u32 first, __u32 n,
		     const struct rs_fleet_sip *e)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_fleet_sip), err = 0;
	__u32 size = bpf_map__max_entries(dp->skel->maps.rs_fleet_sip);
	struct rs_fleet_sip *zero = NULL;
	__u32 *keys, count;

	/* Without [fleet] the map has one entry (dataplane_sizing.c). */
	if (first >= size)
		return 0;
	if (n > size - first)
		n = size - first;
	keys = calloc(n, sizeof(*keys));
	count = n;

	if (!e)
		e = zero = calloc(n, sizeof(*zero));
	if (!keys || !e) {
		free(keys);
		free(zero);
		return -ENOMEM;
	}
	for (__u32 i = 0; i < n; i++)
		keys[i] = first + i;
	if (bpf_map_update_batch(fd, keys, e, &count, NULL))
		err = -errno;
	free(keys);
	free(zero);
	return err;
}

/*
 * The SipHash states of the member pairs of the table at @t (its header
 * numbered already) into the half of rs_fleet_sip it uses. A failure
 * costs speed, not tags: the data plane hashes from the key when an
 * entry does not fit.
 */
static void sip_install(struct rs_dataplane *dp, const struct rs_fleet_slot *t)
{
	struct rs_fleet_sip *half = calloc(RS_FLEET_SIP_HALF, sizeof(*half));
	int err = -ENOMEM;

	if (half) {
		rs_fleet_sip_fill(t, half);
		err = sip_write(dp, rs_fleet_sip_index(t[0].hdr.gen, 0, 0, 0),
				RS_FLEET_SIP_HALF, half);
		explicit_bzero(half, RS_FLEET_SIP_HALF * sizeof(*half));
		free(half);
	}
	if (err)
		rs_warn("bpf: cannot write the fleet's SipHash states (%s): "
			"tags are computed whole",
			strerror(-err));
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
	struct rs_fleet_slot *both, head;
	__u32 head_slot = RS_FLEET_CURRENT;
	__u64 gen = 0;
	size_t n;

	both = calloc(RS_FLEET_MAP_SLOTS, sizeof(*both));
	if (!both)
		return -ENOMEM;
	memcpy(both, slots, RS_FLEET_SLOTS * sizeof(*slots));
	/* The previous half: the table in force now, or its own previous. */
	old = dp_inner_map_fd(dp, dp->skel->maps.rs_fleet, outer_key);
	if (old >= 0) {
		if (!bpf_map_lookup_elem(old, &head_slot, &head))
			gen = head.hdr.gen;
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
	/* The next number: its half of rs_fleet_sip is not the one in use. */
	both[RS_FLEET_CURRENT].hdr.gen = gen + 1;
	sip_install(dp, both);
	fd = fleet_map_create(dp);
	if (fd < 0) {
		free(both);
		return fd;
	}
	err = fleet_map_fill(fd, both);
	if (err)
		goto out;
	/* The newcomers may send to us as soon as the table names them. */
	n = slots_members(both, RS_FLEET_CURRENT, fresh, NULL, PEERS_MAX / 2);
	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(peers, &fresh[i], &peer, BPF_NOEXIST);
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
	int err = bpf_map_delete_elem(outer, &outer_key) ? -errno : 0;

	if (err && err != -ENOENT)
		return err;
	sync_peers(dp, NULL);
	/*
	 * Fleet mode off: no key words left behind. No table was in force
	 * (every start without a fleet): no states were written either.
	 */
	return err ? 0 : sip_write(dp, 0, RS_FLEET_SIP_ENTRIES, NULL);
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

// SPDX-License-Identifier: MIT
/*
 * Installed rings never change: every new ring is written into a fresh
 * inner map sized to it and swapped into rs_rings with one update, so a
 * lookup walks the old ring or the new one, never a mix. The header carries
 * the key parameters and seed with the points; the generation in the
 * trailer slot lives with the ring, so it keeps counting across daemon
 * restarts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "dataplane_internal.h"
#include "log.h"

_Static_assert(RS_RING_MAP_FLAGS == (BPF_F_INNER_MAP | BPF_F_MMAPABLE),
	       "abi.h spells the ring flags as <linux/bpf.h> does");
/* Points and the flat table are copied into the slots as they are. */
_Static_assert(sizeof(struct rs_point) == sizeof(struct rs_ring_slot) &&
		       sizeof(struct rs_ring_buckets) ==
			       2 * sizeof(struct rs_ring_flat),
	       "a ring map is an array of points, then of flat entries");

static int ring_map_create(struct rs_dataplane *dp, uint32_t svc_id,
			   uint32_t nslots)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = RS_RING_MAP_FLAGS);
	char name[BPF_OBJ_NAME_LEN];
	int fd;

	dp_inner_map_btf(dp, "rs_ring_slot", &opts);
	snprintf(name, sizeof(name), "rs_ring_%u", svc_id);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(__u32),
			    sizeof(struct rs_ring_slot), nslots, &opts);
	if (fd < 0) {
		fd = -errno;
		rs_err("bpf: cannot create a ring map of %u slots: %s", nslots,
		       strerror(-fd));
	}
	return fd;
}

/*
 * The slots of ring map @fd, mapped (NULL, errno set, when it is not
 * BPF_F_MMAPABLE or cannot be): the map's own memory, so a ring is written
 * and read with memcpy where the syscalls copied slot by slot.
 */
static struct rs_ring_slot *ring_map_mmap(int fd, uint32_t count, int prot)
{
	void *p = mmap(NULL, (size_t)count * sizeof(struct rs_ring_slot), prot,
		       MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Written in place before the swap, the one moment nothing else can see
 * the map; the kernel created it zeroed, so only what a ring holds is
 * written. With @kept, the mapping stays, read-only from then on, and
 * *@kept is @ring as the map holds it: its points read in place.
 */
static int ring_map_fill(int fd, const struct rs_ring *ring, uint8_t bits,
			 uint64_t gen, struct rs_ring *kept)
{
	uint32_t count = ring_map_slots(ring->npoints, bits);
	struct rs_ring_slot *slots;
	int err;

	slots = ring_map_mmap(fd, count, PROT_READ | PROT_WRITE);
	if (!slots) {
		err = -errno;
		rs_err("bpf: cannot map a ring map of %u slots: %s", count,
		       strerror(-err));
		return err;
	}
	slots[0].hdr = (struct rs_ring_header){
		.seed = ring->seed,
		.npoints = ring->npoints,
		.bucket_bits = bits ? bits | RS_RING_FLAT : 0,
		.key_policy = ring->key_policy,
		.prefix4 = ring->prefix4,
		.prefix6 = ring->prefix6,
	};
	if (ring->npoints)
		memcpy(&slots[1], ring->points,
		       (size_t)ring->npoints * sizeof(*ring->points));
	if (bits)
		ring_flat(ring, bits,
			  (struct rs_ring_flat *)&slots[ring->npoints + 1]);
	slots[count - 1].trailer.generation = gen;
	if (kept &&
	    !mprotect(slots, (size_t)count * sizeof(*slots), PROT_READ)) {
		*kept = *ring;
		kept->points = &slots[1].point;
		kept->mapping = slots;
		kept->mapping_len = (size_t)count * sizeof(*slots);
		return 0;
	}
	if (kept)
		ring_dup(kept, ring);
	munmap(slots, (size_t)count * sizeof(*slots));
	return kept && ring->npoints && !kept->points ? -ENOMEM : 0;
}

/*
 * Slots of a ring map whose header is @hdr: a flat table (RS_RING_FLAT),
 * or the bucket index of four entries per slot that rings had before it.
 */
static uint32_t ring_map_slots_of(const struct rs_ring_header *hdr)
{
	uint32_t bits = hdr->bucket_bits & RS_RING_BITS_MASK;

	if (hdr->bucket_bits & RS_RING_FLAT)
		return ring_map_slots(hdr->npoints, bits);
	return hdr->npoints + 1 + (bits ? ((1u << bits) + 1 + 3) / 4 : 0) + 1;
}

/* The generation in ring map @fd's trailer, 0 when it has none. */
static uint64_t ring_map_generation(int fd)
{
	struct rs_ring_slot hdr, trailer;
	__u32 zero = 0, last;

	if (bpf_map_lookup_elem(fd, &zero, &hdr) ||
	    hdr.hdr.npoints > RS_MAX_RING_POINTS ||
	    (hdr.hdr.bucket_bits & RS_RING_BITS_MASK) > RS_MAX_BUCKET_BITS)
		return 0;
	last = ring_map_slots_of(&hdr.hdr) - 1;
	if (bpf_map_lookup_elem(fd, &last, &trailer))
		return 0;
	return trailer.trailer.generation;
}

uint64_t dp_ring_generation(struct rs_dataplane *dp, uint32_t svc_id)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_rings, svc_id);
	uint64_t gen;

	if (fd < 0)
		return 0;
	gen = ring_map_generation(fd);
	close(fd);
	return gen;
}

bool dp_ring_has_table(struct rs_dataplane *dp, uint32_t svc_id)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_rings, svc_id);
	struct rs_ring_slot hdr;
	__u32 zero = 0;
	bool has = false;

	if (fd < 0)
		return false;
	if (!bpf_map_lookup_elem(fd, &zero, &hdr))
		has = hdr.hdr.npoints == 0 ||
		      (hdr.hdr.bucket_bits & RS_RING_FLAT);
	close(fd);
	return has;
}

int64_t dp_install_ring(struct rs_dataplane *dp, uint32_t svc_id,
			const struct rs_ring *ring, struct rs_ring *installed)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_rings);
	uint64_t gen = dp_ring_generation(dp, svc_id) + 1;
	uint8_t bits = ring_bucket_bits(ring->npoints);
	int fd, err = dp_fault("ring");

	if (err)
		return err;
	fd = ring_map_create(dp, svc_id, ring_map_slots(ring->npoints, bits));
	if (fd < 0)
		return fd;
	err = ring_map_fill(fd, ring, bits, gen, installed);
	if (!err && bpf_map_update_elem(outer, &svc_id, &fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: swapping the ring of service %u failed: %s",
		       svc_id, strerror(-err));
		if (installed)
			ring_free(installed);
	}
	/* The outer map holds its own reference; ours is no longer needed. */
	close(fd);
	return err ? err : (int64_t)gen;
}

int64_t dp_swap_ring(struct rs_dataplane *dp, uint32_t svc_id,
		     const struct rs_ring *ring)
{
	return dp_install_ring(dp, svc_id, ring, NULL);
}

/*
 * Points 1..npoints of ring map @fd into @ring->points: one copy from the
 * map's memory (a restart reads 823,000 points at 200 backends), slot by
 * slot only from a map that cannot be mapped.
 */
static int ring_map_read_points(int fd, struct rs_ring *ring)
{
	struct rs_ring_slot *slots =
		ring_map_mmap(fd, ring->npoints + 1, PROT_READ);
	struct rs_ring_slot slot;

	if (slots) {
		memcpy(ring->points, &slots[1],
		       (size_t)ring->npoints * sizeof(*ring->points));
		munmap(slots, ((size_t)ring->npoints + 1) * sizeof(*slots));
		return 0;
	}
	for (__u32 i = 0; i < ring->npoints; i++) {
		__u32 key = i + 1;

		if (bpf_map_lookup_elem(fd, &key, &slot))
			return -errno;
		ring->points[i] = slot.point;
	}
	return 0;
}

int dp_read_ring(struct rs_dataplane *dp, uint32_t svc_id, struct rs_ring *ring,
		 uint64_t *generation)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_rings, svc_id);
	struct rs_ring_slot slot;
	__u32 zero = 0;
	int err = 0;

	memset(ring, 0, sizeof(*ring));
	*generation = 0;
	if (fd < 0)
		return -ENOENT;
	*generation = ring_map_generation(fd);
	if (bpf_map_lookup_elem(fd, &zero, &slot) || *generation == 0) {
		close(fd);
		return -EINVAL;
	}
	ring->seed = slot.hdr.seed;
	ring->key_policy = slot.hdr.key_policy;
	ring->prefix4 = slot.hdr.prefix4;
	ring->prefix6 = slot.hdr.prefix6;
	ring->points = calloc(slot.hdr.npoints ? slot.hdr.npoints : 1,
			      sizeof(*ring->points));
	if (!ring->points) {
		close(fd);
		return -ENOMEM;
	}
	ring->npoints = slot.hdr.npoints;
	err = ring_map_read_points(fd, ring);
	close(fd);
	if (err)
		ring_free(ring);
	return err;
}

int dp_delete_ring(struct rs_dataplane *dp, uint32_t svc_id)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_rings);

	if (bpf_map_delete_elem(outer, &svc_id) && errno != ENOENT)
		return -errno;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Installed rings never change: every new ring is written into a map no
 * program can see, then swapped into rs_rings with one update, so a
 * lookup walks the old ring or the new one, never a mix. That map is the
 * one the swap before replaced when it fits and a grace period has passed
 * since (dataplane_ring_spare.c), else a fresh one with room to spare
 * (ring_map_capacity()). A map's extent is therefore not its ring's: every
 * reader takes the ring's from its header (npoints, bucket bits). The
 * header carries the key parameters and seed with the points; the
 * generation in the trailer slot lives with the ring, so it keeps
 * counting across daemon restarts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
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
 * @ring into @slots, before the swap, the one moment nothing else can
 * see the map. Every slot a reader reads is written whole (header,
 * points, every entry of the flat table, trailer): a reused map holds the
 * ring before last, where a fresh one held zeroes; the slots past the
 * trailer are never read.
 */
static void ring_map_write(struct rs_ring_slot *slots,
			   const struct rs_ring *ring, uint8_t bits,
			   uint64_t gen)
{
	uint32_t count = ring_map_slots(ring->npoints, bits);

	slots[0] = (struct rs_ring_slot){
		.hdr = {
			.seed = ring->seed,
			.npoints = ring->npoints,
			.bucket_bits = bits ? bits | RS_RING_FLAT : 0,
			.key_policy = ring->key_policy,
			.prefix4 = ring->prefix4,
			.prefix6 = ring->prefix6,
		}};
	if (ring->npoints)
		memcpy(&slots[1], ring->points,
		       (size_t)ring->npoints * sizeof(*ring->points));
	if (bits)
		ring_flat(ring, bits,
			  (struct rs_ring_flat *)&slots[ring->npoints + 1]);
	slots[count - 1] =
		(struct rs_ring_slot){.trailer = {.generation = gen}};
}

/* Monotonic ms, for the debug line that says where a swap's time went. */
static double mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A fresh map for a ring of @slots, with room (ring_map_capacity()). */
static int ring_map_new(struct rs_dataplane *dp, uint32_t svc_id,
			uint32_t slots, struct ring_map *m)
{
	uint32_t cap = ring_map_capacity(slots);
	int err;

	*m = (struct ring_map){.fd = ring_map_create(dp, svc_id, cap),
			       .slots = cap,
			       .len = (size_t)cap *
				      sizeof(struct rs_ring_slot)};
	if (m->fd < 0)
		return m->fd;
	m->id = dp_map_id_of_fd(m->fd);
	m->mem = ring_map_mmap(m->fd, cap, PROT_READ | PROT_WRITE);
	if (m->mem)
		return 0;
	err = -errno;
	rs_err("bpf: cannot map a ring map of %u slots: %s", cap,
	       strerror(-err));
	close(m->fd);
	return err;
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
	uint32_t slots = ring_map_slots(ring->npoints, bits);
	struct ring_map m;
	struct rs_ring now;
	int old, err = dp_fault("ring");
	double t[4];
	bool spare;

	if (err)
		return err;
	t[0] = mono_ms();
	spare = !dp_ring_spare_take(dp, svc_id, slots, &m);
	if (!spare) {
		err = ring_map_new(dp, svc_id, slots, &m);
		if (err)
			return err;
	}
	t[1] = mono_ms();
	ring_map_write(m.mem, ring, bits, gen);
	t[2] = mono_ms();
	/* @ring may be *@installed itself: read before that is handed on. */
	now = *ring;
	now.points = &((struct rs_ring_slot *)m.mem)[1].point;
	now.mapping = m.mem;
	now.mapping_len = m.len;
	old = dp_inner_map_fd(dp, dp->skel->maps.rs_rings, svc_id);
	if (bpf_map_update_elem(outer, &svc_id, &m.fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: swapping the ring of service %u failed: %s",
		       svc_id, strerror(-err));
		if (old >= 0)
			close(old);
		if (spare) {
			dp_ring_spare_put(dp, svc_id, &m);
		} else {
			munmap(m.mem, m.len);
			close(m.fd);
		}
		return err;
	}
	t[3] = mono_ms();
	rs_debug("bpf: ring %llu of service %u written into %s map of %u "
		 "slots (%u used): %.1f ms to %s, %.1f to write, %.1f to swap",
		 (unsigned long long)gen, svc_id, spare ? "the spare" : "a new",
		 m.slots, slots, t[1] - t[0],
		 spare ? "take it (the grace period)" : "make it", t[2] - t[1],
		 t[3] - t[2]);
	dp_ring_swapped(dp, svc_id, old < 0 ? -1 : old, installed, &m, slots,
			installed != NULL);
	/* rs_rings and the mapping hold the map; this fd is not needed. */
	close(m.fd);
	if (installed) {
		ring_free(installed);
		*installed = now;
	}
	return (int64_t)gen;
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
	dp_ring_spare_drop(dp, svc_id);
	return 0;
}

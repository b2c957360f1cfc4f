// SPDX-License-Identifier: MIT
/*
 * The flat table in front of the ring changes how the kernel finds a
 * key's point, never which point: for rings of every size, for rings
 * whose points sit on the edges of a client's bucket, and for a ring
 * without the table (as an older daemon left it), the kernel's choice is
 * the userspace replica's (ring_lookup(), which never uses the table).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "replica.h"
#include "bpf_fixture.h"
#include "dataplane.h"
#include "hash.h"
#include "ring_fixture.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define NBACKENDS RING_FIXTURE_MAX
#define POINTS	  1024
#define SVC	  RING_FIXTURE_SVC

static struct ring_fixture fx;
static const char *const names[NBACKENDS] = {"a", "b", "c", "d", "e", "f",
					     "g", "h", "i", "j", "k", "l",
					     "m", "n", "o", "p"};

static int setup(void)
{
	return ring_fixture_setup(&fx, names, NBACKENDS, POINTS, 0xf1a7);
}

static void teardown(void)
{
	ring_fixture_teardown(&fx);
}

static uint64_t client_hash(uint32_t src)
{
	struct rs_affinity_key key;
	uint8_t addr[16] = {0};

	memcpy(addr, &src, sizeof(src));
	rs_affinity_key_build(&key, &fx.service, AF_INET, addr, 0);
	return rs_hash_key(&key, fx.service.seed);
}

static int replica_choice(const struct rs_ring *ring, uint32_t src)
{
	struct rs_ring_view view = {.backends = fx.backends,
				    .has_socket = fx.has_socket,
				    .nbackends = NBACKENDS};

	return replica_backend4(ring, &fx.service, &view, src, NULL);
}

/* Kernel vs replica for client @src on @ring; counts a mismatch. */
static void check_client(const struct rs_ring *ring, uint32_t src,
			 int *mismatches)
{
	int got = ring_fixture_choice(&fx, src, NULL);
	int want = replica_choice(ring, src);

	if (got != want) {
		if (*mismatches < 5)
			printf("\n  %u points, client %08x: kernel %d, "
			       "replica %d",
			       ring->npoints, ntohl(src), got, want);
		(*mismatches)++;
	}
}

/* Whether @src's bucket in @ring's flat table names its point directly. */
static bool client_direct(const struct rs_ring *ring, uint32_t src)
{
	uint8_t bits = ring_bucket_bits(ring->npoints);
	struct rs_ring_flat *flat = calloc(1u << bits, sizeof(*flat));
	bool direct = false;

	if (!flat)
		return false;
	ring_flat(ring, bits, flat);
	ring_flat_lower_bound(ring, bits, flat, client_hash(src), &direct);
	free(flat);
	return direct;
}

/*
 * Built rings from 1 point to 16 x 1024: every client lands where the
 * replica says, and both ways through the table (an entry naming the
 * owner, an entry naming points to search) are taken.
 */
static void test_built_rings(void)
{
	static const struct {
		int backends;
		uint32_t points;
	} sizes[] = {{1, 1}, {2, 3}, {3, 160}, {8, 128}, {16, 1024}};
	int mismatches = 0, direct = 0, searched = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct rs_ring_member m[NBACKENDS];
		struct rs_ring ring;

		for (int i = 0; i < sizes[s].backends; i++)
			m[i] = (struct rs_ring_member){names[i], (uint32_t)i,
						       sizes[s].points};
		CU_ASSERT_EQUAL_FATAL(ring_build(m, sizes[s].backends,
						 fx.service.seed, &ring),
				      0);
		ring_set_key(&ring, &fx.service);
		CU_ASSERT_FATAL(dp_swap_ring(&fx.dp, SVC, &ring) > 0);
		for (uint32_t c = 0; c < 1500; c++) {
			uint32_t src = htonl(0xc6120000u + c * 37);

			check_client(&ring, src, &mismatches);
			if (client_direct(&ring, src))
				direct++;
			else
				searched++;
		}
		ring_free(&ring);
	}
	printf("\n  %d clients through an owner entry, %d searched", direct,
	       searched);
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT(direct > 0);
	CU_ASSERT(searched > 0);
}

static int point_cmp(const void *a, const void *b)
{
	const struct rs_point *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->backend > y->backend) - (x->backend < y->backend);
}

/*
 * Rings of four points placed on the edges of one client's bucket (its
 * first and last hash, one either side), on the client's own hash and
 * next to it, and half a ring away: every subset of 4 of those 9 places,
 * for several clients.
 */
static void test_points_on_bucket_edges(void)
{
	const uint8_t bits = ring_bucket_bits(4);
	const uint64_t width = 1ull << (64 - bits);
	int mismatches = 0, rings = 0;

	CU_ASSERT_EQUAL_FATAL(bits, 4);
	for (uint32_t c = 0; c < 6; c++) {
		uint32_t src = htonl(0xc6130000u + c * 1009);
		uint64_t h = client_hash(src), start = h & ~(width - 1);
		const uint64_t places[] = {start - 1,
					   start,
					   start + width - 1,
					   start + width,
					   h - 1,
					   h,
					   h + 1,
					   h + (1ull << 63),
					   h + 3};

		for (uint32_t set = 0; set < (1u << 9); set++) {
			struct rs_point pts[4];
			struct rs_ring ring = {.points = pts, .npoints = 4};
			int n = 0;

			if (__builtin_popcount(set) != 4)
				continue;
			for (int i = 0; i < 9; i++) {
				if (!(set & (1u << i)))
					continue;
				pts[n] = (struct rs_point){
					.pos = places[i],
					.backend = (uint32_t)n,
					.ordinal = (uint32_t)i};
				n++;
			}
			qsort(pts, 4, sizeof(pts[0]), point_cmp);
			ring_set_key(&ring, &fx.service);
			CU_ASSERT_FATAL(dp_swap_ring(&fx.dp, SVC, &ring) > 0);
			check_client(&ring, src, &mismatches);
			/* A neighbour's client too: another bucket. */
			check_client(&ring, htonl(ntohl(src) + 1), &mismatches);
			rings++;
		}
	}
	printf("\n  %d hand-made rings", rings);
	CU_ASSERT_EQUAL(rings, 6 * 126);
	CU_ASSERT_EQUAL(mismatches, 0);
}

/*
 * A ring whose header lacks RS_RING_FLAT, as rings written before the
 * flat table are: the program searches all of it and still agrees.
 */
static void test_ring_without_table(void)
{
	struct rs_ring_member m[NBACKENDS];
	struct rs_ring_slot hdr;
	struct rs_ring ring;
	int outer = bpf_map__fd(fx.dp.skel->maps.rs_rings), inner;
	__u32 key = SVC, id, zero = 0;
	int mismatches = 0;

	for (int i = 0; i < NBACKENDS; i++)
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i, 64};
	CU_ASSERT_EQUAL_FATAL(ring_build(m, NBACKENDS, fx.service.seed, &ring),
			      0);
	ring_set_key(&ring, &fx.service);
	CU_ASSERT_FATAL(dp_swap_ring(&fx.dp, SVC, &ring) > 0);
	CU_ASSERT_EQUAL_FATAL(bpf_map_lookup_elem(outer, &key, &id), 0);
	inner = bpf_map_get_fd_by_id(id);
	CU_ASSERT_FATAL(inner >= 0);
	CU_ASSERT_EQUAL_FATAL(bpf_map_lookup_elem(inner, &zero, &hdr), 0);
	CU_ASSERT(hdr.hdr.bucket_bits & RS_RING_FLAT);
	/* The old index's size: no flag, bits within its bound of 18. */
	hdr.hdr.bucket_bits = 10;
	CU_ASSERT_EQUAL_FATAL(bpf_map_update_elem(inner, &zero, &hdr, 0), 0);
	close(inner);
	for (uint32_t c = 0; c < 1000; c++)
		check_client(&ring, htonl(0xc6140000u + c * 13), &mismatches);
	CU_ASSERT_EQUAL(mismatches, 0);
	ring_free(&ring);
}

/* The inner map installed for the fixture's service (fd, id). */
static int installed_map(__u32 *id)
{
	int outer = bpf_map__fd(fx.dp.skel->maps.rs_rings);
	__u32 key = SVC;

	if (bpf_map_lookup_elem(outer, &key, id))
		return -1;
	return bpf_map_get_fd_by_id(*id);
}

/*
 * Slots of ring map @inner that differ from what @ring with generation
 * @gen makes: header, points, flat table, trailer, each slot whole, as
 * the map's syscalls read them; past the trailer nothing is read.
 */
static int wrong_slots(int inner, const struct rs_ring *ring, uint64_t gen)
{
	uint8_t bits = ring_bucket_bits(ring->npoints);
	uint32_t nslots = ring_map_slots(ring->npoints, bits);
	struct rs_ring_flat *flat = calloc(1u << bits, sizeof(*flat));
	int wrong = 0;

	if (!flat)
		return -1;
	ring_flat(ring, bits, flat);
	for (__u32 k = 0; k < nslots; k++) {
		struct rs_ring_slot got, want = {0};

		if (k == 0)
			want.hdr = (struct rs_ring_header){
				.seed = ring->seed,
				.npoints = ring->npoints,
				.bucket_bits = bits | RS_RING_FLAT,
				.key_policy = ring->key_policy,
				.prefix4 = ring->prefix4,
				.prefix6 = ring->prefix6};
		else if (k <= ring->npoints)
			want.point = ring->points[k - 1];
		else if (k + 1 < nslots)
			memcpy(&want, &flat[2 * (k - ring->npoints - 1)],
			       sizeof(want));
		else
			want.trailer.generation = gen;
		wrong += bpf_map_lookup_elem(inner, &k, &got) ||
			 memcmp(&got, &want, sizeof(got));
	}
	free(flat);
	return wrong;
}

/*
 * A ring written through mmap() (RS_RING_MAP_FLAGS) is, slot for slot,
 * what the map's syscalls read: header, points, flat table, trailer; and
 * dp_read_ring(), which reads it through mmap() too, gives the ring back.
 * The map has room past the ring: ring_map_capacity().
 */
static void test_ring_written_mapped(void)
{
	struct rs_ring_member m[NBACKENDS];
	struct rs_ring ring, back;
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info), id;
	uint64_t gen, gen_back;
	int inner;

	for (int i = 0; i < NBACKENDS; i++)
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i, 777};
	CU_ASSERT_EQUAL_FATAL(ring_build(m, NBACKENDS, fx.service.seed, &ring),
			      0);
	ring_set_key(&ring, &fx.service);
	gen = (uint64_t)dp_swap_ring(&fx.dp, SVC, &ring);
	CU_ASSERT_FATAL((int64_t)gen > 0);
	inner = installed_map(&id);
	CU_ASSERT_FATAL(inner >= 0);
	CU_ASSERT_EQUAL_FATAL(bpf_obj_get_info_by_fd(inner, &info, &len), 0);
	CU_ASSERT_EQUAL(info.map_flags, RS_RING_MAP_FLAGS);
	CU_ASSERT_EQUAL(info.max_entries,
			ring_map_capacity(ring_map_slots(
				ring.npoints, ring_bucket_bits(ring.npoints))));
	CU_ASSERT_EQUAL(wrong_slots(inner, &ring, gen), 0);
	CU_ASSERT_EQUAL(dp_read_ring(&fx.dp, SVC, &back, &gen_back), 0);
	CU_ASSERT(ring_equal(&back, &ring));
	CU_ASSERT_EQUAL(gen_back, gen);
	close(inner);
	ring_free(&back);
	ring_free(&ring);
}

/* The fixture's backends at @w points each, @w0 for the first. */
static void build_weighted(uint32_t w0, uint32_t w, struct rs_ring *ring)
{
	struct rs_ring_member m[NBACKENDS];

	for (int i = 0; i < NBACKENDS; i++)
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i,
					       i ? w : w0};
	CU_ASSERT_EQUAL_FATAL(ring_build(m, NBACKENDS, fx.service.seed, ring),
			      0);
	ring_set_key(ring, &fx.service);
}

/*
 * dp_install_ring() keeps the installed ring without a copy: its points
 * are the map's own memory, which dp_read_ring() reads back as the ring.
 * Given back with the next swap, that map is where the ring after next
 * goes (issue 39: its pages are touched already), once a grace period has
 * passed: the installed map alternates between two, for a weight going
 * up and down, and each time the map holds exactly the new ring (a
 * smaller one too, over the larger one's slots) and the kernel's choice
 * is the replica's. A ring past the spare's room gets a fresh map.
 */
static void test_spare_reused(void)
{
	static const uint32_t w0[] = {300, 310, 290, 320, 280, 300};
	struct rs_ring ring = {0}, inst = {0}, back;
	struct dp_ring_stats st0, st;
	uint32_t ids[ARRAY_SIZE(w0)], id;
	int mismatches = 0, wrong = 0;
	uint64_t gen, gen_back;

	/* No spare left by the tests before. */
	CU_ASSERT_EQUAL_FATAL(dp_delete_ring(&fx.dp, SVC), 0);
	dp_ring_stats(&fx.dp, &st0);
	CU_ASSERT_EQUAL(st0.spares, 0);
	for (size_t i = 0; i < ARRAY_SIZE(w0); i++) {
		int inner;

		build_weighted(w0[i], 300, &ring);
		gen = (uint64_t)dp_install_ring(&fx.dp, SVC, &ring, &inst);
		CU_ASSERT_FATAL((int64_t)gen > 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(inst.mapping);
		CU_ASSERT((char *)inst.points > (char *)inst.mapping &&
			  (char *)(inst.points + inst.npoints) <=
				  (char *)inst.mapping + inst.mapping_len);
		CU_ASSERT(ring_equal(&inst, &ring));
		inner = installed_map(&ids[i]);
		CU_ASSERT_FATAL(inner >= 0);
		wrong += wrong_slots(inner, &ring, gen);
		close(inner);
		for (uint32_t c = 0; c < 300; c++)
			check_client(&ring, htonl(0xc6150000u + c * 29),
				     &mismatches);
		ring_free(&ring);
	}
	CU_ASSERT_EQUAL(dp_read_ring(&fx.dp, SVC, &back, &gen_back), 0);
	CU_ASSERT(ring_equal(&back, &inst));
	ring_free(&back);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(mismatches, 0);
	/* Two maps, taking turns: the first fresh swap has no spare yet. */
	CU_ASSERT_NOT_EQUAL(ids[0], ids[1]);
	for (size_t i = 2; i < ARRAY_SIZE(w0); i++)
		CU_ASSERT_EQUAL(ids[i], ids[i - 2]);
	dp_ring_stats(&fx.dp, &st);
	CU_ASSERT_EQUAL(st.reused - st0.reused, ARRAY_SIZE(w0) - 2);
	CU_ASSERT(st.barriers - st0.barriers <= ARRAY_SIZE(w0) - 2);
	CU_ASSERT_EQUAL(st.spares, 1);

	/* Twice the points: past the spare's room, a fresh map. */
	build_weighted(600, 600, &ring);
	CU_ASSERT_FATAL(dp_install_ring(&fx.dp, SVC, &ring, &inst) > 0);
	close(installed_map(&id));
	for (size_t i = 0; i < ARRAY_SIZE(w0); i++)
		CU_ASSERT_NOT_EQUAL(id, ids[i]);
	CU_ASSERT(ring_equal(&inst, &ring));
	ring_free(&ring);
	ring_free(&inst);
}

/*
 * A ring the caller keeps from an earlier swap (not given back) stays
 * readable and unchanged: its map is let go, never written into, and the
 * next ring goes into a fresh map.
 */
static void test_kept_ring_not_written(void)
{
	struct rs_ring ring, other, kept = {0}, next = {0}, last = {0}, copy;
	__u32 id_kept, id_next, id_last;

	build_weighted(300, 300, &ring);
	CU_ASSERT_FATAL(dp_install_ring(&fx.dp, SVC, &ring, &kept) > 0);
	close(installed_map(&id_kept));
	CU_ASSERT_EQUAL_FATAL(ring_dup(&copy, &kept), 0);
	build_weighted(100, 300, &other);
	CU_ASSERT_FATAL(dp_install_ring(&fx.dp, SVC, &other, &next) > 0);
	close(installed_map(&id_next));
	CU_ASSERT(ring_equal(&next, &other));
	CU_ASSERT(ring_equal(&kept, &ring));
	/* The ring after next fits where @kept is: not written there. */
	CU_ASSERT_FATAL(dp_install_ring(&fx.dp, SVC, &ring, &last) > 0);
	close(installed_map(&id_last));
	CU_ASSERT_NOT_EQUAL(id_last, id_kept);
	CU_ASSERT_NOT_EQUAL(id_last, id_next);
	CU_ASSERT(ring_equal(&kept, &copy));
	CU_ASSERT(ring_equal(&last, &ring));
	ring_free(&last);
	ring_free(&next);
	ring_free(&kept);
	ring_free(&copy);
	ring_free(&other);
	ring_free(&ring);
}

/*
 * A spare that cannot be written (an injected failure where it is taken)
 * is let go: the ring goes into a fresh map, whole and right.
 */
static void test_spare_failure_fresh_map(void)
{
	struct rs_ring ring, inst = {0};
	__u32 ids[3];
	uint64_t gen;
	int inner, mismatches = 0;

	CU_ASSERT_EQUAL_FATAL(dp_delete_ring(&fx.dp, SVC), 0);
	for (int i = 0; i < 3; i++) {
		build_weighted(300 + 10 * (uint32_t)i, 300, &ring);
		if (i == 2)
			CU_ASSERT_EQUAL_FATAL(dp_faults_arm("ring_spare:1"), 0);
		gen = (uint64_t)dp_install_ring(&fx.dp, SVC, &ring, &inst);
		dp_faults_disarm();
		CU_ASSERT_FATAL((int64_t)gen > 0);
		inner = installed_map(&ids[i]);
		CU_ASSERT_FATAL(inner >= 0);
		CU_ASSERT_EQUAL(wrong_slots(inner, &ring, gen), 0);
		close(inner);
		for (uint32_t c = 0; c < 300; c++)
			check_client(&ring, htonl(0xc6160000u + c * 31),
				     &mismatches);
		ring_free(&ring);
	}
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT_NOT_EQUAL(ids[2], ids[0]);
	CU_ASSERT_NOT_EQUAL(ids[2], ids[1]);
	ring_free(&inst);
}

int main(void)
{
	static const struct fixture_test tests[] = {
		{"built rings, 1 to 16x1024 points: kernel == replica",
		 test_built_rings},
		{"points on a client's bucket edges: kernel == replica",
		 test_points_on_bucket_edges},
		{"ring without a flat table: searched, kernel == replica",
		 test_ring_without_table},
		{"ring written through mmap: every slot, read back whole",
		 test_ring_written_mapped},
		{"the map a swap replaced takes the ring after next",
		 test_spare_reused},
		{"a ring kept from an earlier swap is never written over",
		 test_kept_ring_not_written},
		{"a spare that cannot be written: a fresh map",
		 test_spare_failure_fresh_map},
	};

	return fixture_main("flat_table", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

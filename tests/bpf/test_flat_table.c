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

/*
 * A ring written through mmap() (RS_RING_MAP_FLAGS) is, slot for slot,
 * what the map's syscalls read: header, points, flat table, trailer; and
 * dp_read_ring(), which reads it through mmap() too, gives the ring back.
 */
static void test_ring_written_mapped(void)
{
	struct rs_ring_member m[NBACKENDS];
	struct rs_ring ring, back;
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info), key = SVC, id;
	int outer = bpf_map__fd(fx.dp.skel->maps.rs_rings), inner, wrong = 0;
	struct rs_ring_flat *flat;
	uint64_t gen, gen_back;
	uint32_t nslots;
	uint8_t bits;

	for (int i = 0; i < NBACKENDS; i++)
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i, 777};
	CU_ASSERT_EQUAL_FATAL(ring_build(m, NBACKENDS, fx.service.seed, &ring),
			      0);
	ring_set_key(&ring, &fx.service);
	gen = (uint64_t)dp_swap_ring(&fx.dp, SVC, &ring);
	CU_ASSERT_FATAL((int64_t)gen > 0);
	CU_ASSERT_EQUAL_FATAL(bpf_map_lookup_elem(outer, &key, &id), 0);
	inner = bpf_map_get_fd_by_id(id);
	CU_ASSERT_FATAL(inner >= 0);
	CU_ASSERT_EQUAL_FATAL(bpf_obj_get_info_by_fd(inner, &info, &len), 0);
	CU_ASSERT_EQUAL(info.map_flags, RS_RING_MAP_FLAGS);
	bits = ring_bucket_bits(ring.npoints);
	nslots = ring_map_slots(ring.npoints, bits);
	CU_ASSERT_EQUAL(info.max_entries, nslots);
	flat = calloc(1u << bits, sizeof(*flat));
	CU_ASSERT_FATAL(flat != NULL);
	ring_flat(&ring, bits, flat);
	for (__u32 k = 0; k < nslots; k++) {
		struct rs_ring_slot got, want = {0};

		if (k == 0)
			want.hdr = (struct rs_ring_header){
				.seed = ring.seed,
				.npoints = ring.npoints,
				.bucket_bits = bits | RS_RING_FLAT,
				.key_policy = ring.key_policy,
				.prefix4 = ring.prefix4,
				.prefix6 = ring.prefix6};
		else if (k <= ring.npoints)
			want.point = ring.points[k - 1];
		else if (k + 1 < nslots)
			memcpy(&want, &flat[2 * (k - ring.npoints - 1)],
			       sizeof(want));
		else
			want.trailer.generation = gen;
		wrong += bpf_map_lookup_elem(inner, &k, &got) ||
			 memcmp(&got, &want, sizeof(got));
	}
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(dp_read_ring(&fx.dp, SVC, &back, &gen_back), 0);
	CU_ASSERT(ring_equal(&back, &ring));
	CU_ASSERT_EQUAL(gen_back, gen);
	close(inner);
	free(flat);
	ring_free(&back);
	ring_free(&ring);
}

/*
 * dp_install_ring() keeps the installed ring without a copy: its points
 * are the new map's own memory, which dp_read_ring() reads back as the
 * ring, and they stay readable, unchanged, after the next swap puts
 * another map in its place.
 */
static void test_ring_kept_in_place(void)
{
	struct rs_ring_member m[NBACKENDS];
	struct rs_ring ring, other, kept = {0}, next = {0}, back;
	uint64_t gen_back;

	for (int i = 0; i < NBACKENDS; i++)
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i, 300};
	CU_ASSERT_EQUAL_FATAL(ring_build(m, NBACKENDS, fx.service.seed, &ring),
			      0);
	ring_set_key(&ring, &fx.service);
	CU_ASSERT_FATAL(dp_install_ring(&fx.dp, SVC, &ring, &kept) > 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(kept.mapping);
	CU_ASSERT((char *)kept.points > (char *)kept.mapping &&
		  (char *)(kept.points + kept.npoints) <=
			  (char *)kept.mapping + kept.mapping_len);
	CU_ASSERT(ring_equal(&kept, &ring));
	CU_ASSERT_EQUAL(dp_read_ring(&fx.dp, SVC, &back, &gen_back), 0);
	CU_ASSERT(ring_equal(&back, &kept));
	ring_free(&back);
	m[0].points = 100;
	CU_ASSERT_EQUAL_FATAL(ring_build(m, NBACKENDS, fx.service.seed, &other),
			      0);
	ring_set_key(&other, &fx.service);
	CU_ASSERT_FATAL(dp_install_ring(&fx.dp, SVC, &other, &next) > 0);
	CU_ASSERT(ring_equal(&next, &other));
	CU_ASSERT(ring_equal(&kept, &ring));
	CU_ASSERT(!ring_equal(&kept, &next));
	ring_free(&next);
	ring_free(&kept);
	ring_free(&other);
	ring_free(&ring);
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
		{"installed ring kept in the map's memory, past the next swap",
		 test_ring_kept_in_place},
	};

	return fixture_main("flat_table", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

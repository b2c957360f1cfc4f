// SPDX-License-Identifier: MIT
/*
 * The data plane's XXH64 (run in the kernel through BPF_PROG_TEST_RUN) must
 * equal libxxhash's for every key, and key building must mask like the
 * data plane does.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <xxhash.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringsteer/rules.h>

#include "addr.h"
#include "hash.h"
#include "test_hash_probe.skel.h"

static struct test_hash_probe_bpf *skel;

static uint64_t rand64(void)
{
	return (uint64_t)random() << 42 ^ (uint64_t)random() << 21 ^
	       (uint64_t)random();
}

static uint64_t bpf_hash(const struct rs_affinity_key *key, uint64_t seed)
{
	struct rs_hash_probe probe = {.key = *key, .seed = seed};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &probe,
		    .ctx_size_in = sizeof(probe));
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.hash_probe),
				     &opts);
	CU_ASSERT_EQUAL_FATAL(err, 0);
	CU_ASSERT_EQUAL(opts.retval, 0);
	return probe.hash;
}

static void test_bpf_equals_libxxhash_random(void)
{
	srandom(42);
	for (int i = 0; i < 20000; i++) {
		struct rs_affinity_key key;
		uint64_t seed = i % 3 ? rand64() : (uint64_t)i;
		uint64_t want;

		for (size_t b = 0; b < sizeof(key); b++)
			((uint8_t *)&key)[b] = (uint8_t)random();
		want = XXH64(&key, sizeof(key), seed);
		if (bpf_hash(&key, seed) != want) {
			CU_FAIL("BPF XXH64 differs from libxxhash");
			return;
		}
	}
}

static void test_bpf_equals_libxxhash_edge_keys(void)
{
	struct rs_affinity_key key;
	const uint64_t seeds[] = {0, 1, ~0ull, 0x9E3779B185EBCA87ull};

	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		memset(&key, 0, sizeof(key));
		CU_ASSERT_EQUAL(bpf_hash(&key, seeds[s]),
				XXH64(&key, sizeof(key), seeds[s]));
		memset(&key, 0xff, sizeof(key));
		CU_ASSERT_EQUAL(bpf_hash(&key, seeds[s]),
				XXH64(&key, sizeof(key), seeds[s]));
	}
	CU_ASSERT_EQUAL(rs_hash_key(&key, 7), XXH64(&key, sizeof(key), 7));
}

static void test_vnode_pos_uses_name_not_index(void)
{
	const char s[] = "cache-a#3";

	CU_ASSERT_EQUAL(rs_vnode_pos("cache-a", 3, 5), XXH64(s, strlen(s), 5));
	CU_ASSERT_NOT_EQUAL(rs_vnode_pos("cache-a", 3, 5),
			    rs_vnode_pos("cache-b", 3, 5));
	CU_ASSERT_NOT_EQUAL(rs_vnode_pos("cache-a", 3, 5),
			    rs_vnode_pos("cache-a", 3, 6));
}

/*
 * The bytes hashed are snprintf("%s#%u")'s, cut where its buffer of
 * RS_NAME_MAX + 16 cut them, for every name length up to past the cut
 * and ordinals of every digit count: rings built by any version agree.
 */
static void test_vnode_pos_is_snprintf(void)
{
	static const uint32_t ords[] = {0, 7, 10, 99, 4095, 65536, 4294967295u};
	char name[RS_NAME_MAX + 40], buf[RS_NAME_MAX + 16];
	int wrong = 0;

	for (size_t len = 0; len < sizeof(name); len++) {
		memset(name, 'a' + len % 26, len);
		name[len] = '\0';
		for (size_t k = 0; k < sizeof(ords) / sizeof(ords[0]); k++) {
			int n = snprintf(buf, sizeof(buf), "%s#%u", name,
					 ords[k]);
			size_t l = (size_t)n >= sizeof(buf) ? sizeof(buf) - 1
							    : (size_t)n;

			wrong += rs_vnode_pos(name, ords[k], 9) !=
				 XXH64(buf, l, 9);
		}
	}
	CU_ASSERT_EQUAL(wrong, 0);
}

/*
 * The key's mask (rs_prefix_mask32(), the rule both sides use) keeps
 * exactly the prefix's bits, as the byte-wise mask of listens does, for
 * every prefix length of both families.
 */
static void test_prefix_mask32_every_length(void)
{
	uint8_t ones[16], want[16], got[16];
	uint32_t w[4];

	memset(ones, 0xff, sizeof(ones));
	for (int prefix = 0; prefix <= 128; prefix++) {
		memcpy(want, ones, sizeof(want));
		CU_ASSERT_EQUAL(rs_addr_mask(AF_INET6, want, prefix), 0);
		for (int i = 0; i < 4; i++)
			w[i] = 0xffffffffu & rs_prefix_mask32(prefix - 32 * i);
		memcpy(got, w, sizeof(got));
		CU_ASSERT_EQUAL(memcmp(got, want, sizeof(got)), 0);
	}
	CU_ASSERT_EQUAL(rs_prefix_mask32(-5), 0);
	CU_ASSERT_EQUAL(rs_prefix_mask32(40), 0xffffffffu);
	CU_ASSERT_EQUAL(rs_prefix_mask32(24), htonl(0xffffff00u));
}

static void test_key_masks_v4_prefix(void)
{
	struct rs_service svc = {.id = 3, .prefix4 = 24, .prefix6 = 64};
	struct rs_affinity_key k1, k2;
	uint8_t a1[16] = {0}, a2[16] = {0};

	inet_pton(AF_INET, "198.18.1.7", a1);
	inet_pton(AF_INET, "198.18.1.200", a2);
	rs_affinity_key_build(&k1, &svc, AF_INET, a1, 1000);
	rs_affinity_key_build(&k2, &svc, AF_INET, a2, 2000);
	CU_ASSERT_EQUAL(memcmp(&k1, &k2, sizeof(k1)), 0);
	CU_ASSERT_EQUAL(k1.service, 3);
	CU_ASSERT_EQUAL(k1.port, 0);
	CU_ASSERT_EQUAL(k1.addr[3], 0);
	CU_ASSERT_EQUAL(k1.addr[2], 1);
}

static void test_key_masks_v6_prefix_and_port(void)
{
	struct rs_service svc = {
		.prefix4 = 32, .prefix6 = 60, .key_policy = RS_KEY_SRC_IP_PORT};
	struct rs_affinity_key k;
	uint8_t a[16];

	inet_pton(AF_INET6, "2001:db8:1:ff:1234::7", a);
	rs_affinity_key_build(&k, &svc, AF_INET6, a, 4242);
	CU_ASSERT_EQUAL(k.port, 4242);
	CU_ASSERT_EQUAL(k.family, AF_INET6);
	CU_ASSERT_EQUAL(k.addr[7], 0xf0);
	for (int i = 8; i < 16; i++)
		CU_ASSERT_EQUAL(k.addr[i], 0);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	skel = test_hash_probe_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "test_hash: cannot load the BPF hash probe "
				"(root and a BPF-capable kernel needed)\n");
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("hash", NULL, NULL);
	CU_add_test(s, "BPF XXH64 == libxxhash (20000 random keys)",
		    test_bpf_equals_libxxhash_random);
	CU_add_test(s, "BPF XXH64 == libxxhash (edge keys and seeds)",
		    test_bpf_equals_libxxhash_edge_keys);
	CU_add_test(s, "vnode position hashes snprintf's name#i, cut alike",
		    test_vnode_pos_is_snprintf);
	CU_add_test(s, "vnode position hashes name#i",
		    test_vnode_pos_uses_name_not_index);
	CU_add_test(s, "key masks IPv4 to prefix4", test_key_masks_v4_prefix);
	CU_add_test(s, "rs_prefix_mask32 == byte-wise mask, prefixes 0..128",
		    test_prefix_mask32_every_length);
	CU_add_test(s, "key masks IPv6 to prefix6, keeps port",
		    test_key_masks_v6_prefix_and_port);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	test_hash_probe_bpf__destroy(skel);
	return failed != 0 || CU_get_error();
}

/* SPDX-License-Identifier: MIT */
/*
 * XXH64 for the one input the data plane hashes: a 24-byte
 * struct rs_affinity_key. Fixed length lets the compiler unroll everything
 * and keeps the verifier out of loops. Must equal libxxhash's XXH64() bit for
 * bit (tests/unit/core/test_hash.c checks this through BPF_PROG_TEST_RUN).
 */
#ifndef RS_BPF_XXH64_H
#define RS_BPF_XXH64_H

#include <linux/types.h>
#include <ringsteer/abi.h>

#define RS_XXH_PRIME64_1 0x9E3779B185EBCA87ULL
#define RS_XXH_PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define RS_XXH_PRIME64_3 0x165667B19E3779F9ULL
#define RS_XXH_PRIME64_4 0x85EBCA77C2B2AE63ULL
#define RS_XXH_PRIME64_5 0x27D4EB2F165667C5ULL

static __always_inline __u64 rs_xxh_rotl64(__u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static __always_inline __u64 rs_xxh64_lane(__u64 h64, __u64 lane)
{
	__u64 k1 = lane * RS_XXH_PRIME64_2;

	k1 = rs_xxh_rotl64(k1, 31) * RS_XXH_PRIME64_1;
	h64 ^= k1;
	return rs_xxh_rotl64(h64, 27) * RS_XXH_PRIME64_1 + RS_XXH_PRIME64_4;
}

/* Inputs shorter than 32 bytes skip XXH64's four-accumulator stripe loop. */
static __always_inline __u64 rs_xxh64_key(const struct rs_affinity_key *key,
					  __u64 seed)
{
	_Static_assert(sizeof(*key) == 24, "XXH64 here is fixed to 24 bytes");
	__u64 lanes[3];
	__u64 h64;

	__builtin_memcpy(lanes, key, sizeof(lanes));
	h64 = seed + RS_XXH_PRIME64_5 + sizeof(*key);
	h64 = rs_xxh64_lane(h64, lanes[0]);
	h64 = rs_xxh64_lane(h64, lanes[1]);
	h64 = rs_xxh64_lane(h64, lanes[2]);

	h64 ^= h64 >> 33;
	h64 *= RS_XXH_PRIME64_2;
	h64 ^= h64 >> 29;
	h64 *= RS_XXH_PRIME64_3;
	h64 ^= h64 >> 32;
	return h64;
}

#endif /* RS_BPF_XXH64_H */

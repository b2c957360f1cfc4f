// SPDX-License-Identifier: MIT
/*
 * QUIC-LB plaintext CIDs (userspace/core/quic_cid.c): the worked example of
 * docs/quic.md, encode/decode round trips over every valid service shape,
 * the reasons a CID is not steered, and argument checking. That the BPF
 * program reads an encoded CID the same way is checked against the real
 * program in tests/bpf/test_steer_tc.c (and test_tc_fuzz.c uses the
 * decoder as its model).
 */
#include <errno.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "quic_cid.h"

static struct rs_service quic_svc(uint8_t sid_len, uint8_t cid_len,
				  uint8_t config)
{
	struct rs_service s = {.enabled = 1,
			       .protocol = 17,
			       .cookie = RS_COOKIE_QUIC,
			       .quic_server_id_len = sid_len,
			       .quic_cid_len = cid_len,
			       .quic_config_id = config};

	return s;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

/* docs/quic.md, "Worked example": keep the two in step. */
static void test_worked_example(void)
{
	const struct rs_service svc = quic_svc(2, 8, 1);
	const uint8_t sid[] = {0x00, 0x02};
	const uint8_t nonce[] = {0x17, 0x9c, 0x4e, 0x21, 0xf0, 0x6b};
	const uint8_t want[] = {0x37, 0x00, 0x02, 0x9c, 0x4e, 0x21, 0xf0, 0x6b};
	struct quic_cid_info info;
	uint8_t cid[QUIC_CID_MAX_LEN];

	CU_ASSERT_EQUAL(quic_cid_nonce_len(&svc), 6);
	CU_ASSERT_EQUAL(quic_cid_encode(&svc, sid, nonce, cid), 8);
	CU_ASSERT(!memcmp(cid, want, sizeof(want)));
	CU_ASSERT_EQUAL(quic_cid_decode(&svc, cid, 8, &info), 0);
	CU_ASSERT_EQUAL(info.reason, QUIC_CID_ROUTABLE);
	CU_ASSERT_EQUAL(info.config_id, 1);
	CU_ASSERT_EQUAL(info.low_bits, 0x17);
	CU_ASSERT_EQUAL(info.server_id_len, 2);
	CU_ASSERT(!memcmp(info.server_id, sid, 2));
	CU_ASSERT_EQUAL(info.nonce_len, 5);
	CU_ASSERT(!memcmp(info.nonce, nonce + 1, 5));
	CU_ASSERT_STRING_EQUAL(quic_cid_reason_str(info.reason), "routable");

	/* The same CID seen by a service at config 0: another config. */
	{
		const struct rs_service other = quic_svc(2, 8, 0);

		CU_ASSERT_EQUAL(quic_cid_decode(&other, cid, 8, &info), 0);
		CU_ASSERT_EQUAL(info.reason, QUIC_CID_WRONG_CONFIG);
	}
}

/* Every valid (sid_len, cid_len, config) shape, random IDs and nonces. */
static void test_round_trips(void)
{
	uint8_t sid[RS_QUIC_MAX_SERVER_ID], nonce[QUIC_CID_MAX_LEN];
	uint8_t cid[QUIC_CID_MAX_LEN + 1];
	struct quic_cid_info info;
	int shapes = 0;

	for (uint8_t sl = 1; sl <= RS_QUIC_MAX_SERVER_ID; sl++) {
		for (uint8_t cl = sl + 1; cl <= QUIC_CID_MAX_LEN; cl++) {
			for (uint8_t cfg = 0; cfg < 7; cfg++) {
				const struct rs_service svc =
					quic_svc(sl, cl, cfg);

				shapes++;
				for (int rep = 0; rep < 20; rep++) {
					for (size_t i = 0; i < sizeof(sid); i++)
						sid[i] = rnd8();
					for (size_t i = 0; i < sizeof(nonce);
					     i++)
						nonce[i] = rnd8();
					cid[cl] = 0xee; /* must stay */
					CU_ASSERT_EQUAL_FATAL(
						quic_cid_nonce_len(&svc),
						cl - sl);
					CU_ASSERT_EQUAL_FATAL(
						quic_cid_encode(&svc, sid,
								nonce, cid),
						cl);
					CU_ASSERT_EQUAL(cid[cl], 0xee);
					CU_ASSERT_EQUAL(cid[0] >> 5, cfg);
					CU_ASSERT_EQUAL_FATAL(
						quic_cid_decode(&svc, cid, cl,
								&info),
						0);
					CU_ASSERT_EQUAL(info.reason,
							QUIC_CID_ROUTABLE);
					CU_ASSERT_EQUAL(info.config_id, cfg);
					CU_ASSERT_EQUAL(info.low_bits,
							nonce[0] & 0x1f);
					CU_ASSERT_EQUAL(info.server_id_len, sl);
					CU_ASSERT(!memcmp(info.server_id, sid,
							  sl));
					CU_ASSERT_EQUAL(info.nonce_len,
							cl - 1 - sl);
					CU_ASSERT(!memcmp(info.nonce, nonce + 1,
							  cl - 1 - sl));
				}
			}
		}
	}
	CU_ASSERT_EQUAL(shapes, 7 * (19 + 18 + 17 + 16 + 15 + 14 + 13 + 12 +
				     11 + 10 + 9 + 8 + 7 + 6 + 5));
}

static void test_random_nonce(void)
{
	const struct rs_service svc = quic_svc(3, 16, 4);
	const uint8_t sid[] = {0xab, 0xcd, 0xef};
	uint8_t a[QUIC_CID_MAX_LEN], b[QUIC_CID_MAX_LEN];
	struct quic_cid_info info;

	CU_ASSERT_EQUAL(quic_cid_encode(&svc, sid, NULL, a), 16);
	CU_ASSERT_EQUAL(quic_cid_encode(&svc, sid, NULL, b), 16);
	/* 12 random nonce bytes: equal only by a 2^-96 chance. */
	CU_ASSERT(memcmp(a + 4, b + 4, 12) != 0);
	CU_ASSERT(!memcmp(a + 1, sid, 3) && !memcmp(b + 1, sid, 3));
	CU_ASSERT_EQUAL(quic_cid_decode(&svc, a, 16, &info), 0);
	CU_ASSERT_EQUAL(info.reason, QUIC_CID_ROUTABLE);
	CU_ASSERT_EQUAL(info.config_id, 4);
}

/* Why not steered: the TC program's order is length, 0b111, config. */
static void test_reasons(void)
{
	const struct rs_service svc = quic_svc(2, 8, 1);
	const uint8_t sid[] = {0x12, 0x34};
	uint8_t cid[QUIC_CID_MAX_LEN], nonce[QUIC_CID_MAX_LEN] = {0};
	struct quic_cid_info info;

	CU_ASSERT_EQUAL(quic_cid_encode(&svc, sid, nonce, cid), 8);
	memset(cid + 8, 0x55, sizeof(cid) - 8);
	for (size_t len = 0; len <= QUIC_CID_MAX_LEN; len++) {
		CU_ASSERT_EQUAL(quic_cid_decode(&svc, cid, len, &info), 0);
		CU_ASSERT_EQUAL(info.reason, len == 8 ? QUIC_CID_ROUTABLE
						      : QUIC_CID_WRONG_LENGTH);
		/* Parts are filled as far as the CID reaches. */
		CU_ASSERT_EQUAL(info.server_id_len,
				len <= 1 ? 0 : (len - 1 < 2 ? len - 1 : 2));
		CU_ASSERT_EQUAL(info.nonce_len, len > 3 ? len - 3 : 0);
		if (len >= 1)
			CU_ASSERT_EQUAL(info.config_id, 1);
	}
	CU_ASSERT_STRING_EQUAL(quic_cid_reason_str(QUIC_CID_WRONG_LENGTH),
			       "wrong length");

	for (uint8_t cfg = 0; cfg < 8; cfg++) {
		cid[0] = (uint8_t)(cfg << 5) | 0x0a;
		CU_ASSERT_EQUAL(quic_cid_decode(&svc, cid, 8, &info), 0);
		CU_ASSERT_EQUAL(info.config_id, cfg);
		CU_ASSERT_EQUAL(info.low_bits, 0x0a);
		CU_ASSERT_EQUAL(info.reason, cfg == 1 ? QUIC_CID_ROUTABLE
					     : cfg == 7
						     ? QUIC_CID_UNROUTABLE
						     : QUIC_CID_WRONG_CONFIG);
		/* A wrong length is reported before the config bits. */
		CU_ASSERT_EQUAL(quic_cid_decode(&svc, cid, 9, &info), 0);
		CU_ASSERT_EQUAL(info.reason, QUIC_CID_WRONG_LENGTH);
	}
	CU_ASSERT_STRING_EQUAL(quic_cid_reason_str(QUIC_CID_WRONG_CONFIG),
			       "wrong config id");
	CU_ASSERT_STRING_EQUAL(quic_cid_reason_str(QUIC_CID_UNROUTABLE),
			       "unroutable (config 7)");
	CU_ASSERT_STRING_EQUAL(quic_cid_reason_str((enum quic_cid_reason)42),
			       "?");

	/* A zero-length CID (legal in QUIC) is never steered. */
	CU_ASSERT_EQUAL(quic_cid_decode(&svc, NULL, 0, &info), 0);
	CU_ASSERT_EQUAL(info.reason, QUIC_CID_WRONG_LENGTH);
}

static void test_bad_arguments(void)
{
	static const uint8_t bad[][3] = {
		{0, 8, 0},   /* no server ID */
		{16, 20, 0}, /* server ID too long */
		{2, 2, 0},   /* no room for octet 0 */
		{2, 21, 0},  /* CID longer than QUIC v1 allows */
		{2, 8, 7},   /* config 7 means unroutable */
	};
	const struct rs_service good = quic_svc(2, 8, 0);
	struct rs_service none = good;
	uint8_t sid[RS_QUIC_MAX_SERVER_ID] = {0}, cid[QUIC_CID_MAX_LEN + 1];
	uint8_t nonce[QUIC_CID_MAX_LEN] = {0};
	struct quic_cid_info info;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct rs_service s =
			quic_svc(bad[i][0], bad[i][1], bad[i][2]);

		CU_ASSERT_EQUAL(quic_cid_nonce_len(&s), -EINVAL);
		CU_ASSERT_EQUAL(quic_cid_encode(&s, sid, nonce, cid), -EINVAL);
		CU_ASSERT_EQUAL(quic_cid_decode(&s, cid, 8, &info), -EINVAL);
	}
	none.cookie = RS_COOKIE_NONE;
	CU_ASSERT_EQUAL(quic_cid_encode(&none, sid, nonce, cid), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_decode(&none, cid, 8, &info), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_nonce_len(NULL), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_encode(NULL, sid, nonce, cid), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_encode(&good, NULL, nonce, cid), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_encode(&good, sid, nonce, NULL), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_decode(NULL, cid, 8, &info), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_decode(&good, cid, 8, NULL), -EINVAL);
	CU_ASSERT_EQUAL(quic_cid_decode(&good, NULL, 8, &info), -EINVAL);
	/* Longer than any QUIC v1 CID: not a CID at all. */
	CU_ASSERT_EQUAL(
		quic_cid_decode(&good, cid, QUIC_CID_MAX_LEN + 1, &info),
		-EINVAL);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("quic_cid", NULL, NULL);
	CU_add_test(s, "worked example of docs/quic.md", test_worked_example);
	CU_add_test(s, "encode/decode round trips, every shape",
		    test_round_trips);
	CU_add_test(s, "random nonce from getrandom", test_random_nonce);
	CU_add_test(s, "reasons: length, unroutable, config", test_reasons);
	CU_add_test(s, "bad arguments: -EINVAL", test_bad_arguments);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

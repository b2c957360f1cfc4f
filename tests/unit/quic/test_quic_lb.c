// SPDX-License-Identifier: MIT
/*
 * QUIC-LB encrypted CIDs (include/ringsteer/quic_lb.h, the code steer_tc
 * runs, over libcrypto in userspace/core/quic_lb.c): the draft's test
 * vectors, a second implementation written straight from the draft's
 * text (byte by byte, nibbles by hand) on every length, keyed encode and
 * decode with a rotation's previous config, and the key file.
 *
 * Test vectors used (draft-ietf-quic-load-balancers-21), checked against
 * the text, not taken on trust:
 *  - "Encryption Example" (four-pass, plaintext_len 7): the CID of step 12.
 *    Its step 10 prints the AES output's head as 0xb3e4357c, but the XOR it
 *    shows (0xd4a04850 ^ ... = 0x67947d2c) needs 0xb334357c, which is what
 *    aes_output starts with: the final CID is right and is what we check.
 *  - "Encrypted CIDs", all four. The fourth is labelled cr_bits 3, but its
 *    first octet 0x12 (0b000 10010) carries config rotation 0 (and the
 *    length 18): we encode under config 0 and expect 0x12.
 *  - "Unencrypted CIDs": only the first. The second gives a nonce of 9
 *    hex digits (3487d970b), which is no whole number of octets.
 * The draft's decryption pseudocode clears the first bits of left_1 after
 * the second pass, where right_1 is meant (the encryption steps say so);
 * the implementation follows the encryption steps, and the reference below
 * decrypts by undoing them one by one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <openssl/evp.h>

#include "hex.h"
#include "quic_cid.h"
#include "quic_lb.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

static void unhex(const char *s, uint8_t *out, size_t *len)
{
	CU_ASSERT_FATAL(rs_hex_parse(s, out, 32, len) == 0);
}

/* Encrypt the plaintext CID (octet 0 || sid || nonce) and compare. */
static void vector(const char *key, const char *first, const char *sid,
		   const char *nonce, const char *cid)
{
	uint8_t k[16], buf[32], want[32], pt[32];
	size_t n, a, b, c;

	unhex(key, k, &n);
	unhex(first, buf, &a);
	unhex(sid, buf + 1, &b);
	unhex(nonce, buf + 1 + b, &c);
	unhex(cid, want, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1 + b + c);
	memcpy(pt, buf, n);
	CU_ASSERT_EQUAL(quic_lb_cid_crypt(k, buf, n, 0), 0);
	CU_ASSERT(!memcmp(buf, want, n));
	CU_ASSERT_EQUAL(quic_lb_cid_crypt(k, buf, n, 1), 0);
	CU_ASSERT(!memcmp(buf, pt, n));
}

static void test_draft_vectors(void)
{
	const char *k = "8f95f09245765f80256934e50c66207f";

	vector("fdf726a9893ec05c0632d3956680baf0", "07", "31441a", "9c69c275",
	       "0767947d29be054a");
	vector(k, "07", "ed793a", "ee080dbf", "0720b1d07b359d3c");
	vector(k, "2f", "ed793a51d49b8f5fab65", "ee080dbf48",
	       "2fcc381bc74cb4fbad2823a3d1f8fed2");
	vector(k, "50", "ed793a51d49b8f5f", "ee080dbf48c0d1e5",
	       "504dd2d05a7b0de9b2b9907afb5ecf8cc3");
	vector(k, "12", "ed793a51d49b8f5fab", "ee080dbf48c0d1e55d",
	       "125779c9cc86beb3a3a4a3ca96fce4bfe0cdbc");
}

static void test_plaintext_vector(void)
{
	const struct rs_service svc = {.cookie = RS_COOKIE_QUIC,
				       .quic_server_id_len = 3,
				       .quic_cid_len = 8,
				       .quic_config_id = 0};
	const uint8_t sid[] = {0xc4, 0x60, 0x5e};
	/* The first byte gives octet 0's low bits (the length, 7, here). */
	const uint8_t nonce[] = {0x07, 0x45, 0x04, 0xcc, 0x4f};
	uint8_t cid[QUIC_CID_MAX_LEN], want[16];
	size_t n;

	unhex("07c4605e4504cc4f", want, &n);
	CU_ASSERT_EQUAL(quic_cid_encode(&svc, sid, nonce, cid), 8);
	CU_ASSERT(!memcmp(cid, want, n));
}

/* ---- the draft's four-pass algorithm, as its steps read ---- */

static void aes_ecb(const uint8_t key[16], const uint8_t in[16],
		    uint8_t out[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n = 0;

	EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, key, NULL);
	EVP_CIPHER_CTX_set_padding(c, 0);
	EVP_EncryptUpdate(c, out, &n, in, 16);
	EVP_CIPHER_CTX_free(c);
}

/* expand(length, pass, half) encrypted, truncated to half_len octets. */
static void ref_round(const uint8_t key[16], size_t len, uint8_t pass,
		      const uint8_t *half, size_t half_len, uint8_t *out)
{
	uint8_t in[16] = {0}, res[16];

	memcpy(in, half, half_len);
	in[14] = (uint8_t)len;
	in[15] = pass;
	aes_ecb(key, in, res);
	memcpy(out, res, half_len);
}

static void ref_xor(uint8_t *dst, const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] ^= a[i];
}

/* Steps 1-12 of "Algorithm Description" on @pt (len octets) into @ct. */
static void ref_encrypt(const uint8_t key[16], const uint8_t *pt, size_t len,
			uint8_t *ct)
{
	size_t h = (len + 1) / 2;
	int odd = len & 1;
	uint8_t l[16] = {0}, r[16] = {0}, t[16];

	memcpy(l, pt, h);
	memcpy(r, pt + len - h, h);
	if (odd) {
		l[h - 1] &= 0xf0; /* left_0 clears its last four bits */
		r[0] &= 0x0f;	  /* right_0 its first four */
	}
	ref_round(key, len, 1, l, h, t);
	ref_xor(r, t, h);
	if (odd)
		r[0] &= 0x0f;
	ref_round(key, len, 2, r, h, t);
	ref_xor(l, t, h);
	if (odd)
		l[h - 1] &= 0xf0;
	ref_round(key, len, 3, l, h, t);
	ref_xor(r, t, h);
	if (odd)
		r[0] &= 0x0f;
	ref_round(key, len, 4, r, h, t);
	ref_xor(l, t, h);
	if (odd)
		l[h - 1] &= 0xf0;
	/* Concatenated; when odd the two zero nibbles are stripped. */
	memcpy(ct, l, h);
	if (odd) {
		ct[h - 1] |= r[0];
		memcpy(ct + h, r + 1, h - 1);
	} else {
		memcpy(ct + h, r, h);
	}
}

static void test_against_reference(void)
{
	uint8_t key[16], cid[20], ref[20], pt[20];
	int cases = 0;

	for (size_t len = RS_QUIC_LB_MIN_PLAIN; len <= RS_QUIC_LB_MAX_PLAIN;
	     len++) {
		if (len == RS_QUIC_LB_SINGLE_PASS)
			continue;
		for (int i = 0; i < 300; i++) {
			for (size_t k = 0; k < 16; k++)
				key[k] = rnd8();
			for (size_t k = 0; k < len; k++)
				pt[k] = rnd8();
			cid[0] = rnd8();
			memcpy(cid + 1, pt, len);
			ref_encrypt(key, pt, len, ref);
			CU_ASSERT_EQUAL(quic_lb_cid_crypt(key, cid, len + 1, 0),
					0);
			if (memcmp(cid + 1, ref, len)) {
				CU_FAIL("four-pass differs from the draft's "
					"steps");
				return;
			}
			CU_ASSERT_EQUAL(quic_lb_cid_crypt(key, cid, len + 1, 1),
					0);
			CU_ASSERT(!memcmp(cid + 1, pt, len));
			cases++;
		}
	}
	/* Single pass is plain AES-128-ECB of the 16 octets. */
	for (int i = 0; i < 300; i++) {
		for (size_t k = 0; k < 16; k++)
			key[k] = rnd8(), pt[k] = rnd8();
		cid[0] = 0x50;
		memcpy(cid + 1, pt, 16);
		aes_ecb(key, pt, ref);
		CU_ASSERT_EQUAL(quic_lb_cid_crypt(key, cid, 17, 0), 0);
		CU_ASSERT(!memcmp(cid + 1, ref, 16));
		CU_ASSERT_EQUAL(cid[0], 0x50); /* the first octet never */
		cases++;
	}
	CU_ASSERT_EQUAL(cases, 15 * 300);
	CU_ASSERT_EQUAL(quic_lb_cid_crypt(key, cid, 5, 0), -EINVAL);
	CU_ASSERT_EQUAL(quic_lb_cid_crypt(key, cid, 21, 0), -EINVAL);
	CU_ASSERT_EQUAL(quic_lb_cid_crypt(NULL, cid, 8, 0), -EINVAL);
}

/* Every shape: keyed encode, then decode, under current and previous. */
static void test_keyed_round_trips(void)
{
	struct quic_cid_keys keys;
	struct quic_cid_info info;
	uint8_t sid[16], cid[20];
	int n = 0;

	for (uint8_t sl = 1; sl <= RS_QUIC_MAX_SERVER_ID; sl++) {
		for (uint8_t cl = sl + 1 + RS_QUIC_LB_MIN_NONCE; cl <= 20;
		     cl++) {
			struct rs_service svc = {.cookie = RS_COOKIE_QUIC,
						 .quic_server_id_len = sl,
						 .quic_cid_len = cl,
						 .quic_config_id = 2};

			memset(&keys, 0, sizeof(keys));
			/*
			 * Every other shape with room for it: a 4-byte nonce
			 * and bytes of the server's own after it, outside the
			 * encryption (quic_nonce_len).
			 */
			if ((cl & 1) && cl > sl + 1 + RS_QUIC_LB_MIN_NONCE)
				keys.plen = sl + RS_QUIC_LB_MIN_NONCE;
			keys.mode[2] = RS_QUIC_LB_ENCRYPTED;
			keys.mode[5] = RS_QUIC_LB_ENCRYPTED;
			keys.mode[1] = RS_QUIC_LB_PLAINTEXT;
			for (int k = 0; k < 16; k++) {
				keys.key[2][k] = rnd8();
				keys.key[5][k] = rnd8();
			}
			for (int k = 0; k < sl; k++)
				sid[k] = rnd8();
			for (uint8_t cfg = 0; cfg < 7; cfg++) {
				int r = quic_cid_encode_keyed(&svc, &keys, cfg,
							      sid, NULL, cid);

				if (cfg != 1 && cfg != 2 && cfg != 5) {
					CU_ASSERT_EQUAL(r, -EINVAL);
					continue;
				}
				CU_ASSERT_EQUAL_FATAL(r, cl);
				CU_ASSERT_EQUAL(cid[0] >> 5, cfg);
				if (keys.plen && cfg != 1) {
					uint8_t again[20];

					/* Only 1 + plen bytes change. */
					memcpy(again, cid, cl);
					quic_lb_cid_crypt(keys.key[cfg], again,
							  1u + keys.plen, 1);
					CU_ASSERT(!memcmp(again + 1, sid, sl));
					CU_ASSERT(!memcmp(again + 1 + keys.plen,
							  cid + 1 + keys.plen,
							  cl - 1 - keys.plen));
				}
				CU_ASSERT_EQUAL(
					quic_cid_decode_keyed(&svc, &keys, cid,
							      cl, &info),
					0);
				CU_ASSERT_EQUAL(info.reason, QUIC_CID_ROUTABLE);
				CU_ASSERT_EQUAL(info.encrypted, cfg != 1);
				CU_ASSERT(!memcmp(info.server_id, sid, sl));
				n++;
				/*
				 * Without the keys, only the service's own
				 * config id reads, in the clear.
				 */
				CU_ASSERT_EQUAL(
					quic_cid_decode(&svc, cid, cl, &info),
					0);
				CU_ASSERT_EQUAL(
					info.reason,
					cfg == 2 ? QUIC_CID_ROUTABLE
						 : QUIC_CID_WRONG_CONFIG);
			}
			/* 0b111 stays unroutable, keys or not. */
			cid[0] = 0xe0;
			quic_cid_decode_keyed(&svc, &keys, cid, cl, &info);
			CU_ASSERT_EQUAL(info.reason, QUIC_CID_UNROUTABLE);
		}
	}
	CU_ASSERT(n > 300);
}

/* ---- the key file ---- */

static char dir[] = "/tmp/rs-quic-lb-XXXXXX";

static const char *key_file(const char *name, const char *text, mode_t mode)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

static void test_key_file(void)
{
	const char *hex = "000102030405060708090a0b0c0d0e0f";
	uint8_t key[16], want[16];
	char why[512];
	size_t n;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	unhex(hex, want, &n);
	CU_ASSERT_EQUAL(quic_lb_key_read(key_file("ok",
						  "# the key\n\n  "
						  "000102030405060708090a"
						  "0b0c0d0e0f  # note\n",
						  0600),
					 key, why, sizeof(why)),
			0);
	CU_ASSERT(!memcmp(key, want, 16));

	CU_ASSERT_EQUAL(quic_lb_key_read(key_file("open", hex, 0644), key, why,
					 sizeof(why)),
			-EACCES);
	CU_ASSERT(strstr(why, "group or others") != NULL);
	CU_ASSERT(strstr(why, hex) == NULL);

	CU_ASSERT_EQUAL(quic_lb_key_read(key_file("two",
						  "00112233445566778899aabbcc"
						  "ddeeff\n"
						  "000102030405060708090a0b0c"
						  "0d0e0f\n",
						  0600),
					 key, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT(strstr(why, "two:2: a second key") != NULL);

	CU_ASSERT_EQUAL(quic_lb_key_read(key_file("short", "# x\n0011\n", 0600),
					 key, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT(strstr(why, "short:2: expected 32 hex digits") != NULL);

	CU_ASSERT_EQUAL(quic_lb_key_read(key_file("nohex",
						  "zz0102030405060708090a0b0c"
						  "0d0e0f\n",
						  0600),
					 key, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_EQUAL(quic_lb_key_read(key_file("empty", "# none\n", 0600),
					 key, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT(strstr(why, "no key in it") != NULL);
	CU_ASSERT(quic_lb_key_read("/nonexistent/key", key, why, sizeof(why)) <
		  0);
	{
		static const char *const names[] = {"ok",    "open",  "two",
						    "short", "nohex", "empty"};
		char path[128];

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
		rmdir(dir);
	}
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("quic_lb", NULL, NULL);
	CU_add_test(s, "draft-21 encrypted vectors and the worked example",
		    test_draft_vectors);
	CU_add_test(s, "draft-21 unencrypted vector 1", test_plaintext_vector);
	CU_add_test(s, "every length against the draft's steps",
		    test_against_reference);
	CU_add_test(s, "keyed encode/decode, rotation, every shape",
		    test_keyed_round_trips);
	CU_add_test(s, "key file: format, mode, messages", test_key_file);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

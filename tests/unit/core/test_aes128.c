// SPDX-License-Identifier: MIT
/*
 * The software AES-128 of include/ringsteer/aes128.h (the one the BPF
 * programs run) against FIPS-197's worked example and against OpenSSL's
 * aes-128-ecb for random keys and blocks, both directions. The tables come
 * from scripts/gen-aes-tables.py; any slip in them or in the round
 * structure shows here.
 */
#include <stdint.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <openssl/evp.h>

#include <ringsteer/aes128.h>

#define RANDOM_CASES 20000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd64() >> 56);
}

/* One block through OpenSSL, ECB without padding: plain AES. */
static int openssl_aes(int enc, const uint8_t key[16], const uint8_t in[16],
		       uint8_t out[16])
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0, ok;

	if (!ctx)
		return -1;
	ok = EVP_CipherInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL, enc) &&
	     EVP_CIPHER_CTX_set_padding(ctx, 0) &&
	     EVP_CipherUpdate(ctx, out, &len, in, 16) &&
	     EVP_CipherFinal_ex(ctx, out + len, &fin);
	EVP_CIPHER_CTX_free(ctx);
	return ok && len + fin == 16 ? 0 : -1;
}

/* FIPS-197 Appendix C.1. */
static const uint8_t c1_key[16] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
				   0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
				   0x0c, 0x0d, 0x0e, 0x0f};
static const uint8_t c1_plain[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
				     0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
				     0xcc, 0xdd, 0xee, 0xff};
static const uint8_t c1_cipher[16] = {0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b,
				      0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80,
				      0x70, 0xb4, 0xc5, 0x5a};

static void test_fips197_c1(void)
{
	struct rs_aes128_key k;
	uint8_t blk[16];

	rs_aes128_expand(c1_key, &k);
	/* C.1's round[10].k_sch and, of the inverse cipher, round[1].ik_sch. */
	CU_ASSERT_EQUAL(k.enc[0], 0x00010203);
	CU_ASSERT_EQUAL(k.enc[40], 0x13111d7f);
	CU_ASSERT_EQUAL(k.enc[43], 0x4d2b30c5);
	CU_ASSERT_EQUAL(k.dec[0], k.enc[40]);
	CU_ASSERT_EQUAL(k.dec[4], 0x13aa29be);
	CU_ASSERT_EQUAL(k.dec[7], 0x00f7bf03);
	CU_ASSERT_EQUAL(k.dec[43], k.enc[3]);

	memcpy(blk, c1_plain, 16);
	rs_aes128_encrypt(&k, blk);
	CU_ASSERT(!memcmp(blk, c1_cipher, 16));
	rs_aes128_decrypt(&k, blk);
	CU_ASSERT(!memcmp(blk, c1_plain, 16));

	/* And OpenSSL agrees with the standard, or the other tests mean little.
	 */
	CU_ASSERT_EQUAL(openssl_aes(1, c1_key, c1_plain, blk), 0);
	CU_ASSERT(!memcmp(blk, c1_cipher, 16));
}

/*
 * A fresh key each case so the key schedule is tested as hard as the
 * rounds; the block to decrypt is random too, not the ciphertext just
 * made, so decryption is checked on its own.
 */
static void test_openssl(void)
{
	struct rs_aes128_key k;
	uint8_t key[16], in[16], blk[16], want[16];
	int enc_bad = 0, dec_bad = 0, ssl_bad = 0;

	for (int i = 0; i < RANDOM_CASES; i++) {
		rnd_bytes(key, 16);
		rs_aes128_expand(key, &k);

		rnd_bytes(in, 16);
		memcpy(blk, in, 16);
		rs_aes128_encrypt(&k, blk);
		ssl_bad += openssl_aes(1, key, in, want) != 0;
		enc_bad += memcmp(blk, want, 16) != 0;

		rnd_bytes(in, 16);
		memcpy(blk, in, 16);
		rs_aes128_decrypt(&k, blk);
		ssl_bad += openssl_aes(0, key, in, want) != 0;
		dec_bad += memcmp(blk, want, 16) != 0;
	}
	/* Counts rather than 40,000 assertions: one line says how bad. */
	CU_ASSERT_EQUAL(ssl_bad, 0);
	CU_ASSERT_EQUAL(enc_bad, 0);
	CU_ASSERT_EQUAL(dec_bad, 0);
}

static void test_round_trip(void)
{
	struct rs_aes128_key k;
	uint8_t key[16], in[16], blk[16];
	int bad = 0, unchanged = 0;

	for (int i = 0; i < RANDOM_CASES; i++) {
		rnd_bytes(key, 16);
		rnd_bytes(in, 16);
		rs_aes128_expand(key, &k);
		memcpy(blk, in, 16);
		rs_aes128_encrypt(&k, blk);
		unchanged += !memcmp(blk, in, 16);
		rs_aes128_decrypt(&k, blk);
		bad += memcmp(blk, in, 16) != 0;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(unchanged, 0);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("aes128", NULL, NULL);
	CU_add_test(s, "FIPS-197 C.1, both directions", test_fips197_c1);
	CU_add_test(s, "random keys and blocks against OpenSSL", test_openssl);
	CU_add_test(s, "decrypt(encrypt(x)) == x", test_round_trip);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

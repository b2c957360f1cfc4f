// SPDX-License-Identifier: MIT
/*
 * The fleet key file and record MACs (userspace/core/fleet/fleet_keys.c): keys
 * read as operators write them, and a MAC that binds a record to its etcd
 * key, so that no record can be altered or copied under another name;
 * the forwarding keys derived from them and the SipHash-2-4 the data
 * plane tags packets with (include/ringsteer/rules.h), against OpenSSL's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <ringsteer/rules.h>

#include "fleet_keys.h"
#include "fleet_sip.h"

static char path[] = "/tmp/rs-test-fleet-keys-XXXXXX";

static int read_text(const char *text, struct rs_fleet_keys *k, char *why)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	return rs_fleet_keys_read(path, k, why, 256);
}

static void test_key_file(void)
{
	struct rs_fleet_keys k;
	char why[256];

	CU_ASSERT_EQUAL(read_text("# fleet keys\n"
				  "00112233445566778899aabbccddeeff\n"
				  "\n"
				  "  FFEEDDCCBBAA99887766554433221100  # old\n",
				  &k, why),
			0);
	CU_ASSERT_EQUAL(k.n, 2);
	CU_ASSERT_EQUAL(k.key[0][0], 0x00);
	CU_ASSERT_EQUAL(k.key[0][15], 0xff);
	CU_ASSERT_EQUAL(k.key[1][0], 0xff);
	CU_ASSERT_NOT_EQUAL(read_text("0011223344556677\n", &k, why), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, ":1: expected 32 hex digits"));
	CU_ASSERT_NOT_EQUAL(
		read_text("# a\n00112233445566778899aabbccddeeZZ\n", &k, why),
		0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, ":2: expected 32 hex digits"));
	CU_ASSERT_NOT_EQUAL(read_text("# nothing\n\n", &k, why), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "no key in it"));
	CU_ASSERT_NOT_EQUAL(
		read_text("0x112233445566778899aabbccddeeff\n", &k, why), 0);
}

static void test_mac_binds_name_and_record(void)
{
	struct rs_fleet_keys k = {.n = 2};
	const char *rec = "{\"address\":\"198.18.11.2\"}";
	char mac[RS_FLEET_MAC_HEX], mac2[RS_FLEET_MAC_HEX];

	memset(k.key[0], 0x11, RS_FLEET_KEY_LEN);
	memset(k.key[1], 0x22, RS_FLEET_KEY_LEN);
	CU_ASSERT_EQUAL(
		rs_fleet_record_mac(k.key[0], "/rs/members/host-1", rec, mac),
		0);
	CU_ASSERT_EQUAL(strlen(mac), 32);
	CU_ASSERT_EQUAL(
		rs_fleet_record_mac(k.key[0], "/rs/members/host-1", rec, mac2),
		0);
	CU_ASSERT_STRING_EQUAL(mac, mac2);
	CU_ASSERT_EQUAL(
		rs_fleet_record_verify(&k, "/rs/members/host-1", rec, mac), 0);
	/* Copied under another name, altered, or of another key: refused. */
	CU_ASSERT_EQUAL(
		rs_fleet_record_verify(&k, "/rs/members/evil", rec, mac), -1);
	CU_ASSERT_EQUAL(rs_fleet_record_verify(&k, "/rs/members/host-1",
					       "{\"address\":\"198.18.11.3\"}",
					       mac),
			-1);
	CU_ASSERT_EQUAL(
		rs_fleet_record_mac(k.key[1], "/rs/members/host-1", rec, mac2),
		0);
	CU_ASSERT_STRING_NOT_EQUAL(mac, mac2);
	/* The second key verifies too: a rotation in progress. */
	CU_ASSERT_EQUAL(
		rs_fleet_record_verify(&k, "/rs/members/host-1", rec, mac2), 1);
	k.n = 1;
	CU_ASSERT_EQUAL(
		rs_fleet_record_verify(&k, "/rs/members/host-1", rec, mac2),
		-1);
	CU_ASSERT_EQUAL(
		rs_fleet_record_verify(&k, "/rs/members/host-1", rec, "abc"),
		-1);
}

/* OpenSSL's SipHash-2-4 (64-bit output) of @n bytes under @key. */
static uint64_t openssl_siphash(const uint8_t key[16], const uint8_t *msg,
				size_t n)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	size_t size = 8, outl = 0;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
		OSSL_PARAM_construct_end()};
	uint8_t out[8];
	uint64_t v = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	CU_ASSERT_FATAL(EVP_MAC_init(ctx, key, 16, params) == 1);
	CU_ASSERT_FATAL(EVP_MAC_update(ctx, msg, n) == 1);
	CU_ASSERT_FATAL(EVP_MAC_final(ctx, out, &outl, sizeof(out)) == 1);
	CU_ASSERT_EQUAL_FATAL(outl, 8);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	for (int i = 7; i >= 0; i--)
		v = v << 8 | out[i];
	return v;
}

static uint64_t le64_of(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/*
 * rs_siphash24() is SipHash-2-4: the paper's test vector (key 00..0f,
 * message 00..0e is a tail length; whole words here: 00..07 and 00..0f)
 * and OpenSSL's result for random keys and messages of every word count
 * up to the tag's 13.
 */
static void test_siphash_is_siphash(void)
{
	uint8_t key[16], msg[8 * 13];
	__u64 w[13];

	srand(7);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(key); i++)
			key[i] = round ? (uint8_t)rand() : (uint8_t)i;
		for (size_t i = 0; i < sizeof(msg); i++)
			msg[i] = round ? (uint8_t)rand() : (uint8_t)i;
		memcpy(w, msg, sizeof(msg));
		for (uint32_t nw = 0; nw <= 13; nw++)
			CU_ASSERT_EQUAL(rs_siphash24(le64_of(key),
						     le64_of(key + 8), w, nw),
					openssl_siphash(key, msg, 8 * nw));
	}
	/* The paper's vector for 8 bytes 00..07 under key 00..0f. */
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (size_t i = 0; i < 8; i++)
		msg[i] = (uint8_t)i;
	memcpy(w, msg, 8);
	CU_ASSERT_EQUAL(rs_siphash24(le64_of(key), le64_of(key + 8), w, 1),
			0x93f5f5799a932462ull);
}

/* Key bytes mul * i + add, and the SipHash key words they make. */
static void test_key(uint8_t key[16], unsigned mul, unsigned add,
		     struct rs_fleet_auth *k)
{
	for (unsigned i = 0; i < 16; i++)
		key[i] = (uint8_t)(mul * i + add);
	k->k0 = le64_of(key);
	k->k1 = le64_of(key + 8);
}

/*
 * rs_fleet_tag() over a message built field by field, as the data plane
 * and the tests build it: SipHash-2-4 of its 7 (IPv4) or 13 (IPv6) words.
 * (Read through a plain __u64 pointer, an optimising compiler was free to
 * read the words before the fields were written: strict aliasing.)
 */
static void test_tag_of_a_built_message(void)
{
	uint8_t key[16];
	struct rs_fleet_auth k = {.id = 7};

	test_key(key, 3, 1, &k);
	for (int round = 0; round < 50; round++) {
		struct rs_fleet_tag_msg m;

		memset(&m, 0, sizeof(m));
		m.v4.src = (uint32_t)rand();
		m.v4.dst = (uint32_t)rand();
		m.v4.meta.hops = (uint8_t)(round % 3);
		m.v4.meta.inner_len = 40;
		for (size_t i = 0; i < sizeof(m.v4.inner); i++)
			m.v4.inner[i] = (uint8_t)rand();
		CU_ASSERT_EQUAL(rs_fleet_tag(&k, &m, 0),
				openssl_siphash(key, (const uint8_t *)&m, 56));
		memset(&m, 0, sizeof(m));
		m.v6.src.w[0] = (uint32_t)rand();
		m.v6.dst.w[3] = (uint32_t)rand();
		m.v6.meta.key_id = 7;
		m.v6.meta.inner_len = 60;
		for (size_t i = 0; i < sizeof(m.v6.inner); i++)
			m.v6.inner[i] = (uint8_t)rand();
		CU_ASSERT_EQUAL(rs_fleet_tag(&k, &m, 1),
				openssl_siphash(key, (const uint8_t *)&m, 104));
	}
}

/*
 * Wire version 3's tag: SipHash-2-4 of the outer addresses, the inner
 * bytes it covers (40 for IPv4, 56 for IPv6), then the meta's first 7
 * bytes as the message's last (abi.h): 55 and 95 bytes, OpenSSL's over
 * those bytes laid end to end.
 */
static void test_tag_v3(void)
{
	uint8_t key[16], flat[128];
	struct rs_fleet_auth k = {.id = 7};

	test_key(key, 7, 5, &k);
	for (int round = 0; round < 50; round++) {
		struct rs_fleet_tag_msg m;
		uint64_t v2;

		memset(&m, 0, sizeof(m));
		m.v4.src = (uint32_t)rand();
		m.v4.dst = (uint32_t)rand();
		m.v4.meta.version = RS_FLEET_WIRE_MAX;
		m.v4.meta.hops = (uint8_t)(1 + round % 2);
		m.v4.meta.key_id = 7;
		m.v4.meta.inner_len = 40 + (uint32_t)round;
		for (size_t i = 0; i < sizeof(m.v4.inner); i++)
			m.v4.inner[i] = (uint8_t)rand();
		memcpy(flat, &m, 8);
		memcpy(flat + 8, m.v4.inner, 40);
		memcpy(flat + 48, &m.v4.meta, 7);
		CU_ASSERT_EQUAL(rs_fleet_tag(&k, &m, 0),
				openssl_siphash(key, flat, 55));
		/* The same message in version 2 has another tag. */
		m.v4.meta.version = RS_FLEET_WIRE_VERSION;
		v2 = rs_fleet_tag(&k, &m, 0);
		m.v4.meta.version = RS_FLEET_WIRE_MAX;
		CU_ASSERT_NOT_EQUAL(v2, rs_fleet_tag(&k, &m, 0));
		memset(&m, 0, sizeof(m));
		m.v6.src.w[0] = (uint32_t)rand();
		m.v6.dst.w[3] = (uint32_t)rand();
		m.v6.meta.version = RS_FLEET_WIRE_MAX;
		m.v6.meta.hops = 2;
		m.v6.meta.key_id = 7;
		m.v6.meta.inner_len = 60;
		for (size_t i = 0; i < sizeof(m.v6.inner); i++)
			m.v6.inner[i] = (uint8_t)rand();
		memcpy(flat, &m, 32);
		memcpy(flat + 32, m.v6.inner, 56);
		memcpy(flat + 88, &m.v6.meta, 7);
		CU_ASSERT_EQUAL(rs_fleet_tag(&k, &m, 1),
				openssl_siphash(key, flat, 95));
		/* Bytes 56..63 of the inner packet are not covered in 3. */
		v2 = rs_fleet_tag(&k, &m, 1);
		m.v6.inner[60] ^= 1;
		CU_ASSERT_EQUAL(v2, rs_fleet_tag(&k, &m, 1));
	}
}

/*
 * A member pair's SipHash state (struct rs_fleet_sip): a tag started
 * from it is OpenSSL's SipHash of the whole message. rs_fleet_sip_fill()
 * writes one for signing to each other member and one per key for
 * checking each, per family both ends have an address of, at
 * rs_fleet_sip_index(); an entry of other addresses or another key does
 * not fit.
 */
static void test_pair_states(void)
{
	static struct rs_fleet_slot t[RS_FLEET_SLOTS];
	static struct rs_fleet_sip half[RS_FLEET_SIP_HALF];
	uint8_t key[16], key2[16];
	struct rs_fleet_auth k = {.id = 7}, k2 = {.id = 9};
	struct rs_fleet_tag_msg m;
	struct rs_fleet_sip e;
	struct rs_sip st;

	test_key(key, 5, 2, &k);
	test_key(key2, 7, 3, &k2);
	for (int v6 = 0; v6 < 2; v6++) {
		memset(&m, 0, sizeof(m));
		for (size_t i = 0; i < sizeof(m); i++)
			((uint8_t *)&m)[i] = (uint8_t)rand();
		/* Version 2's message (rs_fleet_tag() reads the version). */
		m.v4.meta.version = m.v6.meta.version = RS_FLEET_WIRE_VERSION;
		rs_fleet_sip_make(&e, &k, &m, v6);
		CU_ASSERT(rs_fleet_sip_fits(&e, &k, &m, v6));
		CU_ASSERT(!rs_fleet_sip_fits(&e, &k2, &m, v6));
		rs_fleet_tag_begin(&st, &e, &k, &m, v6);
		CU_ASSERT_EQUAL(rs_fleet_tag_finish(
					&st, &m,
					(const rs_word_t *)(v6 ? m.v6.inner
							       : m.v4.inner),
					v6, 0),
				openssl_siphash(key, (const uint8_t *)&m,
						v6 ? 104 : 56));
		/* Other addresses: passed over, the tag hashed whole. */
		((uint8_t *)&m)[v6 ? 31 : 7] ^= 1;
		CU_ASSERT(!rs_fleet_sip_fits(&e, &k, &m, v6));
		rs_fleet_tag_begin(&st, &e, &k, &m, v6);
		CU_ASSERT_EQUAL(rs_fleet_tag_finish(
					&st, &m,
					(const rs_word_t *)(v6 ? m.v6.inner
							       : m.v4.inner),
					v6, 0),
				rs_fleet_tag(&k, &m, v6));
	}
	/* This host (member 1) and two others, one of them without IPv6. */
	t[0].hdr.nmembers = 3;
	t[0].hdr.self = 1;
	t[0].hdr.self_addr = 0x0200a8c0;
	t[RS_FLEET_SLOT_ADDR6].addr6.addr.w[0] = 0x1;
	for (int i = 0; i < 3; i++)
		t[1 + i].member.addr = 0x0100a8c0 + ((uint32_t)i << 24);
	t[RS_FLEET_SLOT_ADDR6 + 1 + 2].addr6.addr.w[0] = 0x3;
	t[RS_FLEET_SLOT_KEYS].auth = k;
	t[RS_FLEET_SLOT_KEYS + 1].auth = k2;
	/* 3 states (sign, check under 2 keys) x (IPv4 of 2, IPv6 of 1). */
	CU_ASSERT_EQUAL(rs_fleet_sip_fill(t, half), 9);
	memset(&m, 0, sizeof(m));
	m.v4.src = t[0].hdr.self_addr;
	m.v4.dst = t[1 + 2].member.addr;
	CU_ASSERT(rs_fleet_sip_fits(&half[rs_fleet_sip_index(0, 2, 0, 0)], &k,
				    &m, 0));
	m.v4.src = t[1 + 2].member.addr;
	m.v4.dst = t[0].hdr.self_addr;
	CU_ASSERT(rs_fleet_sip_fits(&half[rs_fleet_sip_index(0, 2, 0, 2)], &k2,
				    &m, 0));
	m.v6.src = t[RS_FLEET_SLOT_ADDR6 + 1 + 2].addr6.addr;
	m.v6.dst = t[RS_FLEET_SLOT_ADDR6].addr6.addr;
	CU_ASSERT(rs_fleet_sip_fits(&half[rs_fleet_sip_index(0, 2, 1, 1)], &k,
				    &m, 1));
	/* None for this host itself, none for IPv6 of member 0. */
	CU_ASSERT_EQUAL(half[rs_fleet_sip_index(0, 1, 0, 0)].k0, 0);
	CU_ASSERT_EQUAL(half[rs_fleet_sip_index(0, 0, 1, 1)].k0, 0);
	CU_ASSERT_EQUAL(rs_fleet_sip_index(1, 0, 0, 0), RS_FLEET_SIP_HALF);
	CU_ASSERT_EQUAL(rs_fleet_sip_index(0, RS_NONE, 0, 0), RS_NONE);
}

/*
 * Forwarding keys: the same line gives the same key and id on every host,
 * other lines other keys; neither is the line itself. A file with two
 * lines of one id is refused, naming both lines.
 */
static void test_forwarding_keys(void)
{
	uint8_t a[16] = {1, 2, 3}, b[16] = {1, 2, 4};
	struct rs_fleet_auth ka, ka2, kb;
	struct rs_fleet_keys k;
	char text[256], why[256], hx[2][33];
	int found = 0;

	CU_ASSERT_EQUAL_FATAL(rs_fleet_auth_derive(a, &ka), 0);
	CU_ASSERT_EQUAL_FATAL(rs_fleet_auth_derive(a, &ka2), 0);
	CU_ASSERT_EQUAL_FATAL(rs_fleet_auth_derive(b, &kb), 0);
	CU_ASSERT_EQUAL(memcmp(&ka, &ka2, sizeof(ka)), 0);
	CU_ASSERT_NOT_EQUAL(ka.k0, kb.k0);
	CU_ASSERT_NOT_EQUAL(ka.k1, kb.k1);
	CU_ASSERT(ka.id >= 1 && kb.id >= 1);
	CU_ASSERT_NOT_EQUAL(ka.k0, le64_of(a));
	/* Two keys of one id (1 pair in 255: found within a few hundred). */
	srand(11);
	for (int tries = 0; tries < 5000 && !found; tries++) {
		for (int i = 0; i < 16; i++)
			b[i] = (uint8_t)rand();
		CU_ASSERT_EQUAL_FATAL(rs_fleet_auth_derive(b, &kb), 0);
		found = kb.id == ka.id && memcmp(a, b, 16);
	}
	CU_ASSERT_FATAL(found);
	for (int i = 0; i < 16; i++) {
		snprintf(hx[0] + 2 * i, 3, "%02x", a[i]);
		snprintf(hx[1] + 2 * i, 3, "%02x", b[i]);
	}
	snprintf(text, sizeof(text), "# rotation\n%s\n\n%s\n", hx[0], hx[1]);
	CU_ASSERT_NOT_EQUAL(read_text(text, &k, why), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, ":4: this key's forwarding id is "
					   "that of the key on line 2"));
	/* Each alone is fine, and read keys carry their forwarding keys. */
	snprintf(text, sizeof(text), "%s\n", hx[1]);
	CU_ASSERT_EQUAL(read_text(text, &k, why), 0);
	CU_ASSERT_EQUAL(memcmp(&k.auth[0], &kb, sizeof(kb)), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_keys", NULL, NULL);
	CU_add_test(s, "key file: hex lines, comments, errors with line",
		    test_key_file);
	CU_add_test(s, "a MAC binds the record to its key name",
		    test_mac_binds_name_and_record);
	CU_add_test(s, "the forwarding tag's SipHash-2-4 is OpenSSL's",
		    test_siphash_is_siphash);
	CU_add_test(s, "a tag over a message built field by field",
		    test_tag_of_a_built_message);
	CU_add_test(s, "wire version 3's tag is SipHash of its 55 or 95 bytes",
		    test_tag_v3);
	CU_add_test(s, "tags from a member pair's SipHash state",
		    test_pair_states);
	CU_add_test(s,
		    "forwarding keys: stable, distinct, ids unique in a "
		    "file",
		    test_forwarding_keys);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	unlink(path);
	return failed != 0 || CU_get_error();
}

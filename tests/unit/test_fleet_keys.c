// SPDX-License-Identifier: MIT
/*
 * The fleet key file and record MACs (userspace/core/fleet_keys.c): keys
 * read as operators write them, and a MAC that binds a record to its etcd
 * key, so that no record can be altered or copied under another name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "fleet_keys.h"

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
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	unlink(path);
	return failed != 0 || CU_get_error();
}

// SPDX-License-Identifier: MIT
/*
 * Per-host fleet identities (userspace/core/fleet/fleet_ident.c): a key
 * made by `openssl genpkey -algorithm ed25519` signs a record that only
 * its own host's public keys verify, bound to its etcd key; member_keys
 * as operators write it, with its errors by line; a key listed for two
 * hosts is refused. Addresses bound to members (fleet_bind.c): a record
 * claims only its own, and never another name's, whether or not that
 * member is in the table; an address listed for two names is refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "fleet_ident.h"

static char dir[] = "/tmp/rs-test-fleet-ident-XXXXXX";
static char key1[PATH_MAX], key2[PATH_MAX], members[PATH_MAX];
static uint8_t priv1[32], pub1[32], priv2[32], pub2[32];

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

/* Two keys from the openssl command line, as docs/fleet.md says. */
static int make_keys(void)
{
	char cmd[3 * PATH_MAX], why[256];

	snprintf(key1, sizeof(key1), "%s/host-1.key", dir);
	snprintf(key2, sizeof(key2), "%s/host-2.key", dir);
	snprintf(members, sizeof(members), "%s/members", dir);
	snprintf(cmd, sizeof(cmd),
		 "umask 077 && openssl genpkey -algorithm ed25519 -out %s && "
		 "openssl genpkey -algorithm ed25519 -out %s",
		 key1, key2);
	if (system(cmd))
		return -1;
	if (rs_fleet_identity_read(key1, priv1, pub1, why, sizeof(why)) ||
	    rs_fleet_identity_read(key2, priv2, pub2, why, sizeof(why)))
		return -1;
	return 0;
}

/* member_keys listing host-1 and host-2 (two keys: a rotation). */
static void write_members(void)
{
	char p1[RS_FLEET_ID_PUB_TEXT], p2[RS_FLEET_ID_PUB_TEXT];
	char text[512];

	rs_fleet_pubkey_text(pub1, p1);
	rs_fleet_pubkey_text(pub2, p2);
	snprintf(text, sizeof(text),
		 "# the PoP's members\n\nhost-2 %s\nhost-1\t%s  # edge-1\n"
		 "host-1 MCowBQYDK2VwAyEAKmAg9Ug0L0oHZnqTQrdt8vp5xx4tD3Esk6"
		 "ZYC1bWRM8=\n",
		 p2, p1);
	write_file(members, text, 0644);
}

static struct rs_fleet_pubkeys listed;

/* rs_fleet_record_check() of @rec under /rs/members/@key as @name's. */
static int check(const char *name, const char *key, const char *rec,
		 const char *sig)
{
	char keyname[128];

	snprintf(keyname, sizeof(keyname), "/rs/members/%s", key);
	return rs_fleet_record_check(&listed, name, keyname, rec, sig);
}

static void test_sign_verify(void)
{
	char sig[RS_FLEET_ID_SIG_HEX], bad[RS_FLEET_ID_SIG_HEX], why[256];
	const char *rec = "{\"address\":\"198.18.11.2\"}";

	write_members();
	CU_ASSERT_EQUAL_FATAL(rs_fleet_pubkeys_read(members, &listed, why, 256),
			      0);
	CU_ASSERT_EQUAL(listed.n, 3);
	CU_ASSERT(rs_fleet_pubkeys_has(&listed, "host-1", pub1));
	CU_ASSERT(!rs_fleet_pubkeys_has(&listed, "host-2", pub1));
	CU_ASSERT_EQUAL_FATAL(
		rs_fleet_record_sign(priv1, "/rs/members/host-1", rec, sig), 0);
	CU_ASSERT_EQUAL(strlen(sig), 128);
	CU_ASSERT_EQUAL(check("host-1", "host-1", rec, sig), 0);
	/* host-1's key speaking for host-2, under either name. */
	CU_ASSERT_EQUAL(check("host-2", "host-1", rec, sig), -EBADMSG);
	CU_ASSERT_EQUAL(
		rs_fleet_record_sign(priv1, "/rs/members/host-2", rec, bad), 0);
	CU_ASSERT_EQUAL(check("host-2", "host-2", rec, bad), -EBADMSG);
	/* Copied under another name, or altered. */
	CU_ASSERT_EQUAL(check("host-1", "host-1x", rec, sig), -EBADMSG);
	CU_ASSERT_EQUAL(
		check("host-1", "host-1", "{\"address\":\"198.18.11.3\"}", sig),
		-EBADMSG);
	/* A member nobody listed, and signatures that are not 64 bytes. */
	CU_ASSERT_EQUAL(check("host-9", "host-9", rec, sig), -ENOKEY);
	memcpy(bad, sig, sizeof(bad));
	bad[127] = 'x';
	CU_ASSERT_EQUAL(check("host-1", "host-1", rec, bad), -EINVAL);
	bad[127] = 0;
	CU_ASSERT_EQUAL(check("host-1", "host-1", rec, bad), -EINVAL);
	/* host-2's key verifies host-2's record. */
	CU_ASSERT_EQUAL(
		rs_fleet_record_sign(priv2, "/rs/members/host-2", rec, sig), 0);
	CU_ASSERT_EQUAL(check("host-2", "host-2", rec, sig), 0);
	rs_fleet_pubkeys_free(&listed);
}

/* member_keys of @text (mode @mode) refused with @err, @why saying @says. */
static void refused(const char *text, mode_t mode, int err, const char *says)
{
	struct rs_fleet_pubkeys p;
	char why[512];

	write_file(members, text, mode);
	CU_ASSERT_EQUAL(rs_fleet_pubkeys_read(members, &p, why, sizeof(why)),
			err);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, says));
}

static void test_member_keys_errors(void)
{
	char p1[RS_FLEET_ID_PUB_TEXT], text[512], why[512];

	rs_fleet_pubkey_text(pub1, p1);
	snprintf(text, sizeof(text), "host-1 %s\nhost-2 %s\n", p1, p1);
	refused(text, 0644, -EINVAL, ":2: this key is host-1's already");
	refused("host-1 c2VjcmV0\n", 0644, -EINVAL,
		":1: not an Ed25519 public key");
	snprintf(text, sizeof(text), "bad/name %s\n", p1);
	refused(text, 0644, -EINVAL, ":1: member name");
	refused("# nobody\n", 0644, -EINVAL, "no member key in it");
	snprintf(text, sizeof(text), "host-1 %s\n", p1);
	refused(text, 0666, -EACCES, "can be written by group or others");
	/* A private key where the list should be is no list. */
	chmod(key1, 0644);
	CU_ASSERT_EQUAL(rs_fleet_identity_read(key1, priv1, pub1, why, 512),
			-EACCES);
	chmod(key1, 0600);
	CU_ASSERT_EQUAL(rs_fleet_identity_read(members, priv1, pub1, why, 512),
			-EACCES);
	chmod(members, 0600);
	CU_ASSERT_EQUAL(rs_fleet_identity_read(members, priv1, pub1, why, 512),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not an unencrypted PEM"));
	CU_ASSERT_EQUAL(rs_fleet_identity_read(key1, priv1, pub1, why, 512), 0);
}

/* rs_fleet_addr_check() of @name claiming @text; @why into @out. */
static int claims(const struct rs_fleet_pubkeys *p, const char *name,
		  const char *text, char *out, size_t len)
{
	uint8_t a[16];
	int family = strchr(text, ':') ? AF_INET6 : AF_INET;

	out[0] = 0;
	CU_ASSERT_EQUAL_FATAL(inet_pton(family, text, a), 1);
	return rs_fleet_addr_check(p, name, family, a, out, len);
}

/* host-1 with two addresses, host-2 with one per key, host-3 none. */
static void test_member_addresses(void)
{
	char p1[RS_FLEET_ID_PUB_TEXT], p2[RS_FLEET_ID_PUB_TEXT],
		p3[RS_FLEET_ID_PUB_TEXT], text[1024], why[512];
	uint8_t pub3[32];
	struct rs_fleet_pubkeys p, q;

	memset(pub3, 0x33, sizeof(pub3));
	rs_fleet_pubkey_text(pub1, p1);
	rs_fleet_pubkey_text(pub2, p2);
	rs_fleet_pubkey_text(pub3, p3);
	snprintf(text, sizeof(text),
		 "host-1 %s 198.18.0.1 2001:db8::1\nhost-2 %s 198.18.0.2\n"
		 "host-2 MCowBQYDK2VwAyEAKmAg9Ug0L0oHZnqTQrdt8vp5xx4tD3Esk6ZYC1"
		 "bWRM8=\t198.18.0.12 198.18.0.2\nhost-3 %s\n",
		 p1, p2, p3);
	write_file(members, text, 0644);
	CU_ASSERT_EQUAL_FATAL(rs_fleet_pubkeys_read(members, &p, why, 512), 0);
	CU_ASSERT_EQUAL(p.n, 4);
	CU_ASSERT_EQUAL(p.n_addr, 4); /* 198.18.0.2 once */
	CU_ASSERT_EQUAL(claims(&p, "host-1", "198.18.0.1", why, 512), 0);
	CU_ASSERT_EQUAL(claims(&p, "host-1", "2001:db8::1", why, 512), 0);
	CU_ASSERT_EQUAL(claims(&p, "host-2", "198.18.0.12", why, 512), 0);
	CU_ASSERT_EQUAL(claims(&p, "host-3", "198.18.0.3", why, 512), 0);
	/* The finding: another's address, listed or not, present or not. */
	CU_ASSERT_EQUAL(claims(&p, "host-1", "198.18.0.2", why, 512), -EPERM);
	CU_ASSERT_STRING_EQUAL(why, "address 198.18.0.2 is host-2's in "
				    "member_keys (line 2)");
	CU_ASSERT_EQUAL(claims(&p, "host-3", "198.18.0.12", why, 512), -EPERM);
	CU_ASSERT_STRING_EQUAL(why, "address 198.18.0.12 is host-2's in "
				    "member_keys (line 3)");
	CU_ASSERT_EQUAL(claims(&p, "host-1", "198.18.0.9", why, 512), -EPERM);
	CU_ASSERT_STRING_EQUAL(why, "address 198.18.0.9 is not host-1's in "
				    "member_keys (its addresses: line 1)");
	CU_ASSERT_EQUAL(claims(&p, "host-1", "2001:db8::9", why, 512), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "address6 2001:db8::9 is not"));
	CU_ASSERT_EQUAL(claims(&p, "host-3", "2001:db8::1", why, 512), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "address6 2001:db8::1 is host-1's"));
	/* The daemon's reader works on a copy. */
	CU_ASSERT_EQUAL_FATAL(rs_fleet_pubkeys_copy(&q, &p), 0);
	CU_ASSERT_EQUAL(q.n_addr, 4);
	CU_ASSERT_EQUAL(claims(&q, "host-1", "198.18.0.2", why, 512), -EPERM);
	rs_fleet_pubkeys_free(&q);
	rs_fleet_pubkeys_free(&p);
	/* No address anywhere: anything goes, as before. */
	snprintf(text, sizeof(text), "host-1 %s\nhost-2 %s\n", p1, p2);
	write_file(members, text, 0644);
	CU_ASSERT_EQUAL_FATAL(rs_fleet_pubkeys_read(members, &p, why, 512), 0);
	CU_ASSERT_EQUAL(p.n_addr, 0);
	CU_ASSERT_EQUAL(claims(&p, "host-1", "198.18.0.2", why, 512), 0);
	rs_fleet_pubkeys_free(&p);
}

static void test_member_addresses_errors(void)
{
	char p1[RS_FLEET_ID_PUB_TEXT], p2[RS_FLEET_ID_PUB_TEXT], text[512];

	rs_fleet_pubkey_text(pub1, p1);
	rs_fleet_pubkey_text(pub2, p2);
	snprintf(text, sizeof(text),
		 "host-1 %s 198.18.0.1\n# x\nhost-2 %s "
		 "198.18.0.2 198.18.0.1\n",
		 p1, p2);
	refused(text, 0644, -EINVAL,
		":3: address 198.18.0.1 is host-1's already (line 1): one "
		"address, one host");
	snprintf(text, sizeof(text),
		 "host-1 %s 2001:db8::1\nhost-2 %s "
		 "2001:DB8:0::1\n",
		 p1, p2);
	refused(text, 0644, -EINVAL, ":2: address 2001:DB8:0::1 is host-1's");
	snprintf(text, sizeof(text), "host-1 %s edge-1\n", p1);
	refused(text, 0644, -EINVAL,
		":1: 'edge-1' is not an IPv4 or IPv6 address");
	snprintf(text, sizeof(text), "host-1 %s 127.0.0.1\n", p1);
	refused(text, 0644, -EINVAL, ":1: 127.0.0.1: loopback address");
	snprintf(text, sizeof(text), "host-1 %s ff02::1\n", p1);
	refused(text, 0644, -EINVAL, ":1: ff02::1: multicast IPv6");
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(dir) || make_keys())
		return 1;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_ident", NULL, NULL);
	CU_add_test(s, "a record verifies by its own host's key only",
		    test_sign_verify);
	CU_add_test(s, "member_keys: lines, errors by line, one key one host",
		    test_member_keys_errors);
	CU_add_test(s, "member_keys addresses: a record claims its own only",
		    test_member_addresses);
	CU_add_test(s, "member_keys addresses: errors, one address one host",
		    test_member_addresses_errors);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		failed++;
	return failed != 0 || CU_get_error();
}

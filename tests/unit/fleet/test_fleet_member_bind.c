// SPDX-License-Identifier: MIT
/*
 * The reader's address rule with per-host identities (fleet_member.c,
 * docs/fleet.md "Per-host identities"): a record signed by its own host
 * is still rejected when it claims an address member_keys binds to
 * another name (issue 36, finding 3a: host-1 claiming host-2's address
 * while host-2 is away, which no table check sees), or one not among its
 * own listed addresses; without addresses, as before.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "fleet_member.h"

static char dir[] = "/tmp/rs-test-fleet-bind-XXXXXX";
static char members[PATH_MAX + 16];
static uint8_t priv1[32], pub1[32], priv2[32], pub2[32];
static struct rs_fleet_conf conf;
static struct rs_fleet_keys nokeys;

/* A key of @i's file, made by openssl as docs/fleet.md says. */
static int make_key(int i, uint8_t *priv, uint8_t *pub)
{
	char path[PATH_MAX + 16], cmd[2 * PATH_MAX], why[256];

	snprintf(path, sizeof(path), "%s/host-%d.key", dir, i);
	snprintf(cmd, sizeof(cmd),
		 "umask 077 && openssl genpkey -algorithm ed25519 -out %s",
		 path);
	if (system(cmd))
		return -1;
	return rs_fleet_identity_read(path, priv, pub, why, sizeof(why));
}

/* member_keys of @fmt, host-1's and host-2's keys in its two %s. */
static void write_members(struct rs_fleet_pubkeys *p, const char *fmt)
{
	char p1[RS_FLEET_ID_PUB_TEXT], p2[RS_FLEET_ID_PUB_TEXT], why[256];
	FILE *f = fopen(members, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rs_fleet_pubkey_text(pub1, p1);
	rs_fleet_pubkey_text(pub2, p2);
	fprintf(f, fmt, p1, p2);
	fclose(f);
	chmod(members, 0644);
	CU_ASSERT_EQUAL_FATAL(rs_fleet_pubkeys_read(members, p, why, 256), 0);
}

/*
 * The record of @name with @addr (and @addr6 unless NULL), signed with
 * @priv as the daemon signs (record_sign()), read by host-3 under trust
 * @ids: whether it is believed, the reason into @why.
 */
static bool read_as_host3(const struct rs_fleet_pubkeys *ids,
			  const uint8_t *priv, const char *name,
			  const char *addr, const char *addr6, char *why)
{
	char key[128], sig[RS_FLEET_ID_SIG_HEX], *canon, *text;
	json_t *j = json_pack("{s:s, s:i, s:{s:{s:i}}}", "address", addr,
			      "wire", 3, "services", "web", "capacity", 2);
	struct rs_etcd_kv kv = {.lease = 7};
	struct rs_fleet_member_info m;
	struct fleet_local local = {0};
	bool ok;

	if (addr6)
		json_object_set_new(j, "address6", json_string(addr6));
	snprintf(key, sizeof(key), "/rs/members/%s", name);
	canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	CU_ASSERT_EQUAL_FATAL(rs_fleet_record_sign(priv, key, canon, sig), 0);
	json_object_set_new(j, "host_sig", json_string(sig));
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	kv.key = key;
	kv.value = text;
	kv.size = strlen(text);
	why[0] = 0;
	ok = fleet_member_parse(
		&conf, &local,
		&(struct fleet_trust){.keys = &nokeys, .ids = ids}, name, &kv,
		&m, why, 256);
	free(canon);
	free(text);
	json_decref(j);
	return ok;
}

static void test_bound(void)
{
	struct rs_fleet_pubkeys p;
	char why[256];

	write_members(&p, "host-1 %s 198.18.12.1 2001:db8:12::1\n"
			  "host-2 %s 198.18.12.2\n");
	CU_ASSERT(read_as_host3(&p, priv1, "host-1", "198.18.12.1",
				"2001:db8:12::1", why));
	CU_ASSERT(read_as_host3(&p, priv2, "host-2", "198.18.12.2", NULL, why));
	/* The finding: host-2 away, host-1 signs its own record with its
	 * address; nothing else in the reader knows host-2. */
	CU_ASSERT(
		!read_as_host3(&p, priv1, "host-1", "198.18.12.2", NULL, why));
	CU_ASSERT_STRING_EQUAL(why, "address 198.18.12.2 is host-2's in "
				    "member_keys (line 2)");
	CU_ASSERT(
		!read_as_host3(&p, priv1, "host-1", "198.18.12.9", NULL, why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "198.18.12.9 is not host-1's"));
	CU_ASSERT(!read_as_host3(&p, priv1, "host-1", "198.18.12.1",
				 "2001:db8:12::9", why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "address6 2001:db8:12::9 is not"));
	/* host-2 lists no IPv6 address: an address6 is not its own. */
	CU_ASSERT(!read_as_host3(&p, priv2, "host-2", "198.18.12.2",
				 "2001:db8:12::1", why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "2001:db8:12::1 is host-1's"));
	rs_fleet_pubkeys_free(&p);
	/* A member without addresses still may not take another's. */
	write_members(&p, "host-1 %s\nhost-2 %s 198.18.12.2\n");
	CU_ASSERT(read_as_host3(&p, priv1, "host-1", "198.18.12.7", NULL, why));
	CU_ASSERT(
		!read_as_host3(&p, priv1, "host-1", "198.18.12.2", NULL, why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "198.18.12.2 is host-2's"));
	rs_fleet_pubkeys_free(&p);
	/* None bound: as before this rule. */
	write_members(&p, "host-1 %s\nhost-2 %s\n");
	CU_ASSERT(read_as_host3(&p, priv1, "host-1", "198.18.12.2", NULL, why));
	rs_fleet_pubkeys_free(&p);
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(dir) || make_key(1, priv1, pub1) ||
	    make_key(2, priv2, pub2))
		return 1;
	snprintf(members, sizeof(members), "%s/members", dir);
	snprintf(conf.name, sizeof(conf.name), "host-3");
	inet_pton(AF_INET, "198.18.12.3", &conf.addr);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_member_bind", NULL, NULL);
	CU_add_test(s, "a signed record claims only its own addresses",
		    test_bound);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		failed++;
	return failed != 0 || CU_get_error();
}

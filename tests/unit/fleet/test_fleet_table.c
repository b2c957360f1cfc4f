// SPDX-License-Identifier: MIT
/*
 * The fleet table (userspace/core/fleet/fleet_table.c): every host must compute
 * the same owners from the same membership, and membership changes move
 * only the keys of the member that came or went.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <CUnit/Basic.h>

#include "fleet_table.h"

static struct rs_fleet_member_info members[5];

static void member(size_t i, const char *name, uint32_t web, uint32_t api)
{
	struct rs_fleet_member_info *m = &members[i];

	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->addr = 0x0a0b12c6u + (uint32_t)i;
	snprintf(m->caps[0].service, RS_NAME_MAX, "web");
	m->caps[0].capacity = web;
	snprintf(m->caps[1].service, RS_NAME_MAX, "api");
	m->caps[1].capacity = api;
	m->n_caps = 2;
}

static void three_hosts(void)
{
	member(0, "edge-1", 2, 2);
	member(1, "edge-2", 2, 2);
	member(2, "edge-3", 2, 2);
}

static void test_deterministic_and_balanced(void)
{
	static uint8_t a[RS_FLEET_BUCKETS], b[RS_FLEET_BUCKETS];
	uint64_t seed = rs_fleet_seed("web", 0);
	uint32_t count[4] = {0};

	three_hosts();
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "web", seed, a), 3);
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "web", seed, b), 3);
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	for (uint32_t i = 0; i < RS_FLEET_BUCKETS; i++) {
		CU_ASSERT(a[i] >= 1 && a[i] <= 3);
		if (a[i] <= 3)
			count[a[i]]++;
	}
	/* 256 points each: every host holds 1/3 +- a third of that. */
	for (int m = 1; m <= 3; m++) {
		CU_ASSERT(count[m] > RS_FLEET_BUCKETS / 3 * 2 / 3);
		CU_ASSERT(count[m] < RS_FLEET_BUCKETS / 3 * 4 / 3);
	}
	/* Another service's seed: another table. */
	CU_ASSERT_EQUAL(
		rs_fleet_buckets(members, 3, "api", rs_fleet_seed("api", 0), b),
		3);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
}

static void test_join_moves_only_to_newcomer(void)
{
	static uint8_t before[RS_FLEET_BUCKETS], after[RS_FLEET_BUCKETS];
	uint64_t seed = rs_fleet_seed("web", 7);
	uint32_t moved = 0;

	three_hosts();
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "web", seed, before), 3);
	/* edge-0 sorts first: every index shifts, names keep their keys. */
	memmove(&members[1], &members[0], 3 * sizeof(members[0]));
	member(0, "edge-0", 4, 0);
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 4, "web", seed, after), 4);
	for (uint32_t i = 0; i < RS_FLEET_BUCKETS; i++) {
		if (after[i] == 1) {
			moved++;
			continue;
		}
		/* Everyone else kept exactly their buckets. */
		CU_ASSERT_EQUAL(after[i], before[i] + 1);
	}
	CU_ASSERT(moved > RS_FLEET_BUCKETS / 4 * 2 / 3);
	CU_ASSERT(moved < RS_FLEET_BUCKETS / 4 * 4 / 3);
	/* No capacity for api: edge-0 owns none of api's buckets. */
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 4, "api",
					 rs_fleet_seed("api", 7), after),
			3);
	for (uint32_t i = 0; i < RS_FLEET_BUCKETS; i++)
		CU_ASSERT_NOT_EQUAL(after[i], 1);
}

static void test_drain_and_empty(void)
{
	static uint8_t before[RS_FLEET_BUCKETS], after[RS_FLEET_BUCKETS];
	uint64_t seed = rs_fleet_seed("web", 0);

	three_hosts();
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "web", seed, before), 3);
	members[1].drained = true;
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "web", seed, after), 2);
	for (uint32_t i = 0; i < RS_FLEET_BUCKETS; i++) {
		CU_ASSERT_NOT_EQUAL(after[i], 2);
		if (before[i] != 2)
			CU_ASSERT_EQUAL(after[i], before[i]);
	}
	/* Nobody eligible: nobody owns anything (steered locally). */
	members[0].drained = members[2].drained = true;
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "web", seed, after), 0);
	for (uint32_t i = 0; i < RS_FLEET_BUCKETS; i++)
		CU_ASSERT_EQUAL(after[i], RS_FLEET_NO_OWNER);
	/* A service nobody publishes. */
	three_hosts();
	CU_ASSERT_EQUAL(rs_fleet_buckets(members, 3, "nope", seed, after), 0);
}

static void test_key_ignores_local_service_id(void)
{
	struct rs_service a = {.id = 3, .prefix4 = 24},
			  b = {.id = 9, .prefix4 = 24};
	struct rs_affinity_key ka, kb;
	uint8_t addr1[16] = {198, 18, 0, 7}, addr2[16] = {198, 18, 0, 200};

	rs_fleet_key_build(&ka, &a, AF_INET, addr1, 1234);
	rs_fleet_key_build(&kb, &b, AF_INET, addr2, 4321);
	CU_ASSERT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	CU_ASSERT_EQUAL(ka.service, 0);
	CU_ASSERT_EQUAL(ka.port, 0);
}

/* IPv6: the service's prefix6, family in the key, service 0. */
static void test_key6_uses_prefix6(void)
{
	struct rs_service a = {.id = 3, .prefix6 = 48},
			  b = {.id = 9, .prefix6 = 48};
	struct rs_affinity_key ka, kb, k4;
	uint8_t addr1[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0xaa, 0xbb},
		addr2[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0xcc},
		addr3[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 2};

	rs_fleet_key_build(&ka, &a, AF_INET6, addr1, 1);
	rs_fleet_key_build(&kb, &b, AF_INET6, addr2, 2);
	CU_ASSERT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	CU_ASSERT_EQUAL(ka.family, AF_INET6);
	CU_ASSERT_EQUAL(ka.service, 0);
	rs_fleet_key_build(&kb, &b, AF_INET6, addr3, 2);
	CU_ASSERT_NOT_EQUAL(memcmp(&ka, &kb, sizeof(ka)), 0);
	/* The same first bytes as IPv4 are another key. */
	rs_fleet_key_build(&k4, &a, AF_INET, addr1, 1);
	CU_ASSERT_NOT_EQUAL(memcmp(&ka, &k4, sizeof(ka)), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_table", NULL, NULL);
	CU_add_test(s, "deterministic and balanced",
		    test_deterministic_and_balanced);
	CU_add_test(s, "a join moves keys only to the newcomer",
		    test_join_moves_only_to_newcomer);
	CU_add_test(s, "drained and empty", test_drain_and_empty);
	CU_add_test(s, "the key ignores local service ids",
		    test_key_ignores_local_service_id);
	CU_add_test(s, "an IPv6 key uses prefix6", test_key6_uses_prefix6);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

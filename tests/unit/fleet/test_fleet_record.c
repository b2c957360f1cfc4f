// SPDX-License-Identifier: MIT
/*
 * What a member record from etcd must be before it is believed
 * (userspace/core/fleet/fleet_record.c): one host's unicast address, a name,
 * and, when the table is full, who keeps a place.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "fleet_record.h"

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

static const char *problem6(const char *s)
{
	uint8_t a[16];

	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET6, s, a), 1);
	return rs_fleet_addr6_problem(a);
}

/* The addresses of the hostile records, and real hosts'. */
static void test_addresses(void)
{
	static const char *const bad4[] = {
		"0.0.0.0",	   "0.1.2.3",	"127.0.0.1",
		"127.255.0.9",	   "224.0.0.1", "239.255.255.250",
		"255.255.255.255", "240.0.0.1", "169.254.1.1",
	};
	static const char *const good4[] = {"198.18.11.2", "10.0.0.1",
					    "192.0.2.200", "8.8.8.8"};

	for (size_t i = 0; i < sizeof(bad4) / sizeof(bad4[0]); i++)
		CU_ASSERT_PTR_NOT_NULL(rs_fleet_addr4_problem(ip4(bad4[i])));
	for (size_t i = 0; i < sizeof(good4) / sizeof(good4[0]); i++)
		CU_ASSERT_PTR_NULL(rs_fleet_addr4_problem(ip4(good4[i])));
	CU_ASSERT_STRING_EQUAL(rs_fleet_addr4_problem(ip4("127.0.0.1")),
			       "loopback address");
	CU_ASSERT_PTR_NOT_NULL(problem6("::"));
	CU_ASSERT_PTR_NOT_NULL(problem6("::1"));
	CU_ASSERT_PTR_NOT_NULL(problem6("::ffff:198.18.0.1"));
	CU_ASSERT_PTR_NOT_NULL(problem6("ff02::1"));
	CU_ASSERT_PTR_NOT_NULL(problem6("fe80::1"));
	CU_ASSERT_PTR_NULL(problem6("2001:db8:11::2"));
	CU_ASSERT_PTR_NULL(problem6("fd00::1"));
}

static void test_names(void)
{
	char longname[80];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CU_ASSERT_PTR_NULL(rs_fleet_name_problem("edge-1"));
	CU_ASSERT_PTR_NULL(rs_fleet_name_problem("host_2.pop"));
	CU_ASSERT_PTR_NOT_NULL(rs_fleet_name_problem(""));
	CU_ASSERT_PTR_NOT_NULL(rs_fleet_name_problem(longname));
	CU_ASSERT_PTR_NOT_NULL(rs_fleet_name_problem("a/b"));
	CU_ASSERT_PTR_NOT_NULL(rs_fleet_name_problem("a b"));
	CU_ASSERT_PTR_NOT_NULL(rs_fleet_name_problem("e\x1b[31m"));
}

/*
 * 5,000 fake names that sort first and were created later cannot push
 * out the three members of the table in force, nor an older newcomer.
 */
static void test_choose_keeps_members(void)
{
	static struct rs_fleet_candidate c[5004];
	static char names[5004][24];
	size_t n = 0, k;
	bool seen[4] = {false};

	for (int i = 0; i < 3; i++) {
		snprintf(names[n], sizeof(names[n]), "host-%d", i + 1);
		c[n] = (struct rs_fleet_candidate){names[n], true, 10 + i, n};
		n++;
	}
	snprintf(names[n], sizeof(names[n]), "host-4");
	c[n] = (struct rs_fleet_candidate){names[n], false, 20, n};
	n++;
	for (int i = 0; i < 5000; i++) {
		snprintf(names[n], sizeof(names[n]), "a%04d", i);
		c[n] = (struct rs_fleet_candidate){names[n], false, 100 + i, n};
		n++;
	}
	k = rs_fleet_choose(c, n, 64);
	CU_ASSERT_EQUAL(k, 64);
	for (size_t i = 0; i < k; i++)
		if (c[i].index < 4)
			seen[c[i].index] = true;
	for (int i = 0; i < 4; i++)
		CU_ASSERT_TRUE(seen[i]);
	/* Members first, then by age: the order is the same on every host. */
	CU_ASSERT_EQUAL(c[0].index, 0);
	CU_ASSERT_EQUAL(c[3].index, 3);
	CU_ASSERT_STRING_EQUAL(c[4].name, "a0000");
	CU_ASSERT_EQUAL(rs_fleet_choose(c, 3, 64), 3);
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_record", NULL, NULL);
	CU_add_test(s, "forwarding addresses: unicast only", test_addresses);
	CU_add_test(s, "member names", test_names);
	CU_add_test(s, "a full table keeps its members and the oldest",
		    test_choose_keeps_members);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

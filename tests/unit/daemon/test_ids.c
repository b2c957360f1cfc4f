// SPDX-License-Identifier: MIT
/*
 * Id assignment (userspace/ringsteerd/state/ids.c), the decision start-up and
 * reload share: kept by name (and service), new ones avoid recent ids.
 */
#include <errno.h>
#include <stdint.h>

#include <CUnit/Basic.h>

#include "ids.h"

#define MAX 6

static void test_names_keep_their_ids(void)
{
	const char *held[MAX] = {NULL, "b", NULL, "a", NULL, NULL};
	bool avoid[MAX] = {false, true, false, true, false, false};
	struct id_table t = {.max = MAX, .held = held, .avoid = avoid};
	const char *names[] = {"a", "new1", "b", "new2"};
	uint32_t ids[4];

	CU_ASSERT_EQUAL(ids_assign(&t, names, NULL, 4, ids), 0);
	CU_ASSERT_EQUAL(ids[0], 3);
	CU_ASSERT_EQUAL(ids[2], 1);
	/* New names: the lowest ids nobody held. */
	CU_ASSERT_EQUAL(ids[1], 0);
	CU_ASSERT_EQUAL(ids[3], 2);
}

static void test_removed_ids_are_reused_last(void)
{
	/* "gone" held id 0 and is no longer configured: its sticky entries
	 * must not pass to a newcomer while other ids are free. */
	const char *held[MAX] = {"gone", NULL, NULL, NULL, NULL, NULL};
	bool avoid[MAX] = {true, false, false, false, false, false};
	struct id_table t = {.max = MAX, .held = held, .avoid = avoid};
	const char *names[] = {"n1", "n2", "n3", "n4", "n5", "n6"};
	uint32_t ids[6];

	CU_ASSERT_EQUAL(ids_assign(&t, names, NULL, 5, ids), 0);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(ids[i], (uint32_t)i + 1);
	/* Nothing else left: the avoided id after all. */
	CU_ASSERT_EQUAL(ids_assign(&t, names, NULL, 6, ids), 0);
	CU_ASSERT_EQUAL(ids[5], 0);
}

static void test_backend_keeps_id_only_in_its_service(void)
{
	const char *held[MAX] = {"web-a", "web-b", NULL, NULL, NULL, NULL};
	uint32_t owner[MAX] = {7, 7, 0, 0, 0, 0};
	bool avoid[MAX] = {true, true, false, false, false, false};
	struct id_table t = {
		.max = MAX, .held = held, .owner = owner, .avoid = avoid};
	const char *names[] = {"web-a", "web-b"};
	uint32_t svcs[] = {7, 8}; /* web-b moved to another service */
	uint32_t ids[2];

	CU_ASSERT_EQUAL(ids_assign(&t, names, svcs, 2, ids), 0);
	CU_ASSERT_EQUAL(ids[0], 0);
	CU_ASSERT_EQUAL(ids[1], 2);
}

static void test_out_of_ids(void)
{
	const char *held[MAX] = {0};
	bool avoid[MAX] = {0};
	struct id_table t = {.max = MAX, .held = held, .avoid = avoid};
	const char *names[] = {"1", "2", "3", "4", "5", "6", "7"};
	uint32_t ids[7];

	CU_ASSERT_EQUAL(ids_assign(&t, names, NULL, 7, ids), -ENOSPC);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ids", NULL, NULL);
	CU_add_test(s, "names keep their ids", test_names_keep_their_ids);
	CU_add_test(s, "removed ids are reused last",
		    test_removed_ids_are_reused_last);
	CU_add_test(s, "a backend keeps its id only in its service",
		    test_backend_keeps_id_only_in_its_service);
	CU_add_test(s, "out of ids", test_out_of_ids);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

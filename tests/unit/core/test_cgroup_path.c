// SPDX-License-Identifier: MIT
/* The common ancestor that sockops_cgroup = auto attaches at. */
#include <CUnit/Basic.h>
#include <limits.h>
#include <string.h>

#include "cgroup_path.h"

static const struct {
	const char *a, *b, *common;
} cases[] = {
	{"", "/system.slice/nginx.service", "/system.slice/nginx.service"},
	{"/system.slice/nginx.service", "/system.slice/nginx.service",
	 "/system.slice/nginx.service"},
	{"/system.slice/nginx.service", "/system.slice/varnish.service",
	 "/system.slice"},
	{"/system.slice", "/system.slice/varnish.service", "/system.slice"},
	{"/system.slice/varnish.service", "/system.slice", "/system.slice"},
	/* A shared prefix that is not a whole component. */
	{"/a.slice", "/a.slice2", "/"},
	{"/a.slice2/x", "/a.slice/x", "/"},
	{"/cache/a/b", "/cache/a/c", "/cache/a"},
	{"/system.slice", "/user.slice/user-0.slice", "/"},
	{"/", "/system.slice", "/"},
	{"/system.slice", "/", "/"},
	{"/", "/", "/"},
	{"/x", "/x/", "/x"},
};

static void test_common(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char acc[PATH_MAX];

		strcpy(acc, cases[i].a);
		rs_cgroup_common(acc, cases[i].b);
		if (strcmp(acc, cases[i].common))
			fprintf(stderr, "case %zu: %s + %s -> %s, want %s\n", i,
				cases[i].a, cases[i].b, acc, cases[i].common);
		CU_ASSERT_STRING_EQUAL(acc, cases[i].common);
	}
}

static void test_within(void)
{
	CU_ASSERT_TRUE(rs_cgroup_within("/system.slice/a", "/system.slice"));
	CU_ASSERT_TRUE(rs_cgroup_within("/system.slice", "/system.slice"));
	CU_ASSERT_TRUE(rs_cgroup_within("/system.slice", "/"));
	CU_ASSERT_TRUE(rs_cgroup_within("/", "/"));
	CU_ASSERT_FALSE(rs_cgroup_within("/system.slice2", "/system.slice"));
	CU_ASSERT_FALSE(rs_cgroup_within("/system", "/system.slice"));
	CU_ASSERT_FALSE(rs_cgroup_within("/", "/system.slice"));
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("cgroup_path", NULL, NULL);
	CU_add_test(s, "common ancestor", test_common);
	CU_add_test(s, "within", test_within);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}

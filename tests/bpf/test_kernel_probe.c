// SPDX-License-Identifier: MIT
/*
 * The kernel feature probes (userspace/dataplane/dataplane_probe.c) on the
 * kernel the tests run on: everything the data plane needs is found (the
 * test suite itself needs it), the refusal rules name the right feature
 * and release, and the live SO_REUSEPORT probe agrees with what
 * bpf_sk_assign really does, which test_steer_tc's live test checks with
 * real datagrams. Run by `make bpftest` on the host and by `make vmtest`
 * on Debian 12's 6.1, where the live probe must say "refused".
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include <CUnit/Basic.h>

#include "dataplane_probe.h"

static struct rs_kernel_features kf;

/* Major.minor of uname -r, to sanity-check the probes (never used by them). */
static int release_at_least(int major, int minor)
{
	int a = 0, b = 0;

	if (sscanf(kf.release, "%d.%d", &a, &b) != 2)
		return -1;
	return a > major || (a == major && b >= minor);
}

static void test_needed_features_found(void)
{
	char line[512];

	rs_kernel_format(&kf, line, sizeof(line));
	printf("\n  %s\n", line);
	CU_ASSERT_EQUAL(kf.sk_lookup, 1);
	CU_ASSERT_EQUAL(kf.sk_assign, 1);
	CU_ASSERT_EQUAL(kf.bpf_loop, 1);
	CU_ASSERT_EQUAL(kf.sockmap, 1);
	CU_ASSERT_EQUAL(kf.tc_sk_assign, 1);
	CU_ASSERT_EQUAL(kf.sockops, 1);
	CU_ASSERT_PTR_NULL(rs_kernel_missing(&kf));
	CU_ASSERT_PTR_NULL(rs_kernel_missing_tc(&kf));
}

static void test_refusals_name_feature_and_release(void)
{
	struct rs_kernel_features k = kf;
	const struct rs_kernel_need *n;

	k.bpf_loop = 0;
	n = rs_kernel_missing(&k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_PTR_NOT_NULL(strstr(n->what, "bpf_loop"));
	CU_ASSERT_STRING_EQUAL(n->since, "5.17");
	k.sk_lookup = 0;
	n = rs_kernel_missing(&k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_STRING_EQUAL(n->since, "5.9");
	/* A probe that could not run does not refuse: the load will say. */
	k = kf;
	k.bpf_loop = -1;
	CU_ASSERT_PTR_NULL(rs_kernel_missing(&k));
	k.tc_sk_assign = 0;
	n = rs_kernel_missing_tc(&k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_STRING_EQUAL(n->since, "5.7");
}

static void test_reuseport_probe(void)
{
	int again = rs_probe_tc_assign_reuseport();
	int new_enough = release_at_least(6, 6);

	CU_ASSERT(kf.tc_assign_reuseport == 0 || kf.tc_assign_reuseport == 1);
	CU_ASSERT_EQUAL(again, kf.tc_assign_reuseport);
	/*
	 * Upstream took the check out in 6.6; a distribution kernel could
	 * carry the change back, so only the two plain cases are asserted.
	 */
	if (new_enough == 1)
		CU_ASSERT_EQUAL(kf.tc_assign_reuseport, 1);
	if (release_at_least(6, 2) == 0)
		CU_ASSERT_EQUAL(kf.tc_assign_reuseport, 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned failed;

	rs_kernel_probe(&kf);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("kernel_probe", NULL, NULL);
	CU_add_test(s, "features the data plane needs are found",
		    test_needed_features_found);
	CU_add_test(s, "refusals name the feature and the release",
		    test_refusals_name_feature_and_release);
	CU_add_test(s, "TC sk_assign to SO_REUSEPORT: live probe",
		    test_reuseport_probe);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

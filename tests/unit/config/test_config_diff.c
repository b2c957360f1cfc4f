// SPDX-License-Identifier: MIT
/* What a reload changes: which rings must be rebuilt, what is a word. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config_diff.h"

#define BASE                                                                   \
	"[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"             \
	"[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"             \
	"[backend a]\nservice = web\naddress = 127.0.0.1:1\n"                  \
	"[backend b]\nservice = web\naddress = 127.0.0.1:2\nweight = 2\n"      \
	"[backend d]\nservice = dns\naddress = 127.0.0.1:53\n"

static struct rs_config old_cfg;

static void diff_with(const char *text, struct rs_config_diff *d)
{
	struct rs_config cur;
	char err[1024];

	CU_ASSERT_EQUAL_FATAL(
		rs_config_load_string(text, "t.conf", &cur, err, sizeof(err)),
		0);
	CU_ASSERT_EQUAL(rs_config_diff(&old_cfg, &cur, d), 0);
	rs_config_free(&cur);
}

static void test_identical(void)
{
	struct rs_config_diff d;

	diff_with(BASE, &d);
	CU_ASSERT_EQUAL(d.rebuilds, 0);
	CU_ASSERT_EQUAL(d.services_changed, 0);
	CU_ASSERT_EQUAL(d.backends_added + d.backends_removed, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.summary, "0 rings to rebuild"));
}

/* Order in the file does not matter: identity is by name. */
static void test_reordered(void)
{
	struct rs_config_diff d;

	diff_with("[backend d]\nservice = dns\naddress = 127.0.0.1:53\n"
		  "[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		  "[backend b]\nservice = web\naddress = 127.0.0.1:2\n"
		  "weight = 2\n"
		  "[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
		  "[backend a]\nservice = web\naddress = 127.0.0.1:1\n",
		  &d);
	CU_ASSERT_EQUAL(d.rebuilds, 0);
}

static void test_membership_rebuilds_only_that_service(void)
{
	struct rs_config_diff d;

	diff_with(BASE "[backend c]\nservice = web\naddress = 127.0.0.1:3\n",
		  &d);
	CU_ASSERT_EQUAL(d.backends_added, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 1);

	/* Removing b: web rebuilds, dns does not. */
	diff_with("[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
		  "[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		  "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		  "[backend d]\nservice = dns\naddress = 127.0.0.1:53\n",
		  &d);
	CU_ASSERT_EQUAL(d.backends_removed, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 1);
}

/* A lower weight is a state word; a higher one needs more points. */
static void test_weights(void)
{
	struct rs_config_diff d;
	char *text = strdup(BASE), *w = strstr(text, "weight = 2");

	w[9] = '1';
	diff_with(text, &d);
	CU_ASSERT_EQUAL(d.weights_lowered, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 0);
	w[9] = '5';
	diff_with(text, &d);
	CU_ASSERT_EQUAL(d.weights_raised, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 1);
	free(text);
}

static void test_service_parameters(void)
{
	struct rs_config_diff d;

	/* vnodes and seed move every point. */
	diff_with("[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
		  "seed = 7\n"
		  "[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		  "vnodes = 100\n"
		  "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		  "[backend b]\nservice = web\naddress = 127.0.0.1:2\n"
		  "weight = 2\n"
		  "[backend d]\nservice = dns\naddress = 127.0.0.1:53\n",
		  &d);
	CU_ASSERT_EQUAL(d.services_changed, 2);
	CU_ASSERT_EQUAL(d.rebuilds, 2);
	/* A prefix or a fallback does not touch the ring. */
	diff_with("[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
		  "prefix4 = 24\nfallback = drop\nsticky_ttl = 30\n"
		  "[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		  "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		  "[backend b]\nservice = web\naddress = 127.0.0.1:2\n"
		  "weight = 2\n"
		  "[backend d]\nservice = dns\naddress = 127.0.0.1:53\n",
		  &d);
	CU_ASSERT_EQUAL(d.services_changed, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 0);
}

static void test_services_and_moves(void)
{
	struct rs_config_diff d;

	/* dns goes, api comes with d moved into it. */
	diff_with("[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
		  "[service api]\nprotocol = tcp\nlisten = 198.18.0.11:80\n"
		  "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		  "[backend b]\nservice = web\naddress = 127.0.0.1:2\n"
		  "weight = 2\n"
		  "[backend d]\nservice = api\naddress = 127.0.0.1:53\n",
		  &d);
	CU_ASSERT_EQUAL(d.services_added, 1);
	CU_ASSERT_EQUAL(d.services_removed, 1);
	CU_ASSERT_EQUAL(d.backends_moved, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 1); /* api only */
}

static void test_addresses_and_checks_are_not_rebuilds(void)
{
	struct rs_config_diff d;

	diff_with("[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
		  "[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		  "[backend a]\nservice = web\naddress = 127.0.0.1:11\n"
		  "check = http\ninterval = 5s\n"
		  "[backend b]\nservice = web\naddress = 127.0.0.1:2\n"
		  "weight = 2\n"
		  "[backend d]\nservice = dns\naddress = 127.0.0.1:53\n",
		  &d);
	CU_ASSERT_EQUAL(d.addresses_changed, 1);
	CU_ASSERT_EQUAL(d.checks_changed, 1);
	CU_ASSERT_EQUAL(d.rebuilds, 0);
}

int main(void)
{
	char err[1024];
	CU_pSuite s;
	int failed;

	if (rs_config_load_string(BASE, "t.conf", &old_cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("config_diff", NULL, NULL);
	CU_add_test(s, "identical file: nothing to do", test_identical);
	CU_add_test(s, "reordered file: nothing to do", test_reordered);
	CU_add_test(s, "membership rebuilds only its service",
		    test_membership_rebuilds_only_that_service);
	CU_add_test(s, "weights: lower is a word, higher a rebuild",
		    test_weights);
	CU_add_test(s, "vnodes/seed rebuild, other parameters do not",
		    test_service_parameters);
	CU_add_test(s, "services added, removed, backends moved",
		    test_services_and_moves);
	CU_add_test(s, "addresses and checks are not rebuilds",
		    test_addresses_and_checks_are_not_rebuilds);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	rs_config_free(&old_cfg);
	return failed != 0 || CU_get_error();
}

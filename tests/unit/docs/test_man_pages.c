// SPDX-License-Identifier: MIT
/*
 * The man pages against the code: every key the configuration parser
 * knows is described in its section of ringsteer.conf(5), every command
 * of `ringsteer --help` in ringsteer(8), every long option of
 * `ringsteerd --help` in ringsteerd(8). A key or command added without
 * its page fails here rather than in an operator's hands. Run from the
 * repository root, after the binaries are built.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config_keys.h"

#define MAN_CONF   "man/ringsteer.conf.5.scd"
#define MAN_CLI	   "man/ringsteer.8.scd"
#define MAN_DAEMON "man/ringsteerd.8.scd"
#define COMPLETION "contrib/bash-completion/ringsteer"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/*
 * The text of the page's section whose heading line is exactly @heading,
 * up to the next heading; NULL when there is none. Copied, so that a
 * search cannot run into the next section.
 */
static char *page_section(const char *page, const char *heading)
{
	char want[128];
	const char *start, *end;

	snprintf(want, sizeof(want), "\n%s\n", heading);
	start = strstr(page, want);
	if (!start)
		return NULL;
	start += strlen(want);
	end = strstr(start, "\n# ");
	return strndup(start, end ? (size_t)(end - start) : strlen(start));
}

/* @term is described: a definition line of @text starts with *term*. */
static bool defines(const char *text, const char *term)
{
	char want[128];

	snprintf(want, sizeof(want), "\n*%s*", term);
	return strstr(text, want) != NULL;
}

static void check_keys(const char *page, const char *heading,
		       const struct key_def *keys)
{
	char *text = page_section(page, heading);

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	for (const struct key_def *k = keys; k->name; k++) {
		if (!defines(text, k->name)) {
			fprintf(stderr, "%s: %s has no *%s*\n", MAN_CONF,
				heading, k->name);
			CU_FAIL("configuration key missing from the man page");
		}
	}
	free(text);
}

static void test_config_keys(void)
{
	char *page = slurp(MAN_CONF);

	CU_ASSERT_PTR_NOT_NULL_FATAL(page);
	check_keys(page, "# [global]", cfg_global_keys);
	check_keys(page, "# [fleet]", cfg_fleet_keys);
	check_keys(page, "# [service NAME]", cfg_service_keys);
	check_keys(page, "# [backend NAME]", cfg_backend_keys);
	free(page);
}

/* The completion's list of commands: the line "... 'status services ...". */
static char *completion_commands(void)
{
	char *text = slurp(COMPLETION), *start, *end, *list = NULL;

	if (!text)
		return NULL;
	start = strstr(text, "'status ");
	end = start ? strchr(start + 1, '\'') : NULL;
	if (end) {
		list = strndup(start, (size_t)(end - start + 1));
		*list = ' ';
		list[end - start] = ' ';
	}
	free(text);
	return list;
}

static void command_documented(const char *word, const char *page,
			       const char *completion)
{
	char want[128];

	if (!defines(page, word)) {
		fprintf(stderr, "%s: COMMANDS has no *%s*\n", MAN_CLI, word);
		CU_FAIL("CLI command missing from the man page");
	}
	snprintf(want, sizeof(want), " %.64s ", word);
	if (!strstr(completion, want)) {
		fprintf(stderr, "%s: no command %s\n", COMPLETION, word);
		CU_FAIL("CLI command missing from the bash completion");
	}
}

static void test_cli_commands(void)
{
	char *page = slurp(MAN_CLI), *text, *completion;
	char line[512];
	bool in = false;
	int n = 0;
	FILE *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(page);
	text = page_section(page, "# COMMANDS");
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	completion = completion_commands();
	CU_ASSERT_PTR_NOT_NULL_FATAL(completion);
	/* "  status   daemon, programs, ..." after "Commands:" */
	p = popen("build/ringsteer --help", "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	while (fgets(line, sizeof(line), p)) {
		if (!in) {
			in = !strcmp(line, "Commands:\n");
			continue;
		}
		if (strncmp(line, "  ", 2))
			break;
		line[2 + strcspn(line + 2, " \n")] = '\0';
		command_documented(line + 2, text, completion);
		n++;
	}
	CU_ASSERT_EQUAL(pclose(p), 0);
	CU_ASSERT(n >= 10); /* the help text was read at all */
	free(completion);
	free(text);
	free(page);
}

/* @word is "*--long*", as an option's definition line spells it. */
static void option_documented(const char *word, const char *page)
{
	if (!strstr(page, word)) {
		fprintf(stderr, "%s: OPTIONS has no %s\n", MAN_DAEMON, word);
		CU_FAIL("ringsteerd option missing from the man page");
	}
}

static void test_daemon_options(void)
{
	char *page = slurp(MAN_DAEMON), *text;
	char want[96];
	FILE *p;
	char line[512];
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(page);
	text = page_section(page, "# OPTIONS");
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	/* Every "--long" the usage names, wherever it stands in the line. */
	p = popen("build/ringsteerd --help", "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	while (fgets(line, sizeof(line), p)) {
		for (char *s = strstr(line, "--"); s; s = strstr(s + 2, "--")) {
			size_t len =
				strspn(s + 2, "abcdefghijklmnopqrstuvwxyz-");

			if (!len)
				continue;
			snprintf(want, sizeof(want), "*--%.*s*", (int)len,
				 s + 2);
			option_documented(want, text);
			n++;
		}
	}
	CU_ASSERT_EQUAL(pclose(p), 0);
	CU_ASSERT(n >= 6);
	free(text);
	free(page);
}

/* Every .PHONY target of the Makefile has its line in `make help`. */
static void test_make_help(void)
{
	char *mk = slurp("Makefile"), *help = NULL, *tok, *save;
	char want[96];
	size_t len = 0;
	int n = 0;
	FILE *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mk);
	p = popen("make -s --no-print-directory help", "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	if (getdelim(&help, &len, '\0', p) < 0)
		CU_FAIL("make help printed nothing");
	CU_ASSERT_EQUAL(pclose(p), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(help);
	/* .PHONY: a b c \<newline> d e ... (continuation lines) */
	for (char *ph = strstr(mk, "\n.PHONY:"); ph;
	     ph = strstr(ph + 1, "\n.PHONY:")) {
		char *end = ph + 8, *list;

		while ((end = strchr(end + 1, '\n')) && end[-1] == '\\')
			;
		list = strndup(ph + 8,
			       end ? (size_t)(end - ph - 8) : strlen(ph + 8));
		for (tok = strtok_r(list, " \t\\\n", &save); tok;
		     tok = strtok_r(NULL, " \t\\\n", &save)) {
			snprintf(want, sizeof(want), "make %s ", tok);
			if (strcmp(tok, "all") && !strstr(help, want)) {
				fprintf(stderr, "make help: no '%s'\n", want);
				CU_FAIL("a make target missing from make help");
			}
			n++;
		}
		free(list);
	}
	CU_ASSERT(n >= 15);
	free(help);
	free(mk);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("man pages", NULL, NULL);
	CU_add_test(s, "every configuration key in ringsteer.conf(5)",
		    test_config_keys);
	CU_add_test(s, "every CLI command in ringsteer(8)", test_cli_commands);
	CU_add_test(s, "every ringsteerd option in ringsteerd(8)",
		    test_daemon_options);
	CU_add_test(s, "every make target in make help", test_make_help);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: the errors of one file. Every part of the
 * parser that can refuse something (the reader, the sections and keys, the
 * whole-file checks, the memory budget) is handed this and nothing more to
 * say so; config.c turns it into the text rs_config_load() returns.
 */
#ifndef RS_CONFIG_REPORT_H
#define RS_CONFIG_REPORT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Errors kept for the report. A file of garbage has one error per line, and
 * each kept error costs memory and a reader's screen, so the rest are only
 * counted.
 */
#define CFG_MAX_ERRORS 30

struct cfg_error {
	int line;
	size_t seq; /* keeps report order among errors of one line */
	char *text;
};

struct cfg_report {
	const char *file; /* as messages name it */
	struct cfg_error *errs;
	size_t n_errs, cap_errs;
	size_t n_reported; /* kept or not: see CFG_MAX_ERRORS */
	bool nomem;	   /* an allocation failed: the report is one line */
};

/*
 * One error as "FILE:LINE: [LABEL] KEY: message"; the label and key parts
 * are left out when NULL, and the line when it is 0 (about the whole file).
 */
void __attribute__((format(printf, 5, 6)))
cfg_report(struct cfg_report *r, int line, const char *label, const char *key,
	   const char *fmt, ...);

/* Sorted by line, joined with '\n', cut to fit @errlen. */
void cfg_report_write(struct cfg_report *r, char *err, size_t errlen);
void cfg_report_free(struct cfg_report *r);

#endif /* RS_CONFIG_REPORT_H */

// SPDX-License-Identifier: MIT
/*
 * Errors are collected as they are found, which is not in line order: the
 * whole-file checks run after the last line. They are sorted by line
 * before anyone sees them, and a failed allocation turns the lot into one
 * "out of memory" rather than a list with holes in it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf, reallocarray */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_report.h"

static void push_error(struct cfg_report *r, int line, char *text)
{
	r->n_reported++;
	if (r->n_errs == CFG_MAX_ERRORS) {
		free(text);
		return;
	}
	if (r->n_errs == r->cap_errs) {
		size_t cap = r->cap_errs ? r->cap_errs * 2 : 16;
		struct cfg_error *e = reallocarray(r->errs, cap, sizeof(*e));

		if (!e) {
			free(text);
			r->nomem = true;
			return;
		}
		r->errs = e;
		r->cap_errs = cap;
	}
	r->errs[r->n_errs] = (struct cfg_error){
		.line = line,
		.seq = r->n_errs,
		.text = text,
	};
	r->n_errs++;
}

void __attribute__((format(printf, 5, 6)))
cfg_report(struct cfg_report *r, int line, const char *label, const char *key,
	   const char *fmt, ...)
{
	char *msg, *text, at[16] = "";
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		r->nomem = true;
		return;
	}
	if (line > 0)
		snprintf(at, sizeof(at), ":%d", line);
	n = asprintf(&text, "%s%s: %s%s%s%s%s%s", r->file, at, label ? "[" : "",
		     label ? label : "", label ? "]" : "",
		     key && label ? " " : "", key ? key : "",
		     key || label ? ": " : "");
	if (n >= 0) {
		char *full;

		n = asprintf(&full, "%s%s", text, msg);
		free(text);
		text = full;
	}
	free(msg);
	if (n < 0) {
		r->nomem = true;
		return;
	}
	push_error(r, line, text);
}

static int cmp_error(const void *a, const void *b)
{
	const struct cfg_error *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void cfg_report_write(struct cfg_report *r, char *err, size_t errlen)
{
	size_t used = 0, i;

	if (!err || errlen == 0)
		return;
	err[0] = '\0';
	if (r->nomem) {
		snprintf(err, errlen, "%s: out of memory", r->file);
		return;
	}
	qsort(r->errs, r->n_errs, sizeof(*r->errs), cmp_error);
	for (i = 0; i < r->n_errs && used < errlen - 1; i++) {
		int n = snprintf(err + used, errlen - used, "%s%s",
				 i ? "\n" : "", r->errs[i].text);

		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (r->n_reported > r->n_errs && used < errlen - 1)
		snprintf(err + used, errlen - used,
			 "\n%s: %zu more errors not shown", r->file,
			 r->n_reported - r->n_errs);
}

void cfg_report_free(struct cfg_report *r)
{
	for (size_t i = 0; i < r->n_errs; i++)
		free(r->errs[i].text);
	free(r->errs);
	r->errs = NULL;
	r->n_errs = r->cap_errs = 0;
}

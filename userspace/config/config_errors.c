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

#include "config_internal.h"

static void push_error(struct parser *p, int line, char *text)
{
	p->n_reported++;
	if (p->n_errs == CFG_MAX_ERRORS) {
		free(text);
		return;
	}
	if (p->n_errs == p->cap_errs) {
		size_t cap = p->cap_errs ? p->cap_errs * 2 : 16;
		struct cfg_error *e = reallocarray(p->errs, cap, sizeof(*e));

		if (!e) {
			free(text);
			p->nomem = true;
			return;
		}
		p->errs = e;
		p->cap_errs = cap;
	}
	p->errs[p->n_errs] = (struct cfg_error){
		.line = line,
		.seq = p->n_errs,
		.text = text,
	};
	p->n_errs++;
}

/*
 * One error as "FILE:LINE: [LABEL] KEY: message"; the label and key parts
 * are left out when NULL, and the line when it is 0 (about the whole file).
 */
void __attribute__((format(printf, 5, 6)))
cfg_report(struct parser *p, int line, const char *label, const char *key,
	   const char *fmt, ...)
{
	char *msg, *text, at[16] = "";
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->nomem = true;
		return;
	}
	if (line > 0)
		snprintf(at, sizeof(at), ":%d", line);
	n = asprintf(&text, "%s%s: %s%s%s%s%s%s", p->file, at, label ? "[" : "",
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
		p->nomem = true;
		return;
	}
	push_error(p, line, text);
}

void cfg_bad_value(struct parser *p, const char *why)
{
	key_error(p, "bad %s '%s': %s", p->def->noun, p->value, why);
}

static int cmp_error(const void *a, const void *b)
{
	const struct cfg_error *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorted by line, joined with '\n', cut to fit @errlen. */
void cfg_write_errors(struct parser *p, char *err, size_t errlen)
{
	size_t used = 0, i;

	if (!err || errlen == 0)
		return;
	err[0] = '\0';
	if (p->nomem) {
		snprintf(err, errlen, "%s: out of memory", p->file);
		return;
	}
	qsort(p->errs, p->n_errs, sizeof(*p->errs), cmp_error);
	for (i = 0; i < p->n_errs && used < errlen - 1; i++) {
		int n = snprintf(err + used, errlen - used, "%s%s",
				 i ? "\n" : "", p->errs[i].text);

		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (p->n_reported > p->n_errs && used < errlen - 1)
		snprintf(err + used, errlen - used,
			 "\n%s: %zu more errors not shown", p->file,
			 p->n_reported - p->n_errs);
}

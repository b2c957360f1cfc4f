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

/*
 * Errors quote what the file says (a bad value, a name, a path), and go to
 * a terminal, the journal and JSON replies: a byte that is not printable
 * ASCII is shown as \xNN, so no escape sequence reaches a terminal and
 * the text is always valid UTF-8. NULL when out of memory.
 */
static char *escaped(char *text)
{
	size_t n = 0, i;
	char *out, *o;

	for (i = 0; text[i]; i++)
		n += (unsigned char)text[i] < 0x20 ||
		     (unsigned char)text[i] >= 0x7f;
	if (!n)
		return text;
	out = malloc(i + 3 * n + 1);
	for (o = out, i = 0; out && text[i]; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c < 0x20 || c >= 0x7f)
			o += sprintf(o, "\\x%02x", c);
		else
			*o++ = (char)c;
	}
	if (out)
		*o = '\0';
	free(text);
	return out;
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
	if (n >= 0 && !(text = escaped(text)))
		n = -1;
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

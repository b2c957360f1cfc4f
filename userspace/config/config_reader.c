// SPDX-License-Identifier: MIT
/*
 * The file is read line by line through our own inih reader. The reader is
 * where line numbers come from (Debian's inih is built without
 * INI_HANDLER_LINENO) and where section headers are handled (passed on to
 * config_sections.c): inih truncates section names to 50 bytes and says
 * nothing about empty sections, so it only ever sees comments and
 * "key = value" lines from us.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "config_internal.h"

char *cfg_trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int cfg_on_key(void *user, const char *section, const char *name,
	       const char *value)
{
	struct parser *p = user;
	const struct key_def *def;
	size_t n_reported;

	(void)section; /* tracked by the reader, see cfg_begin_section() */
	p->def = NULL;
	p->value = value;
	if (p->kind == SECT_SKIP)
		return 1;
	if (p->kind == SECT_NONE) {
		cfg_report(p, p->line, NULL, name,
			   "key outside of any section");
		return 1;
	}
	for (def = p->keys; def->name; def++)
		if (strcmp(def->name, name) == 0)
			break;
	if (!def->name) {
		cfg_report(p, p->line, p->label, name, "unknown key");
		return 1;
	}
	p->def = def;
	if (p->key_line[def - p->keys] && !def->repeatable) {
		key_error(p, "duplicate key (first set at %s:%d)", p->file,
			  p->key_line[def - p->keys]);
		return 1;
	}
	if (!p->key_line[def - p->keys])
		p->key_line[def - p->keys] = p->line;
	if (*value == '\0') {
		key_error(p, "empty value");
		p->key_bad[def - p->keys] = true;
		return 1;
	}
	n_reported = p->n_reported;
	def->set(p, p->obj, value);
	if (p->n_reported != n_reported)
		p->key_bad[def - p->keys] = true;
	return 1;
}

/*
 * Next raw line into p->buf without its '\n'. Returns its length, -1 at
 * the end of input or when memory runs out (p->read_err). A line may hold
 * NUL bytes: the caller compares the length with strlen().
 */
static ssize_t next_line(struct parser *p)
{
	const char *nl;
	size_t len;

	if (p->text == p->text_end)
		return -1;
	nl = memchr(p->text, '\n', (size_t)(p->text_end - p->text));
	len = (size_t)((nl ? nl : p->text_end) - p->text);
	if (len + 1 > p->cap) {
		char *b = realloc(p->buf, len + 1);

		if (!b) {
			p->read_err = ENOMEM;
			return -1;
		}
		p->buf = b;
		p->cap = len + 1;
	}
	memcpy(p->buf, p->text, len);
	p->buf[len] = '\0';
	p->text += nl ? len + 1 : len;
	return (ssize_t)len;
}

/* Start of an inline comment as inih sees it: ';' after a blank. */
static char *inline_comment(char *s)
{
	char *c;

	for (c = s; (c = strchr(c, ';')); c++)
		if (c > s && isspace((unsigned char)c[-1]))
			return c;
	return NULL;
}

static bool is_comment(const char *s)
{
	return *s == ';' || *s == '#';
}

/* inih would fail on this line without calling us; say why instead. */
static bool check_key_line(struct parser *p, char *s)
{
	char *comment = inline_comment(s);
	size_t sep = strcspn(s, "=:");

	if (!s[sep] || (comment && comment < s + sep)) {
		cfg_report(p, p->line, p->kind > SECT_SKIP ? p->label : NULL,
			   NULL, "expected 'key = value'");
		return false;
	}
	if (sep == 0) {
		cfg_report(p, p->line, p->kind > SECT_SKIP ? p->label : NULL,
			   NULL, "missing key name before '%c'", s[0]);
		return false;
	}
	return true;
}

/*
 * inih reads into a fixed buffer of @num bytes; a longer line would be split
 * and its tail parsed as a line of its own. Long comments are harmless, so
 * only lines still too long without their comment are refused.
 */
static char *fit_line(struct parser *p, char *s, int num)
{
	char *comment;

	if (strlen(s) + 2 <= (size_t)num)
		return s;
	if (is_comment(s))
		return NULL;
	comment = inline_comment(s);
	if (comment) {
		*comment = '\0';
		s = cfg_trim(s);
		if (strlen(s) + 2 <= (size_t)num)
			return s;
	}
	cfg_report(p, p->line, p->kind > SECT_SKIP ? p->label : NULL, NULL,
		   "line too long (max %d characters)", num - 2);
	return NULL;
}

/*
 * The fgets()-like reader inih calls once per line. Leading blanks are
 * dropped so that inih never takes an indented line as the continuation of
 * the previous value.
 */
char *cfg_read_line(char *str, int num, void *stream)
{
	struct parser *p = stream;
	ssize_t n = next_line(p);
	char *s;

	if (n < 0)
		return NULL;
	p->line++;
	s = p->buf;
	if (p->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	if (strlen(p->buf) != (size_t)n) {
		cfg_report(p, p->line, NULL, NULL, "line contains a NUL byte");
		s = "";
	}
	s = cfg_trim(s);
	if (*s == '[') {
		cfg_begin_section(p, s);
		s = "";
	} else if (*s && !is_comment(s)) {
		s = fit_line(p, s, num);
		if (!s || !check_key_line(p, s))
			s = "";
	}
	snprintf(str, (size_t)num, "%s\n", s);
	return str;
}

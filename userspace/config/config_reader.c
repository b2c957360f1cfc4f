// SPDX-License-Identifier: MIT
/*
 * The file is read line by line through our own inih reader. The reader is
 * where line numbers come from (Debian's inih is built without
 * INI_HANDLER_LINENO) and where section headers are taken out: inih
 * truncates section names to 50 bytes and says nothing about empty
 * sections, so it only ever sees comments and "key = value" lines from us.
 * Headers, keys and unreadable lines go to the caller's callback in file
 * order; what a section means is not the reader's business.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "config_reader.h"

struct reader {
	/* input: the whole file, which may hold NUL bytes */
	const char *text;
	const char *text_end;
	char *buf;
	size_t cap;
	int read_err; /* ENOMEM: a line did not fit in memory */
	int line;

	struct cfg_report *report;
	cfg_event_fn on_event;
	void *user;
};

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

static void emit(struct reader *rd, enum cfg_event_kind kind, char *text,
		 const char *key, const char *value)
{
	struct cfg_event ev = {
		.kind = kind,
		.line = rd->line,
		.text = text,
		.key = key,
		.value = value,
	};

	rd->on_event(rd->user, &ev);
}

/* What inih calls for each "key = value": always the line just read. */
static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	(void)section; /* headers never reach inih, see read_line() */
	emit(user, CFG_EV_KEY, NULL, name, value);
	return 1;
}

/*
 * Next raw line into rd->buf without its '\n'. Returns its length, -1 at
 * the end of input or when memory runs out (rd->read_err). A line may hold
 * NUL bytes: the caller compares the length with strlen().
 */
static ssize_t next_line(struct reader *rd)
{
	const char *nl;
	size_t len;

	if (rd->text == rd->text_end)
		return -1;
	nl = memchr(rd->text, '\n', (size_t)(rd->text_end - rd->text));
	len = (size_t)((nl ? nl : rd->text_end) - rd->text);
	if (len + 1 > rd->cap) {
		char *b = realloc(rd->buf, len + 1);

		if (!b) {
			rd->read_err = ENOMEM;
			return -1;
		}
		rd->buf = b;
		rd->cap = len + 1;
	}
	memcpy(rd->buf, rd->text, len);
	rd->buf[len] = '\0';
	rd->text += nl ? len + 1 : len;
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

/*
 * Names, keys and values are printable text: a control character (an
 * escape sequence, a carriage return) would reach terminals and logs
 * wherever they are shown. Tabs are blanks. 0 when there is none.
 */
static size_t control_at(const char *s)
{
	for (size_t i = 0; s[i]; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') ||
		    s[i] == 0x7f)
			return i + 1;
	return 0;
}

/* A line inih cannot use; the section code says under which section. */
static void __attribute__((format(printf, 2, 3)))
bad_line(struct reader *rd, const char *fmt, ...)
{
	char why[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	emit(rd, CFG_EV_BAD_LINE, why, NULL, NULL);
}

/* inih would fail on this line without calling us; say why instead. */
static bool check_key_line(struct reader *rd, char *s)
{
	char *comment = inline_comment(s);
	size_t sep = strcspn(s, "=:");

	if (!s[sep] || (comment && comment < s + sep)) {
		bad_line(rd, "expected 'key = value'");
		return false;
	}
	if (sep == 0) {
		bad_line(rd, "missing key name before '%c'", s[0]);
		return false;
	}
	return true;
}

/*
 * inih reads into a fixed buffer of @num bytes; a longer line would be split
 * and its tail parsed as a line of its own. Long comments are harmless, so
 * only lines still too long without their comment are refused.
 */
static char *fit_line(struct reader *rd, char *s, int num)
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
	bad_line(rd, "line too long (max %d characters)", num - 2);
	return NULL;
}

/*
 * The fgets()-like reader inih calls once per line. Leading blanks are
 * dropped so that inih never takes an indented line as the continuation of
 * the previous value.
 */
static char *read_line(char *str, int num, void *stream)
{
	struct reader *rd = stream;
	ssize_t n = next_line(rd);
	size_t col;
	char *s;

	if (n < 0)
		return NULL;
	rd->line++;
	s = rd->buf;
	if (rd->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	if (strlen(rd->buf) != (size_t)n) {
		cfg_report(rd->report, rd->line, NULL, NULL,
			   "line contains a NUL byte");
		s = "";
	}
	s = cfg_trim(s);
	/* A header's name is checked (and quoted escaped) as a name. */
	if (*s != '[' && !is_comment(s) && (col = control_at(s))) {
		cfg_report(rd->report, rd->line, NULL, NULL,
			   "control character 0x%02x at column %zu: names and "
			   "values are printable text",
			   (unsigned char)s[col - 1], col);
		s = "";
	}
	if (*s == '[') {
		emit(rd, CFG_EV_SECTION, s, NULL, NULL);
		s = "";
	} else if (is_comment(s)) {
		/*
		 * Comments never reach inih: one longer than its buffer would
		 * arrive cut, without its newline, and inih 56 and newer
		 * (Debian 13 has 59) take the next line for the rest of it
		 * and drop that.
		 */
		s = "";
	} else if (*s) {
		s = fit_line(rd, s, num);
		if (!s || !check_key_line(rd, s))
			s = "";
	}
	snprintf(str, (size_t)num, "%s\n", s);
	return str;
}

int cfg_read(const char *text, size_t len, struct cfg_report *r,
	     cfg_event_fn on_event, void *user)
{
	struct reader rd = {
		.text = text,
		.text_end = text + len,
		.report = r,
		.on_event = on_event,
		.user = user,
	};
	int ret;

	/*
	 * inih only gets lines that it can parse, so a line number returned
	 * here means a handler failure, and ours never fail; -2 is its own
	 * allocation failing.
	 */
	ret = ini_parse_stream(read_line, &rd, on_key, &rd);
	free(rd.buf);
	return ret == -2 || rd.read_err ? -ENOMEM : 0;
}

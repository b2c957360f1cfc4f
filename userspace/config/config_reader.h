/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: the file as a sequence of lines that
 * matter. The reader knows the INI syntax and nothing of what the
 * sections mean; it hands each header, each "key = value" and each line
 * it cannot read to a callback, in file order.
 */
#ifndef RS_CONFIG_READER_H
#define RS_CONFIG_READER_H

#include <stddef.h>

#include "config_report.h"

enum cfg_event_kind {
	CFG_EV_SECTION,	 /* a header: @text is the whole trimmed line */
	CFG_EV_KEY,	 /* "key = value": @key and @value, trimmed */
	CFG_EV_BAD_LINE, /* neither: @text says why, for the current section */
};

struct cfg_event {
	enum cfg_event_kind kind;
	int line; /* 1-based */
	char *text;
	const char *key, *value;
};

/* @text may be changed by the callback (the section code cuts it up). */
typedef void (*cfg_event_fn)(void *user, struct cfg_event *ev);

/*
 * Reads @len bytes at @text (which may hold NUL bytes) and calls @on_event
 * for each line that is not blank or a comment. Errors about the bytes
 * themselves, with no section to name, go to @r. Returns 0, or -ENOMEM
 * when a line did not fit in memory (the lines before it were handed on).
 */
int cfg_read(const char *text, size_t len, struct cfg_report *r,
	     cfg_event_fn on_event, void *user);

/* @s without leading and trailing blanks (the trailing ones cut off). */
char *cfg_trim(char *s);

#endif /* RS_CONFIG_READER_H */

/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: the file's lines (config_reader.c) into
 * its entries, one section and one key at a time. What needs the whole
 * file waits for config_checks.c.
 */
#ifndef RS_CONFIG_SECTIONS_H
#define RS_CONFIG_SECTIONS_H

#include <stddef.h>

#include "config_entries.h"
#include "config_report.h"

/*
 * Fills @out (which holds the [global] defaults) from @len bytes at @text,
 * every refusal going to @r. Returns 0 or -ENOMEM; @out is to be freed
 * with cfg_entries_free() either way.
 */
int cfg_collect(const char *text, size_t len, struct cfg_report *r,
		struct cfg_entries *out);
void cfg_entries_free(struct cfg_entries *e);

#endif /* RS_CONFIG_SECTIONS_H */

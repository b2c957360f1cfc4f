/* SPDX-License-Identifier: MIT */
/*
 * Listen addresses that are not local to the host, said where an operator
 * looks: the log at start and reload, `ringsteer reload`, `ringsteer
 * status`. Warned, never refused: a VIP that keepalived moves between
 * hosts is absent on the backup until it fails over.
 */
#ifndef RS_LISTEN_CHECK_H
#define RS_LISTEN_CHECK_H

#include <stdbool.h>

#include <jansson.h>

struct daemon;

/*
 * Checks every listen of the configuration in force now; each one that is
 * not local is logged as a warning when @log, and appended to @into (a
 * JSON array) when not NULL. Returns how many.
 */
size_t listen_check(const struct daemon *d, bool log, json_t *into);

#endif /* RS_LISTEN_CHECK_H */

/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: what needs the whole file, run once on the
 * collected entries after the last line.
 */
#ifndef RS_CONFIG_CHECKS_H
#define RS_CONFIG_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_entries.h"
#include "config_report.h"

/*
 * Resolves backends to their services, fills the defaults that depend on
 * other keys, and reports what the file gets wrong as a whole. A file
 * without services is refused unless @allow_empty (RS_CONFIG_ALLOW_EMPTY).
 */
void cfg_validate(struct cfg_entries *e, bool allow_empty,
		  struct cfg_report *r);

/* ---- kernel memory (config_memory.c) ---- */

/* Ring points of service @svc: weight * vnodes over its backends. */
uint64_t cfg_service_points(const struct cfg_entries *e, size_t svc);
/* Refuses rings and sticky tables past [global] memory_max. */
void cfg_check_memory(const struct cfg_entries *e, struct cfg_report *r);

/* ---- [fleet] identities (config_fleet_ident.c) ---- */

/*
 * identity_key and member_keys together, this host's key and addresses
 * its own in member_keys, or every other host rejects its record.
 */
void cfg_check_fleet_identity(const struct fleet_entry *f,
			      struct cfg_report *r);

#endif /* RS_CONFIG_CHECKS_H */

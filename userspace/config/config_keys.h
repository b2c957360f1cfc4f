/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: the keys of each section and what setting
 * one takes. A setter sees one "key = value" line (struct cfg_key) and the
 * entry it fills, never the rest of the parser.
 */
#ifndef RS_CONFIG_KEYS_H
#define RS_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_entries.h"
#include "config_report.h"

struct cfg_key;
typedef void (*setter_fn)(const struct cfg_key *k, void *obj,
			  const char *value);

struct key_def {
	const char *name;
	const char *noun; /* for "bad NOUN 'value'" */
	setter_fn set;
	bool repeatable;
};

/* The key being set: where it is, for the errors about it. */
struct cfg_key {
	struct cfg_report *report;
	int line;
	const char *label; /* its section, as in "[service web]" */
	const struct key_def *def;
	const char *value;
};

/* config_global.c, config_service.c, config_backend.c, config_fleet.c */
extern const struct key_def cfg_global_keys[];
extern const struct key_def cfg_service_keys[];
extern const struct key_def cfg_backend_keys[];
extern const struct key_def cfg_fleet_keys[];
extern const struct fleet_entry cfg_fleet_defaults;
extern const struct global_entry cfg_global_defaults;
extern const struct svc_entry cfg_service_defaults;
extern const struct be_entry cfg_backend_defaults;

/* ---- values (config_values.c) ---- */

#define NAME_RULE                                                              \
	"names are 1..63 characters of A-Z a-z 0-9 . _ -, not beginning with " \
	"-"

/* An error about key @k. */
void __attribute__((format(printf, 2, 3)))
cfg_key_error(const struct cfg_key *k, const char *fmt, ...);
/* "bad NOUN 'value': @why" about key @k. */
void cfg_bad_value(const struct cfg_key *k, const char *why);

int cfg_parse_u64(const char *s, bool hex_ok, uint64_t *out);
/* These return false after reporting @v as a bad value of @k. */
bool cfg_parse_ranged(const struct cfg_key *k, const char *v, uint64_t min,
		      uint64_t max, uint64_t *out);
bool cfg_parse_ranged_duration(const struct cfg_key *k, const char *v,
			       uint32_t min_ms, uint32_t *out);
bool cfg_valid_name(const char *s);
const char *cfg_fmt_duration(char *buf, size_t len, uint32_t ms);
int cfg_parse_server_id(const char *s, uint8_t out[RS_QUIC_MAX_SERVER_ID]);

#endif /* RS_CONFIG_KEYS_H */

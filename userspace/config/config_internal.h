/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: the parser's state, which every step of
 * reading, setting and checking works on, and the helpers they share. The
 * rest of ringsteer knows config.h.
 */
#ifndef RS_CONFIG_INTERNAL_H
#define RS_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"
#include "config.h"

#define LABEL_MAX 256
#define MAX_KEYS  16

enum sect_kind {
	SECT_NONE, /* before the first header */
	SECT_SKIP, /* bad or duplicate header: its keys are not looked at */
	SECT_GLOBAL,
	SECT_SERVICE,
	SECT_BACKEND,
};

struct parser;
typedef void (*setter_fn)(struct parser *p, void *obj, const char *value);

struct key_def {
	const char *name;
	const char *noun; /* for "bad NOUN 'value'" */
	setter_fn set;
	bool repeatable;
};

/*
 * Every section entry has key_line[] (where each key was first set, 0 when
 * absent) and key_bad[] (its value was refused, so cross-key checks must not
 * use the default left in its place).
 */
struct global_entry {
	char bpffs[PATH_MAX];
	char control_socket[PATH_MAX];
	char interfaces[RS_MAX_INTERFACES][RS_IFNAME_MAX];
	size_t n_interfaces;
	bool has_metrics;
	struct rs_addr metrics;
	uint32_t control_clients_max;
	uint32_t metrics_clients_max;
	uint32_t client_idle_ms;
	uint64_t memory_max;
	int line;
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
};

struct svc_entry {
	struct rs_service_conf conf;
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
};

/* Longest server_id text kept for messages; longer text is cut. */
#define SERVER_ID_TEXT_MAX 48

struct be_entry {
	struct rs_backend_conf conf;
	char service[RS_NAME_MAX];
	bool resolved; /* conf.service is valid */
	/* server_id as parsed, right-aligned; placed once sid_len is known */
	uint8_t server_id[RS_QUIC_MAX_SERVER_ID];
	char server_id_text[SERVER_ID_TEXT_MAX];
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
};

struct cfg_error {
	int line;
	size_t seq; /* keeps report order among errors of one line */
	char *text;
};

struct parser {
	const char *file;

	/* input: the whole file, which may hold NUL bytes */
	const char *text;
	const char *text_end;
	bool allow_empty; /* RS_CONFIG_ALLOW_EMPTY */
	char *buf;
	size_t cap;
	int read_err; /* ENOMEM: a line did not fit in memory */
	int line;

	/* the section the reader saw last */
	enum sect_kind kind;
	void *obj;
	int *key_line;
	bool *key_bad;
	const struct key_def *keys;
	char label[LABEL_MAX];

	/* the key being handled, for error messages */
	const struct key_def *def;
	const char *value;

	struct global_entry global;
	struct svc_entry *svcs;
	size_t n_svcs, cap_svcs;
	struct be_entry *bes;
	size_t n_bes, cap_bes;

	struct cfg_error *errs;
	size_t n_errs, cap_errs;
	size_t n_reported; /* kept or not: see CFG_MAX_ERRORS */
	bool nomem;
};

/*
 * Where the keys the whole-file checks look at stand in cfg_service_keys[],
 * cfg_backend_keys[] and cfg_global_keys[], and so in key_line[] and
 * key_bad[].
 */
enum {
	SVC_PROTOCOL,
	SVC_LISTEN,
	SVC_COOKIE,
	SVC_QUIC_SERVER_ID_LEN,
	SVC_QUIC_CID_LEN,
	SVC_VNODES,
	SVC_STICKY_TTL,
	SVC_STICKY_MAX,
};

enum {
	BE_SERVICE,
	BE_ADDRESS,
	BE_CHECK,
	BE_CHECK_PATH,
	BE_CHECK_EXPECT,
	BE_CHECK_HOST,
	BE_INTERVAL,
	BE_TIMEOUT,
	BE_SERVER_ID,
	BE_CHECK_PORT,
};

enum {
	GL_MEMORY_MAX,
};

/* ---- the keys of each section ---- */

/* config_global.c, config_service.c, config_backend.c */
extern const struct key_def cfg_global_keys[];
extern const struct key_def cfg_service_keys[];
extern const struct key_def cfg_backend_keys[];
extern const struct svc_entry cfg_service_defaults;
extern const struct be_entry cfg_backend_defaults;

/* ---- errors (config_errors.c) ---- */

/*
 * Errors kept for the report. A file of garbage has one error per line, and
 * each kept error costs memory, so the rest are only counted.
 */
#define CFG_MAX_ERRORS 100

void __attribute__((format(printf, 5, 6)))
cfg_report(struct parser *p, int line, const char *label, const char *key,
	   const char *fmt, ...);

/* An error about the key on the current line. */
#define key_error(p, ...)                                                      \
	cfg_report(p, (p)->line, (p)->kind == SECT_NONE ? NULL : (p)->label,   \
		   (p)->def ? (p)->def->name : NULL, __VA_ARGS__)

/* "bad NOUN 'value': @why" about the current key. */
void cfg_bad_value(struct parser *p, const char *why);
void cfg_write_errors(struct parser *p, char *err, size_t errlen);

/* ---- values (config_values.c) ---- */

#define NAME_RULE "names are 1..63 characters of A-Z a-z 0-9 . _ -"

int cfg_parse_u64(const char *s, bool hex_ok, uint64_t *out);
bool cfg_parse_ranged(struct parser *p, const char *v, uint64_t min,
		      uint64_t max, uint64_t *out);
bool cfg_valid_name(const char *s);
bool cfg_parse_ranged_duration(struct parser *p, const char *v, uint32_t min_ms,
			       uint32_t *out);
const char *cfg_fmt_duration(char *buf, size_t len, uint32_t ms);
int cfg_parse_server_id(const char *s, uint8_t out[RS_QUIC_MAX_SERVER_ID]);

/* ---- reading (config_reader.c, config_sections.c) ---- */

/* What inih calls: the line reader and the key handler. */
char *cfg_read_line(char *str, int num, void *stream);
int cfg_on_key(void *user, const char *section, const char *name,
	       const char *value);
char *cfg_trim(char *s);
void cfg_begin_section(struct parser *p, char *s);

/* ---- whole-file checks (config_checks.c) ---- */

/* Run once, after the last line. */
void cfg_validate(struct parser *p);

/* ---- kernel memory (config_memory.c) ---- */

/* Ring points of service @svc: weight * vnodes over its backends. */
uint64_t cfg_service_points(const struct parser *p, size_t svc);
/* Refuses rings and sticky tables past [global] memory_max. */
void cfg_check_memory(struct parser *p);

#endif /* RS_CONFIG_INTERNAL_H */

// SPDX-License-Identifier: MIT
/*
 * The file is read line by line through our own inih reader. The reader is
 * where line numbers come from (Debian's inih is built without
 * INI_HANDLER_LINENO) and where section headers are handled: inih truncates
 * section names to 50 bytes and says nothing about empty sections, so it
 * only ever sees comments and "key = value" lines from us.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf, reallocarray */
#endif
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "addr.h"
#include "config.h"

#define LABEL_MAX    256
#define MAX_KEYS     8
#define SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

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

struct global_entry {
	char bpffs[PATH_MAX];
	char control_socket[PATH_MAX];
	int line;
	int key_line[MAX_KEYS];
};

struct svc_entry {
	struct rs_service_conf conf;
	int key_line[MAX_KEYS];
};

struct be_entry {
	struct rs_backend_conf conf;
	char service[RS_NAME_MAX];
	bool resolved; /* conf.service is valid */
	int key_line[MAX_KEYS];
};

struct cfg_error {
	int line;
	size_t seq; /* keeps report order among errors of one line */
	char *text;
};

struct parser {
	const char *file;

	/* input: exactly one of fp and text */
	FILE *fp;
	const char *text;
	char *buf;
	size_t cap;
	int read_err;
	int line;

	/* the section the reader saw last */
	enum sect_kind kind;
	void *obj;
	int *key_line;
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
	bool nomem;
};

/* ---- error collection ---- */

static void push_error(struct parser *p, int line, char *text)
{
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
 * are left out when NULL.
 */
static void __attribute__((format(printf, 5, 6)))
report(struct parser *p, int line, const char *label, const char *key,
       const char *fmt, ...)
{
	char *msg, *text;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->nomem = true;
		return;
	}
	n = asprintf(&text, "%s:%d: %s%s%s%s%s%s", p->file, line,
		     label ? "[" : "", label ? label : "", label ? "]" : "",
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

/* An error about the key on the current line. */
#define key_error(p, ...)                                                      \
	report(p, (p)->line, (p)->kind == SECT_NONE ? NULL : (p)->label,       \
	       (p)->def ? (p)->def->name : NULL, __VA_ARGS__)

static void bad_value(struct parser *p, const char *why)
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
static void write_errors(struct parser *p, char *err, size_t errlen)
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
}

/* ---- value parsing ---- */

static int digit_value(char c, unsigned int base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * strtoull() accepts leading blanks and a minus sign (and wraps it), so the
 * digits are checked by hand. Every character is looked at before overflow
 * is reported so that garbage is called garbage.
 */
static int parse_u64(const char *s, bool hex_ok, uint64_t *out)
{
	unsigned int base = 10;
	bool overflow = false;
	uint64_t v = 0;

	if (hex_ok && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		int d = digit_value(*s, base);

		if (d < 0)
			return -EINVAL;
		if (v > (UINT64_MAX - (unsigned int)d) / base)
			overflow = true;
		v = v * base + (unsigned int)d;
	}
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Returns false after reporting the current value as bad. */
static bool parse_ranged(struct parser *p, const char *v, uint64_t min,
			 uint64_t max, uint64_t *out)
{
	char why[64];
	int err = parse_u64(v, false, out);

	if (err == -EINVAL) {
		bad_value(p, "not a decimal number");
		return false;
	}
	if (err || *out < min || *out > max) {
		snprintf(why, sizeof(why), "out of range %llu..%llu",
			 (unsigned long long)min, (unsigned long long)max);
		bad_value(p, why);
		return false;
	}
	return true;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n >= RS_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

#define NAME_RULE "names are 1..63 characters of A-Z a-z 0-9 . _ -"

/* ---- [global] ---- */

static void set_path(struct parser *p, char *dst, const char *v, size_t max)
{
	char why[64];

	if (v[0] != '/') {
		bad_value(p, "not an absolute path");
		return;
	}
	if (strlen(v) >= max) {
		snprintf(why, sizeof(why), "longer than %zu bytes", max - 1);
		bad_value(p, why);
		return;
	}
	strcpy(dst, v);
}

static void set_bpffs(struct parser *p, void *obj, const char *v)
{
	struct global_entry *g = obj;

	set_path(p, g->bpffs, v, sizeof(g->bpffs));
}

/* bind() would fail much later, after maps are pinned, on a longer path. */
static void set_control_socket(struct parser *p, void *obj, const char *v)
{
	struct global_entry *g = obj;

	set_path(p, g->control_socket, v, SUN_PATH_MAX);
}

static const struct key_def global_keys[] = {
	{"bpffs", "path", set_bpffs, false},
	{"control_socket", "path", set_control_socket, false},
	{NULL, NULL, NULL, false},
};

/* ---- [service NAME] ---- */

static void set_protocol(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "tcp") == 0)
		s->conf.protocol = IPPROTO_TCP;
	else if (strcmp(v, "udp") == 0)
		s->conf.protocol = IPPROTO_UDP;
	else
		bad_value(p, "expected tcp or udp");
}

static void set_listen(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	struct rs_listen *l;
	struct rs_addr a;
	const char *why;

	if (rs_addr_parse(v, RS_ADDR_PREFIX | RS_ADDR_PORT_ZERO, &a, &why)) {
		bad_value(p, why);
		return;
	}
	if (s->conf.n_listens == RS_MAX_LISTENS) {
		key_error(p, "too many listen entries (max %d)",
			  RS_MAX_LISTENS);
		return;
	}
	l = &s->conf.listens[s->conf.n_listens++];
	l->family = a.family;
	l->prefixlen = a.prefixlen;
	l->port = a.port;
	memcpy(l->addr, a.addr, sizeof(l->addr));
	l->line = p->line;
}

static void set_key_policy(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "src-ip") == 0)
		s->conf.key_policy = RS_KEY_SRC_IP;
	else if (strcmp(v, "src-ip-port") == 0)
		s->conf.key_policy = RS_KEY_SRC_IP_PORT;
	else
		bad_value(p, "expected src-ip or src-ip-port");
}

static void set_prefix4(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 0, 32, &n))
		s->conf.prefix4 = (uint8_t)n;
}

static void set_prefix6(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 0, 128, &n))
		s->conf.prefix6 = (uint8_t)n;
}

static void set_vnodes(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, 65536, &n))
		s->conf.vnodes = (uint32_t)n;
}

static void set_seed(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	int err = parse_u64(v, true, &s->conf.seed);

	if (err == -ERANGE)
		bad_value(p, "does not fit in 64 bits");
	else if (err)
		bad_value(p, "not a decimal or 0x hex number");
}

static void set_fallback(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "pass") == 0)
		s->conf.fallback = RS_FALLBACK_PASS;
	else if (strcmp(v, "drop") == 0)
		s->conf.fallback = RS_FALLBACK_DROP;
	else
		bad_value(p, "expected pass or drop");
}

enum { SVC_PROTOCOL, SVC_LISTEN };

static const struct key_def service_keys[] = {
	[SVC_PROTOCOL] = {"protocol", "protocol", set_protocol, false},
	[SVC_LISTEN] = {"listen", "listen address", set_listen, true},
	{"key", "key policy", set_key_policy, false},
	{"prefix4", "prefix4", set_prefix4, false},
	{"prefix6", "prefix6", set_prefix6, false},
	{"vnodes", "vnodes", set_vnodes, false},
	{"seed", "seed", set_seed, false},
	{"fallback", "fallback", set_fallback, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(service_keys) / sizeof(service_keys[0]) <= MAX_KEYS + 1,
	       "key_line[] too small");

/* ---- [backend NAME] ---- */

static void set_backend_service(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	if (!valid_name(v)) {
		bad_value(p, NAME_RULE);
		return;
	}
	strcpy(b->service, v);
}

static void set_address(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;
	struct rs_addr a;
	const char *why;

	struct rs_backend_addr *slot;

	if (rs_addr_parse(v, 0, &a, &why)) {
		bad_value(p, why);
		return;
	}
	for (size_t i = 0; i < b->conf.n_addrs; i++) {
		if (b->conf.addrs[i].family == a.family) {
			bad_value(p, a.family == AF_INET
					     ? "a second IPv4 address (at most "
					       "one per family)"
					     : "a second IPv6 address (at most "
					       "one per family)");
			return;
		}
	}
	if (b->conf.n_addrs == RS_MAX_BACKEND_ADDRS) {
		bad_value(p, "too many addresses");
		return;
	}
	slot = &b->conf.addrs[b->conf.n_addrs++];
	slot->family = a.family;
	slot->port = a.port;
	slot->line = p->line;
	memcpy(slot->addr, a.addr, sizeof(slot->addr));
}

static void set_weight(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (parse_ranged(p, v, 0, RS_MAX_WEIGHT, &n))
		b->conf.weight = (uint32_t)n;
}

enum { BE_SERVICE, BE_ADDRESS };

static const struct key_def backend_keys[] = {
	[BE_SERVICE] = {"service", "service name", set_backend_service, false},
	[BE_ADDRESS] = {"address", "address", set_address, true},
	{"weight", "weight", set_weight, false},
	{NULL, NULL, NULL, false},
};

/* ---- sections ---- */

static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t new_cap;
	void *q;

	if (n < *cap)
		return arr;
	new_cap = *cap ? *cap * 2 : 8;
	q = reallocarray(arr, new_cap, size);
	if (q) {
		memset((char *)q + *cap * size, 0, (new_cap - *cap) * size);
		*cap = new_cap;
	}
	return q;
}

static void enter(struct parser *p, enum sect_kind kind, void *obj,
		  int *key_line, const struct key_def *keys)
{
	p->kind = kind;
	p->obj = obj;
	p->key_line = key_line;
	p->keys = keys;
}

static void begin_global(struct parser *p)
{
	if (p->global.line) {
		report(p, p->line, p->label, NULL,
		       "duplicate global section (first defined at %s:%d)",
		       p->file, p->global.line);
		return;
	}
	p->global.line = p->line;
	enter(p, SECT_GLOBAL, &p->global, p->global.key_line, global_keys);
}

static void begin_service(struct parser *p, const char *name)
{
	struct svc_entry *s;
	size_t i;

	for (i = 0; i < p->n_svcs; i++) {
		if (strcmp(p->svcs[i].conf.name, name) == 0) {
			report(p, p->line, p->label, NULL,
			       "duplicate service '%s' (first defined at "
			       "%s:%d)",
			       name, p->file, p->svcs[i].conf.line);
			return;
		}
	}
	s = grow(p->svcs, &p->cap_svcs, p->n_svcs, sizeof(*s));
	if (!s) {
		p->nomem = true;
		return;
	}
	p->svcs = s;
	s = &p->svcs[p->n_svcs++];
	strcpy(s->conf.name, name);
	s->conf.line = p->line;
	s->conf.key_policy = RS_KEY_SRC_IP;
	s->conf.prefix4 = 32;
	s->conf.prefix6 = 64;
	s->conf.vnodes = RS_DEFAULT_VNODES;
	s->conf.fallback = RS_FALLBACK_PASS;
	enter(p, SECT_SERVICE, s, s->key_line, service_keys);
}

static void begin_backend(struct parser *p, const char *name)
{
	struct be_entry *b;
	size_t i;

	for (i = 0; i < p->n_bes; i++) {
		if (strcmp(p->bes[i].conf.name, name) == 0) {
			report(p, p->line, p->label, NULL,
			       "duplicate backend '%s' (first defined at "
			       "%s:%d)",
			       name, p->file, p->bes[i].conf.line);
			return;
		}
	}
	b = grow(p->bes, &p->cap_bes, p->n_bes, sizeof(*b));
	if (!b) {
		p->nomem = true;
		return;
	}
	p->bes = b;
	b = &p->bes[p->n_bes++];
	strcpy(b->conf.name, name);
	b->conf.line = p->line;
	b->conf.weight = 1;
	enter(p, SECT_BACKEND, b, b->key_line, backend_keys);
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* @s is a whole trimmed line starting with '['. */
static void begin_section(struct parser *p, char *s)
{
	char *end = strchr(s, ']');
	char *type, *name, *rest;

	enter(p, SECT_SKIP, NULL, NULL, NULL);
	snprintf(p->label, sizeof(p->label), "%s", s + 1);
	if (!end) {
		report(p, p->line, NULL, NULL,
		       "section header without closing ']'");
		return;
	}
	*end = '\0';
	rest = trim(end + 1);
	type = trim(s + 1);
	snprintf(p->label, sizeof(p->label), "%s", type);
	if (*rest && *rest != ';' && *rest != '#') {
		report(p, p->line, p->label, NULL,
		       "unexpected text after ']': '%s'", rest);
		return;
	}
	name = type + strcspn(type, " \t");
	if (*name) {
		*name = '\0';
		name = trim(name + 1);
	}
	if (*name)
		snprintf(p->label, sizeof(p->label), "%s %s", type, name);

	if (strcmp(type, "global") == 0) {
		if (*name)
			report(p, p->line, p->label, NULL,
			       "the global section takes no name");
		else
			begin_global(p);
		return;
	}
	if (strcmp(type, "service") && strcmp(type, "backend")) {
		report(p, p->line, p->label, NULL,
		       "unknown section type '%s' (expected global, service "
		       "or backend)",
		       type);
		return;
	}
	if (!valid_name(name)) {
		report(p, p->line, p->label, NULL, "bad %s name '%s': %s", type,
		       name, NAME_RULE);
		return;
	}
	if (type[0] == 's')
		begin_service(p, name);
	else
		begin_backend(p, name);
}

/* ---- inih callbacks ---- */

static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	struct parser *p = user;
	const struct key_def *def;

	(void)section; /* tracked by the reader, see begin_section() */
	p->def = NULL;
	p->value = value;
	if (p->kind == SECT_SKIP)
		return 1;
	if (p->kind == SECT_NONE) {
		report(p, p->line, NULL, name, "key outside of any section");
		return 1;
	}
	for (def = p->keys; def->name; def++)
		if (strcmp(def->name, name) == 0)
			break;
	if (!def->name) {
		report(p, p->line, p->label, name, "unknown key");
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
		return 1;
	}
	def->set(p, p->obj, value);
	return 1;
}

/*
 * Next raw line into p->buf without its '\n'. Returns its length, -1 at
 * the end of input or on a read error (p->read_err).
 */
static ssize_t next_line(struct parser *p)
{
	const char *nl;
	ssize_t n;
	size_t len;

	if (p->fp) {
		errno = 0;
		n = getline(&p->buf, &p->cap, p->fp);
		if (n < 0) {
			if (ferror(p->fp))
				p->read_err = errno ? errno : EIO;
			return -1;
		}
		if (n > 0 && p->buf[n - 1] == '\n')
			p->buf[--n] = '\0';
		return n;
	}
	if (*p->text == '\0')
		return -1;
	nl = strchr(p->text, '\n');
	len = nl ? (size_t)(nl - p->text) : strlen(p->text);
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
		report(p, p->line, p->kind > SECT_SKIP ? p->label : NULL, NULL,
		       "expected 'key = value'");
		return false;
	}
	if (sep == 0) {
		report(p, p->line, p->kind > SECT_SKIP ? p->label : NULL, NULL,
		       "missing key name before '%c'", s[0]);
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
		s = trim(s);
		if (strlen(s) + 2 <= (size_t)num)
			return s;
	}
	report(p, p->line, p->kind > SECT_SKIP ? p->label : NULL, NULL,
	       "line too long (max %d characters)", num - 2);
	return NULL;
}

/*
 * The fgets()-like reader inih calls once per line. Leading blanks are
 * dropped so that inih never takes an indented line as the continuation of
 * the previous value.
 */
static char *read_line(char *str, int num, void *stream)
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
		report(p, p->line, NULL, NULL, "line contains a NUL byte");
		s = "";
	}
	s = trim(s);
	if (*s == '[') {
		begin_section(p, s);
		s = "";
	} else if (*s && !is_comment(s)) {
		s = fit_line(p, s, num);
		if (!s || !check_key_line(p, s))
			s = "";
	}
	snprintf(str, (size_t)num, "%s\n", s);
	return str;
}

/* ---- whole-file checks ---- */

static void section_label(char *buf, size_t len, const char *type,
			  const char *name)
{
	snprintf(buf, len, "%s %s", type, name);
}

static void check_services(struct parser *p)
{
	char label[LABEL_MAX];
	size_t i;

	for (i = 0; i < p->n_svcs; i++) {
		struct svc_entry *s = &p->svcs[i];

		section_label(label, sizeof(label), "service", s->conf.name);
		if (i == RS_MAX_SERVICES)
			report(p, s->conf.line, label, NULL,
			       "too many services (max %d)", RS_MAX_SERVICES);
		if (!s->key_line[SVC_PROTOCOL])
			report(p, s->conf.line, label, NULL,
			       "missing required key 'protocol'");
		if (!s->key_line[SVC_LISTEN])
			report(p, s->conf.line, label, NULL,
			       "missing required key 'listen'");
	}
}

static void resolve_backends(struct parser *p)
{
	char label[LABEL_MAX];
	size_t i;
	int idx;

	for (i = 0; i < p->n_bes; i++) {
		struct be_entry *b = &p->bes[i];

		section_label(label, sizeof(label), "backend", b->conf.name);
		if (i == RS_MAX_BACKENDS)
			report(p, b->conf.line, label, NULL,
			       "too many backends (max %d)", RS_MAX_BACKENDS);
		if (!b->key_line[BE_SERVICE])
			report(p, b->conf.line, label, NULL,
			       "missing required key 'service'");
		if (!b->key_line[BE_ADDRESS])
			report(p, b->conf.line, label, NULL,
			       "missing required key 'address'");
		if (!b->service[0])
			continue;
		for (idx = 0; (size_t)idx < p->n_svcs; idx++)
			if (strcmp(p->svcs[idx].conf.name, b->service) == 0)
				break;
		if ((size_t)idx == p->n_svcs) {
			report(p, b->key_line[BE_SERVICE], label, "service",
			       "unknown service '%s'", b->service);
			continue;
		}
		b->conf.service = (size_t)idx;
		b->resolved = true;
	}
}

static bool same_listen(const struct rs_listen *a, const struct rs_listen *b)
{
	return a->family == b->family && a->prefixlen == b->prefixlen &&
	       a->port == b->port && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static const char *proto_name(uint8_t protocol)
{
	return protocol == IPPROTO_TCP ? "tcp" : "udp";
}

/* Two identical keys in rs_binds: the second would replace the first. */
static void check_listen_pair(struct parser *p, const struct svc_entry *a,
			      const struct rs_listen *la,
			      const struct svc_entry *b,
			      const struct rs_listen *lb)
{
	char label[LABEL_MAX], text[RS_ADDR_STRLEN];

	if (!a->conf.protocol || a->conf.protocol != b->conf.protocol ||
	    !same_listen(la, lb))
		return;
	section_label(label, sizeof(label), "service", b->conf.name);
	rs_addr_format_prefix(lb->family, lb->addr, lb->prefixlen, lb->port,
			      text, sizeof(text));
	report(p, lb->line, label, "listen",
	       "%s %s overlaps listen at %s:%d in [service %s]",
	       proto_name(b->conf.protocol), text, p->file, la->line,
	       a->conf.name);
}

static void check_listens(struct parser *p)
{
	size_t i, j, k, m;

	/* Services are contiguous in the file, so index order is line order. */
	for (i = 0; i < p->n_svcs; i++) {
		const struct svc_entry *a = &p->svcs[i];

		for (j = 0; j < a->conf.n_listens; j++) {
			for (k = i; k < p->n_svcs; k++) {
				const struct svc_entry *b = &p->svcs[k];

				for (m = k == i ? j + 1 : 0;
				     m < b->conf.n_listens; m++)
					check_listen_pair(
						p, a, &a->conf.listens[j], b,
						&b->conf.listens[m]);
			}
		}
	}
}

static uint8_t backend_protocol(const struct parser *p,
				const struct be_entry *b)
{
	return b->resolved ? p->svcs[b->conf.service].conf.protocol : 0;
}

static bool same_backend_addr(const struct rs_backend_addr *a,
			      const struct rs_backend_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

/* The earlier backend address equal to @x with the same protocol, if any. */
static const struct rs_backend_addr *earlier_socket(
	const struct parser *p, size_t i, uint8_t proto,
	const struct rs_backend_addr *x, size_t *owner)
{
	for (size_t j = 0; j < i; j++) {
		const struct be_entry *a = &p->bes[j];

		if (backend_protocol(p, a) != proto)
			continue;
		for (size_t k = 0; k < a->conf.n_addrs; k++) {
			if (same_backend_addr(&a->conf.addrs[k], x)) {
				*owner = j;
				return &a->conf.addrs[k];
			}
		}
	}
	return NULL;
}

/* The same protocol and address:port would be one and the same socket. */
static void check_sockets(struct parser *p)
{
	char label[LABEL_MAX], text[RS_ADDR_STRLEN];

	for (size_t i = 0; i < p->n_bes; i++) {
		const struct be_entry *b = &p->bes[i];
		uint8_t proto = backend_protocol(p, b);

		if (!proto)
			continue;
		for (size_t k = 0; k < b->conf.n_addrs; k++) {
			const struct rs_backend_addr *x = &b->conf.addrs[k];
			const struct rs_backend_addr *prev;
			size_t owner = 0;

			prev = earlier_socket(p, i, proto, x, &owner);
			if (!prev)
				continue;
			section_label(label, sizeof(label), "backend",
				      b->conf.name);
			rs_addr_format(x->family, x->addr, x->port, text,
				       sizeof(text));
			report(p, x->line, label, "address",
			       "%s %s is already the address of [backend %s] "
			       "at %s:%d",
			       proto_name(proto), text, p->bes[owner].conf.name,
			       p->file, prev->line);
		}
	}
}

static void check_ring_sizes(struct parser *p)
{
	char label[LABEL_MAX];
	size_t i, j;

	for (i = 0; i < p->n_svcs; i++) {
		const struct svc_entry *s = &p->svcs[i];
		uint64_t points = 0;

		for (j = 0; j < p->n_bes; j++)
			if (p->bes[j].resolved && p->bes[j].conf.service == i)
				points += (uint64_t)p->bes[j].conf.weight *
					  s->conf.vnodes;
		if (points <= RS_MAX_RING_POINTS)
			continue;
		section_label(label, sizeof(label), "service", s->conf.name);
		report(p, s->conf.line, label, NULL,
		       "ring too large: %llu points (weight * vnodes over all "
		       "backends), max %u",
		       (unsigned long long)points, RS_MAX_RING_POINTS);
	}
}

static void validate(struct parser *p)
{
	check_services(p);
	resolve_backends(p);
	check_listens(p);
	check_sockets(p);
	check_ring_sizes(p);
}

/* ---- result ---- */

static int export_config(struct parser *p, struct rs_config *cfg)
{
	size_t i;

	if (p->n_svcs) {
		cfg->services = calloc(p->n_svcs, sizeof(*cfg->services));
		if (!cfg->services)
			return -ENOMEM;
	}
	if (p->n_bes) {
		cfg->backends = calloc(p->n_bes, sizeof(*cfg->backends));
		if (!cfg->backends) {
			free(cfg->services);
			cfg->services = NULL;
			return -ENOMEM;
		}
	}
	snprintf(cfg->path, sizeof(cfg->path), "%s", p->file);
	strcpy(cfg->bpffs, p->global.bpffs);
	strcpy(cfg->control_socket, p->global.control_socket);
	for (i = 0; i < p->n_svcs; i++)
		cfg->services[i] = p->svcs[i].conf;
	for (i = 0; i < p->n_bes; i++)
		cfg->backends[i] = p->bes[i].conf;
	cfg->n_services = p->n_svcs;
	cfg->n_backends = p->n_bes;
	return 0;
}

static void parser_free(struct parser *p)
{
	size_t i;

	for (i = 0; i < p->n_errs; i++)
		free(p->errs[i].text);
	free(p->errs);
	free(p->svcs);
	free(p->bes);
	free(p->buf);
}

static int parse(struct parser *p, struct rs_config *cfg, char *err,
		 size_t errlen)
{
	int ret;

	strcpy(p->global.bpffs, RS_DEFAULT_BPFFS);
	strcpy(p->global.control_socket, RS_DEFAULT_CONTROL_SOCKET);
	/*
	 * inih only gets lines that it can parse, so a line number returned
	 * here means a handler failure, and ours never fail.
	 */
	if (ini_parse_stream(read_line, p, on_key, p) == -2 ||
	    p->read_err == ENOMEM)
		p->nomem = true;
	else if (p->read_err)
		report(p, p->line + 1, NULL, NULL, "read error: %s",
		       strerror(p->read_err));
	if (!p->nomem)
		validate(p);

	if (p->nomem)
		ret = -ENOMEM;
	else if (p->n_errs)
		ret = p->read_err ? -p->read_err : -EINVAL;
	else
		ret = export_config(p, cfg);
	if (ret == -ENOMEM)
		p->nomem = true;
	if (ret)
		write_errors(p, err, errlen);
	parser_free(p);
	return ret;
}

int rs_config_load_string(const char *text, const char *name,
			  struct rs_config *cfg, char *err, size_t errlen)
{
	struct parser *p;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !text)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->file = name ? name : "<string>";
	p->text = text;
	ret = parse(p, cfg, err, errlen);
	free(p);
	return ret;
}

int rs_config_load(const char *path, struct rs_config *cfg, char *err,
		   size_t errlen)
{
	struct parser *p;
	FILE *fp;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !path)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	fp = fopen(path, "re");
	if (!fp) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		fclose(fp);
		return -ENOMEM;
	}
	p->file = path;
	p->fp = fp;
	ret = parse(p, cfg, err, errlen);
	free(p);
	fclose(fp);
	return ret;
}

void rs_config_free(struct rs_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->services);
	free(cfg->backends);
	memset(cfg, 0, sizeof(*cfg));
}

int rs_config_find_service(const struct rs_config *cfg, const char *name)
{
	size_t i;

	if (!cfg || !name)
		return -EINVAL;
	for (i = 0; i < cfg->n_services; i++)
		if (strcmp(cfg->services[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

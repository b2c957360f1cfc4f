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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "addr.h"
#include "config.h"

#define LABEL_MAX    256
#define MAX_KEYS     16
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

static bool valid_ifname(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n >= RS_IFNAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '@' || c == ':' || c == '-'))
			return false;
	}
	/* The kernel refuses these two (dev_valid_name()). */
	return !(n == 1 && s[0] == '.') && !(n == 2 && !strncmp(s, "..", 2));
}

#define IFNAME_RULE                                                            \
	"interface names are 1..15 characters of A-Z a-z 0-9 . _ @ : - "       \
	"(not . or ..)"

/* Blank-separated names; every bad one is reported. */
static void set_interfaces(struct parser *p, void *obj, const char *v)
{
	struct global_entry *g = obj;
	const char *s = v;

	while (*s) {
		size_t n = strcspn(s, " \t"), i;
		bool dup = false;

		if (n == 0) {
			s++;
			continue;
		}
		if (!valid_ifname(s, n)) {
			key_error(p, "bad %s '%.*s': %s", p->def->noun, (int)n,
				  s, IFNAME_RULE);
			s += n;
			continue;
		}
		for (i = 0; i < g->n_interfaces; i++)
			if (strlen(g->interfaces[i]) == n &&
			    !strncmp(g->interfaces[i], s, n))
				dup = true;
		if (dup) {
			key_error(p, "duplicate interface '%.*s'", (int)n, s);
		} else if (g->n_interfaces == RS_MAX_INTERFACES) {
			key_error(p, "too many interfaces (max %d)",
				  RS_MAX_INTERFACES);
			return;
		} else {
			memcpy(g->interfaces[g->n_interfaces], s, n);
			g->interfaces[g->n_interfaces++][n] = '\0';
		}
		s += n;
	}
}

static void set_metrics(struct parser *p, void *obj, const char *v)
{
	struct global_entry *g = obj;
	const char *why;

	if (rs_addr_parse(v, 0, &g->metrics, &why)) {
		bad_value(p, why);
		return;
	}
	g->has_metrics = true;
}

static const struct key_def global_keys[] = {
	{"bpffs", "path", set_bpffs, false},
	{"control_socket", "path", set_control_socket, false},
	{"interfaces", "interface name", set_interfaces, false},
	{"metrics", "metrics address", set_metrics, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(global_keys) / sizeof(global_keys[0]) <= MAX_KEYS + 1,
	       "key_line[] too small");

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

/* 30 days: longer-lived affinity is better served by a cookie. */
#define MAX_STICKY_TTL	   (30u * 24 * 3600)
#define MAX_STICKY_ENTRIES (64u << 20)
#define QUIC_MAX_CID_LEN   20 /* RFC 9000: connection IDs are <= 20 bytes */
#define QUIC_MAX_CONFIG_ID 6  /* 7 is reserved by QUIC-LB */

static void set_sticky_ttl(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 0, MAX_STICKY_TTL, &n))
		s->conf.sticky_ttl = (uint32_t)n;
}

static void set_sticky_max(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, MAX_STICKY_ENTRIES, &n))
		s->conf.sticky_max = (uint32_t)n;
}

static void set_cookie(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "none") == 0)
		s->conf.cookie = RS_COOKIE_NONE;
	else if (strcmp(v, "quic") == 0)
		s->conf.cookie = RS_COOKIE_QUIC;
	else
		bad_value(p, "expected none or quic");
}

static void set_quic_server_id_len(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, RS_QUIC_MAX_SERVER_ID, &n))
		s->conf.quic_server_id_len = (uint8_t)n;
}

static void set_quic_cid_len(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, QUIC_MAX_CID_LEN, &n))
		s->conf.quic_cid_len = (uint8_t)n;
}

static void set_quic_config_id(struct parser *p, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (parse_ranged(p, v, 0, QUIC_MAX_CONFIG_ID, &n))
		s->conf.quic_config_id = (uint8_t)n;
}

enum {
	SVC_PROTOCOL,
	SVC_LISTEN,
	SVC_COOKIE,
	SVC_QUIC_SERVER_ID_LEN,
	SVC_QUIC_CID_LEN,
};

static const struct key_def service_keys[] = {
	[SVC_PROTOCOL] = {"protocol", "protocol", set_protocol, false},
	[SVC_LISTEN] = {"listen", "listen address", set_listen, true},
	[SVC_COOKIE] = {"cookie", "cookie policy", set_cookie, false},
	[SVC_QUIC_SERVER_ID_LEN] = {"quic_server_id_len", "quic_server_id_len",
				    set_quic_server_id_len, false},
	[SVC_QUIC_CID_LEN] = {"quic_cid_len", "quic_cid_len", set_quic_cid_len,
			      false},
	{"key", "key policy", set_key_policy, false},
	{"prefix4", "prefix4", set_prefix4, false},
	{"prefix6", "prefix6", set_prefix6, false},
	{"vnodes", "vnodes", set_vnodes, false},
	{"seed", "seed", set_seed, false},
	{"fallback", "fallback", set_fallback, false},
	{"sticky_ttl", "sticky_ttl", set_sticky_ttl, false},
	{"sticky_max", "sticky_max", set_sticky_max, false},
	{"quic_config_id", "quic_config_id", set_quic_config_id, false},
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

static void set_check(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	if (strcmp(v, "tcp") == 0)
		b->conf.health.type = RS_CHECK_TCP;
	else if (strcmp(v, "http") == 0)
		b->conf.health.type = RS_CHECK_HTTP;
	else if (strcmp(v, "https") == 0)
		b->conf.health.type = RS_CHECK_HTTPS;
	else if (strcmp(v, "none") == 0)
		b->conf.health.type = RS_CHECK_NONE;
	else
		bad_value(p, "expected tcp, http, https or none");
}

/* Text that goes into an HTTP request line or header as it is. */
static bool check_text(struct parser *p, const char *v)
{
	char why[64];
	const char *c;

	for (c = v; *c; c++) {
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			bad_value(p, "contains a space or control character");
			return false;
		}
	}
	if (strlen(v) >= RS_CHECK_TEXT_MAX) {
		snprintf(why, sizeof(why), "longer than %d bytes",
			 RS_CHECK_TEXT_MAX - 1);
		bad_value(p, why);
		return false;
	}
	return true;
}

static void set_check_path(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	if (v[0] != '/') {
		bad_value(p, "does not start with '/'");
		return;
	}
	if (check_text(p, v))
		strcpy(b->conf.health.path, v);
}

static void set_check_host(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	if (check_text(p, v))
		strcpy(b->conf.health.host, v);
}

/* "204" is 204..204, "2xx" is 200..299. */
static void set_check_expect(struct parser *p, void *obj, const char *v)
{
	struct rs_health_conf *h = &((struct be_entry *)obj)->conf.health;
	bool digits = true;
	size_t i;

	if (strlen(v) == 3 && v[0] >= '1' && v[0] <= '5' &&
	    (v[1] == 'x' || v[1] == 'X') && (v[2] == 'x' || v[2] == 'X')) {
		h->expect_min = (uint16_t)((v[0] - '0') * 100);
		h->expect_max = (uint16_t)(h->expect_min + 99);
		return;
	}
	for (i = 0; v[i]; i++)
		digits = digits && v[i] >= '0' && v[i] <= '9';
	if (i != 3 || !digits || v[0] < '1' || v[0] > '5') {
		bad_value(p, "expected a status 100..599 or a class 1xx..5xx");
		return;
	}
	h->expect_min = (uint16_t)atoi(v);
	h->expect_max = h->expect_min;
}

#define MAX_DURATION_MS (60u * 60 * 1000)

/*
 * "500ms", "2s", "1m" or a bare number of seconds, into milliseconds.
 * Digits are clamped like parse_small_uint() so nothing wraps into range.
 */
static int parse_duration(const char *s, uint64_t *ms)
{
	size_t n = strspn(s, "0123456789"), i;
	uint64_t v = 0, unit;

	if (n == 0)
		return -EINVAL;
	if (s[n] == '\0' || strcmp(s + n, "s") == 0)
		unit = 1000;
	else if (strcmp(s + n, "ms") == 0)
		unit = 1;
	else if (strcmp(s + n, "m") == 0)
		unit = 60 * 1000;
	else
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (v <= MAX_DURATION_MS)
			v = v * 10 + (uint64_t)(s[i] - '0');
	*ms = v * unit;
	return 0;
}

/* @ms in the largest unit that is exact: "2m", "90s", "1500ms". */
static const char *fmt_duration(char *buf, size_t len, uint32_t ms)
{
	if (ms && ms % 60000 == 0)
		snprintf(buf, len, "%um", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%us", ms / 1000);
	else
		snprintf(buf, len, "%ums", ms);
	return buf;
}

static bool parse_ranged_duration(struct parser *p, const char *v,
				  uint32_t min_ms, uint32_t *out)
{
	char why[64], a[16], b[16];
	uint64_t ms;

	if (parse_duration(v, &ms)) {
		bad_value(p, "expected a number with ms, s or m (no unit: "
			     "seconds)");
		return false;
	}
	if (ms < min_ms || ms > MAX_DURATION_MS) {
		snprintf(why, sizeof(why), "out of range %s..%s",
			 min_ms ? fmt_duration(a, sizeof(a), min_ms) : "0",
			 fmt_duration(b, sizeof(b), MAX_DURATION_MS));
		bad_value(p, why);
		return false;
	}
	*out = (uint32_t)ms;
	return true;
}

static void set_interval(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	parse_ranged_duration(p, v, 1, &b->conf.health.interval_ms);
}

static void set_timeout(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	parse_ranged_duration(p, v, 1, &b->conf.health.timeout_ms);
}

static void set_slow_start(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;

	parse_ranged_duration(p, v, 0, &b->conf.health.slow_start_ms);
}

/* Checks may go to another port of the backend, e.g. a status page. */
static void set_check_port(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, 65535, &n))
		b->conf.health.port = (uint16_t)n;
}

static void set_rise(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, 100, &n))
		b->conf.health.rise = (uint32_t)n;
}

static void set_fall(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (parse_ranged(p, v, 1, 100, &n))
		b->conf.health.fall = (uint32_t)n;
}

/*
 * Decimal or 0x hex into @out, big-endian and right-aligned. -ERANGE when
 * it needs more than RS_QUIC_MAX_SERVER_ID bytes.
 */
static int parse_server_id(const char *s, uint8_t out[RS_QUIC_MAX_SERVER_ID])
{
	uint8_t v[RS_QUIC_MAX_SERVER_ID] = {0};
	unsigned int base = 10;
	bool overflow = false;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		int d = digit_value(*s, base);
		unsigned int carry;
		size_t i;

		if (d < 0)
			return -EINVAL;
		carry = (unsigned int)d;
		for (i = RS_QUIC_MAX_SERVER_ID; i-- > 0;) {
			carry += v[i] * base;
			v[i] = (uint8_t)carry;
			carry >>= 8;
		}
		if (carry)
			overflow = true;
	}
	if (overflow)
		return -ERANGE;
	memcpy(out, v, sizeof(v));
	return 0;
}

/* Whether it fits in the service's quic_server_id_len is checked later. */
static void set_server_id(struct parser *p, void *obj, const char *v)
{
	struct be_entry *b = obj;
	char why[64];
	int err = parse_server_id(v, b->server_id);

	if (err == -ERANGE) {
		snprintf(why, sizeof(why), "does not fit in %d bytes",
			 RS_QUIC_MAX_SERVER_ID);
		bad_value(p, why);
		return;
	}
	if (err) {
		bad_value(p, "not a decimal or 0x hex number");
		return;
	}
	snprintf(b->server_id_text, sizeof(b->server_id_text), "%s", v);
}

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
};

static const struct key_def backend_keys[] = {
	[BE_SERVICE] = {"service", "service name", set_backend_service, false},
	[BE_ADDRESS] = {"address", "address", set_address, true},
	[BE_CHECK] = {"check", "check type", set_check, false},
	[BE_CHECK_PATH] = {"check_path", "check_path", set_check_path, false},
	[BE_CHECK_EXPECT] = {"check_expect", "check_expect", set_check_expect,
			     false},
	[BE_CHECK_HOST] = {"check_host", "check_host", set_check_host, false},
	[BE_INTERVAL] = {"interval", "interval", set_interval, false},
	[BE_TIMEOUT] = {"timeout", "timeout", set_timeout, false},
	[BE_SERVER_ID] = {"server_id", "server_id", set_server_id, false},
	{"weight", "weight", set_weight, false},
	{"slow_start", "slow_start", set_slow_start, false},
	{"rise", "rise", set_rise, false},
	{"fall", "fall", set_fall, false},
	{"check_port", "check_port", set_check_port, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(backend_keys) / sizeof(backend_keys[0]) <= MAX_KEYS + 1,
	       "key_line[] too small");

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
		  int *key_line, bool *key_bad, const struct key_def *keys)
{
	p->kind = kind;
	p->obj = obj;
	p->key_line = key_line;
	p->key_bad = key_bad;
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
	enter(p, SECT_GLOBAL, &p->global, p->global.key_line, p->global.key_bad,
	      global_keys);
}

/* A [service NAME] section before its keys. */
static const struct svc_entry service_defaults = {
	.conf.key_policy = RS_KEY_SRC_IP,
	.conf.prefix4 = 32,
	.conf.prefix6 = 64,
	.conf.vnodes = RS_DEFAULT_VNODES,
	.conf.fallback = RS_FALLBACK_PASS,
	.conf.sticky_ttl = 0,
	.conf.sticky_max = RS_DEFAULT_STICKY_MAX,
	.conf.cookie = RS_COOKIE_NONE,
	.conf.quic_server_id_len = RS_DEFAULT_QUIC_SERVER_ID_LEN,
	.conf.quic_cid_len = RS_DEFAULT_QUIC_CID_LEN,
	.conf.quic_config_id = 0,
};

/* A [backend NAME] section before its keys. */
static const struct be_entry backend_defaults = {
	.conf.weight = 1,
	.conf.health.type = RS_CHECK_TCP,
	.conf.health.path = "/",
	.conf.health.host = "",
	.conf.health.expect_min = 200,
	.conf.health.expect_max = 299,
	.conf.health.interval_ms = RS_DEFAULT_INTERVAL_MS,
	.conf.health.timeout_ms = RS_DEFAULT_TIMEOUT_MS,
	.conf.health.rise = RS_DEFAULT_RISE,
	.conf.health.fall = RS_DEFAULT_FALL,
	.conf.health.slow_start_ms = 0,
};

/*
 * A named section type, [service NAME] or [backend NAME]: what
 * begin_entry() needs to know of its entries (svc_entry, be_entry).
 */
struct entry_type {
	enum sect_kind kind;
	const char *noun; /* for messages */
	const struct key_def *keys;
	const void *defaults; /* a new entry, but for its name and line */
	size_t size;	      /* of one entry */
	/* where an entry has conf.name, conf.line, key_line[] and key_bad[] */
	size_t name, line, key_line, key_bad;
};

#define ENTRY_TYPE(type, sect, what, key_defs, initial)                        \
	{                                                                      \
		.kind = sect, .noun = what, .keys = key_defs,                  \
		.defaults = &initial, .size = sizeof(struct type),             \
		.name = offsetof(struct type, conf.name),                      \
		.line = offsetof(struct type, conf.line),                      \
		.key_line = offsetof(struct type, key_line),                   \
		.key_bad = offsetof(struct type, key_bad),                     \
	}

static const struct entry_type service_entry = ENTRY_TYPE(
	svc_entry, SECT_SERVICE, "service", service_keys, service_defaults);
static const struct entry_type backend_entry = ENTRY_TYPE(
	be_entry, SECT_BACKEND, "backend", backend_keys, backend_defaults);

/*
 * Starts the section [@t->noun @name] as a new last entry of @arr, which
 * has *@n entries and room for *@cap: refuses a name an earlier entry has,
 * grows the array as needed, fills the new entry (@t->defaults, the name
 * and the header line) and enters the section. Returns the array, which
 * may have moved; NULL, with nothing changed, when the name is taken
 * (reported) or memory runs out (p->nomem).
 */
static void *begin_entry(struct parser *p, const struct entry_type *t,
			 const char *name, void *arr, size_t *n, size_t *cap)
{
	char *e;
	size_t i;

	for (i = 0; i < *n; i++) {
		e = (char *)arr + i * t->size;
		if (strcmp(e + t->name, name) == 0) {
			report(p, p->line, p->label, NULL,
			       "duplicate %s '%s' (first defined at %s:%d)",
			       t->noun, name, p->file, *(int *)(e + t->line));
			return NULL;
		}
	}
	arr = grow(arr, cap, *n, t->size);
	if (!arr) {
		p->nomem = true;
		return NULL;
	}
	e = (char *)arr + (*n)++ * t->size;
	memcpy(e, t->defaults, t->size);
	strcpy(e + t->name, name);
	*(int *)(e + t->line) = p->line;
	enter(p, t->kind, e, (int *)(e + t->key_line), (bool *)(e + t->key_bad),
	      t->keys);
	return arr;
}

static void begin_service(struct parser *p, const char *name)
{
	struct svc_entry *svcs = begin_entry(p, &service_entry, name, p->svcs,
					     &p->n_svcs, &p->cap_svcs);

	if (svcs)
		p->svcs = svcs;
}

static void begin_backend(struct parser *p, const char *name)
{
	struct be_entry *bes = begin_entry(p, &backend_entry, name, p->bes,
					   &p->n_bes, &p->cap_bes);

	if (bes)
		p->bes = bes;
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

	enter(p, SECT_SKIP, NULL, NULL, NULL, NULL);
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
	size_t n_errs;

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
		p->key_bad[def - p->keys] = true;
		return 1;
	}
	n_errs = p->n_errs;
	def->set(p, p->obj, value);
	if (p->n_errs != n_errs)
		p->key_bad[def - p->keys] = true;
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

/* A refused protocol or cookie is already reported: say nothing more. */
static void check_quic(struct parser *p, const struct svc_entry *s,
		       const char *label)
{
	const struct rs_service_conf *c = &s->conf;
	int line = s->key_line[SVC_QUIC_CID_LEN];

	if (c->cookie == RS_COOKIE_QUIC && c->protocol == IPPROTO_TCP)
		report(p, s->key_line[SVC_COOKIE], label, "cookie",
		       "cookie = quic needs protocol = udp");
	if (s->key_bad[SVC_QUIC_SERVER_ID_LEN] || s->key_bad[SVC_QUIC_CID_LEN])
		return;
	if (c->quic_cid_len >= 1 + c->quic_server_id_len)
		return;
	report(p, line ? line : c->line, label, line ? "quic_cid_len" : NULL,
	       "quic_cid_len %u is too short for quic_server_id_len %u (needs "
	       "at least %u)",
	       c->quic_cid_len, c->quic_server_id_len,
	       1u + c->quic_server_id_len);
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
		check_quic(p, s, label);
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

/* Health check keys that only make sense together. */
static void check_health(struct parser *p)
{
	static const int http_only[] = {BE_CHECK_PATH, BE_CHECK_EXPECT,
					BE_CHECK_HOST};
	char label[LABEL_MAX], a[16], b[16];
	size_t i, k;

	for (i = 0; i < p->n_bes; i++) {
		struct be_entry *e = &p->bes[i];
		struct rs_health_conf *h = &e->conf.health;
		int line = e->key_line[BE_TIMEOUT];

		/*
		 * Defaults that depend on other keys: a UDP backend is not
		 * checked unless asked (a TCP connect would fail), and a short
		 * interval shortens the default timeout with it.
		 */
		if (!e->key_line[BE_CHECK] && e->resolved &&
		    p->svcs[e->conf.service].conf.protocol == IPPROTO_UDP)
			h->type = RS_CHECK_NONE;
		if (!line && !e->key_bad[BE_INTERVAL] &&
		    h->interval_ms < h->timeout_ms)
			h->timeout_ms = h->interval_ms;

		section_label(label, sizeof(label), "backend", e->conf.name);
		for (k = 0; k < sizeof(http_only) / sizeof(http_only[0]); k++) {
			const char *key = backend_keys[http_only[k]].name;

			if (!e->key_line[http_only[k]] ||
			    e->key_bad[BE_CHECK] || h->type == RS_CHECK_HTTP ||
			    h->type == RS_CHECK_HTTPS)
				continue;
			report(p, e->key_line[http_only[k]], label, key,
			       "%s is only used by check = http or https", key);
		}
		if (e->key_bad[BE_INTERVAL] || e->key_bad[BE_TIMEOUT] ||
		    h->timeout_ms <= h->interval_ms)
			continue;
		report(p, line ? line : e->conf.line, label,
		       line ? "timeout" : NULL,
		       "timeout %s is longer than interval %s",
		       fmt_duration(a, sizeof(a), h->timeout_ms),
		       fmt_duration(b, sizeof(b), h->interval_ms));
	}
}

/* An earlier backend of the same service with the same server ID. */
static const struct be_entry *same_server_id(const struct parser *p, size_t i)
{
	const struct be_entry *b = &p->bes[i];

	for (size_t j = 0; j < i; j++) {
		const struct be_entry *a = &p->bes[j];

		if (a->conf.has_server_id &&
		    a->conf.service == b->conf.service &&
		    !memcmp(a->server_id, b->server_id, sizeof(a->server_id)))
			return a;
	}
	return NULL;
}

/*
 * Server IDs need the backend's service (cookie, quic_server_id_len), which
 * may come later in the file. Values are right-aligned in be_entry and
 * stored in the first quic_server_id_len bytes of the result.
 */
static void check_server_id(struct parser *p, size_t i)
{
	struct be_entry *b = &p->bes[i];
	const struct svc_entry *s = &p->svcs[b->conf.service];
	unsigned int len = s->conf.quic_server_id_len;
	int line = b->key_line[BE_SERVER_ID];
	const struct be_entry *other;
	char label[LABEL_MAX];
	unsigned int k;

	section_label(label, sizeof(label), "backend", b->conf.name);
	if (!line) {
		if (s->conf.cookie == RS_COOKIE_QUIC)
			report(p, b->conf.line, label, NULL,
			       "missing required key 'server_id' (service %s "
			       "uses cookie = quic)",
			       s->conf.name);
		return;
	}
	if (b->key_bad[BE_SERVER_ID] || s->key_bad[SVC_COOKIE])
		return;
	if (s->conf.cookie != RS_COOKIE_QUIC) {
		report(p, line, label, "server_id",
		       "server_id needs cookie = quic in [service %s]",
		       s->conf.name);
		return;
	}
	if (s->key_bad[SVC_QUIC_SERVER_ID_LEN])
		return;
	for (k = 0; k < RS_QUIC_MAX_SERVER_ID - len; k++) {
		if (b->server_id[k]) {
			report(p, line, label, "server_id",
			       "server_id %s does not fit in %u byte%s "
			       "(quic_server_id_len)",
			       b->server_id_text, len, len == 1 ? "" : "s");
			return;
		}
	}
	other = same_server_id(p, i);
	if (other) {
		report(p, line, label, "server_id",
		       "server_id %s is already the server_id of [backend %s] "
		       "at %s:%d",
		       b->server_id_text, other->conf.name, p->file,
		       other->key_line[BE_SERVER_ID]);
		return;
	}
	b->conf.has_server_id = true;
	memcpy(b->conf.server_id, b->server_id + RS_QUIC_MAX_SERVER_ID - len,
	       len);
}

static void check_server_ids(struct parser *p)
{
	for (size_t i = 0; i < p->n_bes; i++)
		if (p->bes[i].resolved)
			check_server_id(p, i);
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
	check_health(p);
	check_server_ids(p);
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
	memcpy(cfg->interfaces, p->global.interfaces, sizeof(cfg->interfaces));
	cfg->n_interfaces = p->global.n_interfaces;
	cfg->has_metrics = p->global.has_metrics;
	if (cfg->has_metrics) {
		cfg->metrics_family = p->global.metrics.family;
		memcpy(cfg->metrics_addr, p->global.metrics.addr,
		       sizeof(cfg->metrics_addr));
		cfg->metrics_port = p->global.metrics.port;
	}
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

// SPDX-License-Identifier: MIT
/*
 * The [backend NAME] keys and what a backend is when a key is absent.
 * Values are checked one key at a time; whatever needs the backend's
 * service or another key (UDP backends are not checked by default,
 * timeout within interval, server IDs) waits for config_checks.c, since
 * the service may come later in the file.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config_keys.h"

static void set_backend_service(const struct cfg_key *k, void *obj,
				const char *v)
{
	struct be_entry *b = obj;

	if (!cfg_valid_name(v)) {
		cfg_bad_value(k, NAME_RULE);
		return;
	}
	strcpy(b->service, v);
}

static void set_address(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	struct rs_addr a;
	const char *why;

	struct rs_backend_addr *slot;

	if (rs_addr_parse(v, 0, &a, &why)) {
		cfg_bad_value(k, why);
		return;
	}
	for (size_t i = 0; i < b->conf.n_addrs; i++) {
		if (b->conf.addrs[i].family == a.family) {
			cfg_bad_value(
				k, a.family == AF_INET
					   ? "a second IPv4 address (at most "
					     "one per family)"
					   : "a second IPv6 address (at most "
					     "one per family)");
			return;
		}
	}
	if (b->conf.n_addrs == RS_MAX_BACKEND_ADDRS) {
		cfg_bad_value(k, "too many addresses");
		return;
	}
	slot = &b->conf.addrs[b->conf.n_addrs++];
	slot->family = a.family;
	slot->port = a.port;
	slot->line = k->line;
	memcpy(slot->addr, a.addr, sizeof(slot->addr));
}

static void set_weight(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 0, RS_MAX_WEIGHT, &n))
		b->conf.weight = (uint32_t)n;
}

/*
 * The user whose sockets the backend's are: a name (looked up now, so a
 * missing user is this line's error, not a surprise at the first take)
 * or a number, which need not name a user (DynamicUser= services).
 */
static void set_owner(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	struct passwd pw, *found = NULL;
	char buf[1024];
	uint64_t n;

	if (strlen(v) >= sizeof(b->conf.owner)) {
		cfg_bad_value(k, "too long for a user name");
		return;
	}
	if (v[0] >= '0' && v[0] <= '9') {
		if (!cfg_parse_ranged(k, v, 0, UINT32_MAX - 1, &n))
			return;
		b->conf.owner_uid = (uint32_t)n;
	} else {
		if (getpwnam_r(v, &pw, buf, sizeof(buf), &found) || !found) {
			cfg_bad_value(k, "no such user");
			return;
		}
		b->conf.owner_uid = (uint32_t)found->pw_uid;
	}
	b->conf.has_owner = true;
	strcpy(b->conf.owner, v);
}

static void set_check(const struct cfg_key *k, void *obj, const char *v)
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
		cfg_bad_value(k, "expected tcp, http, https or none");
}

/* Text that goes into an HTTP request line or header as it is. */
static bool check_text(const struct cfg_key *k, const char *v)
{
	char why[64];
	const char *c;

	for (c = v; *c; c++) {
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			cfg_bad_value(k,
				      "contains a space or control character");
			return false;
		}
	}
	if (strlen(v) >= RS_CHECK_TEXT_MAX) {
		snprintf(why, sizeof(why), "longer than %d bytes",
			 RS_CHECK_TEXT_MAX - 1);
		cfg_bad_value(k, why);
		return false;
	}
	return true;
}

static void set_check_path(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;

	if (v[0] != '/') {
		cfg_bad_value(k, "does not start with '/'");
		return;
	}
	if (check_text(k, v))
		strcpy(b->conf.health.path, v);
}

static void set_check_host(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;

	if (check_text(k, v))
		strcpy(b->conf.health.host, v);
}

/* "204" is 204..204, "2xx" is 200..299. */
static void set_check_expect(const struct cfg_key *k, void *obj, const char *v)
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
		cfg_bad_value(k,
			      "expected a status 100..599 or a class 1xx..5xx");
		return;
	}
	h->expect_min = (uint16_t)atoi(v);
	h->expect_max = h->expect_min;
}

static void set_interval(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;

	cfg_parse_ranged_duration(k, v, 1, &b->conf.health.interval_ms);
}

static void set_timeout(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;

	cfg_parse_ranged_duration(k, v, 1, &b->conf.health.timeout_ms);
}

static void set_slow_start(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;

	cfg_parse_ranged_duration(k, v, 0, &b->conf.health.slow_start_ms);
}

/* Checks may go to another port of the backend, e.g. a status page. */
static void set_check_port(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, 65535, &n))
		b->conf.health.port = (uint16_t)n;
}

static void set_rise(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, 100, &n))
		b->conf.health.rise = (uint32_t)n;
}

static void set_fall(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, 100, &n))
		b->conf.health.fall = (uint32_t)n;
}

/* Whether it fits in the service's quic_server_id_len is checked later. */
static void set_server_id(const struct cfg_key *k, void *obj, const char *v)
{
	struct be_entry *b = obj;
	char why[64];
	int err = cfg_parse_server_id(v, b->server_id);

	if (err == -ERANGE) {
		snprintf(why, sizeof(why), "does not fit in %d bytes",
			 RS_QUIC_MAX_SERVER_ID);
		cfg_bad_value(k, why);
		return;
	}
	if (err) {
		cfg_bad_value(k, "not a decimal or 0x hex number");
		return;
	}
	snprintf(b->server_id_text, sizeof(b->server_id_text), "%s", v);
}

const struct key_def cfg_backend_keys[] = {
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
	[BE_CHECK_PORT] = {"check_port", "check_port", set_check_port, false},
	{"weight", "weight", set_weight, false},
	{"slow_start", "slow_start", set_slow_start, false},
	{"rise", "rise", set_rise, false},
	{"fall", "fall", set_fall, false},
	{"owner", "owner", set_owner, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(cfg_backend_keys) / sizeof(cfg_backend_keys[0]) <=
		       MAX_KEYS + 1,
	       "key_line[] too small");

/* A [backend NAME] section before its keys. */
const struct be_entry cfg_backend_defaults = {
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

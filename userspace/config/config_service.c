// SPDX-License-Identifier: MIT
/*
 * The [service NAME] keys and what a service is when a key is absent.
 * Ranges are checked here, one key at a time; what depends on other keys
 * (cookie = quic needs udp, CID and server ID lengths) waits for
 * config_checks.c, since keys may come in any order.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>

#include "config_keys.h"
#include "quic_lb.h"

static void set_protocol(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "tcp") == 0)
		s->conf.protocol = IPPROTO_TCP;
	else if (strcmp(v, "udp") == 0)
		s->conf.protocol = IPPROTO_UDP;
	else
		cfg_bad_value(k, "expected tcp or udp");
}

static void set_listen(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	struct rs_listen *l;
	struct rs_addr a;
	const char *why;

	if (rs_addr_parse(v, RS_ADDR_PREFIX | RS_ADDR_PORT_ZERO, &a, &why)) {
		cfg_bad_value(k, why);
		return;
	}
	if (s->conf.n_listens == RS_MAX_LISTENS) {
		cfg_key_error(k, "too many listen entries (max %d)",
			      RS_MAX_LISTENS);
		return;
	}
	l = &s->conf.listens[s->conf.n_listens++];
	l->family = a.family;
	l->prefixlen = a.prefixlen;
	l->port = a.port;
	memcpy(l->addr, a.addr, sizeof(l->addr));
	l->line = k->line;
}

static void set_key_policy(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "src-ip") == 0)
		s->conf.key_policy = RS_KEY_SRC_IP;
	else if (strcmp(v, "src-ip-port") == 0)
		s->conf.key_policy = RS_KEY_SRC_IP_PORT;
	else
		cfg_bad_value(k, "expected src-ip or src-ip-port");
}

static void set_prefix4(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 0, 32, &n))
		s->conf.prefix4 = (uint8_t)n;
}

static void set_prefix6(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 0, 128, &n))
		s->conf.prefix6 = (uint8_t)n;
}

static void set_vnodes(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, 65536, &n)) {
		s->conf.vnodes = (uint32_t)n;
		s->conf.vnodes_set = true;
	}
}

static void set_seed(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	int err = cfg_parse_u64(v, true, &s->conf.seed);

	if (err == -ERANGE)
		cfg_bad_value(k, "does not fit in 64 bits");
	else if (err)
		cfg_bad_value(k, "not a decimal or 0x hex number");
}

static void set_fallback(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "pass") == 0)
		s->conf.fallback = RS_FALLBACK_PASS;
	else if (strcmp(v, "drop") == 0)
		s->conf.fallback = RS_FALLBACK_DROP;
	else
		cfg_bad_value(k, "expected pass or drop");
}

/* 30 days: longer-lived affinity is better served by a cookie. */
#define MAX_STICKY_TTL	   (30u * 24 * 3600)
#define QUIC_MAX_CID_LEN   20 /* RFC 9000: connection IDs are <= 20 bytes */
#define QUIC_MAX_CONFIG_ID 6  /* 7 is reserved by QUIC-LB */

static void set_sticky_ttl(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 0, MAX_STICKY_TTL, &n))
		s->conf.sticky_ttl = (uint32_t)n;
}

static void set_sticky_max(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, RS_MAX_STICKY_MAX, &n))
		s->conf.sticky_max = (uint32_t)n;
}

static void set_cookie(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	if (strcmp(v, "none") == 0)
		s->conf.cookie = RS_COOKIE_NONE;
	else if (strcmp(v, "quic") == 0)
		s->conf.cookie = RS_COOKIE_QUIC;
	else
		cfg_bad_value(k, "expected none or quic");
}

static void set_quic_server_id_len(const struct cfg_key *k, void *obj,
				   const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, RS_QUIC_MAX_SERVER_ID, &n))
		s->conf.quic_server_id_len = (uint8_t)n;
}

static void set_quic_cid_len(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, QUIC_MAX_CID_LEN, &n))
		s->conf.quic_cid_len = (uint8_t)n;
}

static void set_quic_config_id(const struct cfg_key *k, void *obj,
			       const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 0, QUIC_MAX_CONFIG_ID, &n))
		s->conf.quic_config_id = (uint8_t)n;
}

static void set_quic_nonce_len(const struct cfg_key *k, void *obj,
			       const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, RS_QUIC_LB_MIN_NONCE, 18, &n))
		s->conf.quic_nonce_len = (uint8_t)n;
}

static void set_quic_previous_config_id(const struct cfg_key *k, void *obj,
					const char *v)
{
	struct svc_entry *s = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 0, QUIC_MAX_CONFIG_ID, &n)) {
		s->conf.quic_prev_config_id = (uint8_t)n;
		s->conf.quic_prev_set = true;
	}
}

/* An owner-only file of one key; the key is kept, the path is not. */
static void read_quic_key(const struct cfg_key *k, const char *v, bool *set,
			  uint8_t key[16])
{
	char why[PATH_MAX + 160];

	if (v[0] != '/') {
		cfg_bad_value(k, "expected an absolute path");
		return;
	}
	if (quic_lb_key_read(v, key, why, sizeof(why))) {
		cfg_key_error(k, "%s", why);
		return;
	}
	*set = true;
}

static void set_quic_key_file(const struct cfg_key *k, void *obj, const char *v)
{
	struct svc_entry *s = obj;

	read_quic_key(k, v, &s->conf.quic_key_set, s->conf.quic_key);
}

static void set_quic_previous_key_file(const struct cfg_key *k, void *obj,
				       const char *v)
{
	struct svc_entry *s = obj;

	read_quic_key(k, v, &s->conf.quic_prev_key_set, s->conf.quic_prev_key);
}

/*
 * Above 100 the bound never binds in practice, and the product in
 * rs_load_bound() stays within 64 bits.
 */
#define MAX_BALANCE_MILLI 100000u

/* 0 (off) or a factor > 1, kept to 1/1000: 1.25 is 1250. */
static void set_balance_factor(const struct cfg_key *k, void *obj,
			       const char *v)
{
	struct svc_entry *s = obj;
	char *end;
	double f;

	errno = 0;
	f = strtod(v, &end);
	if (end == v || *end || errno || !isfinite(f) || f < 0) {
		cfg_bad_value(k, "expected 0 (off) or a number > 1.0");
		return;
	}
	if (f == 0) {
		s->conf.balance_milli = 0;
		return;
	}
	if (f <= 1.0 || f > MAX_BALANCE_MILLI / 1000) {
		cfg_key_error(k,
			      "%s is out of range: 0 (off) or more than 1.0, "
			      "at most %u",
			      v, MAX_BALANCE_MILLI / 1000);
		return;
	}
	s->conf.balance_milli = (uint32_t)lround(f * 1000);
	/* 1.0001 rounds to 1000: no slack at all would refuse spills' room. */
	if (s->conf.balance_milli <= 1000)
		s->conf.balance_milli = 1001;
}

static void set_on_off(const struct cfg_key *k, const char *v, bool *out)
{
	if (strcmp(v, "on") == 0)
		*out = true;
	else if (strcmp(v, "off") == 0)
		*out = false;
	else
		cfg_bad_value(k, "expected on or off");
}

static void set_fleet(const struct cfg_key *k, void *obj, const char *v)
{
	set_on_off(k, v, &((struct svc_entry *)obj)->conf.fleet);
}

static void set_quic_previous_plaintext(const struct cfg_key *k, void *obj,
					const char *v)
{
	set_on_off(k, v, &((struct svc_entry *)obj)->prev_plaintext);
}

static void set_restart_grace(const struct cfg_key *k, void *obj, const char *v)
{
	cfg_parse_ranged_duration(
		k, v, 0, &((struct svc_entry *)obj)->conf.restart_grace_ms);
}

static void set_generations(const struct cfg_key *k, void *obj, const char *v)
{
	set_on_off(k, v, &((struct svc_entry *)obj)->conf.generations);
}

/* Seconds, as "125" or "125s"; at least 1. */
static void set_flow_idle(const struct cfg_key *k, void *obj, const char *v)
{
	uint32_t ms = 0;

	if (cfg_parse_ranged_duration(k, v, 1000, &ms))
		((struct svc_entry *)obj)->conf.flow_idle_s = ms / 1000;
}

const struct key_def cfg_service_keys[] = {
	[SVC_PROTOCOL] = {"protocol", "protocol", set_protocol, false},
	[SVC_LISTEN] = {"listen", "listen address", set_listen, true},
	[SVC_COOKIE] = {"cookie", "cookie policy", set_cookie, false},
	[SVC_QUIC_SERVER_ID_LEN] = {"quic_server_id_len", "quic_server_id_len",
				    set_quic_server_id_len, false},
	[SVC_QUIC_CID_LEN] = {"quic_cid_len", "quic_cid_len", set_quic_cid_len,
			      false},
	[SVC_VNODES] = {"vnodes", "vnodes", set_vnodes, false},
	[SVC_STICKY_TTL] = {"sticky_ttl", "sticky_ttl", set_sticky_ttl, false},
	[SVC_STICKY_MAX] = {"sticky_max", "sticky_max", set_sticky_max, false},
	[SVC_BALANCE_FACTOR] = {"balance_factor", "balance_factor",
				set_balance_factor, false},
	[SVC_FLEET] = {"fleet", "fleet", set_fleet, false},
	[SVC_QUIC_CONFIG_ID] = {"quic_config_id", "quic_config_id",
				set_quic_config_id, false},
	[SVC_QUIC_KEY_FILE] = {"quic_key_file", "path", set_quic_key_file,
			       false},
	[SVC_QUIC_PREV_CONFIG_ID] = {"quic_previous_config_id",
				     "quic_previous_config_id",
				     set_quic_previous_config_id, false},
	[SVC_QUIC_PREV_KEY_FILE] = {"quic_previous_key_file", "path",
				    set_quic_previous_key_file, false},
	[SVC_QUIC_NONCE_LEN] = {"quic_nonce_len", "quic_nonce_len",
				set_quic_nonce_len, false},
	[SVC_QUIC_PREV_PLAINTEXT] = {"quic_previous_plaintext",
				     "quic_previous_plaintext",
				     set_quic_previous_plaintext, false},
	[SVC_RESTART_GRACE] = {"restart_grace", "restart_grace",
			       set_restart_grace, false},
	[SVC_GENERATIONS] = {"generations", "generations", set_generations,
			     false},
	[SVC_FLOW_IDLE] = {"flow_idle", "flow_idle", set_flow_idle, false},
	{"key", "key policy", set_key_policy, false},
	{"prefix4", "prefix4", set_prefix4, false},
	{"prefix6", "prefix6", set_prefix6, false},
	{"seed", "seed", set_seed, false},
	{"fallback", "fallback", set_fallback, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(cfg_service_keys) / sizeof(cfg_service_keys[0]) <=
		       MAX_KEYS + 1,
	       "key_line[] too small");

/* A [service NAME] section before its keys. */
const struct svc_entry cfg_service_defaults = {
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
	.conf.flow_idle_s = RS_DEFAULT_FLOW_IDLE_S,
};

// SPDX-License-Identifier: MIT
/*
 * A deterministic fuzz of member record parsing: fleet_member_parse()
 * (userspace/ringsteerd/fleet_member.c), the very function the fleet
 * thread applies to every PREFIX/members/NAME record it reads from etcd,
 * fed the way the thread feeds it (the value NUL-terminated, its size its
 * length, as etcd.c's kv_take() leaves them), with and without a fleet
 * key. 200,000 inputs in all, from a seeded PRNG (splitmix64):
 *   - every truncation of every valid seed record;
 *   - every field of a record set to every value of a palette: wrong JSON
 *     types, huge and edge numbers, hostile and malformed addresses, NUL
 *     and unicode escapes, invalid UTF-8, very long strings, nesting
 *     thousands deep, duplicate keys;
 *   - random ones: half changed as JSON (a member's value replaced by a
 *     palette value, members removed, added, renamed; written out compact,
 *     indented, sorted, ASCII-only), half by stacks of byte flips, byte
 *     replacements, insertions of random bytes and JSON tokens, deletions,
 *     repeats and truncations; in a signed fleet, half of them signed
 *     again after the change so that the checks past the signature run;
 *     member names, keys, leases and sizes out of range now and then.
 * For every input: no crash (ASan/UBSan, -fno-sanitize-recover); either
 * accepted with every field in the range docs/fleet.md ("What a host
 * believes") gives, and equal to what the JSON says (a signed one with
 * the MAC the fleet key gives), or rejected with a non-empty reason in
 * printable ASCII (it is logged and shown by fleet status); the same
 * verdict, reason and member for the same input given again in another
 * buffer. The run is reproducible: its first 2,000 random cases, run
 * twice before, give the same digest. RS_FUZZ_SEED and RS_FUZZ_CASES
 * (the total) change the seed and the length of the run.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "fleet_keys.h"
#include "fleet_member.h"
#include "fleet_record.h"
#include "name.h"

#define PREFIX	   "/ringsteer"
#define WHY_LEN	   192 /* as the fleet thread's */
#define TEXT_MAX   (RS_FLEET_RECORD_MAX + 4096)
#define CASES_DFLT 200000ul
#define SEED_DFLT  20250601ull

/* ---- the PRNG ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* ---- this host, as the fleet thread sees it ---- */

static struct rs_fleet_conf conf;
static struct rs_listen listens[2];
static struct fleet_local local = {listens, 2};
static struct rs_fleet_keys nokeys, keys;

static void host_init(void)
{
	snprintf(conf.name, sizeof(conf.name), "host-1");
	snprintf(conf.prefix, sizeof(conf.prefix), PREFIX);
	inet_pton(AF_INET, "198.18.11.2", &conf.addr);
	/* The service addresses: 198.18.0.0/24 and 2001:db8::/64. */
	listens[0].family = AF_INET;
	listens[0].prefixlen = 24;
	inet_pton(AF_INET, "198.18.0.0", listens[0].addr);
	listens[1].family = AF_INET6;
	listens[1].prefixlen = 64;
	inet_pton(AF_INET6, "2001:db8::", listens[1].addr);
	keys.n = 1;
	for (int i = 0; i < RS_FLEET_KEY_LEN; i++)
		keys.key[0][i] = (uint8_t)(0x11 * i + 3);
}

/* ---- inputs ---- */

/* One record as the fleet thread gets it. */
struct input {
	bool signed_fleet;
	char name[96]; /* the key's last part */
	char key[160]; /* the etcd key */
	int64_t lease; /* 0: none */
	bool over_cap; /* value not kept: etcd.c's size only */
	size_t cap_size;
	size_t len; /* text's bytes, NULs included */
	char text[TEXT_MAX];
};

static void input_base(struct input *in, bool signed_fleet, const char *text)
{
	in->signed_fleet = signed_fleet;
	snprintf(in->name, sizeof(in->name), "host-2");
	snprintf(in->key, sizeof(in->key), PREFIX "/members/%s", in->name);
	in->lease = 0x29e8a23446684605;
	in->over_cap = false;
	in->len = strlen(text);
	memcpy(in->text, text, in->len);
}

/*
 * Sign @in's text as member @in->key would (the daemon's record_sign():
 * the MAC over the key and the canonical JSON, as "sig"), when it parses
 * as an object; left as it is otherwise.
 */
static void sign(struct input *in)
{
	char mac[RS_FLEET_MAC_HEX], *canon, *out;
	json_t *j;

	j = json_loadb(in->text, in->len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return;
	}
	json_object_del(j, "sig");
	canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (canon && !rs_fleet_record_mac(keys.key[0], in->key, canon, mac))
		json_object_set_new(j, "sig", json_string(mac));
	free(canon);
	out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (out && strlen(out) < TEXT_MAX) {
		in->len = strlen(out);
		memcpy(in->text, out, in->len);
	}
	free(out);
	json_decref(j);
}

/* Valid records: each is accepted as it is. */
static const char *const seeds[] = {
	"{\"address\":\"198.18.12.2\",\"services\":{\"web\":{\"capacity\":2}}}",
	"{\"address\":\"198.18.13.2\",\"address6\":\"2001:db8:13::2\","
	"\"services\":{\"web\":{\"capacity\":2},\"q\":{\"capacity\":1,"
	"\"server_ids\":[\"0101\",\"0102\"]}}}",
	"{\"address\":\"10.0.0.7\",\"address6\":null,\"services\":{}}",
	"{\"address\":\"198.18.14.2\"}",
	"{ \"services\" : { \"a.b_c-d\" : { \"capacity\" : 1000000 } } , "
	"\"address\" : \"8.8.8.8\" }",
};
#define N_SEEDS (sizeof(seeds) / sizeof(seeds[0]))
static char
	seed64[RS_MAX_SERVICES * 24]; /* the most services a record may have */

/* Records with a hole (%s) for a field's raw JSON text. */
static const char *const templates[] = {
	"%s",
	"{\"address\":%s,\"services\":{\"web\":{\"capacity\":2}}}",
	"{\"address\":\"198.18.12.2\",\"address6\":%s}",
	"{\"address\":\"198.18.12.2\",\"services\":%s}",
	"{\"address\":\"198.18.12.2\",\"services\":{\"web\":%s}}",
	"{\"address\":\"198.18.12.2\",\"services\":{\"web\":{\"capacity\":%s}}"
	"}",
	"{\"address\":\"198.18.12.2\",\"services\":{\"q\":{\"capacity\":1,"
	"\"server_ids\":%s}}}",
	"{\"address\":\"198.18.12.2\",\"services\":{\"q\":{\"capacity\":1,"
	"\"server_ids\":[\"0101\",%s]}}}",
	"{\"address\":\"198.18.12.2\",\"services\":{%s:{\"capacity\":2}}}",
	"{\"address\":\"198.18.12.2\",\"extra\":%s}",
	"{\"address\":\"198.18.12.2\",\"wire\":%s}",
	"{\"address\":\"198.18.12.2\",\"sig\":%s}",
	"{%s:\"198.18.12.2\",\"services\":{\"web\":{\"capacity\":2}}}",
	/* duplicate keys: the last one is what jansson keeps */
	"{\"address\":\"198.18.12.2\",\"address\":%s}",
	"{\"address\":%s,\"address\":\"198.18.12.2\"}",
	"{\"address\":\"198.18.12.2\",\"services\":{\"web\":{\"capacity\":2}},"
	"\"services\":%s}",
	"{\"address\":\"198.18.12.2\",\"services\":{\"web\":{\"capacity\":2},"
	"\"web\":{\"capacity\":%s}}}",
	"[%s]",
};
#define N_TEMPLATES (sizeof(templates) / sizeof(templates[0]))

/* Raw JSON texts for a field (some not JSON at all). */
static const char *const palette[] = {
	"null",
	"true",
	"false",
	"0",
	"-0",
	"1",
	"-1",
	"2",
	"1000000",
	"1000001",
	"4294967296",
	"9223372036854775807",
	"9223372036854775808",
	"-9223372036854775809",
	"99999999999999999999999999999999",
	"1.5",
	"1e400",
	"-1e400",
	"1e-400",
	"0.0",
	"1E2",
	"2e0",
	"0x10",
	"NaN",
	"Infinity",
	"01",
	"\"\"",
	"\"x\"",
	"\"198.18.12.2\"",
	"\"198.18.0.10\"",
	"\"198.18.11.2\"",
	"\"127.0.0.1\"",
	"\"0.0.0.0\"",
	"\"255.255.255.255\"",
	"\"224.0.0.1\"",
	"\"169.254.0.1\"",
	"\"240.0.0.1\"",
	"\"198.18.12.2 \"",
	"\" 198.18.12.2\"",
	"\"198.018.012.002\"",
	"\"0x7f.1\"",
	"\"3323068418\"",
	"\"198.18.12\"",
	"\"198.18.12.2.5\"",
	"\"198.18.12.256\"",
	"\"::\"",
	"\"::1\"",
	"\"::ffff:198.18.12.2\"",
	"\"fe80::1\"",
	"\"ff02::1\"",
	"\"2001:db8::10\"",
	"\"2001:db8:12::2\"",
	"\"2001:db8:12::2%eth0\"",
	"\"2001:db8:12::2/64\"",
	"\"web\"",
	"\"0101\"",
	"\"zz\"",
	"\"010\"",
	"\"01010101010101010101010101010101\"",
	"\"\\u00e9\"",
	"\"\xc3\xa9\"",
	"\"\\ud800\"",
	"\"\\udc00\\ud800\"",
	"\"\\ud83d\\ude00\"",
	"\"\xef\xbc\x91\xef\xbc\x99\xef\xbc\x98.18.12.2\"",
	"\"198.18.12.2\\u0000x\"",
	"\"\\u0000\"",
	"\"\xc3\x28\"",
	"\"\xed\xa0\x80\"",
	"\"\xf4\x90\x80\x80\"",
	"\"\xc0\x80\"",
	"\"\xff\xfe\"",
	"\"\x1b[31m\"",
	"\"a\\nb\"",
	"\"\\\"\"",
	"[]",
	"{}",
	"[1]",
	"[\"0101\"]",
	"{\"a\":1}",
	"{\"capacity\":2}",
	"{\"capacity\":-1}",
	"{\"capacity\":\"2\"}",
	"{\"capacity\":2.0}",
	"{\"capacity\":2,\"server_ids\":\"0101\"}",
	"[\"zz\",\"0101\",\"\",\"0g\",null,7,\"01010101010101010101\"]",
	"{\"web\":{\"capacity\":2},\"web\":{\"capacity\":3}}",
	"\"a",
	"{",
	"[",
	"}",
	"",
	",",
	"\"\\x41\"",
	"'198.18.12.2'",
	"/* */ 1",
	"1 2",
	"{\"address\":\"198.18.12.2\"}",
};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))

/* Generated values: deep nesting, long strings, many entries. */
enum gen { G_ARRAYS, G_OBJECTS, G_LONG, G_LONG_UTF8, G_SERVICES, G_SIDS };
/* Nesting past 16 KiB is cut by the size check: 5,000 is about the most. */
static const size_t depths[] = {10, 100, 2047, 2048, 2049, 5000, 8000};
static const size_t lengths[] = {62, 63, 64, 1000, 16000, 17000};

/* Write generated value @g of size @n into @out (@max bytes). */
static size_t gen_value(enum gen g, size_t n, char *out, size_t max)
{
	size_t k = 0;

	switch (g) {
	case G_ARRAYS:
	case G_OBJECTS:
		for (size_t i = 0; i < n && k + 8 < max / 2; i++)
			k += (size_t)snprintf(out + k, max - k, "%s",
					      g == G_ARRAYS ? "[" : "{\"a\":");
		k += (size_t)snprintf(out + k, max - k, "1");
		for (size_t i = 0; k + 1 < max && out[i] != '1'; i++)
			if (out[i] == '[' || out[i] == '{')
				out[k++] = out[i] == '[' ? ']' : '}';
		break;
	case G_LONG:
	case G_LONG_UTF8:
		out[k++] = '"';
		for (size_t i = 0; i < n && k + 4 < max; i++) {
			if (g == G_LONG_UTF8) {
				out[k++] = '\xc3';
				out[k++] = '\xa9';
			} else {
				out[k++] = (char)('a' + i % 26);
			}
		}
		out[k++] = '"';
		break;
	case G_SERVICES:
	case G_SIDS:
		out[k++] = g == G_SERVICES ? '{' : '[';
		for (size_t i = 0; i < n && k + 40 < max; i++)
			k += (size_t)snprintf(
				out + k, max - k,
				g == G_SERVICES ? "%s\"s%zu\":{\"capacity\":1}"
						: "%s\"%04zx\"",
				i ? "," : "", i);
		out[k++] = g == G_SERVICES ? '}' : ']';
		break;
	}
	out[k] = 0;
	return k;
}

/* @in = template @t with raw value @v (its @vlen bytes). */
static void fill(struct input *in, const char *t, const char *v, size_t vlen)
{
	const char *hole = strstr(t, "%s");
	size_t head = (size_t)(hole - t), tail = strlen(hole + 2);

	if (head + vlen + tail >= TEXT_MAX)
		vlen = TEXT_MAX - 1 - head - tail;
	memcpy(in->text, t, head);
	memcpy(in->text + head, v, vlen);
	memcpy(in->text + head + vlen, hole + 2, tail);
	in->len = head + vlen + tail;
}

/* ---- mutations ---- */

static const char *const tokens[] = {
	"\"address\"",
	"\"address6\"",
	"\"services\"",
	"\"capacity\"",
	"\"server_ids\"",
	"\"sig\"",
	":",
	",",
	"{",
	"}",
	"[",
	"]",
	"\"",
	"\\",
	"null",
	"true",
	"1e400",
	"-0",
	"99999999999999999999",
	"\\u0000",
	"\\ud800",
	"\xc3\xa9",
	"\xc0\xaf",
	"\xff",
	" ",
	"\n",
	"198.18.",
	"::",
	"0101",
};
#define N_TOKENS (sizeof(tokens) / sizeof(tokens[0]))

static void insert(struct input *in, size_t at, const char *b, size_t n)
{
	if (in->len + n >= TEXT_MAX)
		return;
	memmove(in->text + at + n, in->text + at, in->len - at);
	memcpy(in->text + at, b, n);
	in->len += n;
}

static void mutate(struct input *in)
{
	size_t at = below(in->len + 1), n;
	char b[8];

	switch (below(7)) {
	case 0: /* a bit flipped */
		if (in->len)
			in->text[below(in->len)] ^= (char)(1u << below(8));
		break;
	case 1: /* a byte replaced by any byte, NUL included */
		if (in->len)
			in->text[below(in->len)] = (char)rnd();
		break;
	case 2: /* random bytes inserted */
		n = 1 + below(sizeof(b));
		for (size_t i = 0; i < n; i++)
			b[i] = (char)rnd();
		insert(in, at, b, n);
		break;
	case 3: /* a JSON token inserted */
		n = below(N_TOKENS);
		insert(in, at, tokens[n], strlen(tokens[n]));
		break;
	case 4: /* a span deleted */
		n = below(in->len - (at < in->len ? at : in->len) + 1);
		n = n > 16 ? 16 : n;
		memmove(in->text + at, in->text + at + n, in->len - at - n);
		in->len -= n;
		break;
	case 5: /* truncated */
		in->len = below(in->len + 1);
		break;
	case 6: /* a span repeated (duplicate keys, more nesting) */
		n = 1 + below(24);
		if (at + n <= in->len) {
			char span[24];

			memcpy(span, in->text + at, n);
			insert(in, at, span, n);
		}
		break;
	}
}

/* A member (of an object of @root, at some depth) chosen at random. */
static json_t *pick_object(json_t *root, const char **key)
{
	json_t *o = root, *v;
	const char *k;

	for (;;) {
		size_t n = json_object_size(o), i = below(n), c = 0;

		*key = NULL;
		json_object_foreach(o, k, v)
		{
			if (c++ == i) {
				*key = k;
				break;
			}
		}
		if (!*key || !json_is_object(json_object_get(o, *key)) ||
		    below(3) == 0)
			return o;
		o = json_object_get(o, *key);
	}
}

static const char *const field_names[] = {
	"address", "address6", "services", "capacity", "server_ids",
	"sig",	   "web",      "q",	   "x",	       "",
	"a b",	   "\xc3\xa9", "s0",
};
#define N_FIELD_NAMES (sizeof(field_names) / sizeof(field_names[0]))

/*
 * A change that keeps the text JSON: a member's value replaced by a
 * palette value, a member removed, added or renamed; written out again
 * compact or indented, keys sorted or not, ASCII or not.
 */
static void mutate_tree(struct input *in)
{
	static const size_t flags[] = {JSON_COMPACT, JSON_INDENT(2),
				       JSON_COMPACT | JSON_SORT_KEYS,
				       JSON_COMPACT | JSON_ENSURE_ASCII, 0};
	json_t *root = json_loadb(in->text, in->len, 0, NULL), *o, *v;
	const char *key, *p;
	char *out;

	if (!json_is_object(root)) {
		json_decref(root);
		return;
	}
	for (size_t m = 1 + below(2); m; m--) {
		o = pick_object(root, &key);
		p = palette[below(N_PALETTE)];
		v = json_loads(p, JSON_DECODE_ANY, NULL);
		if (!v)
			v = json_integer((json_int_t)rnd());
		switch (below(4)) {
		case 0:
			if (key)
				json_object_del(o, key);
			json_decref(v);
			break;
		case 1: /* renamed */
			json_decref(v);
			v = key ? json_incref(json_object_get(o, key)) : NULL;
			if (key)
				json_object_del(o, key);
			if (v)
				json_object_set_new(
					o, field_names[below(N_FIELD_NAMES)],
					v);
			break;
		case 2:
			json_object_set_new(
				o, field_names[below(N_FIELD_NAMES)], v);
			break;
		default:
			if (key)
				json_object_set_new(o, key, v);
			else
				json_decref(v);
			break;
		}
	}
	out = json_dumps(root, flags[below(sizeof(flags) / sizeof(flags[0]))]);
	if (out && strlen(out) < TEXT_MAX) {
		in->len = strlen(out);
		memcpy(in->text, out, in->len);
	}
	free(out);
	json_decref(root);
}

/* Now and then, a name, key, lease or size the daemon could be handed. */
static const char *const names[] = {
	"host-1",
	"a",
	"x.y_z-0",
	"",
	"a/b",
	"a b",
	"e\x1b[31m",
	"\xc3\xa9",
	"host-2\n",
	"..",
	"-",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

static void mutate_kv(struct input *in)
{
	switch (below(24)) {
	case 0:
		snprintf(in->name, sizeof(in->name), "%s",
			 names[below(N_NAMES)]);
		snprintf(in->key, sizeof(in->key), PREFIX "/members/%s",
			 in->name);
		break;
	case 1: /* the same value under another member's key */
		snprintf(in->name, sizeof(in->name), "host-3");
		snprintf(in->key, sizeof(in->key), PREFIX "/members/host-3");
		break;
	case 2:
		in->lease = 0;
		break;
	case 3:
		in->lease = (int64_t)rnd();
		break;
	case 4: /* etcd.c kept its size only */
		in->over_cap = true;
		in->cap_size =
			below(2) ? SIZE_MAX
				 : RS_FLEET_RECORD_MAX + 1 + below(1u << 20);
		break;
	default:
		break;
	}
}

/* ---- one input through the parser ---- */

struct verdict {
	bool ok;
	char why[WHY_LEN];
	struct rs_fleet_member_info m;
};

static void run(const struct input *in, struct verdict *v)
{
	struct rs_etcd_kv kv = {.key = (char *)in->key, .lease = in->lease};
	char *value = NULL;

	/*
	 * As kv_take() leaves it: NUL-terminated, size its string length,
	 * in a buffer of just that size (ASan sees a read past it).
	 */
	if (!in->over_cap) {
		value = malloc(in->len + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(value);
		memcpy(value, in->text, in->len);
		value[in->len] = 0;
		kv.size = strlen(value);
	} else {
		kv.size = in->cap_size;
	}
	kv.value = value;
	memset(v, 0, sizeof(*v));
	v->ok = fleet_member_parse(
		&conf, &local,
		&(struct fleet_trust){.keys = in->signed_fleet ? &keys
							       : &nokeys},
		in->name, &kv, &v->m, v->why, WHY_LEN);
	free(value);
}

static bool in_prefix4(uint32_t a, const char *net, int len)
{
	struct in_addr n;

	inet_pton(AF_INET, net, &n);
	return (ntohl(a) >> (32 - len)) == (ntohl(n.s_addr) >> (32 - len));
}

/* What the record says, read on its own; false when @v disagrees. */
static bool oracle(const struct input *in, const struct rs_fleet_member_info *m)
{
	json_t *j = json_loadb(in->text, strnlen(in->text, in->len), 0, NULL);
	json_t *svcs = json_object_get(j, "services"), *cap;
	const char *a = json_string_value(json_object_get(j, "address"));
	struct in_addr a4;
	json_t *wire = json_object_get(j, "wire");
	bool ok = j && a && inet_pton(AF_INET, a, &a4) == 1 &&
		  a4.s_addr == m->addr && json_object_size(svcs) == m->n_caps &&
		  m->wire == (wire ? json_integer_value(wire)
				   : RS_FLEET_WIRE_VERSION);

	for (size_t i = 0; ok && i < m->n_caps; i++) {
		cap = json_object_get(json_object_get(svcs, m->caps[i].service),
				      "capacity");
		ok = json_object_get(svcs, m->caps[i].service) &&
		     (cap ? json_integer_value(cap) : 0) ==
			     (json_int_t)m->caps[i].capacity;
	}
	/* In a signed fleet it carries a MAC of the fleet key. */
	if (ok && in->signed_fleet) {
		char *sig = strdup(json_string_value(json_object_get(j, "sig"))
					   ?: ""),
		     *canon, mac[RS_FLEET_MAC_HEX];

		json_object_del(j, "sig"); /* frees the string it held */
		canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		ok = sig && canon &&
		     !rs_fleet_record_mac(keys.key[0], in->key, canon, mac) &&
		     !strcmp(mac, sig);
		free(canon);
		free(sig);
	}
	json_decref(j);
	return ok;
}

/* An accepted member: every field where docs/fleet.md says it is. */
static const char *bad_member(const struct input *in, const struct verdict *v)
{
	const struct rs_fleet_member_info *m = &v->m;
	static const uint8_t zero[16];
	uint8_t a6[16];

	if (v->why[0])
		return "accepted with a reason";
	if (in->over_cap || !in->lease ||
	    strnlen(in->text, in->len) > RS_FLEET_RECORD_MAX)
		return "accepted without a lease or over the size limit";
	if (strcmp(m->name, in->name) || !rs_name_ok(m->name))
		return "member name";
	if (rs_fleet_addr4_problem(m->addr) ||
	    in_prefix4(m->addr, "198.18.0.0", 24) ||
	    (m->addr == conf.addr && strcmp(m->name, conf.name)))
		return "address";
	memcpy(a6, m->addr6, 16);
	if (m->has_addr6 ? rs_fleet_addr6_problem(a6) ||
				   (a6[0] == 0x20 && a6[1] == 0x01 &&
				    a6[2] == 0x0d && a6[3] == 0xb8 &&
				    !memcmp(a6 + 4, zero, 4))
			 : !!memcmp(a6, zero, 16))
		return "address6";
	if (m->drained || m->n_caps > RS_MAX_SERVICES ||
	    m->n_sids > RS_FLEET_MEMBER_SIDS)
		return "counts";
	if (m->wire < RS_FLEET_WIRE_VERSION)
		return "wire version";
	for (size_t i = 0; i < m->n_caps; i++) {
		if (strnlen(m->caps[i].service, RS_NAME_MAX) == RS_NAME_MAX ||
		    !rs_name_ok(m->caps[i].service) ||
		    m->caps[i].capacity > RS_FLEET_CAPACITY_MAX)
			return "service or capacity";
		for (size_t k = 0; k < i; k++)
			if (!strcmp(m->caps[i].service, m->caps[k].service))
				return "a service twice";
	}
	for (size_t i = 0; i < m->n_sids; i++)
		if (!m->sids[i].len || m->sids[i].len > sizeof(m->sids[i].id) ||
		    m->sids[i].cap >= m->n_caps)
			return "server ID";
	return oracle(in, m) ? NULL : "not what the record says";
}

static const char *bad_reason(const struct verdict *v)
{
	size_t n = strnlen(v->why, WHY_LEN);

	if (!n)
		return "rejected without a reason";
	if (n == WHY_LEN)
		return "reason not terminated";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v->why[i] < 0x20 || v->why[i] == 0x7f)
			return "control character in the reason";
	return NULL;
}

/* ---- the run ---- */

static struct {
	unsigned long cases, accepted, rejected, failures;
	uint64_t digest;
} st;

static void digest(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		st.digest = (st.digest ^ ((const uint8_t *)p)[i]) *
			    0x100000001b3ull;
}

static void report(const struct input *in, const char *what,
		   const struct verdict *v)
{
	if (++st.failures > 10)
		return;
	fprintf(stderr,
		"\nfuzz: %s (name '%s', key '%s', lease %lld%s): ", what,
		in->name, in->key, (long long)in->lease,
		in->over_cap ? ", over the cap" : "");
	for (size_t i = 0; i < in->len && i < 300; i++)
		fprintf(stderr,
			(unsigned char)in->text[i] < 0x20 ||
					(unsigned char)in->text[i] >= 0x7f
				? "\\x%02x"
				: "%c",
			(unsigned char)in->text[i]);
	fprintf(stderr, "%s\n  -> %s: '%s'\n", in->len > 300 ? "..." : "",
		v->ok ? "accepted" : "rejected", v->why);
}

/* Reasons met, by their words before any ':' or digit (for the report). */
static struct {
	char text[48];
	unsigned long n;
} reasons[96];
static size_t n_reasons;

static void count_reason(const char *why)
{
	char k[48];
	size_t i = 0;

	while (why[i] && why[i] != ':' && (why[i] < '0' || why[i] > '9') &&
	       i < sizeof(k) - 1) {
		k[i] = why[i];
		i++;
	}
	k[i] = 0;
	for (i = 0; i < n_reasons; i++)
		if (!strcmp(reasons[i].text, k))
			break;
	if (i == n_reasons && n_reasons < sizeof(reasons) / sizeof(reasons[0]))
		snprintf(reasons[n_reasons++].text, sizeof(k), "%s", k);
	if (i < n_reasons)
		reasons[i].n++;
}

static void check(const struct input *in)
{
	static struct verdict a, b;
	const char *bad;

	run(in, &a);
	run(in, &b);
	st.cases++;
	if (a.ok != b.ok || strcmp(a.why, b.why) ||
	    memcmp(&a.m, &b.m, sizeof(a.m)))
		report(in, "another verdict for the same input", &b);
	bad = a.ok ? bad_member(in, &a) : bad_reason(&a);
	if (bad)
		report(in, bad, &a);
	if (a.ok) {
		st.accepted++;
	} else {
		st.rejected++;
		count_reason(a.why);
	}
	digest(&a.ok, sizeof(a.ok));
	digest(a.why, strlen(a.why));
	if (a.ok)
		digest(&a.m, sizeof(a.m));
}

static struct input cur;

/* Every seed (and seed64) in both fleets: accepted as it is, then cut. */
static void pass_truncations(void)
{
	for (size_t s = 0; s <= N_SEEDS; s++)
		for (int sg = 0; sg < 2; sg++) {
			size_t full;

			input_base(&cur, sg, s < N_SEEDS ? seeds[s] : seed64);
			if (sg)
				sign(&cur);
			full = cur.len;
			{
				struct verdict v;

				run(&cur, &v);
				if (!v.ok)
					report(&cur, "a valid seed is rejected",
					       &v);
			}
			for (size_t n = 0; n <= full; n++) {
				cur.len = n;
				check(&cur);
			}
		}
}

/* Every template with every palette and generated value, both fleets. */
static void pass_fields(void)
{
	static char v[TEXT_MAX];
	static const enum gen gens[] = {G_ARRAYS,    G_OBJECTS,	 G_LONG,
					G_LONG_UTF8, G_SERVICES, G_SIDS};
#define N_GENS (sizeof(gens) / sizeof(gens[0]))

	for (size_t t = 0; t < N_TEMPLATES; t++)
		for (int sg = 0; sg < 2; sg++) {
			for (size_t p = 0; p < N_PALETTE; p++) {
				input_base(&cur, sg, "");
				fill(&cur, templates[t], palette[p],
				     strlen(palette[p]));
				if (sg)
					sign(&cur);
				check(&cur);
			}
			/*
			 * Unsigned only: in a signed fleet they are parsed just
			 * the same first, and a parse thousands deep is dear.
			 */
			for (size_t g = sg ? N_GENS : 0; g < N_GENS; g++)
				for (size_t k = 0; k < 7; k++) {
					size_t n = gens[g] <= G_OBJECTS
							   ? depths[k]
						   : k < 6 ? lengths[k]
							   : 65;

					input_base(&cur, sg, "");
					fill(&cur, templates[t], v,
					     gen_value(gens[g], n, v,
						       sizeof(v)));
					if (sg)
						sign(&cur);
					check(&cur);
				}
		}
}

/* The seeds and seed64 signed as host-2 would, made once. */
static char signed_seeds[N_SEEDS + 1][sizeof(seed64)];

static void sign_seeds(void)
{
	for (size_t i = 0; i <= N_SEEDS; i++) {
		input_base(&cur, true, i < N_SEEDS ? seeds[i] : seed64);
		sign(&cur);
		CU_ASSERT_FATAL(cur.len < sizeof(signed_seeds[i]));
		memcpy(signed_seeds[i], cur.text, cur.len);
		signed_seeds[i][cur.len] = 0;
	}
}

/* Random stacks of mutations over seeds and palette records. */
static void pass_random(unsigned long n)
{
	for (unsigned long c = 0; c < n; c++) {
		bool sg = below(4) == 0;
		size_t k = below(64);

		if (k < 32) {
			/* seed64 is big: now and then only. */
			size_t i = k ? below(N_SEEDS) : N_SEEDS;

			input_base(&cur, sg,
				   sg && below(2) ? signed_seeds[i]
				   : i < N_SEEDS  ? seeds[i]
						  : seed64);
		} else {
			const char *t = templates[below(N_TEMPLATES)];
			const char *p = palette[below(N_PALETTE)];

			input_base(&cur, sg, "");
			fill(&cur, t, p, strlen(p));
		}
		/*
		 * Half the time the text stays JSON (or nearly: one byte
		 * changed now and then), so that the checks past the parse
		 * see most of them; otherwise a few bytes go wrong anywhere.
		 */
		if (below(2)) {
			mutate_tree(&cur);
			if (!below(8))
				mutate(&cur);
		} else {
			for (size_t m = 1 + below(3); m; m--)
				mutate(&cur);
		}
		/* Signed again after the mutation: the checks past it run. */
		if (sg && below(2))
			sign(&cur);
		mutate_kv(&cur);
		check(&cur);
	}
}

static unsigned long env_ul(const char *name, unsigned long dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : dflt;
}

static void test_fuzz(void)
{
	uint64_t seed = env_ul("RS_FUZZ_SEED", SEED_DFLT), first;
	unsigned long total = env_ul("RS_FUZZ_CASES", CASES_DFLT), n;
	struct timespec t0, t1;
	size_t k = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	k += (size_t)snprintf(seed64 + k, sizeof(seed64) - k,
			      "{\"address\":\"198.18.15.2\",\"services\":");
	k += gen_value(G_SERVICES, RS_MAX_SERVICES, seed64 + k,
		       sizeof(seed64) - k);
	snprintf(seed64 + k, sizeof(seed64) - k, "}");
	sign_seeds();

	/* The first 2,000 random cases twice: the same digest. */
	rng = seed;
	pass_random(2000);
	first = st.digest;
	memset(&st, 0, sizeof(st));
	rng = seed;
	pass_random(2000);
	CU_ASSERT_EQUAL(st.digest, first);

	memset(&st, 0, sizeof(st));
	rng = seed;
	pass_truncations();
	pass_fields();
	/* The random cases make up the rest of the total. */
	n = total > st.cases ? total - st.cases : 0;
	printf("\n  fuzz: %lu truncations and field values", st.cases);
	pass_random(n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf(", %lu random (seed %llu): %lu cases, %lu accepted, %lu "
	       "rejected, %lu failures, %.2f s\n",
	       n, (unsigned long long)seed, st.cases, st.accepted, st.rejected,
	       st.failures,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (getenv("RS_FUZZ_VERBOSE"))
		for (size_t i = 0; i < n_reasons; i++)
			printf("  %8lu  %s\n", reasons[i].n, reasons[i].text);
	CU_ASSERT_EQUAL(st.failures, 0);
	/* Both verdicts were reached many times over. */
	CU_ASSERT(st.accepted > 1000);
	CU_ASSERT(st.rejected > 1000);
}

/* The two bugs the fuzz found, pinned whatever the seed. */
static void test_found(void)
{
	struct verdict v;
	char *sig;

	/* Bytes after a valid MAC: once cut off before the check. */
	input_base(&cur, true, seeds[0]);
	sign(&cur);
	run(&cur, &v);
	CU_ASSERT_TRUE(v.ok);
	sig = strstr(cur.text, "\"sig\":\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sig);
	sig += 7 + RS_FLEET_MAC_HEX - 1; /* the closing quote */
	insert(&cur, (size_t)(sig - cur.text), "00", 2);
	run(&cur, &v);
	CU_ASSERT_FALSE(v.ok);
	CU_ASSERT_STRING_EQUAL(v.why, "\"sig\" is not 32 hex digits");

	/* jansson quotes the bytes it stopped at: escaped, never raw. */
	input_base(&cur, false, "\x1b]0;x\x07");
	run(&cur, &v);
	CU_ASSERT_FALSE(v.ok);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "\\x1b"));
	CU_ASSERT_PTR_NULL(bad_reason(&v));
}

/* fleet_printable(): whole escapes only, always terminated. */
static void test_printable(void)
{
	static const char src[] = "a\x1b[31m\xc3\xa9\\z";
	char out[64];

	fleet_printable(out, sizeof(out), src);
	CU_ASSERT_STRING_EQUAL(out, "a\\x1b[31m\\xc3\\xa9\\x5cz");
	for (size_t len = 1; len < 28; len++) {
		char *o = malloc(len); /* ASan: not a byte past it */

		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		fleet_printable(o, len, src);
		CU_ASSERT(strlen(o) < len);
		CU_ASSERT(!strncmp(o, out, strlen(o)));
		/* Cut between escapes, never inside one. */
		CU_ASSERT(strlen(o) == 0 || o[strlen(o) - 1] != '\\');
		free(o);
	}
}

/*
 * ASan keeps freed memory in quarantine (256 MB by default) to catch
 * uses after free; each case frees all it had long before the next, and
 * a smaller one keeps that check while this test stays at about 100 MB
 * instead of 500, and spends less time faulting in fresh pages.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;

	host_init();
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_member_fuzz", NULL, NULL);
	CU_add_test(s,
		    "member records: accepted in range or rejected, always "
		    "the same",
		    test_fuzz);
	CU_add_test(s,
		    "a signature is the MAC and nothing after it; reasons "
		    "are printable",
		    test_found);
	CU_add_test(s, "fleet_printable escapes what is not printable ASCII",
		    test_printable);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

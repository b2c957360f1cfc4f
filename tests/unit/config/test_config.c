// SPDX-License-Identifier: MIT
/*
 * Unit tests of the configuration parser and the address helpers. Run from
 * the repository root: the sample configuration is read from configs/.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strchrnul, open_memstream, asprintf */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "addr.h"
#include "config.h"

#define SAMPLE "configs/ringsteer.conf"

/* A valid service taking lines 1..3, to build bad files on. */
#define WEB "[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n"
/* WEB, then a backend of it on lines 4..6. */
#define WEB_A WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
/* A QUIC cookie service taking lines 1..4. */
#define QUIC                                                                   \
	"[service q]\nprotocol = udp\nlisten = 198.18.0.20:443\n"              \
	"cookie = quic\n"

static struct rs_config cfg;
static char err[16384];

static bool cfg_is_zero(const struct rs_config *c)
{
	static const struct rs_config zero;

	return memcmp(c, &zero, sizeof(*c)) == 0;
}

/* Garbage first, so that "zeroed on error" is really tested. */
static int load(const char *text)
{
	rs_config_free(&cfg);
	memset(&cfg, 0xa5, sizeof(cfg));
	memset(err, 'x', sizeof(err));
	return rs_config_load_string(text, "t.conf", &cfg, err, sizeof(err));
}

/* Is there an error line starting with @where that contains @what? */
static bool has_error(const char *where, const char *what)
{
	const char *line = err;

	while (*line) {
		const char *end = strchrnul(line, '\n');
		char *copy = strndup(line, (size_t)(end - line));
		bool hit = copy && strncmp(copy, where, strlen(where)) == 0 &&
			   strstr(copy + strlen(where), what);

		free(copy);
		if (hit)
			return true;
		line = *end ? end + 1 : end;
	}
	return false;
}

static size_t count_lines(const char *s)
{
	size_t n = *s ? 1 : 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void check_error(const char *text, const char *where, const char *what,
			const char *file, int line)
{
	int ret = load(text);
	bool ok = ret == -EINVAL && cfg_is_zero(&cfg) && has_error(where, what);

	if (!ok)
		fprintf(stderr,
			"\n%s:%d: ret=%d zero=%d, want '%s' ... '%s', got:\n"
			"%s\n",
			file, line, ret, cfg_is_zero(&cfg), where, what, err);
	CU_assertImplementation(ok, (unsigned int)line, "check_error", file, "",
				CU_FALSE);
}

/* Loading @text fails, one error line starts with @where, has @what. */
#define EXPECT_ERROR(text, where, what)                                        \
	check_error(text, where, what, __FILE__, __LINE__)

static void check_ok(const char *text, const char *file, int line)
{
	int ret = load(text);

	if (ret)
		fprintf(stderr, "\n%s:%d: ret=%d, errors:\n%s\n", file, line,
			ret, err);
	CU_assertImplementation(ret == 0 && err[0] == '\0', (unsigned int)line,
				"check_ok", file, "", CU_FALSE);
}

#define EXPECT_OK(text) check_ok(text, __FILE__, __LINE__)

/* EXPECT_OK, and stop the test there if it failed: @cfg is read next. */
#define EXPECT_LOADED(text)                                                    \
	do {                                                                   \
		EXPECT_OK(text);                                               \
		CU_ASSERT_FATAL(cfg.path[0] != '\0');                          \
	} while (0)

static void v4(uint8_t out[16], const char *s)
{
	memset(out, 0, 16);
	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET, s, out), 1);
}

static void v6(uint8_t out[16], const char *s)
{
	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET6, s, out), 1);
}

/* ---- addresses ---- */

static void test_addr_parse_v4(void)
{
	struct rs_addr a;
	uint8_t want[16];
	const char *why = NULL;

	CU_ASSERT_EQUAL(rs_addr_parse("198.18.0.10:80", 0, &a, &why), 0);
	v4(want, "198.18.0.10");
	CU_ASSERT_EQUAL(a.family, AF_INET);
	CU_ASSERT_EQUAL(a.prefixlen, 32);
	CU_ASSERT_EQUAL(a.port, 80);
	CU_ASSERT_EQUAL(memcmp(a.addr, want, 16), 0);

	CU_ASSERT_EQUAL(
		rs_addr_parse("198.18.0.0/24:80", RS_ADDR_PREFIX, &a, &why), 0);
	v4(want, "198.18.0.0");
	CU_ASSERT_EQUAL(a.prefixlen, 24);
	CU_ASSERT_EQUAL(a.port, 80);
	CU_ASSERT_EQUAL(memcmp(a.addr, want, 16), 0);

	CU_ASSERT_EQUAL(rs_addr_parse("0.0.0.0:53", 0, &a, &why), 0);
	CU_ASSERT_EQUAL(a.family, AF_INET);
	CU_ASSERT_EQUAL(a.port, 53);
	memset(want, 0, 16);
	CU_ASSERT_EQUAL(memcmp(a.addr, want, 16), 0);

	CU_ASSERT_EQUAL(rs_addr_parse("127.0.0.1:8081", 0, &a, NULL), 0);
	CU_ASSERT_EQUAL(a.port, 8081);
	CU_ASSERT_EQUAL(rs_addr_parse("0.0.0.0/0:0",
				      RS_ADDR_PREFIX | RS_ADDR_PORT_ZERO, &a,
				      NULL),
			0);
	CU_ASSERT_EQUAL(a.prefixlen, 0);
	CU_ASSERT_EQUAL(a.port, 0);
	CU_ASSERT_EQUAL(rs_addr_parse("1.2.3.4:65535", 0, &a, NULL), 0);
	CU_ASSERT_EQUAL(a.port, 65535);
}

static void test_addr_parse_v6(void)
{
	struct rs_addr a;
	uint8_t want[16];

	CU_ASSERT_EQUAL(rs_addr_parse("[2001:db8::10]:80", 0, &a, NULL), 0);
	v6(want, "2001:db8::10");
	CU_ASSERT_EQUAL(a.family, AF_INET6);
	CU_ASSERT_EQUAL(a.prefixlen, 128);
	CU_ASSERT_EQUAL(a.port, 80);
	CU_ASSERT_EQUAL(memcmp(a.addr, want, 16), 0);

	CU_ASSERT_EQUAL(
		rs_addr_parse("[2001:db8::/64]:80", RS_ADDR_PREFIX, &a, NULL),
		0);
	v6(want, "2001:db8::");
	CU_ASSERT_EQUAL(a.prefixlen, 64);
	CU_ASSERT_EQUAL(memcmp(a.addr, want, 16), 0);

	CU_ASSERT_EQUAL(rs_addr_parse("[::]:53", 0, &a, NULL), 0);
	memset(want, 0, 16);
	CU_ASSERT_EQUAL(a.family, AF_INET6);
	CU_ASSERT_EQUAL(a.prefixlen, 128);
	CU_ASSERT_EQUAL(memcmp(a.addr, want, 16), 0);
}

static void expect_bad(const char *s, unsigned int flags, int ret,
		       const char *reason, int line)
{
	struct rs_addr a;
	const char *why = NULL;
	int got;

	memset(&a, 0xa5, sizeof(a));
	got = rs_addr_parse(s, flags, &a, &why);
	if (got != ret || !why || strcmp(why, reason))
		fprintf(stderr, "\nline %d: '%s': got %d '%s'\n", line, s, got,
			why ? why : "(null)");
	CU_assertImplementation(got == ret && why && !strcmp(why, reason),
				(unsigned int)line, "expect_bad", __FILE__, "",
				CU_FALSE);
	CU_ASSERT_EQUAL(a.family, 0);
}

#define BAD(s, flags, ret, reason) expect_bad(s, flags, ret, reason, __LINE__)

static void test_addr_parse_errors(void)
{
	const unsigned int any = RS_ADDR_PREFIX | RS_ADDR_PORT_ZERO;

	BAD("127.0.0.1:99999", 0, -ERANGE, "port out of range");
	BAD("127.0.0.1:65536", 0, -ERANGE, "port out of range");
	BAD("127.0.0.1:99999999999999999999999", 0, -ERANGE,
	    "port out of range");
	BAD("127.0.0.1:0", 0, -ERANGE, "port 0 not allowed");
	BAD("127.0.0.1:-1", any, -EINVAL, "bad port");
	BAD("127.0.0.1:+80", any, -EINVAL, "bad port");
	BAD("127.0.0.1:8o", any, -EINVAL, "bad port");
	BAD("127.0.0.1: 80", any, -EINVAL, "bad port");
	BAD("127.0.0.1:", any, -EINVAL, "missing port");
	BAD("127.0.0.1", any, -EINVAL, "missing port");
	BAD("[::1]", any, -EINVAL, "missing port");
	BAD("[::1", any, -EINVAL, "missing ']'");
	BAD("[::1]80", any, -EINVAL, "expected ':' after ']'");
	BAD("2001:db8::1:80", any, -EINVAL, "IPv6 address must be in brackets");
	BAD("", any, -EINVAL, "empty address");
	BAD(":80", any, -EINVAL, "missing address");
	BAD("[]:80", any, -EINVAL, "missing address");
	BAD("1.2.3:80", any, -EINVAL, "bad IPv4 address");
	BAD("1.2.3.256:80", any, -EINVAL, "bad IPv4 address");
	BAD("localhost:80", any, -EINVAL, "bad IPv4 address");
	BAD("[1.2.3.4]:80", any, -EINVAL, "bad IPv6 address");
	BAD("[fe80::1%eth0]:80", any, -EINVAL, "bad IPv6 address");
	BAD("[::ffff:1.2.3.4]:80", any, -EINVAL,
	    "IPv4-mapped address, write it as IPv4");
	BAD("198.18.0.0/24:80", 0, -EINVAL, "prefix not allowed");
	BAD("198.18.0.5/24:80", any, -EINVAL, "host bits set");
	BAD("[2001:db8::1/64]:80", any, -EINVAL, "host bits set");
	BAD("198.18.0.0/33:80", any, -ERANGE, "prefix length out of range");
	BAD("[::/129]:80", any, -ERANGE, "prefix length out of range");
	BAD("198.18.0.0/:80", any, -EINVAL, "bad prefix length");
	BAD("198.18.0.0/2x:80", any, -EINVAL, "bad prefix length");
	BAD("198.18.0.0/-1:80", any, -EINVAL, "bad prefix length");

	CU_ASSERT_EQUAL(rs_addr_parse(NULL, 0, NULL, NULL), -EINVAL);
}

static void test_addr_format(void)
{
	char buf[RS_ADDR_STRLEN];
	uint8_t a[16];

	v4(a, "1.2.3.4");
	CU_ASSERT_EQUAL(rs_addr_format(AF_INET, a, 80, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "1.2.3.4:80");

	v6(a, "2001:db8::1");
	CU_ASSERT_EQUAL(rs_addr_format(AF_INET6, a, 80, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "[2001:db8::1]:80");

	memset(a, 0, 16);
	CU_ASSERT_EQUAL(rs_addr_format(AF_INET6, a, 53, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "[::]:53");

	v4(a, "198.18.0.0");
	CU_ASSERT_EQUAL(
		rs_addr_format_prefix(AF_INET, a, 24, 80, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "198.18.0.0/24:80");
	CU_ASSERT_EQUAL(
		rs_addr_format_prefix(AF_INET, a, 32, 0, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "198.18.0.0:0");
	CU_ASSERT_EQUAL(
		rs_addr_format_prefix(AF_INET, a, 33, 0, buf, sizeof(buf)),
		-EINVAL);

	v6(a, "2001:db8::");
	CU_ASSERT_EQUAL(
		rs_addr_format_prefix(AF_INET6, a, 64, 80, buf, sizeof(buf)),
		0);
	CU_ASSERT_STRING_EQUAL(buf, "[2001:db8::/64]:80");

	/* The longest text there is fits in RS_ADDR_STRLEN. */
	memset(a, 0xff, 16);
	CU_ASSERT_EQUAL(rs_addr_format_prefix(AF_INET6, a, 128, 65535, buf,
					      sizeof(buf)),
			0);
	CU_ASSERT_STRING_EQUAL(
		buf, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");

	v4(a, "1.2.3.4");
	CU_ASSERT_EQUAL(rs_addr_format(AF_INET, a, 80, buf, 5), -ENOSPC);
	CU_ASSERT_STRING_EQUAL(buf, "1.2.");
	CU_ASSERT_EQUAL(rs_addr_format(AF_INET, a, 80, buf, 0), -ENOSPC);
	CU_ASSERT_EQUAL(rs_addr_format(AF_UNIX, a, 80, buf, sizeof(buf)),
			-EAFNOSUPPORT);
}

static void test_addr_round_trip(void)
{
	static const char *const texts[] = {
		"198.18.0.10:80",    "198.18.0.0/24:80",   "0.0.0.0/0:0",
		"[2001:db8::10]:80", "[2001:db8::/64]:80", "[::]:53",
		"[::/0]:0",	     "10.0.0.0/8:65535",
	};
	char buf[RS_ADDR_STRLEN];
	struct rs_addr a;
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		CU_ASSERT_EQUAL(
			rs_addr_parse(texts[i],
				      RS_ADDR_PREFIX | RS_ADDR_PORT_ZERO, &a,
				      NULL),
			0);
		CU_ASSERT_EQUAL(rs_addr_format_prefix(a.family, a.addr,
						      a.prefixlen, a.port, buf,
						      sizeof(buf)),
				0);
		CU_ASSERT_STRING_EQUAL(buf, texts[i]);
	}
}

static void test_addr_mask(void)
{
	uint8_t a[16], want[16];

	v4(a, "198.18.255.255");
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET, a, 24), 0);
	v4(want, "198.18.255.0");
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);

	v4(a, "198.18.255.255");
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET, a, 20), 0);
	v4(want, "198.18.240.0");
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);

	v4(a, "198.18.255.255");
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET, a, 0), 0);
	memset(want, 0, 16);
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);

	/* IPv4 leaves bytes 4..15 zero whatever they held. */
	memset(a, 0xff, 16);
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET, a, 32), 0);
	v4(want, "255.255.255.255");
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);

	v6(a, "2001:db8:1:2:3:4:5:6");
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET6, a, 64), 0);
	v6(want, "2001:db8:1:2::");
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);

	v6(a, "2001:db8:ffff::");
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET6, a, 33), 0);
	v6(want, "2001:db8:8000::");
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);

	memset(a, 0xff, 16);
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET6, a, 128), 0);
	memset(want, 0xff, 16);
	CU_ASSERT_EQUAL(memcmp(a, want, 16), 0);
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET6, a, 127), 0);
	CU_ASSERT_EQUAL(a[15], 0xfe);

	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET, a, 33), -EINVAL);
	CU_ASSERT_EQUAL(rs_addr_mask(AF_INET6, a, 129), -EINVAL);
	CU_ASSERT_EQUAL(rs_addr_mask(0, a, 0), -EAFNOSUPPORT);
	CU_ASSERT_EQUAL(rs_addr_bits(AF_INET), 32);
	CU_ASSERT_EQUAL(rs_addr_bits(AF_INET6), 128);
	CU_ASSERT_EQUAL(rs_addr_bits(AF_UNIX), 0);
}

/* ---- configuration that loads ---- */

/* The sample documents every key: each appears set at a line start. */
static void test_fleet(void)
{
	const char *base =
		"[global]\ninterfaces = rh\n"
		"[service web]\nprotocol = tcp\n"
		"listen = 198.18.0.10:80\nfleet = on\n"
		"[backend a]\nservice = web\naddress = 127.0.0.1:1\n";
	char text[1024];

	snprintf(text, sizeof(text),
		 "%s[fleet]\netcd = http://198.18.0.1:2379, "
		 "http://198.18.0.2:2379\nname = edge-1\n"
		 "address = 198.18.11.2\nlease_ttl = 5s\nport = 9000\n",
		 base);
	EXPECT_OK(text);
	CU_ASSERT_TRUE(cfg.fleet.enabled);
	CU_ASSERT_EQUAL(cfg.fleet.n_etcd, 2);
	CU_ASSERT_STRING_EQUAL(cfg.fleet.etcd[1], "http://198.18.0.2:2379");
	CU_ASSERT_STRING_EQUAL(cfg.fleet.name, "edge-1");
	CU_ASSERT_EQUAL(cfg.fleet.addr, htonl(0xc6120b02));
	CU_ASSERT_FALSE(cfg.fleet.has_addr6);
	CU_ASSERT_EQUAL(cfg.fleet.lease_ttl, 5);
	CU_ASSERT_EQUAL(cfg.fleet.port, 9000);
	CU_ASSERT_STRING_EQUAL(cfg.fleet.prefix, "/ringsteer");
	CU_ASSERT_TRUE(cfg.services[0].fleet);
	rs_config_free(&cfg);
	/* fleet = on without [fleet], and [fleet] without its keys. */
	EXPECT_ERROR(base, "t.conf:6: [service web] fleet: ",
		     "fleet = on needs a [fleet] section");
	snprintf(text, sizeof(text), "%s[fleet]\nlease_ttl = 2500ms\n", base);
	EXPECT_ERROR(text,
		     "t.conf:10: [fleet]: ", "missing required key 'etcd'");
	EXPECT_ERROR(text,
		     "t.conf:10: [fleet]: ", "missing required key 'name'");
	EXPECT_ERROR(text, "t.conf:11: [fleet] lease_ttl: ",
		     "etcd leases are whole seconds");
	snprintf(text, sizeof(text),
		 "%s[fleet]\netcd = ftp://x\nname = a b\n"
		 "address = 2001:db8::1\n",
		 base);
	EXPECT_ERROR(text, "t.conf:11: [fleet] etcd: ", "bad etcd endpoint");
	EXPECT_ERROR(text, "t.conf:12: [fleet] name: ", "bad name 'a b'");
	EXPECT_ERROR(text, "t.conf:13: [fleet] address: ",
		     "give its IPv6 one as address6");
	/* address6: optional, IPv6 only, a routable host address. */
	snprintf(text, sizeof(text),
		 "%s[fleet]\netcd = http://198.18.0.1:2379\nname = edge-1\n"
		 "address = 198.18.11.2\naddress6 = 2001:db8:11::2\n",
		 base);
	EXPECT_OK(text);
	CU_ASSERT_TRUE(cfg.fleet.has_addr6);
	CU_ASSERT_EQUAL(cfg.fleet.addr6[0], 0x20);
	CU_ASSERT_EQUAL(cfg.fleet.addr6[15], 2);
	rs_config_free(&cfg);
	snprintf(text, sizeof(text),
		 "%s[fleet]\netcd = http://198.18.0.1:2379\nname = edge-1\n"
		 "address = 198.18.11.2\naddress6 = 198.18.11.2\n",
		 base);
	EXPECT_ERROR(text, "t.conf:14: [fleet] address6: ",
		     "give its IPv4 one as address");
	snprintf(text, sizeof(text),
		 "%s[fleet]\netcd = http://198.18.0.1:2379\nname = edge-1\n"
		 "address = 198.18.11.2\naddress6 = fe80::1\n",
		 base);
	EXPECT_ERROR(text, "t.conf:14: [fleet] address6: ",
		     "not a routable host address");
	snprintf(text, sizeof(text),
		 "%s[fleet]\netcd = http://198.18.0.1:2379\nname = edge-1\n"
		 "address = 198.18.11.2\naddress6 = 2001:db8::zz\n",
		 base);
	EXPECT_ERROR(text, "t.conf:14: [fleet] address6: ",
		     "expected this host's IPv6 address");
	/* QUIC cookies are carried across hosts (docs/fleet.md "QUIC"). */
	EXPECT_OK("[global]\ninterfaces = rh\n"
		  "[service q]\nprotocol = udp\nlisten = 198.18.0.10:443\n"
		  "cookie = quic\nfleet = on\n"
		  "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
		  "server_id = 0x0a01\n"
		  "[fleet]\netcd = http://198.18.0.1:2379\nname = edge-1\n"
		  "address = 198.18.11.2\n");
	CU_ASSERT_TRUE(cfg.services[0].fleet);
	rs_config_free(&cfg);
	EXPECT_ERROR("[service web]\nprotocol = udp\nlisten = 198.18.0.10:443\n"
		     "fleet = on\n",
		     "t.conf:4: [service web] fleet: ",
		     "fleet = on needs [global] interfaces");
	EXPECT_ERROR("[fleet]\n[fleet]\n",
		     "t.conf:2: [fleet]: ", "duplicate fleet section");
}

static void test_sample_keys(void)
{
	static const char *const keys[] = {
		"bpffs",	"control_socket",
		"interfaces",	"metrics",
		"protocol",	"listen",
		"key",		"prefix4",
		"prefix6",	"vnodes",
		"seed",		"fallback",
		"sticky_ttl",	"sticky_max",
		"cookie",	"quic_server_id_len",
		"quic_cid_len", "quic_config_id",
		"service",	"address",
		"weight",	"check",
		"check_path",	"check_expect",
		"check_host",	"interval",
		"timeout",	"rise",
		"fall",		"slow_start",
		"server_id",	"check_port",
		"memory_max",	"balance_factor",
	};
	/* Apart from the table above, which keeps its layout this way. */
	static const char *const client_keys[] = {
		"sockops_cgroup",
		"control_clients_max",
		"metrics_clients_max",
		"client_idle_timeout",
	};
	char *text = NULL, pattern[64];
	size_t len = 0, i;
	FILE *f = fopen(SAMPLE, "r");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_TRUE(getdelim(&text, &len, '\0', f) > 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(pattern, sizeof(pattern), "\n%s = ", keys[i]);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, pattern));
	}
	for (i = 0; i < sizeof(client_keys) / sizeof(client_keys[0]); i++) {
		snprintf(pattern, sizeof(pattern), "\n%s = ", client_keys[i]);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, pattern));
	}
	free(text);
}

/* The minimal sample (installed beside the reference) loads as it is. */
static void test_minimal_sample(void)
{
	int ret = rs_config_load("configs/ringsteer.conf.minimal", &cfg, err,
				 sizeof(err));

	if (ret)
		fprintf(stderr, "\n%s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(cfg.n_services, 1);
	CU_ASSERT_EQUAL(cfg.n_backends, 2);
	rs_config_free(&cfg);
}

static void test_sample(void)
{
	const struct rs_service_conf *web, *dns, *quic;
	const struct rs_backend_conf *b;
	const struct rs_health_conf *h;
	uint8_t want[16];
	int ret;

	ret = rs_config_load(SAMPLE, &cfg, err, sizeof(err));
	if (ret)
		fprintf(stderr, "\n%s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	CU_ASSERT_STRING_EQUAL(cfg.path, SAMPLE);
	CU_ASSERT_STRING_EQUAL(cfg.bpffs, "/sys/fs/bpf/ringsteer");
	CU_ASSERT_STRING_EQUAL(cfg.control_socket,
			       "/run/ringsteer/ringsteerd.sock");
	CU_ASSERT_EQUAL_FATAL(cfg.n_interfaces, 2);
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[0], "eth0");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[1], "eth1");
	CU_ASSERT_TRUE(cfg.has_metrics);
	CU_ASSERT_EQUAL(cfg.metrics_family, AF_INET);
	v4(want, "127.0.0.1");
	CU_ASSERT_EQUAL(memcmp(cfg.metrics_addr, want, 16), 0);
	CU_ASSERT_EQUAL(cfg.metrics_port, 9477);
	CU_ASSERT_EQUAL_FATAL(cfg.n_services, 3);
	CU_ASSERT_EQUAL_FATAL(cfg.n_backends, 6);

	web = &cfg.services[0];
	CU_ASSERT_STRING_EQUAL(web->name, "web");
	CU_ASSERT_EQUAL(web->protocol, IPPROTO_TCP);
	CU_ASSERT_EQUAL_FATAL(web->n_listens, 4);
	CU_ASSERT_EQUAL(web->listens[1].family, AF_INET);
	CU_ASSERT_EQUAL(web->listens[1].prefixlen, 24);
	CU_ASSERT_EQUAL(web->listens[1].port, 8080);
	CU_ASSERT_EQUAL(web->listens[3].family, AF_INET6);
	CU_ASSERT_EQUAL(web->listens[3].prefixlen, 64);
	CU_ASSERT_EQUAL(web->listens[3].port, 0);
	v6(want, "2001:db8:0:1::");
	CU_ASSERT_EQUAL(memcmp(web->listens[3].addr, want, 16), 0);
	CU_ASSERT_EQUAL(web->key_policy, RS_KEY_SRC_IP);
	CU_ASSERT_EQUAL(web->vnodes, 4096);
	CU_ASSERT_TRUE(web->vnodes_set);
	CU_ASSERT_EQUAL(web->sticky_ttl, 0);
	CU_ASSERT_EQUAL(web->sticky_max, 1048576);
	CU_ASSERT_EQUAL(web->cookie, RS_COOKIE_NONE);

	dns = &cfg.services[1];
	CU_ASSERT_STRING_EQUAL(dns->name, "dns");
	CU_ASSERT_EQUAL(dns->protocol, IPPROTO_UDP);
	CU_ASSERT_EQUAL(dns->key_policy, RS_KEY_SRC_IP_PORT);
	CU_ASSERT_EQUAL(dns->prefix4, 32);
	CU_ASSERT_EQUAL(dns->prefix6, 128);
	CU_ASSERT_EQUAL(dns->vnodes, 100);
	CU_ASSERT_EQUAL(dns->seed, 12345);
	CU_ASSERT_EQUAL(dns->fallback, RS_FALLBACK_DROP);

	quic = &cfg.services[2];
	CU_ASSERT_STRING_EQUAL(quic->name, "quic");
	CU_ASSERT_EQUAL(quic->protocol, IPPROTO_UDP);
	CU_ASSERT_EQUAL(quic->cookie, RS_COOKIE_QUIC);
	CU_ASSERT_EQUAL(quic->quic_server_id_len, 2);
	CU_ASSERT_EQUAL(quic->quic_cid_len, 8);
	CU_ASSERT_EQUAL(quic->quic_config_id, 0);
	CU_ASSERT_EQUAL(quic->sticky_ttl, 60);

	b = &cfg.backends[0];
	h = &b->health;
	CU_ASSERT_STRING_EQUAL(b->name, "cache-a");
	CU_ASSERT_EQUAL(h->type, RS_CHECK_HTTP);
	CU_ASSERT_STRING_EQUAL(h->path, "/healthz");
	CU_ASSERT_EQUAL(h->expect_min, 200);
	CU_ASSERT_EQUAL(h->expect_max, 299);
	CU_ASSERT_STRING_EQUAL(h->host, "cache.example");
	CU_ASSERT_EQUAL(h->interval_ms, 2000);
	CU_ASSERT_EQUAL(h->timeout_ms, 1000);
	CU_ASSERT_EQUAL(h->rise, 2);
	CU_ASSERT_EQUAL(h->fall, 3);
	CU_ASSERT_EQUAL(h->slow_start_ms, 30000);
	CU_ASSERT_FALSE(b->has_server_id);

	b = &cfg.backends[1];
	CU_ASSERT_STRING_EQUAL(b->name, "cache-b");
	CU_ASSERT_EQUAL(b->health.type, RS_CHECK_TCP);
	CU_ASSERT_EQUAL(b->service, 0);
	CU_ASSERT_EQUAL(b->addrs[0].family, AF_INET6);
	CU_ASSERT_EQUAL(b->addrs[0].port, 8082);
	CU_ASSERT_EQUAL(b->weight, 2);
	b = &cfg.backends[2];
	CU_ASSERT_STRING_EQUAL(b->name, "dns-a");
	CU_ASSERT_EQUAL(b->service, 1);
	memset(want, 0, 16);
	CU_ASSERT_EQUAL(memcmp(b->addrs[0].addr, want, 16), 0);
	b = &cfg.backends[4];
	CU_ASSERT_STRING_EQUAL(b->name, "quic-a");
	CU_ASSERT_EQUAL(b->service, 2);
	CU_ASSERT_TRUE(b->has_server_id);
	CU_ASSERT_EQUAL(b->server_id[0], 0x00);
	CU_ASSERT_EQUAL(b->server_id[1], 0x01);
	b = &cfg.backends[5];
	CU_ASSERT_TRUE(b->has_server_id);
	CU_ASSERT_EQUAL(b->server_id[0], 0x00);
	CU_ASSERT_EQUAL(b->server_id[1], 0x02);

	CU_ASSERT_EQUAL(rs_config_find_service(&cfg, "dns"), 1);
	CU_ASSERT_EQUAL(rs_config_find_service(&cfg, "nope"), -ENOENT);
	rs_config_free(&cfg);
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));
	rs_config_free(&cfg);
}

static void test_defaults(void)
{
	static const uint8_t zero_id[RS_QUIC_MAX_SERVER_ID];
	const struct rs_service_conf *s;
	const struct rs_backend_conf *b;
	const struct rs_health_conf *h;
	uint8_t want[16];

	EXPECT_OK(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:8081\n");
	CU_ASSERT_STRING_EQUAL(cfg.path, "t.conf");
	CU_ASSERT_STRING_EQUAL(cfg.bpffs, RS_DEFAULT_BPFFS);
	CU_ASSERT_STRING_EQUAL(cfg.control_socket, RS_DEFAULT_CONTROL_SOCKET);
	CU_ASSERT_EQUAL(cfg.n_interfaces, 0);
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[0], "");
	CU_ASSERT_FALSE(cfg.has_metrics);
	CU_ASSERT_EQUAL(cfg.metrics_family, 0);
	CU_ASSERT_EQUAL(cfg.metrics_port, 0);
	CU_ASSERT_EQUAL(cfg.control_clients_max, RS_DEFAULT_CONTROL_CLIENTS);
	CU_ASSERT_EQUAL(cfg.metrics_clients_max, RS_DEFAULT_METRICS_CLIENTS);
	CU_ASSERT_EQUAL(cfg.client_idle_ms, RS_DEFAULT_CLIENT_IDLE_MS);
	CU_ASSERT_EQUAL_FATAL(cfg.n_services, 1);
	CU_ASSERT_EQUAL_FATAL(cfg.n_backends, 1);

	s = &cfg.services[0];
	CU_ASSERT_STRING_EQUAL(s->name, "web");
	CU_ASSERT_EQUAL(s->line, 1);
	CU_ASSERT_EQUAL(s->protocol, IPPROTO_TCP);
	CU_ASSERT_EQUAL(s->key_policy, RS_KEY_SRC_IP);
	CU_ASSERT_EQUAL(s->prefix4, 32);
	CU_ASSERT_EQUAL(s->prefix6, 64);
	CU_ASSERT_EQUAL(s->vnodes, RS_DEFAULT_VNODES);
	CU_ASSERT_EQUAL(s->vnodes, 4096); /* max/mean 1.03 at 32 backends */
	CU_ASSERT_FALSE(s->vnodes_set);
	CU_ASSERT_EQUAL(s->seed, 0);
	CU_ASSERT_EQUAL(s->fallback, RS_FALLBACK_PASS);
	CU_ASSERT_EQUAL(s->sticky_ttl, 0);
	CU_ASSERT_EQUAL(s->sticky_max, RS_DEFAULT_STICKY_MAX);
	CU_ASSERT_EQUAL(s->cookie, RS_COOKIE_NONE);
	CU_ASSERT_EQUAL(s->quic_server_id_len, RS_DEFAULT_QUIC_SERVER_ID_LEN);
	CU_ASSERT_EQUAL(s->quic_server_id_len, 2);
	CU_ASSERT_EQUAL(s->quic_cid_len, RS_DEFAULT_QUIC_CID_LEN);
	CU_ASSERT_EQUAL(s->quic_cid_len, 8);
	CU_ASSERT_EQUAL(s->quic_config_id, 0);
	CU_ASSERT_EQUAL_FATAL(s->n_listens, 1);
	CU_ASSERT_EQUAL(s->listens[0].line, 3);
	CU_ASSERT_EQUAL(s->listens[0].family, AF_INET);
	CU_ASSERT_EQUAL(s->listens[0].prefixlen, 32);
	CU_ASSERT_EQUAL(s->listens[0].port, 80);
	v4(want, "198.18.0.10");
	CU_ASSERT_EQUAL(memcmp(s->listens[0].addr, want, 16), 0);

	b = &cfg.backends[0];
	CU_ASSERT_STRING_EQUAL(b->name, "a");
	CU_ASSERT_EQUAL(b->line, 4);
	CU_ASSERT_EQUAL(b->service, 0);
	CU_ASSERT_EQUAL(b->addrs[0].family, AF_INET);
	CU_ASSERT_EQUAL(b->addrs[0].port, 8081);
	CU_ASSERT_EQUAL(b->weight, 1);
	v4(want, "127.0.0.1");
	CU_ASSERT_EQUAL(memcmp(b->addrs[0].addr, want, 16), 0);
	h = &b->health;
	CU_ASSERT_EQUAL(h->type, RS_CHECK_TCP);
	CU_ASSERT_STRING_EQUAL(h->path, "/");
	CU_ASSERT_STRING_EQUAL(h->host, "");
	CU_ASSERT_EQUAL(h->expect_min, 200);
	CU_ASSERT_EQUAL(h->expect_max, 299);
	CU_ASSERT_EQUAL(h->interval_ms, RS_DEFAULT_INTERVAL_MS);
	CU_ASSERT_EQUAL(h->interval_ms, 2000);
	CU_ASSERT_EQUAL(h->timeout_ms, RS_DEFAULT_TIMEOUT_MS);
	CU_ASSERT_EQUAL(h->timeout_ms, 1000);
	CU_ASSERT_EQUAL(h->rise, RS_DEFAULT_RISE);
	CU_ASSERT_EQUAL(h->rise, 2);
	CU_ASSERT_EQUAL(h->fall, RS_DEFAULT_FALL);
	CU_ASSERT_EQUAL(h->fall, 3);
	CU_ASSERT_EQUAL(h->slow_start_ms, 0);
	CU_ASSERT_FALSE(b->has_server_id);
	CU_ASSERT_EQUAL(memcmp(b->server_id, zero_id, sizeof(zero_id)), 0);

	/* A backend section placed before its service gets them too. */
	EXPECT_LOADED(
		"[backend a]\nservice = web\naddress = 127.0.0.1:1\n" WEB);
	CU_ASSERT_EQUAL(cfg.backends[0].health.type, RS_CHECK_TCP);
	CU_ASSERT_EQUAL(cfg.backends[0].health.interval_ms, 2000);
	CU_ASSERT_EQUAL(cfg.backends[0].health.timeout_ms, 1000);
	CU_ASSERT_STRING_EQUAL(cfg.backends[0].health.path, "/");
	CU_ASSERT_EQUAL(cfg.services[0].sticky_max, RS_DEFAULT_STICKY_MAX);

	CU_ASSERT_EQUAL(cfg.memory_max, RS_DEFAULT_MEMORY_MAX);

	/* An empty global section changes nothing. */
	EXPECT_LOADED("[global]\n" WEB);
	CU_ASSERT_EQUAL(cfg.n_interfaces, 0);
	CU_ASSERT_FALSE(cfg.has_metrics);
	CU_ASSERT_STRING_EQUAL(cfg.bpffs, RS_DEFAULT_BPFFS);
}

static void test_all_keys(void)
{
	const struct rs_service_conf *s;

	EXPECT_OK("[global]\n"
		  "bpffs = /sys/fs/bpf/other\n"
		  "control_socket = /tmp/rs.sock\n" WEB "key = src-ip-port\n"
		  "prefix4 = 0\n"
		  "prefix6 = 128\n"
		  "vnodes = 65536\n"
		  "seed = 0xFFFFFFFFFFFFFFFF\n"
		  "fallback = drop\n"
		  "[backend a]\n"
		  "service = web\n"
		  "address = 127.0.0.1:1\n"
		  "weight = 0\n");
	CU_ASSERT_STRING_EQUAL(cfg.bpffs, "/sys/fs/bpf/other");
	CU_ASSERT_STRING_EQUAL(cfg.control_socket, "/tmp/rs.sock");
	s = &cfg.services[0];
	CU_ASSERT_EQUAL(s->line, 4);
	CU_ASSERT_EQUAL(s->key_policy, RS_KEY_SRC_IP_PORT);
	CU_ASSERT_EQUAL(s->prefix4, 0);
	CU_ASSERT_EQUAL(s->prefix6, 128);
	CU_ASSERT_EQUAL(s->vnodes, 65536);
	CU_ASSERT_EQUAL(s->seed, UINT64_MAX);
	CU_ASSERT_EQUAL(s->fallback, RS_FALLBACK_DROP);
	CU_ASSERT_EQUAL(cfg.backends[0].weight, 0);

	EXPECT_OK(WEB "seed = 18446744073709551615\nprefix4 = 32\n");
	CU_ASSERT_EQUAL(cfg.services[0].seed, UINT64_MAX);
	EXPECT_OK(WEB "seed = 0x1F\nvnodes = 1\n");
	CU_ASSERT_EQUAL(cfg.services[0].seed, 31);
	CU_ASSERT_EQUAL(cfg.services[0].vnodes, 1);
	EXPECT_OK(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		      "weight = 256\n");
	CU_ASSERT_EQUAL(cfg.backends[0].weight, 256);
}

static void test_ipv6(void)
{
	const struct rs_service_conf *s;
	const struct rs_backend_conf *b;
	uint8_t want[16];

	EXPECT_OK("[service v6]\n"
		  "protocol = udp\n"
		  "listen = [2001:db8::10]:53\n"
		  "listen = [2001:db8::/64]:0\n"
		  "listen = [::/0]:53\n"
		  "[backend b6]\n"
		  "service = v6\n"
		  "address = [::1]:5353\n"
		  "[backend any]\n"
		  "service = v6\n"
		  "address = [::]:5354\n");
	s = &cfg.services[0];
	CU_ASSERT_EQUAL(s->protocol, IPPROTO_UDP);
	CU_ASSERT_EQUAL_FATAL(s->n_listens, 3);
	v6(want, "2001:db8::10");
	CU_ASSERT_EQUAL(s->listens[0].family, AF_INET6);
	CU_ASSERT_EQUAL(s->listens[0].prefixlen, 128);
	CU_ASSERT_EQUAL(memcmp(s->listens[0].addr, want, 16), 0);
	v6(want, "2001:db8::");
	CU_ASSERT_EQUAL(s->listens[1].prefixlen, 64);
	CU_ASSERT_EQUAL(s->listens[1].port, 0);
	CU_ASSERT_EQUAL(memcmp(s->listens[1].addr, want, 16), 0);
	CU_ASSERT_EQUAL(s->listens[2].prefixlen, 0);
	CU_ASSERT_EQUAL(s->listens[2].line, 5);

	b = &cfg.backends[0];
	v6(want, "::1");
	CU_ASSERT_EQUAL(b->addrs[0].family, AF_INET6);
	CU_ASSERT_EQUAL(b->addrs[0].port, 5353);
	CU_ASSERT_EQUAL(memcmp(b->addrs[0].addr, want, 16), 0);
	b = &cfg.backends[1];
	memset(want, 0, 16);
	CU_ASSERT_EQUAL(b->addrs[0].family, AF_INET6);
	CU_ASSERT_EQUAL(memcmp(b->addrs[0].addr, want, 16), 0);
}

static void test_order_and_syntax(void)
{
	/* Backends before their service, interleaved; kept in file order. */
	EXPECT_OK("[backend b1]\nservice = two\naddress = 127.0.0.1:1\n"
		  "[service one]\nprotocol = tcp\nlisten = 10.0.0.1:80\n"
		  "[backend b2]\nservice = one\naddress = 127.0.0.1:2\n"
		  "[service two]\nprotocol = tcp\nlisten = 10.0.0.2:80\n");
	CU_ASSERT_EQUAL_FATAL(cfg.n_backends, 2);
	CU_ASSERT_STRING_EQUAL(cfg.backends[0].name, "b1");
	CU_ASSERT_EQUAL(cfg.backends[0].service, 1);
	CU_ASSERT_STRING_EQUAL(cfg.backends[1].name, "b2");
	CU_ASSERT_EQUAL(cfg.backends[1].service, 0);
	CU_ASSERT_STRING_EQUAL(cfg.services[1].name, "two");
	CU_ASSERT_EQUAL(rs_config_find_service(&cfg, "two"), 1);

	/* Comments, indentation, CRLF, a BOM, spaces in the header. */
	EXPECT_OK("\xef\xbb\xbf# comment\r\n"
		  "; another\r\n"
		  "[ service  web ]   ; trailing comment\r\n"
		  "  protocol = tcp ; inline\r\n"
		  "\tlisten = 198.18.0.10:80\r\n"
		  "    listen = 198.18.0.11:80\r\n"
		  "\r\n"
		  "   # indented comment\r\n");
	CU_ASSERT_EQUAL_FATAL(cfg.n_services, 1);
	CU_ASSERT_STRING_EQUAL(cfg.services[0].name, "web");
	CU_ASSERT_EQUAL(cfg.services[0].line, 3);
	CU_ASSERT_EQUAL_FATAL(cfg.services[0].n_listens, 2);
	CU_ASSERT_EQUAL(cfg.services[0].listens[1].line, 6);

	/* Names up to 63 characters, from the whole allowed set. */
	{
		char text[256], name[64];

		memset(name, 'x', 63);
		memcpy(name, "Az09._-", 7);
		name[63] = '\0';
		snprintf(text, sizeof(text),
			 "[service %s]\nprotocol = tcp\nlisten = 1.2.3.4:80\n",
			 name);
		EXPECT_OK(text);
		CU_ASSERT_STRING_EQUAL(cfg.services[0].name, name);
	}

	/* A long comment is no long line. */
	{
		char text[2048];

		snprintf(text, sizeof(text),
			 WEB "# %0500d\nprefix4 = 24 ; %0500d\n", 0, 0);
		EXPECT_OK(text);
		CU_ASSERT_EQUAL(cfg.services[0].prefix4, 24);
	}
}

static void test_allowed_overlaps(void)
{
	/* A service without backends uses its fallback. */
	EXPECT_OK(WEB);
	CU_ASSERT_EQUAL(cfg.n_backends, 0);
	CU_ASSERT_PTR_NULL(cfg.backends);

	/* Nested prefixes, other ports, the other protocol. */
	EXPECT_OK(WEB "listen = 198.18.0.0/24:80\n"
		      "listen = 198.18.0.0/16:0\n"
		      "listen = 198.18.0.10:81\n"
		      "[service other]\nprotocol = tcp\n"
		      "listen = 198.18.0.0/25:80\n"
		      "[service dns]\nprotocol = udp\n"
		      "listen = 198.18.0.10:80\n");

	/* Backend sockets: other port, other protocol, other family. */
	EXPECT_OK(WEB "[service dns]\nprotocol = udp\nlisten = 1.1.1.1:53\n"
		      "[backend a]\nservice = web\naddress = 0.0.0.0:53\n"
		      "[backend b]\nservice = dns\naddress = 0.0.0.0:53\n"
		      "[backend c]\nservice = web\naddress = [::]:53\n"
		      "[backend d]\nservice = web\naddress = 0.0.0.0:54\n");

	/* One IPv4 and one IPv6 address per backend, in either order. */
	EXPECT_OK(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		      "address = [::1]:1\n"
		      "[backend b]\nservice = web\naddress = [::1]:2\n"
		      "address = 127.0.0.1:2\n");
	CU_ASSERT_EQUAL(cfg.backends[0].n_addrs, 2);
	CU_ASSERT_EQUAL(cfg.backends[0].addrs[0].family, AF_INET);
	CU_ASSERT_EQUAL(cfg.backends[0].addrs[1].family, AF_INET6);
	CU_ASSERT_EQUAL(cfg.backends[0].addrs[1].line, 7);
	CU_ASSERT_EQUAL(cfg.backends[1].addrs[0].family, AF_INET6);

	/* Exactly RS_MAX_RING_POINTS is fine: 16 * 65536 = 1 << 20. */
	EXPECT_OK(WEB "vnodes = 65536\n"
		      "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		      "weight = 16\n");
}

/* ---- configuration that does not ---- */

static void test_bad_backend_addresses(void)
{
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
			 "address = 127.0.0.2:1\n",
		     "t.conf:7: [backend a] address: ",
		     "a second IPv4 address (at most one per family)");
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = [::1]:1\n"
			 "address = [::2]:1\n",
		     "t.conf:7: [backend a] address: ",
		     "a second IPv6 address (at most one per family)");
	/* The second address of one backend is the first of another. */
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
			 "address = [::1]:1\n"
			 "[backend b]\nservice = web\naddress = [::1]:1\n",
		     "t.conf:10: [backend b] address: ",
		     "tcp [::1]:1 is already the address of [backend a] at "
		     "t.conf:7");
}

static void test_balance_factor(void)
{
	EXPECT_ERROR(WEB "balance_factor = 1.0\n",
		     "t.conf:4: [service web] balance_factor: ",
		     "1.0 is out of range: 0 (off) or more than 1.0, at most "
		     "100");
	EXPECT_ERROR(WEB "balance_factor = 0.5\n",
		     "t.conf:4: [service web] balance_factor: ",
		     "0.5 is out of range: 0 (off) or more than 1.0, at most "
		     "100");
	EXPECT_ERROR(WEB "balance_factor = lots\n",
		     "t.conf:4: [service web] balance_factor: ",
		     "expected 0 (off) or a number > 1.0");
	EXPECT_ERROR("[service u]\nprotocol = udp\nlisten = 198.18.0.11:53\n"
		     "balance_factor = 1.25\n",
		     "t.conf:4: [service u] balance_factor: ",
		     "balance_factor on a UDP service needs sticky_ttl: a UDP "
		     "backend's load is its flows, the live entries of the "
		     "sticky table");
	/* With a sticky table, a UDP service's flows are its load. */
	CU_ASSERT_EQUAL(load("[service u]\nprotocol = udp\n"
			     "listen = 198.18.0.11:53\nsticky_ttl = 30\n"
			     "balance_factor = 1.25\n"),
			0);
	CU_ASSERT_EQUAL(cfg.services[0].balance_milli, 1250);
	rs_config_free(&cfg);
}

static void test_error_format(void)
{
	int ret = load(WEB "[backend cache-a]\nservice = web\n"
			   "address = 127.0.0.1:99999\n");

	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "t.conf:6: [backend cache-a] address: bad "
				    "address '127.0.0.1:99999': port out of "
				    "range");
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));

	/* Every error, sorted by line, whole-file checks included. */
	ret = load("[service web]\n"
		   "protocol = sctp\n"
		   "[backend b]\n"
		   "service = nope\n"
		   "weight = -1\n"
		   "bogus = 1\n");
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_STRING_EQUAL(
		err,
		"t.conf:1: [service web]: missing required key 'listen'\n"
		"t.conf:2: [service web] protocol: bad protocol 'sctp': "
		"expected tcp or udp\n"
		"t.conf:3: [backend b]: missing required key 'address'\n"
		"t.conf:4: [backend b] service: unknown service 'nope'\n"
		"t.conf:5: [backend b] weight: bad weight '-1': not a decimal "
		"number\n"
		"t.conf:6: [backend b] bogus: unknown key");
	CU_ASSERT_EQUAL(count_lines(err), 6);

	/* A short buffer gets what fits, NUL-terminated. */
	ret = rs_config_load_string("[nope]\n", "t.conf", &cfg, err, 12);
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "t.conf:1: [");
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));
	ret = rs_config_load_string("[nope]\n", "t.conf", &cfg, NULL, 0);
	CU_ASSERT_EQUAL(ret, -EINVAL);
}

static void test_bad_sections(void)
{
	EXPECT_ERROR("[frontend x]\nfoo = 1\n", "t.conf:1: [frontend x]: ",
		     "unknown section type 'frontend'");
	/* The keys of a section that was refused are not looked at. */
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_ERROR("[service]\n",
		     "t.conf:1: [service]: ", "bad service name ''");
	EXPECT_ERROR(WEB "[backend a b]\n",
		     "t.conf:4: [backend a b]: ", "bad backend name 'a b'");
	EXPECT_ERROR("[service w!]\n",
		     "t.conf:1: [service w!]: ", "bad service name 'w!'");
	/* A command line would read it as an option (the prerm's replay). */
	EXPECT_ERROR(WEB "[backend -x]\n", "t.conf:4: [backend -x]: ",
		     "bad backend name '-x': names are 1..63 characters of "
		     "A-Z a-z 0-9 . _ -, not beginning with -");
	{
		char text[256], name[65];

		memset(name, 'x', 64);
		name[64] = '\0';
		snprintf(text, sizeof(text), "[backend %s]\n", name);
		EXPECT_ERROR(text, "t.conf:1: [backend xxxx",
			     "bad backend name");
	}
	EXPECT_ERROR("[global x]\n", "t.conf:1: [global x]: ",
		     "the global section takes no name");
	EXPECT_ERROR(WEB "[service web\n",
		     "t.conf:4: ", "section header without closing ']'");
	EXPECT_ERROR(WEB "[backend a] junk\n",
		     "t.conf:4: [backend a]: ", "unexpected text after ']'");

	/* Duplicates name the first definition. */
	EXPECT_ERROR(WEB "\n[service web]\nprotocol = udp\n",
		     "t.conf:5: [service web]: ",
		     "duplicate service 'web' (first defined at t.conf:1)");
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
			 "[backend a]\n",
		     "t.conf:7: [backend a]: ",
		     "duplicate backend 'a' (first defined at t.conf:4)");
	EXPECT_ERROR("[global]\n[global]\n", "t.conf:2: [global]: ",
		     "duplicate global section (first defined at t.conf:1)");

	/* Header-only sections are seen. */
	EXPECT_ERROR("[service empty]\n", "t.conf:1: [service empty]: ",
		     "missing required key 'protocol'");
	EXPECT_ERROR("[service empty]\n", "t.conf:1: [service empty]: ",
		     "missing required key 'listen'");
	EXPECT_ERROR(WEB "[backend lonely]\n", "t.conf:4: [backend lonely]: ",
		     "missing required key 'service'");
	EXPECT_ERROR(WEB "[backend lonely]\n", "t.conf:4: [backend lonely]: ",
		     "missing required key 'address'");
}

static void test_bad_lines(void)
{
	char text[1024];

	EXPECT_ERROR("protocol = tcp\n" WEB,
		     "t.conf:1: protocol: ", "key outside of any section");
	EXPECT_ERROR(WEB "junk\n",
		     "t.conf:4: [service web]: ", "expected 'key = value'");
	EXPECT_ERROR(WEB "junk ; x = 1\n",
		     "t.conf:4: [service web]: ", "expected 'key = value'");
	EXPECT_ERROR(WEB "= 1\n",
		     "t.conf:4: [service web]: ", "missing key name");
	EXPECT_ERROR(WEB "bogus = 1\n",
		     "t.conf:4: [service web] bogus: ", "unknown key");
	EXPECT_ERROR("[global]\nlisten = 1.2.3.4:80\n",
		     "t.conf:2: [global] listen: ", "unknown key");
	EXPECT_ERROR(WEB "vnodes = 10\nvnodes = 20\n",
		     "t.conf:5: [service web] vnodes: ",
		     "duplicate key (first set at t.conf:4)");
	EXPECT_ERROR(WEB "protocol = tcp\n",
		     "t.conf:4: [service web] protocol: ",
		     "duplicate key (first set at t.conf:2)");
	EXPECT_ERROR(WEB "[backend a]\nservice = web\nservice = web\n",
		     "t.conf:6: [backend a] service: ", "duplicate key");
	EXPECT_ERROR("[global]\nbpffs = /a\nbpffs = /b\n",
		     "t.conf:3: [global] bpffs: ", "duplicate key");
	EXPECT_ERROR(WEB "listen =\n",
		     "t.conf:4: [service web] listen: ", "empty value");
	EXPECT_ERROR(WEB "seed = ; nothing\n",
		     "t.conf:4: [service web] seed: ", "empty value");

	snprintf(text, sizeof(text), WEB "listen = 1.2.3.4:80 %0300d\n", 0);
	EXPECT_ERROR(text, "t.conf:4: [service web]: ", "line too long");
}

static void test_bad_values(void)
{
	EXPECT_ERROR("[global]\nbpffs = sys/fs/bpf\n",
		     "t.conf:2: [global] bpffs: ",
		     "bad path 'sys/fs/bpf': not an absolute path");
	EXPECT_ERROR(
		"[global]\ncontrol_socket = /run/"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
		"t.conf:2: [global] control_socket: ", "longer than 107 bytes");
	EXPECT_ERROR("[service web]\nprotocol = TCP\nlisten = 1.2.3.4:80\n",
		     "t.conf:2: [service web] protocol: ",
		     "bad protocol 'TCP': expected tcp or udp");
	EXPECT_ERROR(WEB "listen = 1.2.3.4\n",
		     "t.conf:4: [service web] listen: ",
		     "bad listen address '1.2.3.4': missing port");
	EXPECT_ERROR(WEB "listen = 198.18.0.5/24:80\n",
		     "t.conf:4: [service web] listen: ",
		     "bad listen address '198.18.0.5/24:80': host bits set");
	EXPECT_ERROR(WEB "listen = [2001:db8::1/64]:80\n",
		     "t.conf:4: [service web] listen: ", "host bits set");
	EXPECT_ERROR(WEB "listen = 2001:db8::1:80\n",
		     "t.conf:4: [service web] listen: ", "must be in brackets");
	EXPECT_ERROR(WEB "key = dst-ip\n", "t.conf:4: [service web] key: ",
		     "bad key policy 'dst-ip': expected src-ip or src-ip-port");
	EXPECT_ERROR(WEB "prefix4 = 33\n", "t.conf:4: [service web] prefix4: ",
		     "bad prefix4 '33': out of range 0..32");
	EXPECT_ERROR(WEB "prefix6 = 129\n", "t.conf:4: [service web] prefix6: ",
		     "bad prefix6 '129': out of range 0..128");
	EXPECT_ERROR(WEB "vnodes = 0\n", "t.conf:4: [service web] vnodes: ",
		     "bad vnodes '0': out of range 1..65536");
	EXPECT_ERROR(WEB "vnodes = 65537\n", "t.conf:4: [service web] vnodes: ",
		     "out of range 1..65536");
	EXPECT_ERROR(WEB "seed = 0x\n", "t.conf:4: [service web] seed: ",
		     "bad seed '0x': not a decimal or 0x hex number");
	EXPECT_ERROR(
		WEB "seed = 0x10000000000000000\n",
		"t.conf:4: [service web] seed: ", "does not fit in 64 bits");
	EXPECT_ERROR(
		WEB "seed = 18446744073709551616\n",
		"t.conf:4: [service web] seed: ", "does not fit in 64 bits");
	EXPECT_ERROR(WEB "seed = -1\n", "t.conf:4: [service web] seed: ",
		     "not a decimal or 0x hex number");
	EXPECT_ERROR(WEB "fallback = reject\n",
		     "t.conf:4: [service web] fallback: ",
		     "bad fallback 'reject': expected pass or drop");
	EXPECT_ERROR(
		WEB "[backend a]\nservice = we b\naddress = 127.0.0.1:1\n",
		"t.conf:5: [backend a] service: ", "bad service name 'we b'");
	EXPECT_ERROR(WEB
		     "[backend a]\nservice = web\naddress = 10.0.0.0/8:80\n",
		     "t.conf:6: [backend a] address: ",
		     "bad address '10.0.0.0/8:80': prefix not allowed");
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:0\n",
		     "t.conf:6: [backend a] address: ", "port 0 not allowed");
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = [::1]:70000\n",
		     "t.conf:6: [backend a] address: ", "port out of range");
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
			 "weight = 257\n",
		     "t.conf:7: [backend a] weight: ",
		     "bad weight '257': out of range 0..256");
}

static void test_bad_numbers(void)
{
	static const char *const bad[] = {
		"160x", "-1", "+1", "1 6", "0x10", "1e3", "1.0", "0b1",
	};
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), WEB "vnodes = %s\n", bad[i]);
		EXPECT_ERROR(text, "t.conf:4: [service web] vnodes: ",
			     "not a decimal number");
	}
	EXPECT_ERROR(WEB "vnodes = 99999999999999999999999\n",
		     "t.conf:4: [service web] vnodes: ", "out of range");
	EXPECT_ERROR(WEB "seed = 12abc\n",
		     "t.conf:4: [service web] seed: ", "bad seed '12abc'");
	EXPECT_ERROR(WEB "seed = 0xfg\n",
		     "t.conf:4: [service web] seed: ", "bad seed '0xfg'");
}

static void test_bad_references(void)
{
	EXPECT_ERROR(
		WEB "[backend a]\nservice = api\naddress = 127.0.0.1:1\n",
		"t.conf:5: [backend a] service: ", "unknown service 'api'");

	/* Same destination in one service, then in two. */
	EXPECT_ERROR(WEB "listen = 198.18.0.10:80\n",
		     "t.conf:4: [service web] listen: ",
		     "tcp 198.18.0.10:80 overlaps listen at t.conf:3 in "
		     "[service web]");
	EXPECT_ERROR(WEB "listen = 198.18.0.0/24:0\n"
			 "[service api]\nprotocol = tcp\n"
			 "listen = 198.18.0.0/24:0\n",
		     "t.conf:7: [service api] listen: ",
		     "tcp 198.18.0.0/24:0 overlaps listen at t.conf:4 in "
		     "[service web]");
	EXPECT_ERROR(
		"[service a]\nprotocol = udp\nlisten = [2001:db8::/64]:53\n"
		"[service b]\nprotocol = udp\nlisten = [2001:db8::]:53\n"
		"listen = [2001:db8::/64]:53\n",
		"t.conf:7: [service b] listen: ",
		"udp [2001:db8::/64]:53 overlaps listen at t.conf:3");

	/* Two backends that would be one socket. */
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
			 "[backend b]\nservice = web\naddress = 127.0.0.1:1\n",
		     "t.conf:9: [backend b] address: ",
		     "tcp 127.0.0.1:1 is already the address of [backend a] at "
		     "t.conf:6");
	EXPECT_ERROR(WEB "[service api]\nprotocol = tcp\nlisten = 1.1.1.1:80\n"
			 "[backend a]\nservice = web\naddress = [::]:53\n"
			 "[backend b]\nservice = api\naddress = [::]:53\n",
		     "t.conf:12: [backend b] address: ",
		     "tcp [::]:53 is already the address of [backend a]");

	/* 17 * 65536 points is one weight unit too many. */
	EXPECT_ERROR(
		WEB "vnodes = 65536\n"
		    "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		    "weight = 16\n"
		    "[backend b]\nservice = web\naddress = 127.0.0.1:2\n",
		"t.conf:1: [service web]: ", "ring too large: 1114112 points");
	/* At the default, 257 weight units are too many; the error says why. */
	EXPECT_ERROR(WEB "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
			 "weight = 256\n"
			 "[backend b]\nservice = web\naddress = 127.0.0.1:2\n",
		     "t.conf:1: [service web]: ",
		     "ring too large: 1052672 points (weight * vnodes over all "
		     "backends), max 1048576; vnodes is not set, so it is "
		     "4096 (the default): set it lower");
}

/* @head, then @fmt @n times, formatted with its index and index + 1. */
static char *repeat(const char *head, const char *fmt, int n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(head, f);
	for (i = 0; i < n; i++)
		fprintf(f, fmt, i, i + 1);
	fclose(f);
	return text;
}

static void test_limits(void)
{
	char *text;

	/* 256 services (ABI 9; 64 before): the 257th is refused. */
	CU_ASSERT_EQUAL(RS_MAX_SERVICES, 256);
	text = repeat("",
		      "[service s%d]\nprotocol = tcp\nlisten = 10.0.0.1:%d\n",
		      RS_MAX_SERVICES);
	EXPECT_OK(text);
	CU_ASSERT_EQUAL(cfg.n_services, RS_MAX_SERVICES);
	free(text);
	text = repeat("",
		      "[service s%d]\nprotocol = tcp\nlisten = 10.0.0.1:%d\n",
		      RS_MAX_SERVICES + 1);
	EXPECT_ERROR(text, "t.conf:769: [service s256]: ",
		     "too many services (max 256)");
	free(text);

	text = repeat(WEB "vnodes = 1\n",
		      "[backend b%d]\nservice = web\naddress = 127.0.0.1:%d\n",
		      RS_MAX_BACKENDS);
	EXPECT_OK(text);
	CU_ASSERT_EQUAL(cfg.n_backends, RS_MAX_BACKENDS);
	CU_ASSERT_EQUAL(cfg.backends[RS_MAX_BACKENDS - 1].addrs[0].port,
			RS_MAX_BACKENDS);
	free(text);
	text = repeat(WEB "vnodes = 1\n",
		      "[backend b%d]\nservice = web\naddress = 127.0.0.1:%d\n",
		      RS_MAX_BACKENDS + 1);
	EXPECT_ERROR(text, "t.conf:3077: [backend b1024]: ",
		     "too many backends (max 1024)");
	free(text);

	text = repeat("[service web]\nprotocol = tcp\n",
		      "listen = 10.0.%d.%d:80\n", RS_MAX_LISTENS);
	EXPECT_OK(text);
	CU_ASSERT_EQUAL(cfg.services[0].n_listens, RS_MAX_LISTENS);
	free(text);
	text = repeat("[service web]\nprotocol = tcp\n",
		      "listen = 10.0.%d.%d:80\n", RS_MAX_LISTENS + 1);
	EXPECT_ERROR(text, "t.conf:67: [service web] listen: ",
		     "too many listen entries (max 64)");
	free(text);
}

/* "[global]\ninterfaces = if0 if1 ...", @n names, into @buf. */
static const char *ifaces(char *buf, size_t len, int n)
{
	size_t used = (size_t)snprintf(buf, len, "[global]\ninterfaces =");
	int i;

	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, " if%d", i);
	if (used < len)
		snprintf(buf + used, len - used, "\n");
	return buf;
}

static void test_global_keys(void)
{
	uint8_t want[16];
	char text[512];
	int i;

	EXPECT_LOADED("[global]\n"
		      "interfaces = eth0 lo  br-lan.10\tveth@x:1 A_b "
		      "abcdefghijklmno\n"
		      "metrics = [::1]:9477\n" WEB);
	CU_ASSERT_EQUAL_FATAL(cfg.n_interfaces, 6);
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[0], "eth0");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[1], "lo");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[2], "br-lan.10");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[3], "veth@x:1");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[4], "A_b");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[5], "abcdefghijklmno");
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[6], "");
	CU_ASSERT_TRUE(cfg.has_metrics);
	CU_ASSERT_EQUAL(cfg.metrics_family, AF_INET6);
	v6(want, "::1");
	CU_ASSERT_EQUAL(memcmp(cfg.metrics_addr, want, 16), 0);
	CU_ASSERT_EQUAL(cfg.metrics_port, 9477);

	EXPECT_LOADED(
		"[global]\nmetrics = 0.0.0.0:65535\ninterfaces = eth0\n" WEB);
	CU_ASSERT_EQUAL(cfg.n_interfaces, 1);
	CU_ASSERT_STRING_EQUAL(cfg.interfaces[0], "eth0");
	CU_ASSERT_TRUE(cfg.has_metrics);
	CU_ASSERT_EQUAL(cfg.metrics_family, AF_INET);
	memset(want, 0, 16);
	CU_ASSERT_EQUAL(memcmp(cfg.metrics_addr, want, 16), 0);
	CU_ASSERT_EQUAL(cfg.metrics_port, 65535);
	EXPECT_LOADED("[global]\nmetrics = 127.0.0.1:1\n" WEB);
	CU_ASSERT_EQUAL(cfg.metrics_port, 1);
	CU_ASSERT_EQUAL(cfg.n_interfaces, 0);

	/* Exactly RS_MAX_INTERFACES names. */
	ifaces(text, sizeof(text), RS_MAX_INTERFACES);
	EXPECT_LOADED(strcat(text, WEB));
	CU_ASSERT_EQUAL_FATAL(cfg.n_interfaces, RS_MAX_INTERFACES);
	for (i = 0; i < RS_MAX_INTERFACES; i++) {
		char name[RS_IFNAME_MAX];

		snprintf(name, sizeof(name), "if%d", i);
		CU_ASSERT_STRING_EQUAL(cfg.interfaces[i], name);
	}
}

static void test_service_keys(void)
{
	const struct rs_service_conf *s;

	EXPECT_LOADED("[global]\nmemory_max = 2G\n" WEB
		      "sticky_ttl = 2592000\nsticky_max = 8388608\n"
		      "cookie = none\nquic_server_id_len = 15\n"
		      "quic_cid_len = 20\nquic_config_id = 6\n");
	s = &cfg.services[0];
	CU_ASSERT_EQUAL(s->sticky_ttl, 2592000);
	CU_ASSERT_EQUAL(s->sticky_max, 8388608);
	CU_ASSERT_EQUAL(s->cookie, RS_COOKIE_NONE);
	CU_ASSERT_EQUAL(s->quic_server_id_len, 15);
	CU_ASSERT_EQUAL(s->quic_cid_len, 20);
	CU_ASSERT_EQUAL(s->quic_config_id, 6);

	EXPECT_LOADED(WEB
		      "sticky_ttl = 0\nsticky_max = 1\nquic_config_id = 0\n");
	s = &cfg.services[0];
	CU_ASSERT_EQUAL(s->sticky_ttl, 0);
	CU_ASSERT_EQUAL(s->sticky_max, 1);
	CU_ASSERT_EQUAL(s->quic_config_id, 0);

	EXPECT_LOADED(QUIC "quic_server_id_len = 1\nquic_cid_len = 2\n");
	s = &cfg.services[0];
	CU_ASSERT_EQUAL(s->protocol, IPPROTO_UDP);
	CU_ASSERT_EQUAL(s->cookie, RS_COOKIE_QUIC);
	CU_ASSERT_EQUAL(s->quic_server_id_len, 1);
	CU_ASSERT_EQUAL(s->quic_cid_len, 2);

	/* quic_cid_len = 1 + quic_server_id_len exactly, in either order. */
	EXPECT_LOADED(QUIC "quic_cid_len = 8\nquic_server_id_len = 7\n");
	CU_ASSERT_EQUAL(cfg.services[0].quic_server_id_len, 7);
	EXPECT_LOADED(WEB "quic_server_id_len = 7\n");
	CU_ASSERT_EQUAL(cfg.services[0].quic_cid_len, 8);

	/* cookie before protocol is fine: checked once the file is read. */
	EXPECT_LOADED("[service q]\ncookie = quic\nlisten = 198.18.0.20:443\n"
		      "protocol = udp\n");
	CU_ASSERT_EQUAL(cfg.services[0].cookie, RS_COOKIE_QUIC);
}

/* QUIC-LB keys (docs/quic.md "Encrypted CIDs"): read, checked, refused. */
static void test_quic_lb_keys(void)
{
	static const uint8_t want[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
					 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
					 0xcc, 0xdd, 0xee, 0xff};
	char dir[] = "/tmp/rs-cfg-key-XXXXXX", key[64], open_key[64];
	char text[512];
	const struct rs_service_conf *s;
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(key, sizeof(key), "%s/k", dir);
	snprintf(open_key, sizeof(open_key), "%s/open", dir);
	f = fopen(key, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("# current\n00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	chmod(key, 0600);
	f = fopen(open_key, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	chmod(open_key, 0644);

	snprintf(text, sizeof(text),
		 QUIC "quic_cid_len = 9\nquic_key_file = %s\n"
		      "quic_previous_config_id = 1\nquic_nonce_len = 5\n"
		      "quic_previous_plaintext = on\n",
		 key);
	EXPECT_LOADED(text);
	s = &cfg.services[0];
	CU_ASSERT(s->quic_key_set);
	CU_ASSERT(!memcmp(s->quic_key, want, 16));
	CU_ASSERT(s->quic_prev_set);
	CU_ASSERT_EQUAL(s->quic_prev_config_id, 1);
	CU_ASSERT(!s->quic_prev_key_set);
	CU_ASSERT_EQUAL(s->quic_nonce_len, 5);

	snprintf(text, sizeof(text),
		 QUIC "quic_cid_len = 6\nquic_key_file = %s\n", key);
	EXPECT_ERROR(text, "t.conf:5: [service q] quic_cid_len: ",
		     "quic_cid_len 6 with quic_server_id_len 2 leaves a "
		     "3-byte nonce; an encrypted CID needs at least 4 "
		     "(quic_cid_len >= 7)");
	snprintf(text, sizeof(text),
		 QUIC "quic_key_file = %s\nquic_previous_config_id = 0\n", key);
	EXPECT_ERROR(text, "t.conf:6: [service q] quic_previous_config_id: ",
		     "quic_previous_config_id 0 is the current quic_config_id");
	snprintf(text, sizeof(text), QUIC "quic_previous_key_file = %s\n", key);
	EXPECT_ERROR(text, "t.conf:5: [service q] quic_previous_key_file: ",
		     "needs quic_previous_config_id");
	/* Issue 36: a keyless previous config of an encrypted service. */
	snprintf(text, sizeof(text),
		 QUIC "quic_key_file = %s\nquic_previous_config_id = 1\n", key);
	EXPECT_ERROR(text, "t.conf:6: [service q] quic_previous_config_id: ",
		     "quic_previous_config_id 1 has no quic_previous_key_file: "
		     "it would be decoded in the clear");
	snprintf(text, sizeof(text),
		 QUIC "quic_key_file = %s\nquic_previous_config_id = 1\n"
		      "quic_previous_plaintext = off\n",
		 key);
	EXPECT_ERROR(text, "t.conf:6: [service q] quic_previous_config_id: ",
		     "decoded in the clear");
	snprintf(text, sizeof(text),
		 QUIC "quic_key_file = %s\nquic_previous_config_id = 1\n"
		      "quic_previous_key_file = %s\n"
		      "quic_previous_plaintext = on\n",
		 key, key);
	EXPECT_ERROR(text, "t.conf:8: [service q] quic_previous_plaintext: ",
		     "either encrypted or not");
	snprintf(text, sizeof(text),
		 QUIC "quic_key_file = %s\nquic_previous_plaintext = on\n",
		 key);
	EXPECT_ERROR(text, "t.conf:6: [service q] quic_previous_plaintext: ",
		     "needs quic_previous_config_id");
	EXPECT_ERROR(WEB "quic_previous_plaintext = on\n",
		     "t.conf:4: [service web] quic_previous_plaintext: ",
		     "needs cookie = quic");
	EXPECT_ERROR(QUIC "quic_previous_plaintext = yes\n",
		     "t.conf:5: [service q] quic_previous_plaintext: ",
		     "expected on or off");
	/* A plaintext service keeps a plaintext previous config freely. */
	EXPECT_LOADED(QUIC "quic_previous_config_id = 1\n");
	snprintf(text, sizeof(text), WEB "quic_key_file = %s\n", key);
	EXPECT_ERROR(text, "t.conf:4: [service web] quic_key_file: ",
		     "quic_key_file needs cookie = quic");
	snprintf(text, sizeof(text), QUIC "quic_key_file = %s\n", open_key);
	EXPECT_ERROR(text, "t.conf:5: [service q] quic_key_file: ",
		     "can be read or written by group or others");
	CU_ASSERT(strstr(err, "00112233") == NULL); /* never the key */
	EXPECT_ERROR(QUIC "quic_nonce_len = 6\n",
		     "t.conf:5: [service q] quic_nonce_len: ",
		     "quic_nonce_len 6 does not fit: quic_cid_len 8 holds the "
		     "first octet, a 2-byte server ID and at most 5 bytes");
	EXPECT_ERROR(QUIC "quic_nonce_len = 3\n",
		     "t.conf:5: [service q] quic_nonce_len: ", "bad");
	EXPECT_ERROR(QUIC "quic_key_file = relative/k\n",
		     "t.conf:5: [service q] quic_key_file: ",
		     "expected an absolute path");
	unlink(key);
	unlink(open_key);
	rmdir(dir);
}

static void test_health_keys(void)
{
	const struct rs_health_conf *h;

	EXPECT_LOADED(WEB_A "check = http\n"
			    "check_path = /health?full=1&x=%20\n"
			    "check_expect = 204\n"
			    "check_host = example.com:8080\n"
			    "interval = 1m\n"
			    "timeout = 1500ms\n"
			    "rise = 1\n"
			    "fall = 100\n"
			    "slow_start = 60m\n");
	h = &cfg.backends[0].health;
	CU_ASSERT_EQUAL(h->type, RS_CHECK_HTTP);
	CU_ASSERT_STRING_EQUAL(h->path, "/health?full=1&x=%20");
	CU_ASSERT_EQUAL(h->expect_min, 204);
	CU_ASSERT_EQUAL(h->expect_max, 204);
	CU_ASSERT_STRING_EQUAL(h->host, "example.com:8080");
	CU_ASSERT_EQUAL(h->interval_ms, 60000);
	CU_ASSERT_EQUAL(h->timeout_ms, 1500);
	CU_ASSERT_EQUAL(h->rise, 1);
	CU_ASSERT_EQUAL(h->fall, 100);
	CU_ASSERT_EQUAL(h->slow_start_ms, 3600000);

	/* Bare numbers are seconds; the limits themselves are fine. */
	EXPECT_LOADED(WEB_A "interval = 3600\ntimeout = 3600s\nslow_start = 0\n"
			    "rise = 100\nfall = 1\n");
	h = &cfg.backends[0].health;
	CU_ASSERT_EQUAL(h->type, RS_CHECK_TCP);
	CU_ASSERT_EQUAL(h->interval_ms, 3600000);
	CU_ASSERT_EQUAL(h->timeout_ms, 3600000);
	CU_ASSERT_EQUAL(h->slow_start_ms, 0);
	CU_ASSERT_EQUAL(h->rise, 100);
	CU_ASSERT_EQUAL(h->fall, 1);
	EXPECT_LOADED(WEB_A "check = tcp\ninterval = 1ms\ntimeout = 1ms\n"
			    "slow_start = 0ms\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.interval_ms, 1);
	CU_ASSERT_EQUAL(cfg.backends[0].health.timeout_ms, 1);
	EXPECT_LOADED(WEB_A "check = none\nslow_start = 1m\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.type, RS_CHECK_NONE);
	CU_ASSERT_EQUAL(cfg.backends[0].health.slow_start_ms, 60000);

	/* Status classes, and the edges of the status range. */
	EXPECT_LOADED(WEB_A "check = http\ncheck_expect = 5xx\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_min, 500);
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_max, 599);
	EXPECT_LOADED(WEB_A "check = http\ncheck_expect = 1xx\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_min, 100);
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_max, 199);
	EXPECT_LOADED(WEB_A "check = http\ncheck_expect = 3XX\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_min, 300);
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_max, 399);
	EXPECT_LOADED(WEB_A "check = http\ncheck_expect = 100\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_min, 100);
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_max, 100);
	EXPECT_LOADED(WEB_A "check = http\ncheck_expect = 599\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_min, 599);
	CU_ASSERT_EQUAL(cfg.backends[0].health.expect_max, 599);

	/* HTTP keys before check = http, timeout before interval. */
	EXPECT_LOADED(WEB_A "check_path = /\ncheck_host = h\ntimeout = 5s\n"
			    "check = http\ninterval = 5s\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.type, RS_CHECK_HTTP);
	CU_ASSERT_EQUAL(cfg.backends[0].health.timeout_ms, 5000);
}

static void test_server_ids(void)
{
	static const uint8_t ff[RS_QUIC_MAX_SERVER_ID] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	const struct rs_backend_conf *b;

	EXPECT_LOADED(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			   "server_id = 0x0102\n"
			   "[backend b]\nservice = q\naddress = 127.0.0.1:2\n"
			   "server_id = 259\n"
			   "[backend c]\nservice = q\naddress = 127.0.0.1:3\n"
			   "server_id = 0\n"
			   "[backend d]\nservice = q\naddress = 127.0.0.1:4\n"
			   "server_id = 0x00FFff\n");
	b = cfg.backends;
	CU_ASSERT_TRUE(b[0].has_server_id);
	CU_ASSERT_EQUAL(b[0].server_id[0], 0x01);
	CU_ASSERT_EQUAL(b[0].server_id[1], 0x02);
	CU_ASSERT_EQUAL(b[0].server_id[2], 0x00);
	CU_ASSERT_EQUAL(b[1].server_id[0], 0x01);
	CU_ASSERT_EQUAL(b[1].server_id[1], 0x03);
	CU_ASSERT_TRUE(b[2].has_server_id);
	CU_ASSERT_EQUAL(b[2].server_id[0], 0x00);
	CU_ASSERT_EQUAL(b[2].server_id[1], 0x00);
	CU_ASSERT_EQUAL(b[3].server_id[0], 0xff);
	CU_ASSERT_EQUAL(b[3].server_id[1], 0xff);

	/* Backend first, its service's quic_server_id_len set last. */
	EXPECT_LOADED("[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
		      "server_id = 0x0102\n" QUIC "quic_server_id_len = 3\n");
	b = cfg.backends;
	CU_ASSERT_TRUE(b[0].has_server_id);
	CU_ASSERT_EQUAL(b[0].server_id[0], 0x00);
	CU_ASSERT_EQUAL(b[0].server_id[1], 0x01);
	CU_ASSERT_EQUAL(b[0].server_id[2], 0x02);

	EXPECT_LOADED(QUIC "quic_server_id_len = 1\n"
			   "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			   "server_id = 255\n");
	CU_ASSERT_EQUAL(cfg.backends[0].server_id[0], 0xff);
	CU_ASSERT_EQUAL(cfg.backends[0].server_id[1], 0x00);

	/* 15 bytes, in hex and in decimal (2^120 - 1). */
	EXPECT_LOADED(QUIC "quic_server_id_len = 15\nquic_cid_len = 20\n"
			   "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			   "server_id = 0xffffffffffffffffffffffffffffff\n"
			   "[backend b]\nservice = q\naddress = 127.0.0.1:2\n"
			   "server_id = 0x0102030405060708090a0b0c0d0e0f\n");
	CU_ASSERT_EQUAL(memcmp(cfg.backends[0].server_id, ff, sizeof(ff)), 0);
	CU_ASSERT_EQUAL(cfg.backends[1].server_id[0], 0x01);
	CU_ASSERT_EQUAL(cfg.backends[1].server_id[7], 0x08);
	CU_ASSERT_EQUAL(cfg.backends[1].server_id[14], 0x0f);
	EXPECT_LOADED(QUIC
		      "quic_server_id_len = 15\nquic_cid_len = 20\n"
		      "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
		      "server_id = 1329227995784915872903807060280344575\n");
	CU_ASSERT_EQUAL(memcmp(cfg.backends[0].server_id, ff, sizeof(ff)), 0);

	/* The same ID in two services; a backend of another service. */
	EXPECT_LOADED(QUIC
		      "[service r]\nprotocol = udp\nlisten = 198.18.0.21:443\n"
		      "cookie = quic\n"
		      "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
		      "server_id = 7\n"
		      "[backend b]\nservice = r\naddress = 127.0.0.1:2\n"
		      "server_id = 7\n"
		      "[service web]\nprotocol = tcp\nlisten = 1.1.1.1:80\n"
		      "[backend c]\nservice = web\naddress = 127.0.0.1:3\n");
	CU_ASSERT_TRUE(cfg.backends[0].has_server_id);
	CU_ASSERT_TRUE(cfg.backends[1].has_server_id);
	CU_ASSERT_EQUAL(cfg.backends[1].server_id[1], 7);
	CU_ASSERT_FALSE(cfg.backends[2].has_server_id);
}

/*
 * sockops_cgroup: auto (the default) or a cgroup2 path, a trailing /
 * dropped.
 */
static void test_sockops_cgroup(void)
{
	EXPECT_LOADED(WEB);
	CU_ASSERT_STRING_EQUAL(cfg.sockops_cgroup, "auto");
	EXPECT_LOADED("[global]\nsockops_cgroup = /\n" WEB);
	CU_ASSERT_STRING_EQUAL(cfg.sockops_cgroup, "/");
	EXPECT_LOADED("[global]\nsockops_cgroup = auto\n" WEB);
	CU_ASSERT_STRING_EQUAL(cfg.sockops_cgroup, "auto");
	EXPECT_LOADED("[global]\nsockops_cgroup = /system.slice/\n" WEB);
	CU_ASSERT_STRING_EQUAL(cfg.sockops_cgroup, "/system.slice");
	EXPECT_LOADED("[global]\nsockops_cgroup = /a.slice/b.service\n" WEB);
	CU_ASSERT_STRING_EQUAL(cfg.sockops_cgroup, "/a.slice/b.service");
	EXPECT_ERROR("[global]\nsockops_cgroup = system.slice\n",
		     "t.conf:2: [global] sockops_cgroup: ",
		     "bad cgroup 'system.slice': not auto, nor a cgroup path "
		     "(it starts with /, as in /proc/PID/cgroup)");
	EXPECT_ERROR("[global]\nsockops_cgroup = Auto\n",
		     "t.conf:2: [global] sockops_cgroup: ",
		     "bad cgroup 'Auto': not auto, nor a cgroup path (it "
		     "starts with /, as in /proc/PID/cgroup)");
	EXPECT_ERROR("[global]\nsockops_cgroup = /a/../b\n",
		     "t.conf:2: [global] sockops_cgroup: ",
		     "bad cgroup '/a/../b': an empty, . or .. component");
	EXPECT_ERROR("[global]\nsockops_cgroup = /a//b\n",
		     "t.conf:2: [global] sockops_cgroup: ",
		     "bad cgroup '/a//b': an empty, . or .. component");
	/* Hostile: a value longer than any line the reader takes. */
	{
		char text[512];

		snprintf(text, sizeof(text),
			 "[global]\nsockops_cgroup = /%0300d\n", 0);
		EXPECT_ERROR(text, "t.conf:2: [global]: ", "line too long");
	}
}

/* The client caps and the idle timeout: values, bounds, file:line. */
static void test_client_keys(void)
{
	EXPECT_LOADED("[global]\ncontrol_clients_max = 1\n"
		      "metrics_clients_max = 4096\n"
		      "client_idle_timeout = 100ms\n" WEB);
	CU_ASSERT_EQUAL(cfg.control_clients_max, 1);
	CU_ASSERT_EQUAL(cfg.metrics_clients_max, 4096);
	CU_ASSERT_EQUAL(cfg.client_idle_ms, 100);
	EXPECT_LOADED("[global]\nclient_idle_timeout = 2\n" WEB);
	CU_ASSERT_EQUAL(cfg.client_idle_ms, 2000);

	EXPECT_ERROR("[global]\ncontrol_clients_max = 0\n",
		     "t.conf:2: [global] control_clients_max: ",
		     "bad client count '0': out of range 1..4096");
	EXPECT_ERROR("[global]\n\nmetrics_clients_max = 4097\n",
		     "t.conf:3: [global] metrics_clients_max: ",
		     "bad client count '4097': out of range 1..4096");
	EXPECT_ERROR("[global]\nmetrics_clients_max = many\n",
		     "t.conf:2: [global] metrics_clients_max: ",
		     "bad client count 'many': not a decimal number");
	EXPECT_ERROR("[global]\nclient_idle_timeout = 99ms\n",
		     "t.conf:2: [global] client_idle_timeout: ",
		     "bad duration '99ms': out of range 100ms..60m");
	EXPECT_ERROR("[global]\nclient_idle_timeout = 61m\n",
		     "t.conf:2: [global] client_idle_timeout: ",
		     "out of range 100ms..60m");
	EXPECT_ERROR("[global]\nclient_idle_timeout = soon\n",
		     "t.conf:2: [global] client_idle_timeout: ",
		     "expected a number with ms, s or m");
	EXPECT_ERROR("[global]\ncontrol_clients_max = 8\n"
		     "control_clients_max = 9\n",
		     "t.conf:3: [global] control_clients_max: ",
		     "duplicate key (first set at t.conf:2)");
}

static void test_bad_global(void)
{
	char text[512];

	EXPECT_ERROR("[global]\ninterfaces = eth0 bad/name\n",
		     "t.conf:2: [global] interfaces: ",
		     "bad interface name 'bad/name': interface names are "
		     "1..15 characters");
	EXPECT_ERROR("[global]\ninterfaces = abcdefghijklmnop\n",
		     "t.conf:2: [global] interfaces: ",
		     "bad interface name 'abcdefghijklmnop'");
	EXPECT_ERROR(
		"[global]\ninterfaces = eth0 ..\n",
		"t.conf:2: [global] interfaces: ", "bad interface name '..'");
	EXPECT_ERROR(
		"[global]\ninterfaces = .\n",
		"t.conf:2: [global] interfaces: ", "bad interface name '.'");
	EXPECT_ERROR("[global]\ninterfaces = eth0 eth1 eth0\n",
		     "t.conf:2: [global] interfaces: ",
		     "duplicate interface 'eth0'");
	EXPECT_ERROR("[global]\ninterfaces = eth0,eth1\n",
		     "t.conf:2: [global] interfaces: ",
		     "bad interface name 'eth0,eth1'");
	/* Every bad name is reported. */
	EXPECT_ERROR("[global]\ninterfaces = a! eth0 b!\n",
		     "t.conf:2: [global] interfaces: ", "'b!'");
	CU_ASSERT_EQUAL(count_lines(err), 2);
	EXPECT_ERROR("[global]\ninterfaces = eth0\ninterfaces = eth1\n",
		     "t.conf:3: [global] interfaces: ",
		     "duplicate key (first set at t.conf:2)");
	EXPECT_ERROR("[global]\ninterfaces =\n",
		     "t.conf:2: [global] interfaces: ", "empty value");
	EXPECT_ERROR(ifaces(text, sizeof(text), RS_MAX_INTERFACES + 1),
		     "t.conf:2: [global] interfaces: ",
		     "too many interfaces (max 16)");

	EXPECT_ERROR("[global]\nmetrics = 127.0.0.1\n",
		     "t.conf:2: [global] metrics: ",
		     "bad metrics address '127.0.0.1': missing port");
	EXPECT_ERROR("[global]\nmetrics = 127.0.0.1:0\n",
		     "t.conf:2: [global] metrics: ",
		     "bad metrics address '127.0.0.1:0': port 0 not allowed");
	EXPECT_ERROR("[global]\nmetrics = [::1]:65536\n",
		     "t.conf:2: [global] metrics: ", "port out of range");
	EXPECT_ERROR("[global]\nmetrics = 127.0.0.0/8:9477\n",
		     "t.conf:2: [global] metrics: ", "prefix not allowed");
	EXPECT_ERROR("[global]\nmetrics = localhost:9477\n",
		     "t.conf:2: [global] metrics: ", "bad IPv4 address");
	EXPECT_ERROR("[global]\nmetrics = ::1:9477\n",
		     "t.conf:2: [global] metrics: ",
		     "IPv6 address must be in brackets");
	EXPECT_ERROR(WEB "metrics = 127.0.0.1:9477\n",
		     "t.conf:4: [service web] metrics: ", "unknown key");
}

static void test_bad_service_keys(void)
{
	EXPECT_ERROR(WEB "sticky_ttl = 2592001\n",
		     "t.conf:4: [service web] sticky_ttl: ",
		     "bad sticky_ttl '2592001': out of range 0..2592000");
	EXPECT_ERROR(WEB "sticky_ttl = 1d\n",
		     "t.conf:4: [service web] sticky_ttl: ",
		     "bad sticky_ttl '1d': not a decimal number");
	EXPECT_ERROR(WEB "sticky_max = 0\n",
		     "t.conf:4: [service web] sticky_max: ",
		     "bad sticky_max '0': out of range 1..8388608");
	EXPECT_ERROR(WEB "sticky_max = 8388609\n",
		     "t.conf:4: [service web] sticky_max: ",
		     "out of range 1..8388608");
	EXPECT_ERROR(WEB "cookie = QUIC\n", "t.conf:4: [service web] cookie: ",
		     "bad cookie policy 'QUIC': expected none or quic");
	EXPECT_ERROR(WEB "quic_server_id_len = 0\n",
		     "t.conf:4: [service web] quic_server_id_len: ",
		     "bad quic_server_id_len '0': out of range 1..15");
	EXPECT_ERROR(WEB "quic_server_id_len = 16\n",
		     "t.conf:4: [service web] quic_server_id_len: ",
		     "out of range 1..15");
	EXPECT_ERROR(WEB "quic_cid_len = 0\n",
		     "t.conf:4: [service web] quic_cid_len: ",
		     "bad quic_cid_len '0': out of range 1..20");
	EXPECT_ERROR(
		WEB "quic_cid_len = 21\n",
		"t.conf:4: [service web] quic_cid_len: ", "out of range 1..20");
	EXPECT_ERROR(WEB "quic_config_id = 7\n",
		     "t.conf:4: [service web] quic_config_id: ",
		     "bad quic_config_id '7': out of range 0..6");
	EXPECT_ERROR(WEB "quic_config_id = 0x1\n",
		     "t.conf:4: [service web] quic_config_id: ",
		     "not a decimal number");

	/* cookie = quic is for UDP, whichever key comes first. */
	EXPECT_ERROR(WEB "cookie = quic\n", "t.conf:4: [service web] cookie: ",
		     "cookie = quic needs protocol = udp");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_ERROR("[service web]\ncookie = quic\nlisten = 1.2.3.4:80\n"
		     "protocol = tcp\n",
		     "t.conf:2: [service web] cookie: ",
		     "cookie = quic needs protocol = udp");
	/* A refused protocol is reported once, not blamed on the cookie. */
	EXPECT_ERROR("[service web]\ncookie = quic\nlisten = 1.2.3.4:80\n"
		     "protocol = sctp\n",
		     "t.conf:4: [service web] protocol: ", "bad protocol");
	CU_ASSERT_EQUAL(count_lines(err), 1);

	/* The connection ID must hold a first byte and the server ID. */
	EXPECT_ERROR(QUIC "quic_server_id_len = 8\nquic_cid_len = 8\n",
		     "t.conf:6: [service q] quic_cid_len: ",
		     "quic_cid_len 8 is too short for quic_server_id_len 8 "
		     "(needs at least 9)");
	EXPECT_ERROR(QUIC "quic_cid_len = 3\nquic_server_id_len = 3\n",
		     "t.conf:5: [service q] quic_cid_len: ",
		     "quic_cid_len 3 is too short for quic_server_id_len 3");
	EXPECT_ERROR(QUIC "quic_server_id_len = 15\n",
		     "t.conf:1: [service q]: ",
		     "quic_cid_len 8 is too short for quic_server_id_len 15");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_ERROR(WEB "quic_cid_len = 1\n",
		     "t.conf:4: [service web] "
		     "quic_cid_len: ",
		     "quic_cid_len 1 is too short for quic_server_id_len 2");
	/* A refused length is not compared with the other one. */
	EXPECT_ERROR(
		WEB "quic_server_id_len = 16\nquic_cid_len = 2\n",
		"t.conf:4: [service web] quic_server_id_len: ", "out of range");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_ERROR(WEB "quic_server_id_len = 8\nquic_cid_len = 30\n",
		     "t.conf:5: [service web] quic_cid_len: ", "out of range");
	CU_ASSERT_EQUAL(count_lines(err), 1);
}

static void test_bad_health(void)
{
	EXPECT_ERROR(
		WEB_A "check = smtp\n", "t.conf:7: [backend a] check: ",
		"bad check type 'smtp': expected tcp, http, https or none");
	EXPECT_OK(WEB_A "check = https\ncheck_path = /status\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.type, RS_CHECK_HTTPS);
	EXPECT_ERROR(WEB_A "check = http\ncheck_path = healthz\n",
		     "t.conf:8: [backend a] check_path: ",
		     "bad check_path 'healthz': does not start with '/'");
	EXPECT_ERROR(WEB_A "check = http\ncheck_path = /a b\n",
		     "t.conf:8: [backend a] check_path: ",
		     "bad check_path '/a b': contains a space or control "
		     "character");
	EXPECT_ERROR(WEB_A "check = http\ncheck_path = /a\tb\n",
		     "t.conf:8: [backend a] check_path: ",
		     "contains a space or control character");
	/* Control characters are refused for the whole line, shown as hex. */
	EXPECT_ERROR(WEB_A "check = http\ncheck_path = /a\x7f\n", "t.conf:8: ",
		     "control character 0x7f at column 16: names and values "
		     "are printable text");
	EXPECT_ERROR(WEB_A "check = http\ncheck_host = a\x01\n",
		     "t.conf:8: ", "control character 0x01 at column 15");
	/* Issue 36: an escape sequence never reaches the terminal raw. */
	EXPECT_ERROR("[service w\x1b[31mred]\nprotocol = tcp\n", "t.conf:1: ",
		     "[service w\\x1b[31mred]: bad service name "
		     "'w\\x1b[31mred'");
	CU_ASSERT_PTR_NULL(strchr(err, '\x1b'));
	EXPECT_ERROR(WEB "fallback = \x1b]0;x\x07\n",
		     "t.conf:4: ", "control character 0x1b at column 12");
	CU_ASSERT_PTR_NULL(strchr(err, '\x1b'));
	EXPECT_ERROR(WEB "fallback = caf\xc3\xa9\n",
		     "t.conf:4: [service web] fallback: ", "'caf\\xc3\\xa9'");
	EXPECT_ERROR(WEB_A "check = http\ncheck_host = a b\n",
		     "t.conf:8: [backend a] check_host: ",
		     "bad check_host 'a b': contains a space or control "
		     "character");
	{
		static const char *const bad[] = {
			"600",	"099", "6xx", "0xx", "20",  "2x",
			"2000", "abc", "x2x", "2x0", "-20", "2xxx",
		};
		char text[256];
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(text, sizeof(text),
				 WEB_A "check = http\ncheck_expect = %s\n",
				 bad[i]);
			EXPECT_ERROR(text,
				     "t.conf:8: [backend a] check_expect: ",
				     "expected a status 100..599 or a class "
				     "1xx..5xx");
		}
	}

	/* Durations. */
	{
		static const char *const bad[] = {
			"2h", "1.5s", "s",  "-1s",  "2 s",
			"2S", "0x10", "ms", "1sec",
		};
		char text[256];
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(text, sizeof(text), WEB_A "interval = %s\n",
				 bad[i]);
			EXPECT_ERROR(text, "t.conf:7: [backend a] interval: ",
				     "expected a number with ms, s or m");
		}
	}
	EXPECT_ERROR(WEB_A "interval = 0\n", "t.conf:7: [backend a] interval: ",
		     "bad interval '0': out of range 1ms..60m");
	EXPECT_ERROR(
		WEB_A "interval = 61m\n",
		"t.conf:7: [backend a] interval: ", "out of range 1ms..60m");
	EXPECT_ERROR(
		WEB_A "interval = 3600001ms\n",
		"t.conf:7: [backend a] interval: ", "out of range 1ms..60m");
	EXPECT_ERROR(
		WEB_A "interval = 3601\n",
		"t.conf:7: [backend a] interval: ", "out of range 1ms..60m");
	EXPECT_ERROR(
		WEB_A "interval = 99999999999999999999999999m\n",
		"t.conf:7: [backend a] interval: ", "out of range 1ms..60m");
	EXPECT_ERROR(WEB_A "timeout = 0ms\n", "t.conf:7: [backend a] timeout: ",
		     "bad timeout '0ms': out of range 1ms..60m");
	EXPECT_ERROR(WEB_A "timeout = 1x\n", "t.conf:7: [backend a] timeout: ",
		     "bad timeout '1x': expected a number with ms, s or m");
	EXPECT_ERROR(WEB_A "slow_start = 61m\n",
		     "t.conf:7: [backend a] slow_start: ",
		     "bad slow_start '61m': out of range 0..60m");
	EXPECT_ERROR(WEB_A "slow_start = -1\n",
		     "t.conf:7: [backend a] slow_start: ",
		     "expected a number with ms, s or m");
	EXPECT_ERROR(WEB_A "rise = 0\n", "t.conf:7: [backend a] rise: ",
		     "bad rise '0': out of range 1..100");
	EXPECT_ERROR(WEB_A "fall = 101\n", "t.conf:7: [backend a] fall: ",
		     "bad fall '101': out of range 1..100");
	EXPECT_ERROR(WEB_A "fall = 3x\n",
		     "t.conf:7: [backend a] fall: ", "not a decimal number");

	/* HTTP-only keys, in either order, with check tcp (default) or none. */
	EXPECT_ERROR(WEB_A "check_path = /x\n",
		     "t.conf:7: [backend a] check_path: ",
		     "check_path is only used by check = http or https");
	EXPECT_ERROR(WEB_A "check_expect = 204\ncheck = none\n",
		     "t.conf:7: [backend a] check_expect: ",
		     "check_expect is only used by check = http or https");
	EXPECT_ERROR(WEB_A "check = tcp\ncheck_host = example.com\n",
		     "t.conf:8: [backend a] check_host: ",
		     "check_host is only used by check = http or https");
	/* A refused check type is reported once. */
	EXPECT_ERROR(WEB_A "check = gopher\ncheck_path = /x\n",
		     "t.conf:7: [backend a] check: ", "bad check type");
	CU_ASSERT_EQUAL(count_lines(err), 1);

	/* timeout <= interval, set or not. */
	EXPECT_ERROR(WEB_A "interval = 1s\ntimeout = 1500ms\n",
		     "t.conf:8: [backend a] timeout: ",
		     "timeout 1500ms is longer than interval 1s");
	EXPECT_ERROR(WEB_A "timeout = 3s\n", "t.conf:7: [backend a] timeout: ",
		     "timeout 3s is longer than interval 2s");
	EXPECT_ERROR(WEB_A "timeout = 2m\ninterval = 90\n",
		     "t.conf:7: [backend a] timeout: ",
		     "timeout 2m is longer than interval 90s");
	/* check_port: another port of the backend, default its own. */
	EXPECT_OK(WEB_A "check_port = 8080\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.port, 8080);
	EXPECT_OK(WEB_A);
	CU_ASSERT_EQUAL(cfg.backends[0].health.port, 0);
	EXPECT_ERROR(WEB_A "check_port = 0\n",
		     "t.conf:7: [backend a] check_port: ", "out of range");
	/* Without a timeout, a short interval shortens the default. */
	EXPECT_OK(WEB_A "interval = 500ms\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.timeout_ms, 500);
	CU_ASSERT_EQUAL(cfg.backends[0].health.interval_ms, 500);
	/* UDP backends are not checked unless asked. */
	EXPECT_OK("[service d]\nprotocol = udp\nlisten = 198.18.0.1:53\n"
		  "[backend a]\nservice = d\naddress = 127.0.0.1:53\n"
		  "[backend b]\nservice = d\naddress = 127.0.0.2:53\n"
		  "check = tcp\n");
	CU_ASSERT_EQUAL(cfg.backends[0].health.type, RS_CHECK_NONE);
	CU_ASSERT_EQUAL(cfg.backends[1].health.type, RS_CHECK_TCP);
	/* A refused duration is not compared. */
	EXPECT_ERROR(WEB_A "interval = 2h\ntimeout = 5s\n",
		     "t.conf:7: [backend a] interval: ", "expected a number");
	CU_ASSERT_EQUAL(count_lines(err), 1);
}

static void test_bad_server_ids(void)
{
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 0x\n",
		     "t.conf:8: [backend a] server_id: ",
		     "bad server_id '0x': not a decimal or 0x hex number");
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = -1\n",
		     "t.conf:8: [backend a] server_id: ",
		     "not a decimal or 0x hex number");
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 0x12g\n",
		     "t.conf:8: [backend a] server_id: ",
		     "not a decimal or 0x hex number");
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 12ab\n",
		     "t.conf:8: [backend a] server_id: ",
		     "not a decimal or 0x hex number");
	/* 2^120 needs 16 bytes, more than any quic_server_id_len. */
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 0x1000000000000000000000000000000\n",
		     "t.conf:8: [backend a] server_id: ",
		     "does not fit in 15 bytes");
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 1329227995784915872903807060280344576\n",
		     "t.conf:8: [backend a] server_id: ",
		     "does not fit in 15 bytes");

	/* Too large for the service's quic_server_id_len. */
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 0x10000\n",
		     "t.conf:8: [backend a] server_id: ",
		     "server_id 0x10000 does not fit in 2 bytes "
		     "(quic_server_id_len)");
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 65536\n",
		     "t.conf:8: [backend a] server_id: ",
		     "server_id 65536 does not fit in 2 bytes");
	EXPECT_ERROR(
		"[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
		"server_id = 256\n" QUIC "quic_server_id_len = 1\n",
		"t.conf:4: [backend a] server_id: ",
		"server_id 256 does not fit in 1 byte (quic_server_id_len)");

	/* Unique within a service. */
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = 0x0102\n"
			  "[backend b]\nservice = q\naddress = 127.0.0.1:2\n"
			  "server_id = 258\n",
		     "t.conf:12: [backend b] server_id: ",
		     "server_id 258 is already the server_id of [backend a] "
		     "at t.conf:8");
	CU_ASSERT_EQUAL(count_lines(err), 1);

	/* Required by cookie = quic, wherever the service is. */
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n",
		     "t.conf:5: [backend a]: ",
		     "missing required key 'server_id' (service q uses cookie "
		     "= quic)");
	EXPECT_ERROR("[backend a]\nservice = q\naddress = 127.0.0.1:1\n" QUIC,
		     "t.conf:1: [backend a]: ",
		     "missing required key 'server_id' (service q uses cookie "
		     "= quic)");
	/* A refused server_id is not also missing. */
	EXPECT_ERROR(QUIC "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
			  "server_id = x\n",
		     "t.conf:8: [backend a] server_id: ", "bad server_id 'x'");
	CU_ASSERT_EQUAL(count_lines(err), 1);

	/* Only with cookie = quic. */
	EXPECT_ERROR(WEB_A "server_id = 1\n",
		     "t.conf:7: [backend a] server_id: ",
		     "server_id needs cookie = quic in [service web]");
	EXPECT_ERROR("[backend a]\nservice = u\naddress = 127.0.0.1:1\n"
		     "server_id = 1\n"
		     "[service u]\nprotocol = udp\nlisten = 1.1.1.1:443\n"
		     "cookie = none\n",
		     "t.conf:4: [backend a] server_id: ",
		     "server_id needs cookie = quic in [service u]");

	/* No follow-up errors after a refused cookie or length. */
	EXPECT_ERROR("[service u]\nprotocol = udp\nlisten = 1.1.1.1:443\n"
		     "cookie = yes\n"
		     "[backend a]\nservice = u\naddress = 127.0.0.1:1\n"
		     "server_id = 1\n",
		     "t.conf:4: [service u] cookie: ", "bad cookie policy");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_ERROR(
		QUIC "quic_server_id_len = 16\n"
		     "[backend a]\nservice = q\naddress = 127.0.0.1:1\n"
		     "server_id = 0x10000\n",
		"t.conf:5: [service q] quic_server_id_len: ", "out of range");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_ERROR(QUIC "[backend a]\nservice = r\naddress = 127.0.0.1:1\n"
			  "server_id = 1\n",
		     "t.conf:6: [backend a] service: ", "unknown service 'r'");
	CU_ASSERT_EQUAL(count_lines(err), 1);
}

static void test_files(void)
{
	int ret;

	memset(&cfg, 0xa5, sizeof(cfg));
	ret = rs_config_load("/nonexistent/ringsteer.conf", &cfg, err,
			     sizeof(err));
	CU_ASSERT_EQUAL(ret, -ENOENT);
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/ringsteer.conf: "));

	memset(&cfg, 0xa5, sizeof(cfg));
	ret = rs_config_load("configs", &cfg, err, sizeof(err));
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));
	CU_ASSERT_STRING_EQUAL(err,
			       "configs: not a regular file (a directory)");

	CU_ASSERT_EQUAL(rs_config_load(NULL, &cfg, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(rs_config_load(SAMPLE, NULL, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(
		rs_config_load_string(NULL, "x", &cfg, err, sizeof(err)),
		-EINVAL);
	CU_ASSERT_EQUAL(rs_config_find_service(NULL, "x"), -EINVAL);
	rs_config_free(NULL);
}

static void test_nul_byte(void)
{
	static const char text[] = WEB "prefix4 = 2\0"
				       "4\n";
	char path[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	int ret;

	CU_ASSERT_FATAL(fd >= 0);
	f = fdopen(fd, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fwrite(text, 1, sizeof(text) - 1, f);
	fclose(f);
	ret = rs_config_load(path, &cfg, err, sizeof(err));
	unlink(path);
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ":4: line contains a NUL byte"));
}

/* ---- what the file may ask of the host (issue 9) ---- */

/*
 * rs_config_load(@path) in a child that must answer within @ms: a reader
 * that blocks (a FIFO) or never ends (/dev/zero) fails the test instead of
 * hanging it or filling the host's memory. The child's return value and
 * error text come back through a pipe into ret and err.
 */
static bool load_bounded(const char *path, int ms, int *ret)
{
	int fds[2], status;
	struct pollfd pfd;
	ssize_t n;
	size_t used = 0;
	pid_t pid;

	CU_ASSERT_FATAL(pipe(fds) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct rs_config c;
		int r;

		close(fds[0]);
		alarm((unsigned int)(ms / 1000 + 1));
		r = rs_config_load(path, &c, err, sizeof(err));
		if (write(fds[1], &r, sizeof(r)) != sizeof(r) ||
		    write(fds[1], err, strlen(err) + 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	memset(err, 0, sizeof(err));
	pfd = (struct pollfd){.fd = fds[0], .events = POLLIN};
	if (poll(&pfd, 1, ms) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(fds[0]);
		fprintf(stderr, "\nloading %s took longer than %d ms\n", path,
			ms);
		return false;
	}
	n = read(fds[0], ret, sizeof(*ret));
	while (n > 0 && used < sizeof(err) - 1) {
		n = read(fds[0], err + used, sizeof(err) - 1 - used);
		if (n > 0)
			used += (size_t)n;
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_not_regular_files(void)
{
	char dir[] = "/tmp/test_config_XXXXXX", fifo[64], link[64];
	int ret = 0;

	CU_ASSERT_TRUE(load_bounded("/dev/zero", 2000, &ret));
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_STRING_EQUAL(err,
			       "/dev/zero: not a regular file (a character "
			       "device)");

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
	snprintf(link, sizeof(link), "%s/link.conf", dir);
	CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
	/* No writer: open() without O_NONBLOCK would wait for one. */
	CU_ASSERT_TRUE(load_bounded(fifo, 2000, &ret));
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/fifo.conf: not a regular file "
					   "(a FIFO)"));
	CU_ASSERT_FATAL(symlink("/dev/zero", link) == 0);
	CU_ASSERT_TRUE(load_bounded(link, 2000, &ret));
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/link.conf: not a regular file"));
	unlink(link);
	unlink(fifo);
	rmdir(dir);
}

/* A sparse file of @size bytes: a line of NUL bytes that size. */
static int load_sized(off_t size)
{
	char path[] = "/tmp/test_config_XXXXXX";
	int fd = mkstemp(path), ret;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, size) == 0);
	close(fd);
	memset(&cfg, 0xa5, sizeof(cfg));
	ret = rs_config_load(path, &cfg, err, sizeof(err));
	unlink(path);
	return ret;
}

static void test_size_limit(void)
{
	char want[128];

	CU_ASSERT_EQUAL(load_sized((off_t)RS_CONFIG_MAX_BYTES + 1), -EFBIG);
	CU_ASSERT_TRUE(cfg_is_zero(&cfg));
	snprintf(want, sizeof(want), ": too large (limit %u bytes)",
		 RS_CONFIG_MAX_BYTES);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	CU_ASSERT_EQUAL(count_lines(err), 1);
	CU_ASSERT_EQUAL(RS_CONFIG_MAX_BYTES, 16u << 20);

	/* At the limit the file is read, and refused for what it holds. */
	CU_ASSERT_EQUAL(load_sized((off_t)RS_CONFIG_MAX_BYTES), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ":1: line contains a NUL byte"));
	CU_ASSERT_PTR_NULL(strstr(err, "too large"));
}

/* Whatever grows with the input is bounded, and says where it stopped. */
static void test_input_bounds(void)
{
	char *text;

	/* One kept error per bad line, up to 30; the rest are counted. */
	text = repeat(WEB, "bad line %d %d\n", 1000);
	EXPECT_ERROR(text,
		     "t.conf:4: [service web]: ", "expected 'key = value'");
	CU_ASSERT_EQUAL(count_lines(err), 31);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "\nt.conf: 970 more errors not "
					   "shown"));
	free(text);

	/* Sections past the limit are refused at their header, unread. */
	text = repeat("",
		      "[service s%d]\nprotocol = tcp\nlisten = 10.1.0.1:%d\n",
		      RS_MAX_SERVICES + 2);
	EXPECT_ERROR(text, "t.conf:769: [service s256]: ",
		     "too many services (max 256): this [service] and every "
		     "later one are refused");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	free(text);
	text = repeat(WEB "vnodes = 1\n",
		      "[backend b%d]\nservice = web\naddress = 127.0.0.1:%d\n"
		      "weight = x\n",
		      RS_MAX_BACKENDS + 1);
	/* 1024 bad weights are kept to 30, the header error is counted. */
	EXPECT_ERROR(text, "t.conf:8: [backend b0] weight: ", "bad weight");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "995 more errors not shown"));
	free(text);
}

static void test_no_services(void)
{
	static const char *const empties[] = {
		"",
		"[global]\n",
		"; nothing here\n[global]\nmetrics = 127.0.0.1:9477\n",
		"[backend a]\nservice = web\naddress = 127.0.0.1:1\n",
	};
	char path[] = "/tmp/test_config_XXXXXX";
	int fd;

	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		if (i < 3) {
			EXPECT_ERROR(empties[i], "t.conf: ",
				     "no [service] section: this file would "
				     "stop all steering; to stop steering, run "
				     "`ringsteer detach` (or `ringsteerd "
				     "--detach` with the daemon stopped)");
			CU_ASSERT_EQUAL(count_lines(err), 1);
		} else {
			/* Other errors say enough. */
			EXPECT_ERROR(empties[i], "t.conf:2: [backend a] ",
				     "unknown service 'web'");
			CU_ASSERT_PTR_NULL(strstr(err, "no [service]"));
		}
	}

	/* --detach reads [global] of such a file. */
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, "[global]\nbpffs = /sys/fs/bpf/x\n", 31) ==
			31);
	close(fd);
	CU_ASSERT_EQUAL(rs_config_load(path, &cfg, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ": no [service] section"));
	CU_ASSERT_EQUAL(rs_config_load_flags(path, RS_CONFIG_ALLOW_EMPTY, &cfg,
					     err, sizeof(err)),
			0);
	CU_ASSERT_STRING_EQUAL(cfg.bpffs, "/sys/fs/bpf/x");
	CU_ASSERT_EQUAL(cfg.n_services, 0);
	unlink(path);
	rs_config_free(&cfg);
}

static void test_covering_listens(void)
{
	/* A prefix on every port over the backend's own address. */
	EXPECT_ERROR("[service web]\nprotocol = tcp\n"
		     "listen = 198.18.0.0/24:0\n"
		     "[backend a]\nservice = web\naddress = 198.18.0.5:80\n",
		     "t.conf:3: [service web] listen: ",
		     "tcp 198.18.0.0/24:0 covers 198.18.0.5:80, the address "
		     "of [backend a] (address at t.conf:6): the daemon's "
		     "health checks and the backend's own connections would "
		     "be steered");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	/* IPv6, the backend's port, another service's listen. */
	EXPECT_ERROR(WEB
		     "listen = [2001:db8::/64]:8080\n"
		     "[backend a]\nservice = web\naddress = 127.0.0.1:8080\n"
		     "address = [2001:db8::5]:8080\n",
		     "t.conf:4: [service web] listen: ",
		     "tcp [2001:db8::/64]:8080 covers [2001:db8::5]:8080, the "
		     "address of [backend a] (address at t.conf:8)");
	EXPECT_ERROR(WEB "[service all]\nprotocol = tcp\nlisten = "
			 "127.0.0.0/8:0\n"
			 "[backend a]\nservice = web\naddress = 0.0.0.0:8080\n",
		     "t.conf:6: [service all] listen: ",
		     "tcp 127.0.0.0/8:0 covers 127.0.0.1:8080, the address of "
		     "[backend a] (address at t.conf:9)");
	/* The health check's own port. */
	EXPECT_ERROR(WEB "[service status]\nprotocol = tcp\nlisten = "
			 "198.18.0.0/24:9000\n"
			 "[backend a]\nservice = web\naddress = 198.18.0.5:80\n"
			 "check_port = 9000\n",
		     "t.conf:6: [service status] listen: ",
		     "tcp 198.18.0.0/24:9000 covers 198.18.0.5:9000, where the "
		     "daemon checks [backend a] (check_port at t.conf:10)");
	/* UDP backends: their datagrams, and a TCP check of them. */
	EXPECT_ERROR("[service dns]\nprotocol = udp\nlisten = [::/0]:53\n"
		     "[backend a]\nservice = dns\naddress = [2001:db8::5]:53\n",
		     "t.conf:3: [service dns] listen: ",
		     "udp [::/0]:53 covers [2001:db8::5]:53");
	EXPECT_ERROR("[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		     "[service web]\nprotocol = tcp\nlisten = 198.18.0.0/24:0\n"
		     "[backend a]\nservice = dns\naddress = 198.18.0.5:53\n"
		     "check = tcp\n",
		     "t.conf:6: [service web] listen: ",
		     "tcp 198.18.0.0/24:0 covers 198.18.0.5:53, where the "
		     "daemon checks [backend a] (address at t.conf:9)");

	/* Not covered: another port, protocol or family, no TCP check. */
	EXPECT_OK("[service web]\nprotocol = tcp\nlisten = 198.18.0.0/24:80\n"
		  "listen = [2001:db8::/64]:0\n"
		  "[backend a]\nservice = web\naddress = 198.18.0.5:8080\n"
		  "check_port = 9000\n"
		  "[backend b]\nservice = web\naddress = 198.18.1.5:80\n"
		  "[service dns]\nprotocol = udp\nlisten = 198.18.0.0/24:0\n");
	EXPECT_OK("[service dns]\nprotocol = udp\nlisten = 198.18.0.10:53\n"
		  "[service web]\nprotocol = tcp\nlisten = 198.18.0.0/24:0\n"
		  "[backend a]\nservice = dns\naddress = 198.18.0.5:53\n");
}

static void test_memory_budget(void)
{
	const char *svc3 =
		"[service a]\nprotocol = tcp\nlisten = 198.18.0.1:80\n"
		"sticky_ttl = 60\n"
		"[service b]\nprotocol = tcp\nlisten = 198.18.0.2:80\n"
		"sticky_ttl = 60\n"
		"[service c]\nprotocol = tcp\nlisten = 198.18.0.3:80\n"
		"sticky_ttl = 60\n";
	char *text = NULL, *report = NULL;
	size_t len = 0;
	FILE *f;

	/* sticky_max itself has a ceiling... */
	EXPECT_ERROR(WEB "sticky_max = 67108864\n",
		     "t.conf:4: [service web] sticky_max: ",
		     "bad sticky_max '67108864': out of range 1..8388608");
	/* ...and the table counts against memory_max when it exists. */
	EXPECT_ERROR(
		WEB "sticky_ttl = 60\nsticky_max = 8388608\n",
		"t.conf:5: [service web] sticky_max: ",
		"needs ~832.1 MiB of kernel memory (ring 0 points (8 KiB), "
		"sticky 8,388,608 entries (~832.1 MiB)), over memory_max "
		"256 MiB: lower sticky_max or vnodes, or raise [global] "
		"memory_max");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	EXPECT_OK(WEB "sticky_ttl = 0\nsticky_max = 8388608\n");
	EXPECT_OK("[global]\nmemory_max = 2G\n" WEB
		  "sticky_ttl = 60\nsticky_max = 8388608\n");

	/* Three default sticky tables (~104 MiB each): the third is over. */
	EXPECT_ERROR(svc3, "t.conf:12: [service c] sticky_ttl: ",
		     "the services up to this one need ~312.1 MiB of kernel "
		     "memory together (this one: ring 0 points (8 KiB), "
		     "sticky 1,048,576 entries (~104.1 MiB)), over memory_max "
		     "256 MiB");
	CU_ASSERT_EQUAL(count_lines(err), 1);
	CU_ASSERT_TRUE(
		asprintf(&text, "[global]\nmemory_max = 320M\n%s", svc3) > 0);
	EXPECT_LOADED(text);
	CU_ASSERT_EQUAL(cfg.memory_max, 320ull << 20);
	free(text);
	CU_ASSERT_TRUE(
		asprintf(&text, "[global]\nmemory_max = 300MiB\n%s", svc3) > 0);
	EXPECT_ERROR(text, "t.conf:14: [service c] sticky_ttl: ",
		     "over memory_max 300 MiB (at t.conf:2)");
	free(text);

	/*
	 * A ring: 65,536 points (1 MiB) and their flat table (2^18 entries
	 * of 8 bytes, 2 MiB) take just over 3 MiB, and a fresh map 1/16
	 * more (ring_map_capacity()).
	 */
	EXPECT_ERROR("[global]\nmemory_max = 1M\n" WEB "vnodes = 65536\n"
		     "[backend a]\nservice = web\naddress = 127.0.0.1:1\n",
		     "t.conf:6: [service web] vnodes: ",
		     "needs ~3.2 MiB of kernel memory (ring 65,536 points "
		     "(3.2 MiB), no sticky table), over memory_max 1 MiB");

	/* memory_max values. */
	EXPECT_LOADED("[global]\nmemory_max = 1024K\n" WEB);
	CU_ASSERT_EQUAL(cfg.memory_max, 1u << 20);
	EXPECT_LOADED("[global]\nmemory_max = 1099511627776\n" WEB);
	CU_ASSERT_EQUAL(cfg.memory_max, 1ull << 40);
	EXPECT_ERROR("[global]\nmemory_max = 1023K\n" WEB,
		     "t.conf:2: [global] memory_max: ",
		     "bad memory_max '1023K': out of range 1M..1T");
	EXPECT_ERROR("[global]\nmemory_max = 2T\n" WEB,
		     "t.conf:2: [global] memory_max: ", "out of range 1M..1T");
	EXPECT_ERROR("[global]\nmemory_max = 99999999999999999999999G\n" WEB,
		     "t.conf:2: [global] memory_max: ", "bad memory_max");
	EXPECT_ERROR("[global]\nmemory_max = 12X\n" WEB,
		     "t.conf:2: [global] memory_max: ",
		     "expected bytes, or a number with K, M, G or T");
	EXPECT_ERROR("[global]\nmemory_max = M\n" WEB,
		     "t.conf:2: [global] memory_max: ", "expected bytes");
	CU_ASSERT_EQUAL(count_lines(err), 1);

	/* What --check prints. */
	EXPECT_LOADED(WEB
		      "sticky_ttl = 60\nsticky_max = 65536\n"
		      "[backend a]\nservice = web\naddress = 127.0.0.1:1\n"
		      "[service dns]\nprotocol = udp\n"
		      "listen = 198.18.0.53:53\nvnodes = 2560\n"
		      "[backend b]\nservice = dns\naddress = 127.0.0.1:53\n");
	f = open_memstream(&report, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rs_config_memory_report(&cfg, NULL, f);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(
		report,
		"service web: ring 4,096 points (212 KiB), sticky 65,536 "
		"entries (~6.6 MiB)\n"
		"service dns: ring 2,560 points (184 KiB), no sticky table\n"
		"kernel memory: ~6.9 MiB for 2 services (memory_max 256 "
		"MiB)\n"
		"ring changes: after its first one, each service keeps the "
		"ring map a change replaced to write the next ring into: "
		"~396 KiB (405504 bytes) more for these rings (at most twice "
		"that after weights fall), ~7.3 MiB in all\n");
	free(report);

	/* With the data plane's own maps, as ringsteerd --check has them. */
	f = open_memstream(&report, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rs_config_memory_report(&cfg,
				&(struct rs_memory_fixed){.maps = 2635920}, f);
	fclose(f);
	/* The bytes depend on the CPUs (per-CPU parts of sticky tables). */
	CU_ASSERT_PTR_NOT_NULL(
		strstr(report, "data plane: ~2.6 MiB of maps (no [fleet]: the "
			       "fleet's tables at 1 entry)\n"
			       "kernel memory: ~9.5 MiB ("));
	CU_ASSERT_PTR_NOT_NULL(strstr(report,
				      " bytes) pinned by a start: the data "
				      "plane's maps and ~6.9 MiB for 2 "
				      "services (memory_max 256 MiB)\n"
				      "ring changes: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(report, "~396 KiB (405504 bytes) more "
					      "for these rings (at most "
					      "twice that after weights "
					      "fall), ~"));
	free(report);
}

struct test {
	const char *name;
	CU_TestFunc fn;
};

static const struct test addr_tests[] = {
	{"parse IPv4", test_addr_parse_v4},
	{"parse IPv6", test_addr_parse_v6},
	{"parse errors", test_addr_parse_errors},
	{"format", test_addr_format},
	{"round trip", test_addr_round_trip},
	{"mask", test_addr_mask},
	{NULL, NULL},
};

static const struct test config_tests[] = {
	{"sample file", test_sample},
	{"sample shows every key", test_sample_keys},
	{"minimal sample file", test_minimal_sample},
	{"defaults", test_defaults},
	{"every key", test_all_keys},
	{"IPv6", test_ipv6},
	{"order and syntax", test_order_and_syntax},
	{"allowed overlaps", test_allowed_overlaps},
	{"bad backend addresses", test_bad_backend_addresses},
	{"balance_factor", test_balance_factor},
	{"error format", test_error_format},
	{"bad sections", test_bad_sections},
	{"fleet", test_fleet},
	{"bad lines", test_bad_lines},
	{"bad values", test_bad_values},
	{"bad numbers", test_bad_numbers},
	{"bad references", test_bad_references},
	{"global keys", test_global_keys},
	{"client caps and idle timeout", test_client_keys},
	{"sockops_cgroup", test_sockops_cgroup},
	{"service keys", test_service_keys},
	{"QUIC-LB keys: read, checked, refused", test_quic_lb_keys},
	{"health check keys", test_health_keys},
	{"server IDs", test_server_ids},
	{"bad global keys", test_bad_global},
	{"bad service keys", test_bad_service_keys},
	{"bad health checks", test_bad_health},
	{"bad server IDs", test_bad_server_ids},
	{"limits", test_limits},
	{"files", test_files},
	{"NUL byte", test_nul_byte},
	{NULL, NULL},
};

static char said[1024];

static void say(const char *line)
{
	snprintf(said, sizeof(said), "%s", line);
}

/*
 * The vnodes default changed: a running ring built with the old default
 * is recognised from the pinned words (by backend name, points = weight x
 * 160), and what a reload moves is the exact share of the hash space.
 */
static void test_legacy_vnodes(void)
{
	struct rs_backend *words = calloc(RS_MAX_BACKENDS, sizeof(*words));
	double moved;

	CU_ASSERT_PTR_NOT_NULL_FATAL(words);
	EXPECT_LOADED(WEB_A "[backend b]\nservice = web\naddress = "
			    "127.0.0.1:2\nweight = 3\n");
	/* Ids are not file order: b is 7, a is 2. */
	snprintf(words[7].name, sizeof(words[7].name), "b");
	words[7].max_points = 3 * 160;
	snprintf(words[2].name, sizeof(words[2].name), "a");
	words[2].max_points = 160;
	CU_ASSERT_TRUE(rs_config_legacy_ring(&cfg, 0, words));
	moved = rs_config_vnodes_moved(&cfg, 0, 160);
	/* Two backends, a quarter of the space each way on average. */
	CU_ASSERT(moved > 0.01 && moved < 0.5);
	CU_ASSERT_EQUAL(rs_config_vnodes_moved(&cfg, 0, 4096), 0.0);
	said[0] = '\0';
	rs_config_default_vnodes(&cfg, words, say);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "service web does not set vnodes"));
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "built with 160"));
	{
		char pct[32];

		snprintf(pct, sizeof(pct), "moves %.1f%%", moved * 100);
		CU_ASSERT_PTR_NOT_NULL(strstr(said, pct));
	}

	/* Running state of another ABI (unreadable): every defaulted service.
	 */
	said[0] = '\0';
	rs_config_default_vnodes(&cfg, NULL, say);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "another ABI: starting needs"));
	{
		char pct[32];

		snprintf(pct, sizeof(pct), "with 160, %.1f%%", moved * 100);
		CU_ASSERT_PTR_NOT_NULL(strstr(said, pct));
	}

	/* Built with the new default already: nothing to keep or say. */
	words[2].max_points = 4096;
	CU_ASSERT_FALSE(rs_config_legacy_ring(&cfg, 0, words));
	said[0] = '\0';
	rs_config_default_vnodes(&cfg, words, say);
	CU_ASSERT_STRING_EQUAL(said, "");

	/* vnodes in the file: the file decides. */
	words[2].max_points = 160;
	EXPECT_LOADED(WEB "vnodes = 4096\n[backend a]\nservice = web\n"
			  "address = 127.0.0.1:1\n");
	CU_ASSERT_FALSE(rs_config_legacy_ring(&cfg, 0, words));
	said[0] = '\0';
	rs_config_default_vnodes(&cfg, NULL, say);
	CU_ASSERT_STRING_EQUAL(said, "");
	/* Unknown names (another config's backends): nothing either. */
	EXPECT_LOADED(WEB "[backend z]\nservice = web\n"
			  "address = 127.0.0.1:1\n");
	CU_ASSERT_FALSE(rs_config_legacy_ring(&cfg, 0, words));
	free(words);
}

static const struct test limit_tests[] = {
	{"not regular files", test_not_regular_files},
	{"size limit", test_size_limit},
	{"input bounds", test_input_bounds},
	{"no services", test_no_services},
	{"covering listens", test_covering_listens},
	{"memory budget", test_memory_budget},
	{"vnodes default changed: running ring kept", test_legacy_vnodes},
	{NULL, NULL},
};

static int cleanup(void)
{
	rs_config_free(&cfg);
	return 0;
}

static int add_suite(const char *name, const struct test *tests)
{
	CU_pSuite suite = CU_add_suite(name, NULL, cleanup);

	if (!suite)
		return -1;
	for (; tests->name; tests++)
		if (!CU_add_test(suite, tests->name, tests->fn))
			return -1;
	return 0;
}

int main(void)
{
	unsigned int failures;
	int ret;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return CU_get_error();
	if (add_suite("addr", addr_tests) ||
	    add_suite("config", config_tests) ||
	    add_suite("config limits", limit_tests)) {
		ret = CU_get_error();
		CU_cleanup_registry();
		return ret ? ret : 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	ret = CU_get_error();
	CU_cleanup_registry();
	return failures != 0 || ret;
}

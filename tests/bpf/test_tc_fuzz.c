// SPDX-License-Identifier: MIT
/*
 * Fuzz the TC program under BPF_PROG_TEST_RUN: a million random frames and
 * mutations of valid QUIC datagrams (byte flips, truncations, extensions,
 * length fields, fragment bits, header lengths) for two cookie services, a
 * plain UDP service and addresses nobody owns.
 *
 * Every run must return TC_ACT_UNSPEC and leave the frame as it was. A
 * userspace model of the program (with quic_cid_decode_keyed for the
 * CID, one service's encrypted)
 * predicts every counter; every CHUNK frames the kernel's counters must
 * equal the model's, and a disagreement is narrowed down to the frame and
 * dumped. Independently of the model, cookie hits may only land on UP or
 * DRAIN backends of the service the CID was sent to.
 *
 * RS_FUZZ_PACKETS and RS_FUZZ_SEED override the count and the seed (the
 * seed is printed, so a failure can be replayed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <linux/pkt_cls.h>

#include "bpf_fixture.h"
#include "frames.h"
#include "quic_cid.h"
#include "tc_fixture.h"

#define SVC_A 0 /* 198.18.0.10:443, [2001:db8::10]:443: sid 2, cid 8 */
#define SVC_B                                                                  \
	1	    /* 198.18.0.11:4433, 198.18.2.0/24 any port: sid 4,        \
		     * CIDs encrypted under config 5 (QUIC-LB four-pass),      \
		     * config 3 still decoded in the clear (a rotation) */
#define SVC_C	  2 /* 198.18.0.12:443, cookie = none */
#define NSVC	  3
#define NBACKENDS 8
#define NCOOKIES  10
#define CHUNK	  4096

static const char *const kind_names[TC_NOUTCOMES] = {
	[TC_NOTHING] = "not ours", [TC_HIT] = "hits",
	[TC_NONE] = "none",	   [TC_UNKNOWN] = "unknown",
	[TC_DOWN] = "down",	   [TC_MALFORMED] = "malformed",
	[TC_ERROR] = "errors",	   [TC_HELD] = "held",
};

struct backend_def {
	uint32_t service;
	uint32_t state;
	bool v4, v6, tcp4;
};

static const struct backend_def bdefs[NBACKENDS] = {
	{SVC_A, RS_BACKEND_UP, true, true, false},
	{SVC_A, RS_BACKEND_DRAIN, true, true, false},
	{SVC_A, RS_BACKEND_DOWN, true, true, false},
	{SVC_A, RS_BACKEND_UP, true, false, false}, /* no IPv6 socket */
	{SVC_A, RS_BACKEND_UP, false, false, true}, /* TCP in the v4 slot */
	{SVC_B, RS_BACKEND_UP, true, false, false},
	{SVC_B, RS_BACKEND_DOWN, true, false, false},
	{SVC_B, RS_BACKEND_DRAIN, true, false, false},
};

struct cookie_def {
	uint32_t service;
	uint32_t sid;
	uint32_t backend;
};

/* The last entry is stale: SVC_A naming SVC_B's backend. */
static const struct cookie_def cdefs[NCOOKIES] = {
	{SVC_A, 0x0101, 0}, {SVC_A, 0x0102, 1},	    {SVC_A, 0x0103, 2},
	{SVC_A, 0x0104, 3}, {SVC_A, 0x0105, 4},	    {SVC_B, 0x0101, 5},
	{SVC_B, 0x0102, 6}, {SVC_B, 0xfffffffe, 7}, {SVC_B, 0x0000, 7},
	{SVC_A, 0x0777, 5},
};

struct bind_def {
	int family;
	const char *addr;
	int plen;
	uint16_t port;
	uint32_t service;
};

static const struct bind_def binds[] = {
	{AF_INET, "198.18.0.10", 32, 443, SVC_A},
	{AF_INET6, "2001:db8::10", 128, 443, SVC_A},
	{AF_INET, "198.18.0.11", 32, 4433, SVC_B},
	{AF_INET, "198.18.2.0", 24, 0, SVC_B},
	{AF_INET, "198.18.0.12", 32, 443, SVC_C},
};

#define NBINDS (sizeof(binds) / sizeof(binds[0]))

static struct steer_tc_bpf *skel;
static struct rs_service services[NSVC];
/* The QUIC-LB configs the model decodes with, as rs_quic_lb has them. */
static struct quic_cid_keys keys[NSVC];
static uint8_t bind_addr[NBINDS][16];
static int socks[2 * NBACKENDS];

struct snap {
	struct rs_service_stats svc[NSVC];
	struct rs_backend_stats be[NBACKENDS];
};

/* ---- random ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	return fixture_rand(&rng);
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* ---- setup ---- */

static int setup(void)
{
	uint8_t id[RS_QUIC_MAX_SERVER_ID];
	uint32_t key;

	skel = tc_fixture_load();
	if (!skel)
		return -1;

	tc_quic_service(&services[SVC_A], SVC_A, 2, 8, 1);
	tc_quic_service(&services[SVC_B], SVC_B, 4, 12, 5);
	tc_quic_service(&services[SVC_C], SVC_C, 2, 8, 1);
	services[SVC_C].cookie = RS_COOKIE_NONE;
	for (key = 0; key < NSVC; key++)
		if (tc_set_service(skel, &services[key]))
			return -1;
	keys[SVC_B].mode[5] = RS_QUIC_LB_ENCRYPTED;
	keys[SVC_B].mode[3] = RS_QUIC_LB_PLAINTEXT;
	for (int i = 0; i < 16; i++)
		keys[SVC_B].key[5][i] = (uint8_t)(0xa0 + 3 * i);
	if (tc_set_quic_lb(skel, NULL, SVC_B, 5, RS_QUIC_LB_ENCRYPTED, 0,
			   keys[SVC_B].key[5]) ||
	    tc_set_quic_lb(skel, NULL, SVC_B, 3, RS_QUIC_LB_PLAINTEXT, 0, NULL))
		return -1;
	for (size_t i = 0; i < NBINDS; i++) {
		const struct bind_def *d = &binds[i];

		/* The model matches binds on the parsed address. */
		if (inet_pton(d->family, d->addr, bind_addr[i]) != 1 ||
		    tc_add_bind(skel, d->family, d->addr, d->plen, d->port,
				d->service))
			return -1;
	}
	for (key = 0; key < NBACKENDS; key++) {
		const struct backend_def *d = &bdefs[key];
		int *s4 = &socks[2 * key], *s6 = &socks[2 * key + 1];

		*s4 = *s6 = -2; /* -2: no socket in the slot, -1: failed */
		if (d->v4 || d->tcp4)
			*s4 = fixture_loopback_socket(
				AF_INET, d->tcp4 ? SOCK_STREAM : SOCK_DGRAM,
				NULL);
		if (d->v6)
			*s6 = fixture_loopback_socket(AF_INET6, SOCK_DGRAM,
						      NULL);
		if (*s4 == -1 || *s6 == -1)
			return -1;
		for (int fam = 0; fam < 2; fam++) {
			uint32_t slot = rs_socket_slot(key, fam);

			if (socks[slot] >= 0 &&
			    tc_set_socket(skel, slot, socks[slot]))
				return -1;
		}
		if (tc_set_backend(skel, key, d->service, d->state))
			return -1;
	}
	for (int i = 0; i < NCOOKIES; i++) {
		const struct rs_service *svc = &services[cdefs[i].service];

		tc_sid_bytes(cdefs[i].sid, svc->quic_server_id_len, id);
		if (tc_set_cookie(skel, svc, id, cdefs[i].backend))
			return -1;
	}
	return 0;
}

/* ---- the model ---- */

static bool prefix_match(const uint8_t *a, const uint8_t *b, int bits)
{
	int bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !rest || !((a[bytes] ^ b[bytes]) & (0xff << (8 - rest)));
}

/* rs_match_bind: longest address prefix, exact port on a tie. */
static int model_bind(int family, const uint8_t *daddr, uint16_t dport)
{
	int best = -1, best_plen = -1;
	bool best_exact = false;

	for (size_t i = 0; i < NBINDS; i++) {
		bool exact = binds[i].port == dport;

		if (binds[i].family != family || (binds[i].port && !exact) ||
		    !prefix_match(daddr, bind_addr[i], binds[i].plen))
			continue;
		if (binds[i].plen > best_plen ||
		    (binds[i].plen == best_plen && exact && !best_exact)) {
			best = (int)binds[i].service;
			best_plen = binds[i].plen;
			best_exact = exact;
		}
	}
	return best;
}

struct verdict {
	enum tc_outcome what;
	uint32_t svc;
	uint32_t backend;
};

/* What the kernel must do with @b, as docs/quic.md describes it. */
static struct verdict model(const uint8_t *b, size_t len)
{
	static const uint8_t host_mac[6] = {0};
	struct verdict v = {TC_NOTHING, 0, 0};
	size_t l4, l4_len, off, plen, dcid_off, cid_len;
	const struct rs_service *svc;
	struct quic_cid_info info;
	uint16_t proto, dport, udp_len;
	const uint8_t *daddr;
	int family, s;

	if (len < ETH_LEN || memcmp(b, host_mac, 6))
		return v;
	proto = get16(b + 12);
	if (proto == 0x0800) {
		size_t hlen;

		if (len < ETH_LEN + 20 || b[14] >> 4 != 4 || (b[14] & 15) < 5 ||
		    b[23] != IPPROTO_UDP || (get16(b + 20) & 0x3fff))
			return v;
		hlen = (size_t)(b[14] & 15) * 4;
		if (get16(b + 16) < hlen + 8)
			return v;
		family = AF_INET;
		daddr = b + 30;
		l4 = ETH_LEN + hlen;
		l4_len = get16(b + 16) - hlen;
	} else if (proto == 0x86dd) {
		if (len < ETH_LEN + 40 || b[14] >> 4 != 6 ||
		    b[20] != IPPROTO_UDP || get16(b + 18) < 8)
			return v;
		family = AF_INET6;
		daddr = b + 38;
		l4 = ETH_LEN + 40;
		l4_len = get16(b + 18);
	} else {
		return v;
	}
	if (len < l4 + 8)
		return v;
	dport = get16(b + l4 + 2);
	udp_len = get16(b + l4 + 4);
	s = model_bind(family, daddr, dport);
	if (s < 0 || services[s].cookie != RS_COOKIE_QUIC)
		return v;
	v.svc = (uint32_t)s;
	svc = &services[s];
	cid_len = svc->quic_cid_len;

	v.what = TC_MALFORMED;
	if (len < l4 + l4_len || udp_len < 8 || udp_len > l4_len)
		return v;
	off = l4 + 8;
	plen = udp_len - 8u;
	if (plen < 1)
		return v;
	if (!(b[off] & 0x80)) {
		if (!(b[off] & 0x40)) {
			v.what = TC_NONE;
			return v;
		}
		if (plen < 1 + cid_len)
			return v;
		dcid_off = off + 1;
	} else {
		uint32_t ver;
		int type = (b[off] >> 4) & 3;
		bool hs;

		if (plen < 6)
			return v;
		ver = (uint32_t)b[off + 1] << 24 | (uint32_t)b[off + 2] << 16 |
		      (uint32_t)b[off + 3] << 8 | b[off + 4];
		v.what = TC_NONE;
		if (ver == 0 || !(b[off] & 0x40) ||
		    (ver != QUIC_V1 && ver != QUIC_V2))
			return v;
		hs = ver == QUIC_V1 ? type == V1_HANDSHAKE
				    : type == V2_HANDSHAKE;
		v.what = TC_MALFORMED;
		if (b[off + 5] > 20 || plen < 6u + b[off + 5])
			return v;
		v.what = TC_NONE;
		if (!hs)
			return v;
		v.what = TC_UNKNOWN;
		if (b[off + 5] != cid_len)
			return v;
		dcid_off = off + 6;
	}

	if (quic_cid_decode_keyed(svc, &keys[svc->id], b + dcid_off, cid_len,
				  &info)) {
		v.what = TC_ERROR;
		return v;
	}
	v.what = TC_UNKNOWN;
	if (info.reason == QUIC_CID_UNROUTABLE)
		v.what = TC_NONE;
	if (info.reason != QUIC_CID_ROUTABLE)
		return v;
	for (int i = 0; i < NCOOKIES; i++) {
		const struct backend_def *d = &bdefs[cdefs[i].backend];
		uint8_t id[RS_QUIC_MAX_SERVER_ID];
		bool v6 = family == AF_INET6;

		if (cdefs[i].service != v.svc)
			continue;
		tc_sid_bytes(cdefs[i].sid, svc->quic_server_id_len, id);
		if (memcmp(id, info.server_id, svc->quic_server_id_len))
			continue;
		if (d->service != v.svc)
			return v; /* stale: unknown */
		v.backend = cdefs[i].backend;
		if (d->state == RS_BACKEND_DOWN)
			v.what = TC_DOWN;
		else if (!v6 && d->tcp4)
			v.what = TC_ERROR; /* never a TCP socket for UDP */
		else if (v6 ? !d->v6 : !d->v4)
			v.what = TC_DOWN;
		else
			v.what = TC_HIT;
		return v;
	}
	return v;
}

static void expect_add(struct snap *s, struct verdict v)
{
	/* A test run: bpf_sk_assign fails, a hit is never assigned. */
	tc_count(&s->svc[v.svc], &s->be[v.backend], v.what, false);
}

/* ---- frames ---- */

static const uint8_t *pick_cid(uint32_t svc, uint8_t *cid)
{
	const struct rs_service *s = &services[svc];
	uint8_t id[RS_QUIC_MAX_SERVER_ID], nonce[QUIC_CID_MAX_LEN];
	int n = 0;

	/* Mostly known server IDs of this service (any backend state). */
	for (int tries = 0; tries < 4; tries++) {
		const struct cookie_def *c = &cdefs[below(NCOOKIES)];

		if (c->service == svc) {
			tc_sid_bytes(c->sid, s->quic_server_id_len, id);
			n = 1;
			break;
		}
	}
	if (!n)
		fill(id, s->quic_server_id_len);
	fill(nonce, sizeof(nonce));
	/* SVC_B: under its encrypted config, or now and then the previous. */
	quic_cid_encode_keyed(
		s, &keys[s->id],
		s->id == SVC_B && below(4) == 0 ? 3 : s->quic_config_id, id,
		nonce, cid);
	if (below(8) == 0) /* another config, or unroutable */
		cid[0] = (uint8_t)(below(8) << 5) | (cid[0] & 0x1f);
	return cid;
}

/* A valid QUIC (or not) datagram to somewhere, in @f. */
static void valid_frame(struct frame *f)
{
	uint8_t p[256], cid[QUIC_CID_MAX_LEN] = {0}; /* replayable by seed */
	uint32_t target = below(6), svc;
	size_t plen = 0, cid_len;
	int family = AF_INET, opts = below(4) ? 0 : (int)below(11);
	uint16_t dport = 443;
	uint8_t dst[16] = {0}, src[16];
	struct udp_headers h;

	/* 0,1 SVC_A v4/v6, 2,3 SVC_B exact/prefix, 4 SVC_C, 5 nobody */
	svc = target < 2 ? SVC_A : target < 4 ? SVC_B : SVC_C;
	if (target == 1)
		family = AF_INET6;
	if (target == 2)
		dport = 4433;
	if (target == 3)
		dport = (uint16_t)rnd();
	inet_pton(family, family == AF_INET6 ? "2001:db8::10" : "198.18.0.10",
		  dst);
	if (svc == SVC_B)
		dst[3] = 11;
	if (target == 3) {
		dst[2] = 2;
		dst[3] = (uint8_t)rnd();
	}
	if (svc == SVC_C)
		dst[3] = 12;
	if (target == 5) {
		fill(dst, 16);
		dport = below(2) ? 443 : (uint16_t)rnd();
	}

	cid_len = services[svc].quic_cid_len;
	pick_cid(svc, cid);
	switch (below(12)) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 4: /* 1-RTT */
		p[0] = 0x40 | (uint8_t)below(64);
		memcpy(p + 1, cid, cid_len);
		plen = 1 + cid_len;
		break;
	case 5:
	case 6:
	case 7:
	case 8: { /* long header, any version and type */
		static const uint32_t vers[] = {QUIC_V1,    QUIC_V1,   QUIC_V1,
						QUIC_V2,    QUIC_V2,   0,
						0xff00001d, 0x1a2a3a4a};
		uint32_t ver = vers[below(8)];

		plen = quic_long_start(p, 0xc0 | (uint8_t)below(64), ver, cid,
				       cid_len);
		p[plen++] = 8; /* SCID */
		fill(p + plen, 8);
		plen += 8;
		break;
	}
	default: /* anything */
		fill(p, 32);
		plen = 1 + below(32);
		break;
	}
	fill(p + plen, 64);
	plen += below(65);

	/* The order of the draws is part of what a seed means: keep it. */
	h = (struct udp_headers){.family = family,
				 .saddr = src,
				 .daddr = dst,
				 .dport = dport,
				 .opt_words = (unsigned int)opts};
	if (family == AF_INET)
		h.frag_off = below(2) ? 0x4000 : 0;
	fill(src, family == AF_INET ? 4 : 16);
	h.sport = (uint16_t)rnd();
	frame_udp_bare(f, &h, p, plen);
}

static void mutate(struct frame *f)
{
	size_t l4 = (f->b[12] == 0x86) ? ETH_LEN + 40
				       : ETH_LEN + (size_t)(f->b[14] & 15) * 4;
	uint8_t *b = f->b;
	size_t pos;

	switch (below(10)) {
	case 0: /* flip a bit in the headers */
	case 1:
		pos = below(f->len < 96 ? (uint32_t)f->len : 96);
		b[pos] ^= (uint8_t)(1 << below(8));
		break;
	case 2: /* a random byte anywhere */
		b[below((uint32_t)f->len)] = (uint8_t)rnd();
		break;
	case 3: /* truncate, but keep an Ethernet header */
		f->len = ETH_LEN + below((uint32_t)(f->len - ETH_LEN + 1));
		break;
	case 4: /* extend: padding or garbage after the datagram */
		pos = below(200);
		if (f->len + pos <= FRAME_MAX) {
			fill(b + f->len, pos);
			f->len += pos;
		}
		break;
	case 5: /* IP length field */
		pos = b[12] == 0x86 ? ETH_LEN + 4 : ETH_LEN + 2;
		put16(b + pos, below(2) ? (uint16_t)rnd()
					: (uint16_t)(get16(b + pos) +
						     (int)below(9) - 4));
		break;
	case 6: /* UDP length field */
		if (l4 + 6 <= f->len)
			put16(b + l4 + 4,
			      below(2) ? (uint16_t)rnd()
				       : (uint16_t)(get16(b + l4 + 4) +
						    (int)below(9) - 4));
		break;
	case 7: /* a long header's DCID length */
		if (l4 + 8 + 6 <= f->len)
			b[l4 + 8 + 5] = below(2) ? (uint8_t)rnd()
						 : (uint8_t)(b[l4 + 8 + 5] +
							     below(5) - 2);
		break;
	case 8: /* IPv4 fragment bits or header length */
		if (b[12] == 0x08 && below(2))
			put16(b + ETH_LEN + 6, (uint16_t)rnd());
		else if (b[12] == 0x08)
			b[ETH_LEN] = 0x40 | (uint8_t)below(16);
		else
			b[ETH_LEN + 6] = (uint8_t)rnd(); /* next header */
		break;
	default: /* the QUIC first byte */
		if (l4 + 8 < f->len)
			b[l4 + 8] = (uint8_t)rnd();
		break;
	}
}

static void random_frame(struct frame *f)
{
	f->len = ETH_LEN + below(200);
	fill(f->b, f->len);
	if (below(2)) { /* to us, as IPv4 or IPv6 */
		memset(f->b, 0, 6);
		put16(f->b + 12, below(2) ? 0x0800 : 0x86dd);
		f->b[ETH_LEN] = below(2) ? 0x45 : 0x60;
	}
}

/* ---- running ---- */

static int snap_take(struct snap *s)
{
	return tc_snapshot(skel, s->svc, NSVC, s->be, NBACKENDS);
}

static bool snap_equal(const struct snap *a, const struct snap *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/*
 * 0: ran, TC_ACT_UNSPEC, frame unchanged. 1: the test run refused an IP frame
 * shorter than its fixed IP header (6.18 does; nothing to check). -1: bad.
 */
static int run_one(const struct frame *f)
{
	uint16_t proto = get16(f->b + 12);
	size_t ip_min = ETH_LEN + (proto == 0x86dd ? 40 : 20);
	int retval = -1, err;

	err = tc_run(skel, f->b, f->len, &retval);
	if (err == -EINVAL && (proto == 0x0800 || proto == 0x86dd) &&
	    f->len < ip_min)
		return 1;
	if (err || retval != TC_ACT_UNSPEC)
		return -1;
	return 0;
}

static void dump(const char *why, const struct frame *f, struct verdict v)
{
	fprintf(stderr, "  tc fuzz: %s; model says %s (service %u backend %u)",
		why, kind_names[v.what], v.svc, v.backend);
	for (size_t i = 0; i < f->len; i++)
		fprintf(stderr, "%s%02x", i % 32 ? "" : "\n    ", f->b[i]);
	fputc('\n', stderr);
}

/* Replay @n frames one by one to name the first the model gets wrong. */
static void narrow_down(const struct frame *chunk, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct verdict v = model(chunk[i].b, chunk[i].len);
		struct snap want, got;

		if (snap_take(&want))
			return;
		if (run_one(&chunk[i]) == 0)
			expect_add(&want, v);
		if (snap_take(&got) || !snap_equal(&want, &got)) {
			dump("counters disagree", &chunk[i], v);
			return;
		}
	}
	fprintf(stderr, "  tc fuzz: the chunk agrees on replay\n");
}

static void test_fuzz(void)
{
	static struct frame chunk[CHUNK];
	const char *env_n = getenv("RS_FUZZ_PACKETS");
	const char *env_seed = getenv("RS_FUZZ_SEED");
	unsigned long long total = env_n ? strtoull(env_n, NULL, 0) : 1000000;
	unsigned long long kinds[TC_NOUTCOMES] = {0}, refused = 0, done = 0;
	uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0)
				 : (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
	struct snap want, got;
	struct timespec t0, t1;
	int bad = 0;
	double secs;

	rng = seed ? seed : 1;
	CU_ASSERT_EQUAL_FATAL(snap_take(&want), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < total && !bad) {
		size_t n = 0;

		for (; n < CHUNK && done < total; n++, done++) {
			struct frame *f = &chunk[n];
			struct verdict v;
			int r;

			if (below(10) == 0) {
				random_frame(f);
			} else {
				valid_frame(f);
				for (int m = below(3) ? (int)below(4) : 0;
				     m > 0; m--)
					mutate(f);
			}
			v = model(f->b, f->len);
			r = run_one(f);
			if (r < 0) {
				dump("not TC_ACT_UNSPEC, or the frame changed",
				     f, v);
				bad++;
				break;
			}
			if (r == 1) {
				refused++;
				continue;
			}
			kinds[v.what]++;
			expect_add(&want, v);
		}
		if (bad)
			break;
		CU_ASSERT_EQUAL_FATAL(snap_take(&got), 0);
		if (!snap_equal(&want, &got)) {
			fprintf(stderr,
				"  tc fuzz: counters disagree within frames "
				"%llu..%llu\n",
				done - n, done);
			narrow_down(chunk, n);
			bad++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(done, total);

	/* Hits only on UP/DRAIN backends with a UDP socket, of any service. */
	for (int i = 0; i < NBACKENDS; i++)
		if (bdefs[i].state == RS_BACKEND_DOWN || bdefs[i].tcp4)
			CU_ASSERT_EQUAL(got.be[i].cookie_hits, 0);
	/* A service without cookies is invisible to the program. */
	CU_ASSERT_EQUAL(memcmp(&got.svc[SVC_C], &(struct rs_service_stats){0},
			       sizeof(got.svc[SVC_C])),
			0);
	/*
	 * The generator reaches every outcome, on both cookie services, but
	 * held: no backend here restarts (test_steer_tc holds one).
	 */
	for (int k = 0; k < TC_HELD && total >= 100000; k++)
		CU_ASSERT(kinds[k] > 0);
	if (total >= 100000) {
		CU_ASSERT(got.svc[SVC_A].cookie_malformed > 0 &&
			  got.svc[SVC_B].cookie_malformed > 0);
		CU_ASSERT(got.svc[SVC_A].cookie_unknown > 0 &&
			  got.svc[SVC_B].cookie_unknown > 0);
		for (int i = 0; i < NBACKENDS; i++)
			if (bdefs[i].state != RS_BACKEND_DOWN && !bdefs[i].tcp4)
				CU_ASSERT(got.be[i].cookie_hits > 0);
	}

	printf("\ntc fuzz: %llu frames in %.1f s (seed %#llx), all "
	       "TC_ACT_UNSPEC "
	       "and unchanged; %llu refused by the test run; %s %llu, %s "
	       "%llu, %s %llu, %s %llu, %s %llu, %s %llu, %s %llu; model %s\n",
	       done, secs, (unsigned long long)seed, refused,
	       kind_names[TC_HIT], kinds[TC_HIT], kind_names[TC_NONE],
	       kinds[TC_NONE], kind_names[TC_UNKNOWN], kinds[TC_UNKNOWN],
	       kind_names[TC_DOWN], kinds[TC_DOWN], kind_names[TC_MALFORMED],
	       kinds[TC_MALFORMED], kind_names[TC_ERROR], kinds[TC_ERROR],
	       kind_names[TC_NOTHING], kinds[TC_NOTHING],
	       bad ? "DISAGREES" : "agrees");
}

static void teardown(void)
{
	for (int i = 0; i < 2 * NBACKENDS; i++)
		if (socks[i] >= 0)
			close(socks[i]);
	steer_tc_bpf__destroy(skel);
}

static const struct fixture_test tests[] = {
	{"random and mutated frames: TC_ACT_UNSPEC, model agrees", test_fuzz},
};

int main(void)
{
	return fixture_main("steer_tc fuzz", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

// SPDX-License-Identifier: MIT
/*
 * The TC program on crafted Ethernet frames under BPF_PROG_TEST_RUN, with
 * real sockets in its SOCKMAP: every frame must come back untouched with
 * TC_ACT_UNSPEC and move exactly the counters its kind calls for, and nothing
 * else. Then once for real: attached to the loopback ingress of a private
 * network namespace, datagrams must land on the socket the CID names.
 *
 * Under BPF_PROG_TEST_RUN bpf_sk_assign always fails with -EOPNOTSUPP (the
 * skb is not at TC ingress), so there a cookie hit shows as the backend's
 * cookie_hits + 1 and the service's errors + 1, assigned unchanged; the
 * live test checks that the kernel really delivers and assigned moves.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf_fixture.h"
#include "dataplane_probe.h"
#include "frames.h"
#include "quic_cid.h"
#include "tc_fixture.h"

#define SVC_Q	  0 /* udp 198.18.0.10:443, [2001:db8::10]:443: sid 2, cid 8 */
#define SVC_Q4	  1 /* udp 198.18.0.11:443: sid 4, cid 12, config 5 */
#define SVC_PLAIN 2 /* udp 198.18.0.12:443, cookie = none */
#define SVC_RAND  3 /* udp 198.18.0.13:443, parameters vary per test */
#define NSVC	  4
#define NBACKENDS 11
#define STALE_SID 0x0107 /* SVC_Q cookie entry naming SVC_Q4's backend 5 */

struct backend_def {
	uint32_t service;
	uint32_t state;
	uint32_t sid; /* server ID, big-endian in quic_server_id_len bytes */
	bool v4, v6;  /* UDP sockets in the slots */
	bool tcp4;    /* a TCP listener in the IPv4 slot instead */
};

static const struct backend_def bdefs[NBACKENDS] = {
	{SVC_Q, RS_BACKEND_UP, 0x0101, true, true, false},
	{SVC_Q, RS_BACKEND_UP, 0x0102, true, true, false},
	{SVC_Q, RS_BACKEND_DRAIN, 0x0103, true, true, false},
	{SVC_Q, RS_BACKEND_DOWN, 0x0104, true, true, false},
	{SVC_Q, RS_BACKEND_UP, 0x0105, true, false, false}, /* no IPv6 */
	{SVC_Q4, RS_BACKEND_UP, 0xa0000001, true, false, false},
	{SVC_Q, RS_BACKEND_UP, 0x0106, false, false, true},
	{SVC_Q4, RS_BACKEND_DOWN, 0xa0000002, true, false, false},
	/* SVC_RAND: server IDs chosen by the agreement test */
	{SVC_RAND, RS_BACKEND_UP, 0, true, false, false},
	{SVC_RAND, RS_BACKEND_DRAIN, 0, true, false, false},
	{SVC_RAND, RS_BACKEND_DOWN, 0, true, false, false},
};

static const char *const svc_addr4[NSVC] = {"198.18.0.10", "198.18.0.11",
					    "198.18.0.12", "198.18.0.13"};

static struct steer_tc_bpf *skel;
static struct rs_service services[NSVC];
static int sock4[NBACKENDS], sock6[NBACKENDS];
static bool live_mode; /* a hit is a real assignment (live test only) */

struct snap {
	struct rs_service_stats svc[NSVC];
	struct rs_backend_stats be[NBACKENDS];
};

/* ---- maps, with services[] by id ---- */

static void quic_service(uint32_t id, uint8_t sid_len, uint8_t cid_len,
			 uint8_t config)
{
	tc_quic_service(&services[id], id, sid_len, cid_len, config);
}

static int set_service(uint32_t id)
{
	return tc_set_service(skel, &services[id]);
}

static int set_cookie(uint32_t svc, const uint8_t *sid, uint32_t backend)
{
	return tc_set_cookie(skel, &services[svc], sid, backend);
}

static int del_cookie(uint32_t svc, const uint8_t *sid)
{
	return tc_del_cookie(skel, &services[svc], sid);
}

/* ---- sockets ---- */

static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* ---- frames ---- */

/* The CID @svc issues for server ID @sid; @low: low 5 bits of octet 0. */
static size_t make_cid(uint32_t svc, uint32_t sid, uint8_t low, uint8_t *cid)
{
	uint8_t nonce[QUIC_CID_MAX_LEN], id[RS_QUIC_MAX_SERVER_ID];
	int n;

	for (int i = 0; i < QUIC_CID_MAX_LEN; i++)
		nonce[i] = (uint8_t)(0x30 + 7 * i);
	nonce[0] = low;
	tc_sid_bytes(sid, services[svc].quic_server_id_len, id);
	n = quic_cid_encode(&services[svc], id, nonce, cid);
	CU_ASSERT_EQUAL(n, services[svc].quic_cid_len);
	return n > 0 ? (size_t)n : 0;
}

static const char *svc_addr(uint32_t svc, int family)
{
	return family == AF_INET ? svc_addr4[svc] : "2001:db8::10";
}

static void short_frame(struct frame *f, int family, uint32_t svc,
			const uint8_t *cid, size_t n)
{
	uint8_t p[128];
	size_t plen = quic_short(p, cid, n);

	frame_udp(f, family, svc_addr(svc, family), 443, 0, p, plen);
}

static void long_frame(struct frame *f, int family, uint32_t svc,
		       uint32_t version, int type, const uint8_t *cid, size_t n)
{
	uint8_t p[128];
	size_t plen = quic_long(p, version, type, cid, n);

	frame_udp(f, family, svc_addr(svc, family), 443, 0, p, plen);
}

/* ---- running and counting ---- */

static int snap_take(struct snap *s)
{
	return tc_snapshot(skel, s->svc, NSVC, s->be, NBACKENDS);
}

static void expect_add(struct snap *s, uint32_t svc, enum tc_outcome what,
		       uint32_t backend)
{
	tc_count(&s->svc[svc], &s->be[backend], what, live_mode);
}

#define CMP(field, fmt, ...)                                                   \
	do {                                                                   \
		if (want->field != got->field) {                               \
			fprintf(stderr, "  %s: " fmt " is %llu, want %llu\n",  \
				what, __VA_ARGS__,                             \
				(unsigned long long)got->field,                \
				(unsigned long long)want->field);              \
			diffs++;                                               \
		}                                                              \
	} while (0)

/* Every counter of every service and backend must be as expected. */
static int snap_diff(const char *what, const struct snap *want,
		     const struct snap *got)
{
	int diffs = 0;

	for (int i = 0; i < NSVC; i++) {
		CMP(svc[i].lookups, "service %d lookups", i);
		CMP(svc[i].no_backend, "service %d no_backend", i);
		CMP(svc[i].errors, "service %d errors", i);
		CMP(svc[i].walk_limit, "service %d walk_limit", i);
		CMP(svc[i].cookie_none, "service %d cookie_none", i);
		CMP(svc[i].cookie_unknown, "service %d cookie_unknown", i);
		CMP(svc[i].cookie_down, "service %d cookie_down", i);
		CMP(svc[i].cookie_malformed, "service %d cookie_malformed", i);
		CMP(svc[i].held, "service %d held", i);
	}
	for (int i = 0; i < NBACKENDS; i++) {
		CMP(be[i].assigned, "backend %d assigned", i);
		CMP(be[i].sticky_hits, "backend %d sticky_hits", i);
		CMP(be[i].spills, "backend %d spills", i);
		CMP(be[i].cookie_hits, "backend %d cookie_hits", i);
	}
	return diffs;
}

/*
 * Run @len bytes of @f: TC_ACT_UNSPEC, frame untouched, exactly @what counted.
 * With @may_refuse the kernel may also turn the frame down (-EINVAL).
 */
static void check_run(const char *what, const struct frame *f, size_t len,
		      uint32_t svc, enum tc_outcome exp, uint32_t backend,
		      bool may_refuse)
{
	struct snap want, got;
	int retval = -1, err;

	CU_ASSERT_EQUAL_FATAL(snap_take(&want), 0);
	err = tc_run(skel, f->b, len, &retval);
	CU_ASSERT_EQUAL_FATAL(snap_take(&got), 0);
	if (may_refuse && err == -EINVAL) {
		CU_ASSERT_EQUAL(snap_diff(what, &want, &got), 0);
		return;
	}
	expect_add(&want, svc, exp, backend);
	/* Only a held datagram is dropped; the rest go on to sk_lookup. */
	if (err || retval != (exp == TC_HELD ? TC_ACT_SHOT : TC_ACT_UNSPEC))
		fprintf(stderr, "  %s: run %d (%s), retval %d\n", what, err,
			strerror(-err), retval);
	CU_ASSERT_EQUAL(err, 0);
	CU_ASSERT_EQUAL(retval, exp == TC_HELD ? TC_ACT_SHOT : TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(snap_diff(what, &want, &got), 0);
}

static void check_len(const char *what, const struct frame *f, size_t len,
		      uint32_t svc, enum tc_outcome exp, uint32_t backend)
{
	check_run(what, f, len, svc, exp, backend, false);
}

static void check(const char *what, const struct frame *f, uint32_t svc,
		  enum tc_outcome exp, uint32_t backend)
{
	check_run(what, f, f->len, svc, exp, backend, false);
}

/* ---- setup ---- */

static int setup(void)
{
	uint8_t id[RS_QUIC_MAX_SERVER_ID];

	skel = tc_fixture_load();
	if (!skel)
		return -1;
	quic_service(SVC_Q, 2, 8, 1);
	quic_service(SVC_Q4, 4, 12, 5);
	quic_service(SVC_PLAIN, 2, 8, 1);
	services[SVC_PLAIN].cookie = RS_COOKIE_NONE;
	quic_service(SVC_RAND, 3, 10, 0);
	for (uint32_t s = 0; s < NSVC; s++)
		if (set_service(s) ||
		    tc_add_bind(skel, AF_INET, svc_addr4[s], 32, 443, s))
			return -1;
	if (tc_add_bind(skel, AF_INET6, "2001:db8::10", 128, 443, SVC_Q))
		return -1;

	for (uint32_t b = 0; b < NBACKENDS; b++) {
		const struct backend_def *d = &bdefs[b];

		sock4[b] = sock6[b] = -1;
		if (tc_set_backend(skel, b, d->service, d->state))
			return -1;
		if (d->v4)
			sock4[b] = fixture_loopback_socket(AF_INET, SOCK_DGRAM,
							   NULL);
		if (d->tcp4)
			sock4[b] = fixture_loopback_socket(AF_INET, SOCK_STREAM,
							   NULL);
		if (d->v6)
			sock6[b] = fixture_loopback_socket(AF_INET6, SOCK_DGRAM,
							   NULL);
		if ((d->v4 || d->tcp4) &&
		    (sock4[b] < 0 ||
		     tc_set_socket(skel, rs_socket_slot(b, 0), sock4[b])))
			return -1;
		if (d->v6 &&
		    (sock6[b] < 0 ||
		     tc_set_socket(skel, rs_socket_slot(b, 1), sock6[b])))
			return -1;
		if (d->service == SVC_RAND)
			continue;
		tc_sid_bytes(d->sid, services[d->service].quic_server_id_len,
			     id);
		if (set_cookie(d->service, id, b))
			return -1;
	}
	tc_sid_bytes(STALE_SID, 2, id);
	return set_cookie(SVC_Q, id, 5);
}

/* ---- tests ---- */

static void test_short_header_hits(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n;

	for (uint32_t b = 0; b < 2; b++) {
		n = make_cid(SVC_Q, bdefs[b].sid, (uint8_t)(b * 7), cid);
		short_frame(&f, AF_INET, SVC_Q, cid, n);
		check("short v4", &f, SVC_Q, TC_HIT, b);
		short_frame(&f, AF_INET6, SVC_Q, cid, n);
		check("short v6", &f, SVC_Q, TC_HIT, b);
	}
	/* Low bits of octet 0 are random: any value must be accepted. */
	for (uint8_t low = 0; low < 32; low++) {
		n = make_cid(SVC_Q, bdefs[1].sid, low, cid);
		short_frame(&f, AF_INET, SVC_Q, cid, n);
		check("short v4, low bits", &f, SVC_Q, TC_HIT, 1);
	}
	n = make_cid(SVC_Q4, bdefs[5].sid, 3, cid);
	short_frame(&f, AF_INET, SVC_Q4, cid, n);
	check("short v4, 4-byte server ID, 12-byte CID", &f, SVC_Q4, TC_HIT, 5);
}

static void test_long_header_handshake_hits(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 9, cid);

	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("v1 Handshake v4", &f, SVC_Q, TC_HIT, 0);
	long_frame(&f, AF_INET6, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("v1 Handshake v6", &f, SVC_Q, TC_HIT, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V2, V2_HANDSHAKE, cid, n);
	check("v2 Handshake v4", &f, SVC_Q, TC_HIT, 0);
	long_frame(&f, AF_INET6, SVC_Q, QUIC_V2, V2_HANDSHAKE, cid, n);
	check("v2 Handshake v6", &f, SVC_Q, TC_HIT, 0);
	n = make_cid(SVC_Q4, bdefs[5].sid, 0, cid);
	long_frame(&f, AF_INET, SVC_Q4, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("v1 Handshake, 12-byte CID", &f, SVC_Q4, TC_HIT, 5);
}

static void test_ipv4_options_hit(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[1].sid, 1, cid), plen;

	plen = quic_short(p, cid, n);
	for (int words = 1; words <= 10; words++) {
		frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, words, p, plen);
		check("short v4 with options", &f, SVC_Q, TC_HIT, 1);
	}
	plen = quic_long(p, QUIC_V1, V1_HANDSHAKE, cid, n);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 10, p, plen);
	check("Handshake v4 with 40 bytes of options", &f, SVC_Q, TC_HIT, 1);
}

static void test_ethernet_padding_hit(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[16];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 0, cid);

	/* Shortest short header: 1 + 8 bytes, 51-byte frame padded to 60. */
	p[0] = 0x40;
	memcpy(p + 1, cid, n);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, 1 + n);
	CU_ASSERT_EQUAL(f.len, 51);
	memset(f.b + f.len, 0, 60 - f.len);
	check_len("padded frame", &f, 60, SVC_Q, TC_HIT, 0);
}

static void test_drain_keeps_connections(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[2].sid, 4, cid);

	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("DRAIN short v4", &f, SVC_Q, TC_HIT, 2);
	short_frame(&f, AF_INET6, SVC_Q, cid, n);
	check("DRAIN short v6", &f, SVC_Q, TC_HIT, 2);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("DRAIN Handshake", &f, SVC_Q, TC_HIT, 2);
}

static void test_client_chosen_dcid_left_alone(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	struct frame f;
	/* Even a DCID that looks like ours: the client chose it. */
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 0, cid);

	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_INITIAL, cid, n);
	check("v1 Initial", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET6, SVC_Q, QUIC_V1, V1_INITIAL, cid, n);
	check("v1 Initial v6", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_0RTT, cid, n);
	check("v1 0-RTT", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_RETRY, cid, n);
	check("v1 Retry", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V2, V2_INITIAL, cid, n);
	check("v2 Initial", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V2, V2_0RTT, cid, n);
	check("v2 0-RTT", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V2, V2_RETRY, cid, n);
	check("v2 Retry", &f, SVC_Q, TC_NONE, 0);
	/* Version Negotiation: version 0, the rest of byte 0 arbitrary. */
	long_frame(&f, AF_INET, SVC_Q, 0, V1_HANDSHAKE, cid, n);
	f.b[f.l4 + 8] = 0x80 | 0x2a;
	check("Version Negotiation", &f, SVC_Q, TC_NONE, 0);
	/* A reserved (greased) version says nothing about its types. */
	long_frame(&f, AF_INET, SVC_Q, 0x1a2a3a4a, V1_HANDSHAKE, cid, n);
	check("unknown version", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, 0xff00001d, V1_HANDSHAKE, cid, n);
	check("draft-29 version", &f, SVC_Q, TC_NONE, 0);
	/* Long header without the fixed bit. */
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	f.b[f.l4 + 8] &= (uint8_t)~0x40;
	check("Handshake, fixed bit clear", &f, SVC_Q, TC_NONE, 0);
	/* Config 0b111: a CID its server made unroutable on purpose. */
	cid[0] = (uint8_t)(7 << 5) | (cid[0] & 0x1f);
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("unroutable CID (config 7)", &f, SVC_Q, TC_NONE, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("unroutable CID in Handshake", &f, SVC_Q, TC_NONE, 0);
	/* Short header without the fixed bit: not QUIC. */
	n = quic_short(p, cid, n);
	p[0] = 0x01;
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, n);
	check("fixed bit clear", &f, SVC_Q, TC_NONE, 0);
}

static void test_unknown_cids(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], big[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n;

	n = make_cid(SVC_Q, 0x0999, 0, cid);
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("unknown server ID", &f, SVC_Q, TC_UNKNOWN, 0);
	long_frame(&f, AF_INET6, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("unknown server ID, Handshake v6", &f, SVC_Q, TC_UNKNOWN, 0);

	for (uint8_t cfg = 0; cfg < 7; cfg++) {
		if (cfg == services[SVC_Q].quic_config_id)
			continue;
		n = make_cid(SVC_Q, bdefs[0].sid, 0, cid);
		cid[0] = (uint8_t)(cfg << 5) | (cid[0] & 0x1f);
		short_frame(&f, AF_INET, SVC_Q, cid, n);
		check("wrong config bits", &f, SVC_Q, TC_UNKNOWN, 0);
	}

	/*
	 * A Handshake DCID of another length than quic_cid_len, even with
	 * the right config bits and a known server ID up front.
	 */
	memset(big, 0x5a, sizeof(big));
	big[0] = (uint8_t)(services[SVC_Q].quic_config_id << 5);
	tc_sid_bytes(bdefs[0].sid, 2, big + 1);
	for (size_t len = 0; len <= QUIC_CID_MAX_LEN; len++) {
		if (len == services[SVC_Q].quic_cid_len)
			continue;
		long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, big, len);
		check("Handshake DCID of another length", &f, SVC_Q, TC_UNKNOWN,
		      0);
	}

	/* rs_cookies naming a backend of another service: never followed. */
	n = make_cid(SVC_Q, STALE_SID, 0, cid);
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("stale entry to another service's backend", &f, SVC_Q, TC_UNKNOWN,
	      0);

	/* SVC_Q's CID sent to SVC_Q4: 12 bytes read, config 1 != 5. */
	n = make_cid(SVC_Q, bdefs[0].sid, 0, cid);
	memset(cid + n, 0x77, 8);
	short_frame(&f, AF_INET, SVC_Q4, cid, 12);
	check("another service's CID", &f, SVC_Q4, TC_UNKNOWN, 0);
}

static void test_down_backends(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n;

	n = make_cid(SVC_Q, bdefs[3].sid, 0, cid);
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("DOWN backend", &f, SVC_Q, TC_DOWN, 0);
	long_frame(&f, AF_INET6, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	check("DOWN backend, Handshake v6", &f, SVC_Q, TC_DOWN, 0);
	n = make_cid(SVC_Q4, bdefs[7].sid, 0, cid);
	short_frame(&f, AF_INET, SVC_Q4, cid, n);
	check("DOWN backend of SVC_Q4", &f, SVC_Q4, TC_DOWN, 0);

	/* Backend 4 has an IPv4 socket only. */
	n = make_cid(SVC_Q, bdefs[4].sid, 0, cid);
	short_frame(&f, AF_INET6, SVC_Q, cid, n);
	check("no socket for the family", &f, SVC_Q, TC_DOWN, 0);
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("socket for the family", &f, SVC_Q, TC_HIT, 4);

	/* A backend that exits empties its slot by itself. */
	close(sock4[4]);
	check("closed socket", &f, SVC_Q, TC_DOWN, 0);
	sock4[4] = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
	CU_ASSERT_FATAL(sock4[4] >= 0);
	CU_ASSERT_EQUAL_FATAL(
		tc_set_socket(skel, rs_socket_slot(4, 0), sock4[4]), 0);
	check("socket back", &f, SVC_Q, TC_HIT, 4);

	/* A state word flip is all it takes, both ways. */
	CU_ASSERT_EQUAL_FATAL(tc_set_backend(skel, 4, SVC_Q, RS_BACKEND_DOWN),
			      0);
	check("backend marked DOWN", &f, SVC_Q, TC_DOWN, 0);
	CU_ASSERT_EQUAL_FATAL(tc_set_backend(skel, 4, SVC_Q, RS_BACKEND_UP), 0);
	check("backend UP again", &f, SVC_Q, TC_HIT, 4);

	/*
	 * restart_grace: the daemon holds the IPv4 slot (held_slots bit 0);
	 * while it is empty the datagram waits (dropped), for UP and DRAIN.
	 */
	CU_ASSERT_EQUAL_FATAL(
		tc_set_backend_held(skel, 4, SVC_Q, RS_BACKEND_UP, 1), 0);
	check("held slot, socket there", &f, SVC_Q, TC_HIT, 4);
	close(sock4[4]);
	check("held slot, socket gone", &f, SVC_Q, TC_HELD, 0);
	CU_ASSERT_EQUAL_FATAL(
		tc_set_backend_held(skel, 4, SVC_Q, RS_BACKEND_DRAIN, 1), 0);
	check("held slot, DRAIN, socket gone", &f, SVC_Q, TC_HELD, 0);
	CU_ASSERT_EQUAL_FATAL(
		tc_set_backend_held(skel, 4, SVC_Q, RS_BACKEND_DOWN, 1), 0);
	check("held slot, DOWN", &f, SVC_Q, TC_DOWN, 0);
	short_frame(&f, AF_INET6, SVC_Q, cid, n);
	CU_ASSERT_EQUAL_FATAL(
		tc_set_backend_held(skel, 4, SVC_Q, RS_BACKEND_UP, 1), 0);
	check("IPv6, only the IPv4 slot held", &f, SVC_Q, TC_DOWN, 0);
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	CU_ASSERT_EQUAL_FATAL(
		tc_set_backend_held(skel, 4, SVC_Q, RS_BACKEND_UP, 0), 0);
	check("grace over (nothing held)", &f, SVC_Q, TC_DOWN, 0);
	sock4[4] = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
	CU_ASSERT_FATAL(sock4[4] >= 0);
	CU_ASSERT_EQUAL_FATAL(
		tc_set_socket(skel, rs_socket_slot(4, 0), sock4[4]), 0);
	check("new socket", &f, SVC_Q, TC_HIT, 4);
}

static void test_wrong_socket_kind_refused(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[6].sid, 0, cid);

	/* A TCP listener in the slot: never handed a UDP datagram. */
	short_frame(&f, AF_INET, SVC_Q, cid, n);
	check("TCP socket in the slot", &f, SVC_Q, TC_ERROR, 0);
	/* An AF_INET socket in the IPv6 slot: refused too. */
	CU_ASSERT_EQUAL_FATAL(
		tc_set_socket(skel, rs_socket_slot(6, 1), sock4[0]), 0);
	short_frame(&f, AF_INET6, SVC_Q, cid, n);
	check("AF_INET socket for an IPv6 datagram", &f, SVC_Q, TC_ERROR, 0);
	CU_ASSERT_EQUAL(bpf_map_delete_elem(bpf_map__fd(skel->maps.rs_sockets),
					    &(uint32_t){rs_socket_slot(6, 1)}),
			0);
}

static void test_not_quic_on_the_port(void)
{
	static const uint8_t dns[] = {0x12, 0x34, 0x01, 0x00, 0x00, 0x01,
				      0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	static const char http[] = "GET / HTTP/1.0\r\n\r\n";
	static const uint8_t stun[] = {0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4,
				       0x42, 1,	   2,	 3,    4,    5,	   6,
				       7,    8,	   9,	 10,   11,   12};
	struct frame f;

	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, dns, sizeof(dns));
	check("DNS query", &f, SVC_Q, TC_NONE, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, stun, sizeof(stun));
	check("STUN binding request", &f, SVC_Q, TC_NONE, 0);
	/* 'G' has the fixed bit: read as a short header, 'E' >> 5 = 2. */
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, (const uint8_t *)http,
		  sizeof(http) - 1);
	check("text with the fixed bit", &f, SVC_Q, TC_UNKNOWN, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, NULL, 0);
	check("empty datagram", &f, SVC_Q, TC_MALFORMED, 0);
	frame_udp(&f, AF_INET6, "2001:db8::10", 443, 0, NULL, 0);
	check("empty datagram v6", &f, SVC_Q, TC_MALFORMED, 0);
}

static void test_malformed(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 0, cid), plen;

	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	f.b[f.l4 + 8 + 5] = 21;
	check("DCID length 21", &f, SVC_Q, TC_MALFORMED, 0);
	f.b[f.l4 + 8 + 5] = 255;
	check("DCID length 255", &f, SVC_Q, TC_MALFORMED, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_INITIAL, cid, n);
	f.b[f.l4 + 8 + 5] = 21;
	check("Initial, DCID length 21", &f, SVC_Q, TC_MALFORMED, 0);

	/* Datagrams that end inside the QUIC header (consistent lengths). */
	plen = quic_long(p, QUIC_V1, V1_HANDSHAKE, cid, n);
	for (size_t cut = 1; cut < 6 + n; cut++) {
		frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, cut);
		check("long header cut short", &f, SVC_Q, TC_MALFORMED, 0);
	}
	plen = quic_short(p, cid, n);
	for (size_t cut = 1; cut < 1 + n; cut++) {
		frame_udp(&f, AF_INET6, "2001:db8::10", 443, 0, p, cut);
		check("short header cut short", &f, SVC_Q, TC_MALFORMED, 0);
	}

	/* Length fields that disagree with each other or the frame. */
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	put16(f.b + f.l4 + 4, 7);
	check("UDP length 7", &f, SVC_Q, TC_MALFORMED, 0);
	put16(f.b + f.l4 + 4, (uint16_t)(8 + plen + 1));
	check("UDP length beyond the IP packet", &f, SVC_Q, TC_MALFORMED, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	put16(f.b + ETH_LEN + 2, (uint16_t)(f.len - ETH_LEN + 1));
	check("IPv4 total length beyond the frame", &f, SVC_Q, TC_MALFORMED, 0);
	frame_udp(&f, AF_INET6, "2001:db8::10", 443, 0, p, plen);
	put16(f.b + ETH_LEN + 4, (uint16_t)(f.len - ETH_LEN - 40 + 1));
	check("IPv6 payload length beyond the frame", &f, SVC_Q, TC_MALFORMED,
	      0);
	/* A UDP length shorter than the IP payload is fine (RFC 768). */
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	put16(f.b + f.l4 + 4, (uint16_t)(8 + 1 + n));
	check("UDP length short of the IP payload", &f, SVC_Q, TC_HIT, 0);
	put16(f.b + f.l4 + 4, (uint16_t)(8 + n));
	check("UDP length cuts the DCID", &f, SVC_Q, TC_MALFORMED, 0);
}

static void test_not_for_a_cookie_service(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 0, cid);
	size_t plen = quic_short(p, cid, n);

	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 444, 0, p, plen);
	check("other port", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET, "198.18.0.99", 443, 0, p, plen);
	check("other address", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET6, "2001:db8::11", 443, 0, p, plen);
	check("other IPv6 address", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_PLAIN], 443, 0, p, plen);
	check("service with cookie = none", &f, SVC_PLAIN, TC_NOTHING, 0);

	services[SVC_Q].enabled = 0;
	CU_ASSERT_EQUAL_FATAL(set_service(SVC_Q), 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	check("disabled service", &f, SVC_Q, TC_NOTHING, 0);
	services[SVC_Q].enabled = 1;
	CU_ASSERT_EQUAL_FATAL(set_service(SVC_Q), 0);

	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	f.b[ETH_LEN + 9] = IPPROTO_TCP;
	check("TCP", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	put16(f.b + ETH_LEN + 6, 0x2000);
	check("first fragment (MF)", &f, SVC_Q, TC_NOTHING, 0);
	put16(f.b + ETH_LEN + 6, 0x0010);
	check("later fragment (offset)", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	f.b[ETH_LEN] = 0x44;
	check("IPv4 header length 16", &f, SVC_Q, TC_NOTHING, 0);
	f.b[ETH_LEN] = 0x55;
	check("IP version 5", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	put16(f.b + ETH_LEN + 2, 20 + 7);
	check("IPv4 total length without a UDP header", &f, SVC_Q, TC_NOTHING,
	      0);
	frame_udp(&f, AF_INET6, "2001:db8::10", 443, 0, p, plen);
	f.b[ETH_LEN + 6] = 0; /* hop-by-hop options first */
	check("IPv6 extension header", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET6, "2001:db8::10", 443, 0, p, plen);
	put16(f.b + ETH_LEN + 4, 0);
	check("IPv6 jumbogram length 0", &f, SVC_Q, TC_NOTHING, 0);

	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	put16(f.b + 12, 0x0806);
	check("ARP ethertype", &f, SVC_Q, TC_NOTHING, 0);
	put16(f.b + 12, 0x8100);
	check("VLAN tag", &f, SVC_Q, TC_NOTHING, 0);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 0, p, plen);
	f.b[0] = 0x01;
	check("multicast destination MAC", &f, SVC_Q, TC_NOTHING, 0);
	f.b[0] = 0x02;
	check("another host's MAC", &f, SVC_Q, TC_NOTHING, 0);
}

/*
 * A valid datagram cut at every length: the kernel refuses frames shorter
 * than an Ethernet header, and 6.18 also IP frames shorter than the fixed
 * IP header (-EINVAL from the test run; a kernel that runs them must see
 * nothing counted); until the UDP header is complete the frame belongs to
 * no service; from there on the IP length no longer fits the frame:
 * malformed. Only the whole frame is a hit.
 */
static void truncate_all(const char *what, const struct frame *f, uint32_t svc,
			 uint32_t backend)
{
	size_t ip_min = ETH_LEN + (f->b[12] == 0x86 ? 40 : 20);
	char label[96];

	for (size_t len = 0; len <= f->len; len++) {
		snprintf(label, sizeof(label), "%s cut at %zu", what, len);
		if (len < ETH_LEN) {
			int retval;

			CU_ASSERT_EQUAL(tc_run(skel, f->b, len, &retval),
					-EINVAL);
		} else if (len < ip_min) {
			check_run(label, f, len, svc, TC_NOTHING, 0, true);
		} else if (len < f->l4 + 8) {
			check_len(label, f, len, svc, TC_NOTHING, 0);
		} else if (len < f->len) {
			check_len(label, f, len, svc, TC_MALFORMED, 0);
		} else {
			check_len(label, f, len, svc, TC_HIT, backend);
		}
	}
}

static void test_truncated_at_every_offset(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 0, cid), plen;

	short_frame(&f, AF_INET, SVC_Q, cid, n);
	truncate_all("short v4", &f, SVC_Q, 0);
	short_frame(&f, AF_INET6, SVC_Q, cid, n);
	truncate_all("short v6", &f, SVC_Q, 0);
	long_frame(&f, AF_INET, SVC_Q, QUIC_V1, V1_HANDSHAKE, cid, n);
	truncate_all("Handshake v4", &f, SVC_Q, 0);
	long_frame(&f, AF_INET6, SVC_Q, QUIC_V2, V2_HANDSHAKE, cid, n);
	truncate_all("v2 Handshake v6", &f, SVC_Q, 0);
	plen = quic_short(p, cid, n);
	frame_udp(&f, AF_INET, svc_addr4[SVC_Q], 443, 5, p, plen);
	truncate_all("short v4 with options", &f, SVC_Q, 0);
	n = make_cid(SVC_Q4, bdefs[5].sid, 0, cid);
	long_frame(&f, AF_INET, SVC_Q4, QUIC_V1, V1_HANDSHAKE, cid, n);
	truncate_all("Handshake v4, 12-byte CID", &f, SVC_Q4, 5);
}

static void test_bad_service_config_is_an_error(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct frame f;
	size_t n = make_cid(SVC_Q, bdefs[0].sid, 0, cid);
	static const uint8_t bad[][2] = {{0, 8}, {16, 20}, {2, 2}, {2, 21}};

	short_frame(&f, AF_INET, SVC_Q, cid, n);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		services[SVC_Q].quic_server_id_len = bad[i][0];
		services[SVC_Q].quic_cid_len = bad[i][1];
		CU_ASSERT_EQUAL_FATAL(set_service(SVC_Q), 0);
		check("invalid sid/cid length in the map", &f, SVC_Q, TC_ERROR,
		      0);
	}
	quic_service(SVC_Q, 2, 8, 1);
	CU_ASSERT_EQUAL_FATAL(set_service(SVC_Q), 0);
	check("valid again", &f, SVC_Q, TC_HIT, 0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return fixture_rand(&rng_state);
}

/*
 * The encoder, the decoder and the BPF program agree: for random service
 * parameters and random CIDs, quic_cid_decode's reason and server ID
 * predict exactly which counter the program moves.
 */
static void test_cid_codec_agrees_with_bpf(void)
{
	const uint32_t first = 8, count = 3; /* backends 8 UP, 9 DRAIN, 10 */
	uint8_t ids[3][RS_QUIC_MAX_SERVER_ID], cid[QUIC_CID_MAX_LEN];
	uint8_t nonce[QUIC_CID_MAX_LEN];
	struct rs_service *svc = &services[SVC_RAND];
	struct quic_cid_info info;
	char what[96];
	struct frame f;
	int checked = 0;

	for (int iter = 0; iter < 300; iter++) {
		uint8_t sid_len = 1 + rnd() % RS_QUIC_MAX_SERVER_ID;
		uint8_t cid_len = sid_len + 1 + rnd() % (20 - sid_len);

		if (iter)
			for (uint32_t i = 0; i < count; i++)
				del_cookie(SVC_RAND, ids[i]);
		quic_service(SVC_RAND, sid_len, cid_len, rnd() % 7);
		CU_ASSERT_EQUAL_FATAL(set_service(SVC_RAND), 0);
		for (uint32_t i = 0; i < count; i++) {
			for (int j = 0; j < RS_QUIC_MAX_SERVER_ID; j++)
				ids[i][j] = j < sid_len ? (uint8_t)rnd() : 0;
			ids[i][0] = (uint8_t)i; /* distinct */
			CU_ASSERT_EQUAL_FATAL(
				set_cookie(SVC_RAND, ids[i], first + i), 0);
		}

		for (int k = 0; k < 8; k++) {
			uint32_t pick = rnd() % count;
			enum tc_outcome exp;
			uint32_t be = 0;

			for (int j = 0; j < QUIC_CID_MAX_LEN; j++)
				nonce[j] = (uint8_t)rnd();
			if (k < 4) {
				CU_ASSERT_EQUAL(quic_cid_encode(svc, ids[pick],
								nonce, cid),
						cid_len);
			} else {
				/* Random bytes: any config, any server ID. */
				memcpy(cid, nonce, sizeof(cid));
				if (k == 4)
					memcpy(cid + 1, ids[pick], sid_len);
			}
			CU_ASSERT_EQUAL_FATAL(
				quic_cid_decode(svc, cid, cid_len, &info), 0);
			if (k < 4) {
				CU_ASSERT_EQUAL(info.reason, QUIC_CID_ROUTABLE);
				CU_ASSERT_EQUAL(info.config_id,
						svc->quic_config_id);
				CU_ASSERT_EQUAL(info.server_id_len, sid_len);
				CU_ASSERT(!memcmp(info.server_id, ids[pick],
						  sid_len));
				CU_ASSERT_EQUAL(info.low_bits, nonce[0] & 0x1f);
				CU_ASSERT_EQUAL(info.nonce_len,
						cid_len - 1 - sid_len);
				CU_ASSERT(!memcmp(info.nonce, nonce + 1,
						  info.nonce_len));
			}

			exp = TC_UNKNOWN;
			if (info.reason == QUIC_CID_UNROUTABLE) {
				exp = TC_NONE;
			} else if (info.reason == QUIC_CID_ROUTABLE) {
				for (uint32_t i = 0; i < count; i++)
					if (!memcmp(info.server_id, ids[i],
						    sid_len))
						be = first + i;
				if (be)
					exp = bdefs[be].state == RS_BACKEND_DOWN
						      ? TC_DOWN
						      : TC_HIT;
			}
			snprintf(what, sizeof(what), "sid %u cid %u cfg %u: %s",
				 sid_len, cid_len, svc->quic_config_id,
				 quic_cid_reason_str(info.reason));
			short_frame(&f, AF_INET, SVC_RAND, cid, cid_len);
			check(what, &f, SVC_RAND, exp, be);
			long_frame(&f, AF_INET, SVC_RAND, QUIC_V1, V1_HANDSHAKE,
				   cid, cid_len);
			check(what, &f, SVC_RAND, exp, be);
			checked += 2;
		}

		/* Another length: the decoder and a Handshake agree too. */
		{
			size_t len = rnd() % (QUIC_CID_MAX_LEN + 1);

			if (len == cid_len)
				len = (len + 1) % (QUIC_CID_MAX_LEN + 1);
			CU_ASSERT_EQUAL(
				quic_cid_encode(svc, ids[0], nonce, cid),
				cid_len);
			CU_ASSERT_EQUAL(quic_cid_decode(svc, cid, len, &info),
					0);
			CU_ASSERT_EQUAL(info.reason, QUIC_CID_WRONG_LENGTH);
			long_frame(&f, AF_INET, SVC_RAND, QUIC_V1, V1_HANDSHAKE,
				   cid, len);
			check("another length", &f, SVC_RAND, TC_UNKNOWN, 0);
			checked++;
		}
	}
	for (uint32_t i = 0; i < count; i++)
		del_cookie(SVC_RAND, ids[i]);
	CU_ASSERT(checked == 300 * 17);
}

/* ---- live: real TC ingress on loopback in a private netns ---- */

static int live_fails;

#define LIVE_CHECK(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  live: " __VA_ARGS__);               \
			fputc('\n', stderr);                                   \
			live_fails++;                                          \
		}                                                              \
	} while (0)

static int lo_up(void)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), err;

	if (fd < 0)
		return -1;
	strcpy(ifr.ifr_name, "lo");
	err = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (!err) {
		ifr.ifr_flags |= IFF_UP;
		err = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return err;
}

/* Datagrams waiting on @fd within @ms milliseconds, drained. */
static int drain(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint8_t buf[256];
	int n = 0;

	if (fd < 0)
		return 0;
	while (poll(&pfd, 1, n ? 0 : ms) > 0 &&
	       recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		n++;
	return n;
}

static int send_to(int fd, int family, const char *addr, uint16_t port,
		   const uint8_t *p, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = fixture_sockaddr(family, addr, port, &ss);

	return sendto(fd, p, len, 0, (struct sockaddr *)&ss, sl) == (ssize_t)len
		       ? 0
		       : -1;
}

/* Send @p from a fresh client; the datagram must reach @want (or none). */
static void live_send(const char *what, int family, const uint8_t *p,
		      size_t len, int want, const int *all, int nall)
{
	const char *addr = family == AF_INET ? "127.0.0.1" : "::1";
	int c = fixture_loopback_socket(family, SOCK_DGRAM, NULL), got;

	LIVE_CHECK(c >= 0 && !send_to(c, family, addr, 4433, p, len),
		   "%s: send failed: %s", what, strerror(errno));
	if (want >= 0) {
		got = drain(want, 2000);
		LIVE_CHECK(got == 1, "%s: %d datagrams at the backend", what,
			   got);
	}
	for (int i = 0; i < nall; i++) {
		if (all[i] == want)
			continue;
		got = drain(all[i], want >= 0 ? 20 : 200);
		LIVE_CHECK(got == 0, "%s: %d datagrams at socket %d", what, got,
			   i);
	}
	if (c >= 0)
		close(c);
}

/*
 * In the child: a fresh namespace with only lo, the program attached to
 * its ingress (clsact, direct action), backends on 127.0.0.1 and ::1 and
 * the service on port 4433 where nothing listens: a datagram reaches a
 * backend only through bpf_sk_assign.
 */
static int live_child(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	int foreign, a4, a6, r[2], d4, ifindex, all[6], nall = 0;
	struct snap want, got;
	size_t n, plen;
	bool v6;
	/*
	 * Linux before 6.6 refuses a SO_REUSEPORT socket at TC (the daemon
	 * warns about such backends); the probe says which kernel this is.
	 */
	int reuse_ok = rs_probe_tc_assign_reuseport();

	if (reuse_ok < 0) {
		fprintf(stderr, "  live: reuseport probe failed: %s\n",
			strerror(-reuse_ok));
		return 1;
	}

	/* Created before unshare: lives in the test's own namespace. */
	foreign = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
	if (foreign < 0 || unshare(CLONE_NEWNET) || lo_up()) {
		fprintf(stderr, "  live: namespace setup: %s\n",
			strerror(errno));
		return 1;
	}
	skel = tc_fixture_load();
	ifindex = (int)if_nametoindex("lo");
	if (!skel || !ifindex)
		return 1;
	live_mode = true;
	quic_service(SVC_Q, 2, 8, 1);
	if (set_service(SVC_Q) ||
	    tc_add_bind(skel, AF_INET, "127.0.0.1", 32, 4433, SVC_Q) ||
	    tc_add_bind(skel, AF_INET6, "::1", 128, 4433, SVC_Q))
		return 1;

	a4 = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
	a6 = fixture_loopback_socket(AF_INET6, SOCK_DGRAM, NULL);
	v6 = a6 >= 0;
	if (!v6)
		fprintf(stderr, "  live: no IPv6 on lo, IPv6 part skipped\n");
	r[0] = fixture_socket(AF_INET, SOCK_DGRAM, "127.0.0.1", 0, true);
	r[1] = r[0] >= 0 ? fixture_socket(AF_INET, SOCK_DGRAM, "127.0.0.1",
					  local_port(r[0]), true)
			 : -1;
	d4 = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
	if (a4 < 0 || r[0] < 0 || r[1] < 0 || d4 < 0)
		return 1;
	all[nall++] = a4;
	all[nall++] = r[0];
	all[nall++] = r[1];
	all[nall++] = d4;
	all[nall++] = foreign;
	if (v6)
		all[nall++] = a6;

	/* 0 UP (v4, v6), 1 DRAIN (reuseport pair), 2 DOWN, 3 foreign netns */
	for (uint32_t b = 0; b < 4; b++) {
		static const uint32_t st[] = {RS_BACKEND_UP, RS_BACKEND_DRAIN,
					      RS_BACKEND_DOWN, RS_BACKEND_UP};
		uint8_t id[RS_QUIC_MAX_SERVER_ID];

		tc_sid_bytes(0x0101 + b, 2, id);
		if (tc_set_backend(skel, b, SVC_Q, st[b]) ||
		    set_cookie(SVC_Q, id, b))
			return 1;
	}
	if (tc_set_socket(skel, rs_socket_slot(0, 0), a4) ||
	    (v6 && tc_set_socket(skel, rs_socket_slot(0, 1), a6)) ||
	    tc_set_socket(skel, rs_socket_slot(1, 0), r[0]) ||
	    tc_set_socket(skel, rs_socket_slot(2, 0), d4) ||
	    tc_set_socket(skel, rs_socket_slot(3, 0), foreign))
		return 1;

	{
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts,
			    .prog_fd = bpf_program__fd(skel->progs.steer_tc));

		if (bpf_tc_hook_create(&hook) || bpf_tc_attach(&hook, &opts)) {
			fprintf(stderr, "  live: cannot attach to lo: %s\n",
				strerror(errno));
			return 1;
		}
	}

	if (snap_take(&want))
		return 1;

	n = make_cid(SVC_Q, 0x0101, 5, cid);
	plen = quic_short(p, cid, n);
	live_send("short v4 to UP", AF_INET, p, plen, a4, all, nall);
	expect_add(&want, SVC_Q, TC_HIT, 0);
	plen = quic_long(p, QUIC_V1, V1_HANDSHAKE, cid, n);
	live_send("Handshake v4 to UP", AF_INET, p, plen, a4, all, nall);
	expect_add(&want, SVC_Q, TC_HIT, 0);
	if (v6) {
		plen = quic_short(p, cid, n);
		live_send("short v6 to UP", AF_INET6, p, plen, a6, all, nall);
		expect_add(&want, SVC_Q, TC_HIT, 0);
	}
	/* The client chose this DCID: left to sk_lookup (none here). */
	plen = quic_long(p, QUIC_V1, V1_INITIAL, cid, n);
	live_send("Initial", AF_INET, p, plen, -1, all, nall);
	expect_add(&want, SVC_Q, TC_NONE, 0);

	/*
	 * Reuseport group: the kernel picks among it after sk_assign. Where
	 * the kernel refuses the socket, each datagram is the service's
	 * error and reaches neither (nothing listens on 4433).
	 */
	n = make_cid(SVC_Q, 0x0102, 0, cid);
	plen = quic_short(p, cid, n);
	{
		int c[32], on[2] = {0, 0};

		for (int i = 0; i < 32; i++) {
			c[i] = fixture_loopback_socket(AF_INET, SOCK_DGRAM,
						       NULL);
			LIVE_CHECK(c[i] >= 0 &&
					   !send_to(c[i], AF_INET, "127.0.0.1",
						    4433, p, plen),
				   "reuseport: send %d", i);
			if (reuse_ok)
				expect_add(&want, SVC_Q, TC_HIT, 1);
			else
				tc_count(&want.svc[SVC_Q], &want.be[1], TC_HIT,
					 false);
		}
		on[0] = drain(r[0], reuse_ok ? 500 : 100);
		on[1] = drain(r[1], reuse_ok ? 500 : 100);
		for (int i = 0; i < 32; i++)
			if (c[i] >= 0)
				close(c[i]);
		if (reuse_ok)
			LIVE_CHECK(on[0] + on[1] == 32 && on[0] > 0 &&
					   on[1] > 0,
				   "DRAIN reuseport pair got %d + %d of 32",
				   on[0], on[1]);
		else
			LIVE_CHECK(on[0] + on[1] == 0,
				   "refused reuseport pair got %d + %d of 32",
				   on[0], on[1]);
	}

	n = make_cid(SVC_Q, 0x0103, 0, cid);
	plen = quic_short(p, cid, n);
	live_send("DOWN backend", AF_INET, p, plen, -1, all, nall);
	expect_add(&want, SVC_Q, TC_DOWN, 0);

	/*
	 * A socket of another netns: bpf_sk_assign says -ENETUNREACH, so a
	 * hit counted as the service's error even in live mode.
	 */
	n = make_cid(SVC_Q, 0x0104, 0, cid);
	plen = quic_short(p, cid, n);
	live_send("socket in another netns", AF_INET, p, plen, -1, all, nall);
	tc_count(&want.svc[SVC_Q], &want.be[3], TC_HIT, false);

	if (snap_take(&got))
		return 1;
	LIVE_CHECK(snap_diff("live counters", &want, &got) == 0,
		   "counters differ (above)");
	return live_fails ? 1 : 0;
}

static void test_live_tc_ingress(void)
{
	int status = -1;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(live_child());
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void teardown(void)
{
	for (int b = 0; b < NBACKENDS; b++) {
		if (sock4[b] >= 0)
			close(sock4[b]);
		if (sock6[b] >= 0)
			close(sock6[b]);
	}
	steer_tc_bpf__destroy(skel);
}

static const struct fixture_test tests[] = {
	{"short header: hit (v4, v6, any low bits)", test_short_header_hits},
	{"long header Handshake v1/v2: hit", test_long_header_handshake_hits},
	{"IPv4 with options: hit", test_ipv4_options_hit},
	{"Ethernet padding: hit", test_ethernet_padding_hit},
	{"DRAIN backend keeps its connections", test_drain_keeps_connections},
	{"Initial/0-RTT/Retry/VN/unroutable: none",
	 test_client_chosen_dcid_left_alone},
	{"unknown ID, wrong config or length: unknown", test_unknown_cids},
	{"DOWN, missing or closed socket: down", test_down_backends},
	{"TCP or AF_INET socket for v6: refused",
	 test_wrong_socket_kind_refused},
	{"non-QUIC datagrams on the port", test_not_quic_on_the_port},
	{"malformed headers and lengths", test_malformed},
	{"not a cookie service: nothing counted",
	 test_not_for_a_cookie_service},
	{"truncated at every offset", test_truncated_at_every_offset},
	{"bad service config in the map: errors",
	 test_bad_service_config_is_an_error},
	{"quic_cid encode/decode == BPF (random configs)",
	 test_cid_codec_agrees_with_bpf},
	{"live: TC ingress on lo delivers to the named socket",
	 test_live_tc_ingress},
};

int main(void)
{
	return fixture_main("steer_tc", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

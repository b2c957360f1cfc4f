// SPDX-License-Identifier: MIT
/*
 * steer_tc's QUIC cookie trace events (issue 24) under BPF_PROG_TEST_RUN,
 * with real UDP sockets in its SOCKMAP: none while tracing is off; a hit
 * names the backend the server ID chose (not assigned: a test run never
 * is), an unknown server ID and a DOWN backend say so; each event carries
 * the datagram's 4-tuple, family and protocol; a datagram of a service
 * without cookies makes none; the filters (service, backend, reason,
 * hook, client prefix), 1-in-N sampling and the token bucket work as for
 * steer_lookup, and what the bucket refuses is counted lost. The fleet
 * step's events are in test_steer_fleet.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf_fixture.h"
#include "frames.h"
#include "quic_cid.h"
#include "tc_fixture.h"
#include "trace_capture.h"

#define SVC	    0 /* udp 198.18.0.10:443 and [2001:db8::10]:443, quic */
#define SVC_PLAIN   1 /* udp 198.18.0.12:443, cookie = none */
#define NB	    3 /* 0, 1 UP; 2 DOWN */
#define SID_UNKNOWN 0x01ff

static const uint32_t sids[NB] = {0x0101, 0x0102, 0x0103};
static struct steer_tc_bpf *skel;
static struct rs_service svc, plain;
static int socks[NB][2];
static struct trace_capture cap;

static int setup(void)
{
	uint8_t id[RS_QUIC_MAX_SERVER_ID];
	cpu_set_t one;

	/* The bucket and the sampling are per CPU: count on one. */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -1;
	skel = tc_fixture_load();
	if (!skel)
		return -1;
	tc_quic_service(&svc, SVC, 2, 8, 1);
	tc_quic_service(&plain, SVC_PLAIN, 2, 8, 1);
	plain.cookie = RS_COOKIE_NONE;
	if (tc_set_service(skel, &svc) || tc_set_service(skel, &plain) ||
	    tc_add_bind(skel, AF_INET, "198.18.0.10", 32, 443, SVC) ||
	    tc_add_bind(skel, AF_INET6, "2001:db8::10", 128, 443, SVC) ||
	    tc_add_bind(skel, AF_INET, "198.18.0.12", 32, 443, SVC_PLAIN))
		return -1;
	for (uint32_t b = 0; b < NB; b++) {
		if (tc_set_backend(skel, b, SVC,
				   b == 2 ? RS_BACKEND_DOWN : RS_BACKEND_UP))
			return -1;
		for (int v6 = 0; v6 < 2; v6++) {
			socks[b][v6] = fixture_loopback_socket(
				v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, NULL);
			if (socks[b][v6] < 0 ||
			    tc_set_socket(skel, rs_socket_slot(b, v6),
					  socks[b][v6]))
				return -1;
		}
		tc_sid_bytes(sids[b], 2, id);
		if (tc_set_cookie(skel, &svc, id, b))
			return -1;
	}
	return trace_capture_open(&cap, skel->obj);
}

static void teardown(void)
{
	trace_capture_close(&cap);
	for (int b = 0; b < NB; b++)
		for (int v6 = 0; v6 < 2; v6++)
			if (socks[b][v6] >= 0)
				close(socks[b][v6]);
	steer_tc_bpf__destroy(skel);
}

/*
 * A 1-RTT datagram to @dst whose DCID carries server ID @sid as service
 * @s issues them.
 */
static void datagram(struct frame *f, const struct rs_service *s, int family,
		     const char *dst, uint32_t sid)
{
	uint8_t id[RS_QUIC_MAX_SERVER_ID], nonce[QUIC_CID_MAX_LEN] = {7, 1, 2};
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	int n;

	tc_sid_bytes(sid, s->quic_server_id_len, id);
	n = quic_cid_encode(s, id, nonce, cid);
	CU_ASSERT_FATAL(n > 0);
	frame_udp(f, family, dst, 443, 0, p, quic_short(p, cid, (size_t)n));
}

/* Runs @f through steer_tc: TC_ACT_UNSPEC, as the cookie step always is. */
static void run(const struct frame *f)
{
	int retval = -1;

	CU_ASSERT_EQUAL(tc_run(skel, f->b, f->len, &retval), 0);
	CU_ASSERT_EQUAL(retval, TC_ACT_UNSPEC);
}

static int addr_is(const __u8 *a, int family, const char *s)
{
	__u8 want[16] = {0};

	return inet_pton(family, s, want) == 1 &&
	       !memcmp(a, want, family == AF_INET ? 4 : 16);
}

static void test_off(void)
{
	struct frame f;

	CU_ASSERT_EQUAL_FATAL(trace_capture_off(&cap), 0);
	datagram(&f, &svc, AF_INET, "198.18.0.10", sids[0]);
	run(&f);
	CU_ASSERT_EQUAL(trace_capture_poll(&cap), 0);
	CU_ASSERT_EQUAL(trace_capture_counters(&cap).matched, 0);
}

static void test_hit_unknown_down(void)
{
	struct rs_trace_ctl t = trace_capture_all();
	const struct rs_trace_event *e = cap.ev;
	struct frame f;

	CU_ASSERT_EQUAL_FATAL(trace_capture_set(&cap, &t), 0);
	datagram(&f, &svc, AF_INET, "198.18.0.10", sids[0]);
	run(&f);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 1);
	CU_ASSERT_EQUAL(e->hook, RS_TRACE_HOOK_TC);
	CU_ASSERT_EQUAL(e->reason, RS_TRACE_COOKIE_HIT);
	CU_ASSERT_EQUAL(e->service, SVC);
	CU_ASSERT_EQUAL(e->backend, 0);
	CU_ASSERT_EQUAL(e->family, AF_INET);
	CU_ASSERT_EQUAL(e->protocol, IPPROTO_UDP);
	CU_ASSERT(addr_is(e->client, AF_INET, "198.18.1.1"));
	CU_ASSERT_EQUAL(e->client_port, 50000);
	CU_ASSERT(addr_is(e->local, AF_INET, "198.18.0.10"));
	CU_ASSERT_EQUAL(e->local_port, 443);
	/* A test run's bpf_sk_assign always fails (tc_fixture.h). */
	CU_ASSERT_EQUAL(e->flags & RS_TRACE_F_ASSIGNED, 0);
	CU_ASSERT_EQUAL(e->primary, RS_NONE);
	CU_ASSERT_EQUAL(e->member, RS_NONE);

	datagram(&f, &svc, AF_INET6, "2001:db8::10", sids[1]);
	run(&f);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 2);
	CU_ASSERT_EQUAL(e[1].reason, RS_TRACE_COOKIE_HIT);
	CU_ASSERT_EQUAL(e[1].backend, 1);
	CU_ASSERT_EQUAL(e[1].family, AF_INET6);
	CU_ASSERT(addr_is(e[1].client, AF_INET6, "2001:db8:1::1"));
	CU_ASSERT(addr_is(e[1].local, AF_INET6, "2001:db8::10"));

	datagram(&f, &svc, AF_INET, "198.18.0.10", SID_UNKNOWN);
	run(&f);
	datagram(&f, &svc, AF_INET, "198.18.0.10", sids[2]);
	run(&f);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 4);
	CU_ASSERT_EQUAL(e[2].reason, RS_TRACE_COOKIE_UNKNOWN);
	CU_ASSERT_EQUAL(e[2].backend, RS_NONE);
	CU_ASSERT_EQUAL(e[3].reason, RS_TRACE_COOKIE_DOWN);
	CU_ASSERT_EQUAL(e[3].backend, 2);

	/* No cookies: nothing decided here, nothing traced. */
	datagram(&f, &svc, AF_INET, "198.18.0.12", sids[0]);
	run(&f);
	CU_ASSERT_EQUAL(trace_capture_poll(&cap), 4);
	CU_ASSERT_EQUAL(trace_capture_counters(&cap).emitted, 4);
}

/* One datagram per backend 0, 1, unknown, 2: the events @t lets through. */
static int events_with(const struct rs_trace_ctl *t)
{
	static const uint32_t order[] = {0x0101, 0x0102, SID_UNKNOWN, 0x0103};
	struct frame f;

	CU_ASSERT_EQUAL_FATAL(trace_capture_set(&cap, t), 0);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		datagram(&f, &svc, AF_INET, "198.18.0.10", order[i]);
		run(&f);
	}
	return trace_capture_poll(&cap);
}

static void test_filters(void)
{
	struct rs_trace_ctl t = trace_capture_all();

	CU_ASSERT_EQUAL(events_with(&t), 4);
	t.backend = 1;
	CU_ASSERT_EQUAL(events_with(&t), 1);
	CU_ASSERT_EQUAL(cap.ev[0].backend, 1);
	t = trace_capture_all();
	t.service = SVC_PLAIN;
	CU_ASSERT_EQUAL(events_with(&t), 0);
	t = trace_capture_all();
	t.reason_mask =
		1u << RS_TRACE_COOKIE_UNKNOWN | 1u << RS_TRACE_COOKIE_DOWN;
	CU_ASSERT_EQUAL(events_with(&t), 2);
	CU_ASSERT_EQUAL(cap.ev[0].reason, RS_TRACE_COOKIE_UNKNOWN);
	CU_ASSERT_EQUAL(cap.ev[1].reason, RS_TRACE_COOKIE_DOWN);
	t = trace_capture_all();
	t.hook_mask = 1u << RS_TRACE_HOOK_LOOKUP | 1u << RS_TRACE_HOOK_SOCKOPS;
	CU_ASSERT_EQUAL(events_with(&t), 0);
	t.hook_mask = 1u << RS_TRACE_HOOK_TC;
	CU_ASSERT_EQUAL(events_with(&t), 4);
	t = trace_capture_all();
	t.client_family = AF_INET;
	t.client_plen = 24;
	inet_pton(AF_INET, "198.18.2.0", t.client);
	CU_ASSERT_EQUAL(events_with(&t), 0);
	inet_pton(AF_INET, "198.18.1.0", t.client);
	CU_ASSERT_EQUAL(events_with(&t), 4);
}

static void test_sampling_and_bucket(void)
{
	struct rs_trace_ctl t = trace_capture_all();
	struct rs_trace_cpu c;

	t.sample = 2;
	CU_ASSERT_EQUAL(events_with(&t), 2);
	c = trace_capture_counters(&cap);
	CU_ASSERT_EQUAL(c.matched, 4);
	CU_ASSERT_EQUAL(c.emitted, 2);
	/* One a second, three at once: the fourth is lost to the bucket. */
	t = trace_capture_all();
	t.rate = 1;
	t.burst = 3;
	CU_ASSERT_EQUAL(events_with(&t), 3);
	c = trace_capture_counters(&cap);
	CU_ASSERT_EQUAL(c.emitted, 3);
	CU_ASSERT_EQUAL(c.lost_rate, 1);
	CU_ASSERT_EQUAL(c.lost_full, 0);
	CU_ASSERT_EQUAL(trace_capture_off(&cap), 0);
}

static const struct fixture_test tests[] = {
	{"tracing off: no event", test_off},
	{"cookie hit, unknown, down: one event each, with the 4-tuple",
	 test_hit_unknown_down},
	{"filters: service, backend, reason, hook, client prefix",
	 test_filters},
	{"1-in-N sampling and the token bucket, lost counted",
	 test_sampling_and_bucket},
};

int main(void)
{
	return fixture_main("trace_tc", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

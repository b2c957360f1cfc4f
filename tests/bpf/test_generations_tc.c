// SPDX-License-Identifier: MIT
/*
 * steer_tc for a QUIC service with generations (issue 38), under
 * BPF_PROG_TEST_RUN: a short-header datagram's server ID is not assigned
 * at TC (the kernel would then re-pick within the reuseport group) but
 * written into its 4-tuple's rs_udp_flows entry for sk_lookup; the
 * entry keeps its generation while the backend stays, loses it when the
 * CID names another one; a full table falls back to the assign.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf_fixture.h"
#include "frames.h"
#include "quic_cid.h"
#include "tc_fixture.h"

#define SVC   0 /* udp 198.18.0.30:443, cookie quic, sid 2, cid 8 */
#define NBE   2
#define SRC   "198.18.1.1" /* frame_udp()'s source */
#define SPORT 50000

static struct steer_tc_bpf *skel;
static struct rs_service svc;
static int fds[NBE] = {-1, -1};

static int setup(void)
{
	uint8_t sid[RS_QUIC_MAX_SERVER_ID];

	skel = tc_fixture_load();
	if (!skel)
		return -1;
	tc_quic_service(&svc, SVC, 2, 8, 0);
	svc.generations = 1;
	if (tc_set_service(skel, &svc) ||
	    tc_add_bind(skel, AF_INET, "198.18.0.30", 32, 443, SVC))
		return -1;
	for (uint32_t b = 0; b < NBE; b++) {
		fds[b] = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
		tc_sid_bytes(0x100 + b, 2, sid);
		if (fds[b] < 0 || tc_set_backend(skel, b, SVC, RS_BACKEND_UP) ||
		    tc_set_socket(skel, rs_socket_slot(b, 0), fds[b]) ||
		    tc_set_cookie(skel, &svc, sid, b))
			return -1;
	}
	return 0;
}

static void teardown(void)
{
	for (int i = 0; i < NBE; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	steer_tc_bpf__destroy(skel);
}

static int flows_fd(void)
{
	return bpf_map__fd(skel->maps.rs_udp_flows);
}

static struct rs_udp_flow_key key_of(const char *src, uint16_t sport)
{
	struct rs_udp_flow_key k = {
		.family = AF_INET, .sport = sport, .dport = 443};

	inet_pton(AF_INET, src, &k.saddr[0]);
	inet_pton(AF_INET, "198.18.0.30", &k.daddr[0]);
	return k;
}

/* One short-header datagram from SRC:SPORT whose CID names backend @b. */
static int send_cid(uint32_t b)
{
	uint8_t id[RS_QUIC_MAX_SERVER_ID], nonce[QUIC_CID_MAX_LEN] = {0};
	uint8_t cid[QUIC_CID_MAX_LEN], p[128];
	struct frame f;
	int n, retval = -1;

	tc_sid_bytes(0x100 + b, 2, id);
	n = quic_cid_encode(&svc, id, nonce, cid);
	if (n <= 0)
		return -1;
	frame_udp(&f, AF_INET, "198.18.0.30", 443, 0, p,
		  quic_short(p, cid, (size_t)n));
	if (tc_run(skel, f.b, f.len, &retval))
		return -1;
	return retval;
}

static int entry(struct rs_udp_flow *e)
{
	struct rs_udp_flow_key k = key_of(SRC, SPORT);

	return bpf_map_lookup_elem(flows_fd(), &k, e) ? -errno : 0;
}

static struct rs_service_stats svc_stats(void)
{
	struct rs_service_stats st = {0};

	fixture_percpu_sum(bpf_map__fd(skel->maps.rs_service_stats), SVC, &st,
			   sizeof(st));
	return st;
}

static void test_cid_backend_written(void)
{
	struct rs_service_stats before = svc_stats();
	struct rs_udp_flow_key k = key_of(SRC, SPORT);
	struct rs_udp_flow e;

	bpf_map_delete_elem(flows_fd(), &k);
	CU_ASSERT_EQUAL(send_cid(1), TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL_FATAL(entry(&e), 0);
	CU_ASSERT_EQUAL(e.backend, 1);
	CU_ASSERT_EQUAL(e.cookie, 0);
	/* No assign was tried: nothing refused, nothing in errors. */
	CU_ASSERT_EQUAL(svc_stats().errors, before.errors);
	/* sk_lookup recorded a generation: kept while the CID's backend is. */
	e.cookie = 77;
	CU_ASSERT_EQUAL(bpf_map_update_elem(flows_fd(), &k, &e, BPF_ANY), 0);
	CU_ASSERT_EQUAL(send_cid(1), TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(entry(&e), 0);
	CU_ASSERT_EQUAL(e.cookie, 77);
	/* The CID names another backend (migration): its generation goes. */
	CU_ASSERT_EQUAL(send_cid(0), TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(entry(&e), 0);
	CU_ASSERT_EQUAL(e.backend, 0);
	CU_ASSERT_EQUAL(e.cookie, 0);
}

static void test_full_table_assigns_at_tc(void)
{
	int fd = flows_fd();
	uint32_t max = bpf_map__max_entries(skel->maps.rs_udp_flows), i;
	struct rs_udp_flow_key k = key_of(SRC, SPORT), f = k;
	struct rs_udp_flow v = {.backend = 1}, e;
	struct rs_service_stats before;

	bpf_map_delete_elem(fd, &k);
	for (i = 0; i < max; i++) {
		f.saddr[0] = htonl(0xc6130000u | i); /* 198.19.x.y */
		if (bpf_map_update_elem(fd, &f, &v, BPF_NOEXIST))
			break;
	}
	CU_ASSERT_EQUAL_FATAL(i, max);
	before = svc_stats();
	CU_ASSERT_EQUAL(send_cid(1), TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(entry(&e), -ENOENT);
	/*
	 * Assigned at TC as without generations: under the test run the
	 * kernel refuses that (not at ingress), which the errors show.
	 */
	CU_ASSERT_EQUAL(svc_stats().errors - before.errors, 1);
	for (int r = bpf_map_get_next_key(fd, NULL, &f); !r;
	     r = bpf_map_get_next_key(fd, NULL, &f))
		bpf_map_delete_elem(fd, &f);
}

static const struct fixture_test tests[] = {
	{"the CID's backend goes into the flow entry, not an assign",
	 test_cid_backend_written},
	{"a full flow table: assigned at TC as before",
	 test_full_table_assigns_at_tc},
};

int main(void)
{
	return fixture_main("generations_tc", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

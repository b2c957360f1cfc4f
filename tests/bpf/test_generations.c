// SPDX-License-Identifier: MIT
/*
 * Generations (issue 38) under BPF_PROG_TEST_RUN, with real UDP sockets
 * in rs_sockets and rs_gen_sockets: which of a backend's sockets the
 * sk_lookup program gives a datagram (the selected socket's cookie), and
 * what it records in rs_udp_flows. A flow recorded on an older socket
 * stays there while it is open; a flow whose socket closed goes to the
 * working one; a full table records nothing and evicts nothing; a service
 * without generations is steered as before, recording nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_fixture.h"
#include "dataplane.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define SVC_GEN	 0 /* udp 198.18.0.20:443, generations, backend 0 */
#define SVC_OFF	 1 /* udp 198.18.0.21:443, no generations, backend 1 */
#define SVC_QUIC 2 /* udp 198.18.0.22:443, cookie quic, backends 2, 3 */
#define NBE	 4
#define NSOCK	 5 /* 0: backend 0's old, 1: its new, 2-4: backends 1-3 */

static struct rs_dataplane dp;
static int fds[NSOCK] = {-1, -1, -1, -1, -1};
static uint64_t cookies[NSOCK];
static const char *const dst[] = {"198.18.0.20", "198.18.0.21", "198.18.0.22"};

static int map_fd(const struct bpf_map *m)
{
	return bpf_map__fd(m);
}

static int one_backend_ring(uint32_t svc, const uint32_t *ids, int n)
{
	struct rs_ring_member m[2];
	static const char *const names[] = {"gen-a", "gen-b"};
	struct rs_ring ring = {0};
	int64_t r;

	for (int i = 0; i < n; i++) {
		m[i].name = names[i];
		m[i].backend = ids[i];
		m[i].points = 16;
	}
	if (ring_build(m, n, 7 + svc, &ring))
		return -1;
	r = dp_swap_ring(&dp, svc, &ring);
	ring_free(&ring);
	return r < 0 ? -1 : 0;
}

static int setup_services(void)
{
	struct rs_bind_key keys[3];
	struct rs_bind vals[3];
	static const uint32_t gen[] = {0}, off[] = {1}, quic[] = {2, 3};

	for (uint32_t s = 0; s < 3; s++) {
		struct rs_service svc = {.id = s,
					 .enabled = 1,
					 .seed = 7 + s,
					 .protocol = IPPROTO_UDP,
					 .key_policy = RS_KEY_SRC_IP_PORT,
					 .prefix4 = 32,
					 .prefix6 = 128,
					 .generations = s != SVC_OFF};

		if (s == SVC_QUIC)
			svc.cookie = RS_COOKIE_QUIC;
		if (dp_set_service(&dp, s, &svc) ||
		    fixture_bind_entry(&keys[s], &vals[s], IPPROTO_UDP, AF_INET,
				       dst[s], 32, 443, s))
			return -1;
	}
	if (one_backend_ring(SVC_GEN, gen, 1) ||
	    one_backend_ring(SVC_OFF, off, 1) ||
	    one_backend_ring(SVC_QUIC, quic, 2))
		return -1;
	return dp_sync_binds(&dp, keys, vals, 3);
}

static int put_gen(int sock)
{
	uint64_t fd = (uint64_t)fds[sock];

	return bpf_map_update_elem(map_fd(dp.skel->maps.rs_gen_sockets),
				   &cookies[sock], &fd, BPF_ANY);
}

/* @sock becomes backend @b's working socket, as the daemon makes it. */
static int make_working(uint32_t b, int sock)
{
	uint32_t slot = rs_socket_slot(b, 0);

	if (put_gen(sock) || dp_set_socket(&dp, slot, fds[sock]))
		return -1;
	return bpf_map_update_elem(map_fd(dp.skel->maps.rs_gen_working), &slot,
				   &cookies[sock], BPF_ANY);
}

static int setup(void)
{
	static const uint32_t owner[NSOCK] = {0, 0, 1, 2, 3};

	if (dp_open(&dp, NULL))
		return -1;
	for (int i = 0; i < NSOCK; i++) {
		fds[i] = fixture_loopback_socket(AF_INET, SOCK_DGRAM,
						 &cookies[i]);
		if (fds[i] < 0)
			return -1;
	}
	for (uint32_t b = 0; b < NBE; b++) {
		struct rs_backend be = {.state = RS_BACKEND_UP,
					.active_points = 16,
					.max_points = 16,
					.service = b == 0   ? SVC_GEN
						   : b == 1 ? SVC_OFF
							    : SVC_QUIC};

		if (dp_set_backend(&dp, b, &be))
			return -1;
	}
	for (int i = 0; i < NSOCK; i++)
		if (i != 1 &&
		    (i == 2 ? dp_set_socket(&dp, rs_socket_slot(1, 0), fds[2])
			    : make_working(owner[i], i)))
			return -1;
	return setup_services();
}

static void teardown(void)
{
	for (int i = 0; i < NSOCK; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	dp_close(&dp);
}

static struct bpf_sk_lookup flow_ctx(const char *src, uint16_t sport, int svc)
{
	struct bpf_sk_lookup ctx = {.family = AF_INET, .protocol = IPPROTO_UDP};

	inet_pton(AF_INET, src, &ctx.remote_ip4);
	inet_pton(AF_INET, dst[svc], &ctx.local_ip4);
	ctx.remote_port = htons(sport);
	ctx.local_port = 443;
	return ctx;
}

/* The cookie of the socket the program chose for the datagram, or 0. */
static uint64_t datagram(const char *src, uint16_t sport, int svc)
{
	struct bpf_sk_lookup ctx = flow_ctx(src, sport, svc);
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx));

	if (bpf_prog_test_run_opts(bpf_program__fd(dp.skel->progs.steer_lookup),
				   &opts) ||
	    opts.retval != SK_PASS)
		return 0;
	return ctx.cookie;
}

static struct rs_udp_flow_key flow_key(const char *src, uint16_t sport, int svc)
{
	struct rs_udp_flow_key k = {
		.family = AF_INET, .sport = sport, .dport = 443};

	inet_pton(AF_INET, src, &k.saddr[0]);
	inet_pton(AF_INET, dst[svc], &k.daddr[0]);
	return k;
}

/* The flow's entry: 0 and @out set, or -ENOENT. */
static int flow_entry(const char *src, uint16_t sport, int svc,
		      struct rs_udp_flow *out)
{
	struct rs_udp_flow_key k = flow_key(src, sport, svc);

	if (bpf_map_lookup_elem(map_fd(dp.skel->maps.rs_udp_flows), &k, out))
		return -errno;
	return 0;
}

static struct rs_service_stats stats(uint32_t svc)
{
	struct rs_service_stats st = {0};

	fixture_percpu_sum(map_fd(dp.skel->maps.rs_service_stats), svc, &st,
			   sizeof(st));
	return st;
}

static void clear_flows(void)
{
	int fd = map_fd(dp.skel->maps.rs_udp_flows);
	struct rs_udp_flow_key k;

	while (!bpf_map_get_next_key(fd, NULL, &k))
		bpf_map_delete_elem(fd, &k);
}

static void test_draining_generation_keeps_its_flows(void)
{
	struct rs_service_stats before = stats(SVC_GEN), after;
	struct rs_udp_flow e;

	clear_flows();
	CU_ASSERT_EQUAL(make_working(0, 0), 0);
	/* Established on the only socket, recorded there. */
	CU_ASSERT_EQUAL(datagram("198.18.1.1", 5000, SVC_GEN), cookies[0]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.1", 5000, SVC_GEN, &e), 0);
	CU_ASSERT_EQUAL(e.backend, 0);
	CU_ASSERT_EQUAL(e.cookie, cookies[0]);
	/* A new process binds next to it: its socket is the working one. */
	CU_ASSERT_EQUAL(make_working(0, 1), 0);
	for (int i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(datagram("198.18.1.1", 5000, SVC_GEN),
				cookies[0]);
	/* A new flow, even from the same address, goes to the new one. */
	CU_ASSERT_EQUAL(datagram("198.18.1.1", 5001, SVC_GEN), cookies[1]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.1", 5001, SVC_GEN, &e), 0);
	CU_ASSERT_EQUAL(e.cookie, cookies[1]);
	after = stats(SVC_GEN);
	CU_ASSERT_EQUAL(after.gen_draining - before.gen_draining, 20);
	CU_ASSERT_EQUAL(after.gen_handovers, before.gen_handovers);
}

static void test_closed_generation_hands_over(void)
{
	struct rs_service_stats before, after;
	struct rs_udp_flow e;

	clear_flows();
	CU_ASSERT_EQUAL(make_working(0, 0), 0);
	CU_ASSERT_EQUAL(datagram("198.18.1.2", 5000, SVC_GEN), cookies[0]);
	CU_ASSERT_EQUAL(make_working(0, 1), 0);
	CU_ASSERT_EQUAL(datagram("198.18.1.2", 5000, SVC_GEN), cookies[0]);
	/* The old process exits: its socket leaves rs_gen_sockets. */
	before = stats(SVC_GEN);
	CU_ASSERT_EQUAL(
		bpf_map_delete_elem(map_fd(dp.skel->maps.rs_gen_sockets),
				    &cookies[0]),
		0);
	CU_ASSERT_EQUAL(datagram("198.18.1.2", 5000, SVC_GEN), cookies[1]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.2", 5000, SVC_GEN, &e), 0);
	CU_ASSERT_EQUAL(e.cookie, cookies[1]);
	CU_ASSERT_EQUAL(datagram("198.18.1.2", 5000, SVC_GEN), cookies[1]);
	after = stats(SVC_GEN);
	CU_ASSERT_EQUAL(after.gen_handovers - before.gen_handovers, 1);
	CU_ASSERT_EQUAL(after.gen_draining, before.gen_draining);
	CU_ASSERT_EQUAL(put_gen(0), 0);
}

/* An entry naming another backend is not this backend's flow. */
static void test_entry_of_another_backend_ignored(void)
{
	struct rs_udp_flow_key k = flow_key("198.18.1.3", 5000, SVC_GEN);
	struct rs_udp_flow e = {.backend = 1, .cookie = cookies[0]};

	clear_flows();
	CU_ASSERT_EQUAL(make_working(0, 1), 0);
	CU_ASSERT_EQUAL(bpf_map_update_elem(map_fd(dp.skel->maps.rs_udp_flows),
					    &k, &e, BPF_ANY),
			0);
	CU_ASSERT_EQUAL(datagram("198.18.1.3", 5000, SVC_GEN), cookies[1]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.3", 5000, SVC_GEN, &e), 0);
	CU_ASSERT_EQUAL(e.backend, 0);
	CU_ASSERT_EQUAL(e.cookie, cookies[1]);
}

/* Fills rs_udp_flows with forged flows; returns how many it holds. */
static uint32_t fill_flows(void)
{
	int fd = map_fd(dp.skel->maps.rs_udp_flows);
	uint32_t max = bpf_map__max_entries(dp.skel->maps.rs_udp_flows), n = 0;
	struct rs_udp_flow v = {.backend = 0, .cookie = cookies[1]};
	struct rs_udp_flow_key k = flow_key("198.18.200.0", 1, SVC_GEN);
	struct rs_udp_flow_key probe;

	for (uint32_t i = 0; i < max; i++) {
		k.saddr[0] = htonl(0xc6130000u | (i >> 8)); /* 198.19.x.y */
		k.sport = (uint16_t)(1024 + (i & 0xff));
		if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST))
			break;
	}
	for (int r = bpf_map_get_next_key(fd, NULL, &probe); !r;
	     r = bpf_map_get_next_key(fd, &probe, &probe))
		n++;
	return n;
}

static void test_full_table_evicts_nothing(void)
{
	struct rs_service_stats before, after;
	uint32_t max = bpf_map__max_entries(dp.skel->maps.rs_udp_flows);
	struct rs_udp_flow e;

	clear_flows();
	CU_ASSERT_EQUAL(make_working(0, 0), 0);
	CU_ASSERT_EQUAL(datagram("198.18.1.4", 5000, SVC_GEN), cookies[0]);
	CU_ASSERT_EQUAL(make_working(0, 1), 0);
	CU_ASSERT_EQUAL_FATAL(fill_flows(), max);
	before = stats(SVC_GEN);
	/* A new flow: to the working socket, not recorded. */
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(datagram("198.18.1.5", 6000 + i, SVC_GEN),
				cookies[1]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.5", 6000, SVC_GEN, &e), -ENOENT);
	after = stats(SVC_GEN);
	CU_ASSERT_EQUAL(after.flows_full - before.flows_full, 10);
	/* The recorded flow is still there, on its generation. */
	CU_ASSERT_EQUAL(datagram("198.18.1.4", 5000, SVC_GEN), cookies[0]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.4", 5000, SVC_GEN, &e), 0);
	CU_ASSERT_EQUAL(e.cookie, cookies[0]);
	clear_flows();
}

static void test_off_records_nothing(void)
{
	struct rs_udp_flow e;

	clear_flows();
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(datagram("198.18.1.6", 7000 + i, SVC_OFF),
				cookies[2]);
	CU_ASSERT_EQUAL(flow_entry("198.18.1.6", 7000, SVC_OFF, &e), -ENOENT);
	CU_ASSERT_EQUAL(stats(SVC_OFF).gen_draining, 0);
	CU_ASSERT_EQUAL(stats(SVC_OFF).flows_full, 0);
}

/*
 * QUIC: the backend steer_tc wrote from the CID (cookie 0) takes the
 * 4-tuple's datagrams, whatever the ring says, while it is UP or DRAIN.
 */
static void test_quic_entry_names_the_backend(void)
{
	struct rs_udp_flow e = {0};
	struct rs_udp_flow_key k;
	uint64_t ring_pick;
	uint32_t other;
	char src[32];
	int i;

	clear_flows();
	/* A client whose ring owner is backend 2 (socket 3). */
	for (i = 0; i < 256; i++) {
		snprintf(src, sizeof(src), "198.18.2.%d", i + 1);
		ring_pick = datagram(src, 8000, SVC_QUIC);
		if (ring_pick == cookies[3])
			break;
	}
	CU_ASSERT_EQUAL_FATAL(ring_pick, cookies[3]);
	other = 3;
	k = flow_key(src, 8000, SVC_QUIC);
	e.backend = other;
	CU_ASSERT_EQUAL(bpf_map_update_elem(map_fd(dp.skel->maps.rs_udp_flows),
					    &k, &e, BPF_ANY),
			0);
	CU_ASSERT_EQUAL(datagram(src, 8000, SVC_QUIC), cookies[4]);
	CU_ASSERT_EQUAL(flow_entry(src, 8000, SVC_QUIC, &e), 0);
	CU_ASSERT_EQUAL(e.backend, other);
	CU_ASSERT_EQUAL(e.cookie, cookies[4]);
	/* A DOWN backend's entry is not honoured: the ring decides. */
	{
		struct rs_backend be = {.state = RS_BACKEND_DOWN,
					.active_points = 16,
					.max_points = 16,
					.service = SVC_QUIC};

		CU_ASSERT_EQUAL(dp_set_backend(&dp, other, &be), 0);
		CU_ASSERT_EQUAL(datagram(src, 8000, SVC_QUIC), cookies[3]);
		be.state = RS_BACKEND_UP;
		CU_ASSERT_EQUAL(dp_set_backend(&dp, other, &be), 0);
	}
	clear_flows();
}

static const struct fixture_test tests[] = {
	{"a draining generation keeps its flows",
	 test_draining_generation_keeps_its_flows},
	{"a closed generation's flows go to the working one",
	 test_closed_generation_hands_over},
	{"an entry of another backend is not followed",
	 test_entry_of_another_backend_ignored},
	{"a full flow table records nothing and evicts nothing",
	 test_full_table_evicts_nothing},
	{"without generations nothing is recorded", test_off_records_nothing},
	{"QUIC: the flow entry's backend takes the flow",
	 test_quic_entry_names_the_backend},
};

int main(void)
{
	return fixture_main("generations", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

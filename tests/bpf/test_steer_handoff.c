// SPDX-License-Identifier: MIT
/*
 * Where a sticky decision is written (issue 9, item 10; issue 21): for
 * TCP, while steer_sockops runs (rs_meta.handoff), nowhere at the SYN:
 * steer_sockops writes it at establishment from the listener's rs_listen
 * storage, so a SYN alone writes nothing at all; for UDP, which has no
 * handshake, in the sticky table at once. steer_sockops itself cannot run
 * under BPF_PROG_TEST_RUN; tests/e2e/test_sticky_flood.sh and
 * test_load_gauge cover it live.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_fixture.h"
#include "dataplane.h"
#include "dataplane_internal.h"
#include "ring.h"
#include "sticky.h"
#include <time.h>

#define NB	4 /* backends 0,1: web (tcp); 2,3: dns (udp) */
#define SVC_WEB 0
#define SVC_DNS 1

static struct rs_dataplane dp;
static int fds[NB][2];
static uint64_t cookies[NB][2];
static const char *const names[NB] = {"web-a", "web-b", "dns-a", "dns-b"};

static int add_service(uint32_t id, int proto, uint32_t first)
{
	struct rs_ring_member m[2];
	struct rs_service svc = {.id = id,
				 .enabled = 1,
				 .seed = 11 + id,
				 .protocol = (uint8_t)proto,
				 .prefix4 = 32,
				 .prefix6 = 128,
				 .sticky_ttl = 60};
	struct rs_ring ring;
	int err;

	for (uint32_t i = 0; i < 2; i++) {
		struct rs_backend be = {.state = RS_BACKEND_UP,
					.active_points = 160,
					.max_points = 160,
					.service = id};

		m[i].name = names[first + i];
		m[i].backend = first + i;
		m[i].points = 160;
		if (dp_set_backend(&dp, first + i, &be))
			return -1;
	}
	if (ring_build(m, 2, svc.seed, &ring))
		return -1;
	ring_set_key(&ring, &svc);
	err = dp_swap_ring(&dp, id, &ring) < 0 ||
	      dp_sticky_create(&dp, id, 1024) || dp_set_service(&dp, id, &svc);
	ring_free(&ring);
	return err ? -1 : 0;
}

static int setup(void)
{
	struct rs_bind_key keys[3];
	struct rs_bind vals[3];

	if (dp_open(&dp, NULL))
		return -1;
	for (int b = 0; b < NB; b++) {
		int type = b < 2 ? SOCK_STREAM : SOCK_DGRAM;

		for (int v6 = 0; v6 < 2; v6++) {
			fds[b][v6] = fixture_loopback_socket(
				v6 ? AF_INET6 : AF_INET, type, &cookies[b][v6]);
			if (fds[b][v6] < 0 ||
			    dp_set_socket(&dp, rs_socket_slot(b, v6),
					  fds[b][v6]))
				return -1;
		}
	}
	if (add_service(SVC_WEB, IPPROTO_TCP, 0) ||
	    add_service(SVC_DNS, IPPROTO_UDP, 2))
		return -1;
	if (fixture_bind_entry(&keys[0], &vals[0], IPPROTO_TCP, AF_INET,
			       "198.18.0.10", 32, 80, SVC_WEB) ||
	    fixture_bind_entry(&keys[1], &vals[1], IPPROTO_TCP, AF_INET6,
			       "2001:db8::10", 128, 80, SVC_WEB) ||
	    fixture_bind_entry(&keys[2], &vals[2], IPPROTO_UDP, AF_INET,
			       "198.18.0.10", 32, 53, SVC_DNS))
		return -1;
	return dp_sync_binds(&dp, keys, vals, 3);
}

static void teardown(void)
{
	for (int b = 0; b < NB; b++)
		for (int v6 = 0; v6 < 2; v6++)
			close(fds[b][v6]);
	dp_close(&dp);
}

static void set_handoff(uint32_t on)
{
	CU_ASSERT_EQUAL_FATAL(
		dp_meta_set(&dp, offsetof(struct rs_meta, handoff), on), 0);
}

/* Runs the program on one connection; returns the backend chosen or -1. */
static int run(int family, int proto, const char *src, uint16_t sport,
	       const char *dst, uint16_t dport)
{
	struct bpf_sk_lookup ctx = {.family = (uint32_t)family,
				    .protocol = (uint32_t)proto};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx));

	if (family == AF_INET) {
		inet_pton(AF_INET, src, &ctx.remote_ip4);
		inet_pton(AF_INET, dst, &ctx.local_ip4);
	} else {
		inet_pton(AF_INET6, src, ctx.remote_ip6);
		inet_pton(AF_INET6, dst, ctx.local_ip6);
	}
	ctx.remote_port = htons(sport);
	ctx.local_port = dport;
	if (bpf_prog_test_run_opts(bpf_program__fd(dp.skel->progs.steer_lookup),
				   &opts) ||
	    !ctx.cookie)
		return -1;
	for (int b = 0; b < NB; b++)
		if (cookies[b][0] == ctx.cookie || cookies[b][1] == ctx.cookie)
			return b;
	return -1;
}

static void sticky_key(struct rs_affinity_key *k, uint32_t svc, int family,
		       const char *src)
{
	memset(k, 0, sizeof(*k));
	k->service = svc;
	k->family = (uint8_t)family;
	inet_pton(family, src, k->addr);
}

/* Entries in service @svc's sticky table. */
static long sticky_count(uint32_t svc)
{
	int fd = dp_inner_map_fd(&dp, dp.skel->maps.rs_sticky, svc);
	struct rs_affinity_key cur, next;
	long n = 0;

	CU_ASSERT_FATAL(fd >= 0);
	for (int r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		cur = next;
		n++;
	}
	close(fd);
	return n;
}

static void test_tcp_syn_writes_no_sticky(void)
{
	const struct {
		int family;
		const char *src, *dst;
	} c[] = {{AF_INET, "198.18.1.1", "198.18.0.10"},
		 {AF_INET6, "2001:db8:1::1", "2001:db8::10"}};
	struct rs_affinity_key want;
	struct rs_sticky_entry e;

	set_handoff(1);
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		int b = run(c[i].family, IPPROTO_TCP, c[i].src, 40001, c[i].dst,
			    80);

		CU_ASSERT(b == 0 || b == 1);
		sticky_key(&want, SVC_WEB, c[i].family, c[i].src);
		CU_ASSERT_EQUAL(dp_sticky_lookup(&dp, SVC_WEB, &want, &e),
				-ENOENT);
	}
}

/*
 * One lookup from @src:@sport to 198.18.0.10:@dport; its sticky entry
 * must name the backend chosen.
 */
static void expect_sticky_now(int proto, uint32_t svc, const char *src,
			      uint16_t sport, uint16_t dport)
{
	struct rs_affinity_key want;
	struct rs_sticky_entry e;
	int b;

	b = run(AF_INET, proto, src, sport, "198.18.0.10", dport);
	CU_ASSERT(b >= 0);
	sticky_key(&want, svc, AF_INET, src);
	CU_ASSERT_EQUAL_FATAL(dp_sticky_lookup(&dp, svc, &want, &e), 0);
	CU_ASSERT_EQUAL(e.backend, (uint32_t)b);
}

static void test_udp_writes_sticky_at_once(void)
{
	set_handoff(1);
	expect_sticky_now(IPPROTO_UDP, SVC_DNS, "198.18.1.2", 5353, 53);
}

/* No sockops to consume hand-offs: TCP falls back to writing at the SYN. */
static void test_tcp_without_sockops_writes_sticky(void)
{
	set_handoff(0);
	expect_sticky_now(IPPROTO_TCP, SVC_WEB, "198.18.1.3", 40003, 80);
	set_handoff(1);
}

/*
 * A flood of SYNs from 70,000 addresses (forged, never answered): the web
 * service's sticky table stays as it was, and the loads do not move.
 */
static void test_syn_flood_writes_nothing(void)
{
	struct bpf_map *bl = dp.skel->maps.rs_backend_load;
	long before = sticky_count(SVC_WEB);
	struct rs_load l0 = {0}, l1 = {0};
	char src[32];
	int steered = 0;

	set_handoff(1);
	for (int i = 0; i < 70000; i++) {
		snprintf(src, sizeof(src), "198.19.%d.%d", (i >> 8) & 255,
			 i & 255);
		steered += run(AF_INET, IPPROTO_TCP, src,
			       (uint16_t)(1024 + (i >> 16)), "198.18.0.10",
			       80) >= 0;
	}
	CU_ASSERT_EQUAL(steered, 70000);
	CU_ASSERT_EQUAL(sticky_count(SVC_WEB), before);
	bpf_map_lookup_elem(bpf_map__fd(bl), &(uint32_t){0}, &l0);
	bpf_map_lookup_elem(bpf_map__fd(bl), &(uint32_t){1}, &l1);
	CU_ASSERT_EQUAL(l0.active, 0);
	CU_ASSERT_EQUAL(l1.active, 0);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put_sticky(uint32_t svc, const struct rs_affinity_key *k,
		       const struct rs_sticky_entry *e)
{
	int fd = dp_inner_map_fd(&dp, dp.skel->maps.rs_sticky, svc);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(bpf_map_update_elem(fd, k, e, BPF_ANY), 0);
	close(fd);
}

/*
 * The sticky rule twice: steer_sticky in BPF and sticky_honoured() in
 * userspace (which lookup uses). Over a grid of entry ages, backend
 * states, sockets and services, an entry naming the backend the ring
 * would not choose must win exactly when sticky_honoured() says so.
 */
static void test_sticky_rule_matches_userspace(void)
{
	static const uint32_t states[] = {RS_BACKEND_DOWN, RS_BACKEND_UP,
					  RS_BACKEND_DRAIN};
	static const int64_t ages_s[] = {0, 59, 61, -5}; /* ttl = 60 */
	const char *src = "198.18.7.7";
	struct rs_backend words[NB] = {0};
	bool has[NB];
	struct rs_ring_view view = {
		.backends = words, .has_socket = has, .nbackends = NB};
	struct rs_affinity_key key;
	int owner, other, checked = 0;

	set_handoff(1);
	sticky_key(&key, SVC_DNS, AF_INET, src);
	dp_sticky_forget_backend(&dp, SVC_DNS, 2);
	dp_sticky_forget_backend(&dp, SVC_DNS, 3);
	owner = run(AF_INET, IPPROTO_UDP, src, 5000, "198.18.0.10", 53);
	CU_ASSERT_FATAL(owner == 2 || owner == 3);
	other = owner == 2 ? 3 : 2;
	for (int b = 0; b < NB; b++) {
		words[b] = (struct rs_backend){.state = RS_BACKEND_UP,
					       .active_points = 160,
					       .max_points = 160,
					       .service = b < 2 ? SVC_WEB
								: SVC_DNS};
		has[b] = true;
	}
	/* The sticky backend: the other DNS backend, or one of web's. */
	for (int target = 0; target < 2; target++) {
		uint32_t tb = target ? (uint32_t)other : 0;

		for (size_t si = 0; si < ARRAY_SIZE(states); si++) {
			for (int sock = 0; sock < 2; sock++) {
				for (size_t a = 0; a < ARRAY_SIZE(ages_s);
				     a++) {
					struct rs_sticky_entry e = {.backend =
									    tb};
					struct rs_backend w = words[tb];
					uint64_t now = mono_ns();
					bool want;
					int got;

					w.state = states[si];
					CU_ASSERT_EQUAL_FATAL(
						dp_set_backend(&dp, tb, &w), 0);
					view.backends = words;
					words[tb].state = states[si];
					has[tb] = sock;
					if (!sock)
						dp_clear_socket(
							&dp,
							rs_socket_slot(tb, 0));
					e.last_seen_ns =
						now - (uint64_t)(ages_s[a] *
								 1000000000ll);
					put_sticky(SVC_DNS, &key, &e);
					want = sticky_honoured(
						&e, mono_ns(), 60, SVC_DNS,
						IPPROTO_UDP, &view);
					got = run(AF_INET, IPPROTO_UDP, src,
						  5000, "198.18.0.10", 53);
					CU_ASSERT_EQUAL(got,
							want ? (int)tb : owner);
					checked++;
					if (!sock)
						CU_ASSERT_EQUAL_FATAL(
							dp_set_socket(
								&dp,
								rs_socket_slot(
									tb, 0),
								fds[tb][0]),
							0);
					words[tb].state = RS_BACKEND_UP;
					w.state = RS_BACKEND_UP;
					dp_set_backend(&dp, tb, &w);
				}
			}
		}
	}
	CU_ASSERT_EQUAL(checked, 2 * 3 * 2 * 4);
}

static void set_load(struct bpf_map *map, uint32_t id, int64_t active)
{
	struct rs_load l = {.active = active};

	CU_ASSERT_EQUAL(bpf_map_update_elem(bpf_map__fd(map), &id, &l, BPF_ANY),
			0);
}

static int64_t get_load(struct bpf_map *map, uint32_t id)
{
	struct rs_load l = {0};

	bpf_map_lookup_elem(bpf_map__fd(map), &id, &l);
	return l.active;
}

/*
 * Bounded loads on a UDP service (issue 11): its load is its flows, the
 * live sticky entries. A flow on a backend at its bound stays there (the
 * kernel and sticky_honoured() agree; a TCP client in the same place
 * would spill); a new flow whose ring owner is at its bound goes to the
 * next backend, is counted in the gauge at once and gets its own entry.
 */
static void test_udp_flows_under_bound(void)
{
	const char *old_src = "198.18.9.1", *new_src = "198.18.9.2";
	struct bpf_map *bl = dp.skel->maps.rs_backend_load;
	struct bpf_map *sl = dp.skel->maps.rs_service_load;
	struct rs_backend words[NB] = {0};
	int64_t loads[NB] = {0};
	struct rs_ring_view view = {
		.backends = words, .nbackends = NB, .load = loads};
	struct rs_sticky_entry e = {0};
	struct rs_affinity_key key;
	struct rs_service svc;
	int owner, other, got;

	set_handoff(1);
	/* The ring owner of the new flow, with no bound yet. */
	owner = run(AF_INET, IPPROTO_UDP, new_src, 5000, "198.18.0.10", 53);
	CU_ASSERT_FATAL(owner == 2 || owner == 3);
	other = owner == 2 ? 3 : 2;
	dp_sticky_forget_backend(&dp, SVC_DNS, 2);
	dp_sticky_forget_backend(&dp, SVC_DNS, 3);

	/* bound = ceil(1.25 x (10 + 1) x 160 / 320) = 7: owner at 10. */
	for (uint32_t b = 2; b < NB; b++) {
		words[b] = (struct rs_backend){.state = RS_BACKEND_UP,
					       .active_points = 160,
					       .max_points = 160,
					       .bound_points = 320,
					       .balance_milli = 1250,
					       .service = SVC_DNS};
		CU_ASSERT_EQUAL(dp_set_backend(&dp, b, &words[b]), 0);
	}
	/* The service says a new flow is counted (REMEMBER_FLOW). */
	CU_ASSERT_EQUAL_FATAL(dp_get_service(&dp, SVC_DNS, &svc), 0);
	svc.balance_milli = 1250;
	CU_ASSERT_EQUAL(dp_set_service(&dp, SVC_DNS, &svc), 0);
	loads[owner] = 10;
	view.service_active = 10;
	set_load(bl, (uint32_t)owner, 10);
	set_load(bl, (uint32_t)other, 0);
	set_load(sl, SVC_DNS, 10);

	sticky_key(&key, SVC_DNS, AF_INET, old_src);
	e.backend = (uint32_t)owner;
	e.last_seen_ns = mono_ns();
	put_sticky(SVC_DNS, &key, &e);
	CU_ASSERT_TRUE(sticky_honoured(&e, mono_ns(), 60, SVC_DNS, IPPROTO_UDP,
				       &view));
	CU_ASSERT_FALSE(sticky_honoured(&e, mono_ns(), 60, SVC_DNS, IPPROTO_TCP,
					&view));
	got = run(AF_INET, IPPROTO_UDP, old_src, 5000, "198.18.0.10", 53);
	CU_ASSERT_EQUAL(got, owner);
	CU_ASSERT_EQUAL(get_load(bl, (uint32_t)owner), 10);

	got = run(AF_INET, IPPROTO_UDP, new_src, 5000, "198.18.0.10", 53);
	CU_ASSERT_EQUAL(got, other);
	CU_ASSERT_EQUAL(get_load(bl, (uint32_t)other), 1);
	CU_ASSERT_EQUAL(get_load(sl, SVC_DNS), 11);
	sticky_key(&key, SVC_DNS, AF_INET, new_src);
	CU_ASSERT_EQUAL(dp_sticky_lookup(&dp, SVC_DNS, &key, &e), 0);
	CU_ASSERT_EQUAL(e.backend, (uint32_t)other);
	/* Its next datagram is a hit: counted once. */
	got = run(AF_INET, IPPROTO_UDP, new_src, 5000, "198.18.0.10", 53);
	CU_ASSERT_EQUAL(got, other);
	CU_ASSERT_EQUAL(get_load(bl, (uint32_t)other), 1);

	for (uint32_t b = 2; b < NB; b++) {
		words[b].balance_milli = 0;
		words[b].bound_points = 0;
		dp_set_backend(&dp, b, &words[b]);
		set_load(bl, b, 0);
	}
	set_load(sl, SVC_DNS, 0);
	svc.balance_milli = 0;
	dp_set_service(&dp, SVC_DNS, &svc);
	dp_sticky_forget_backend(&dp, SVC_DNS, 2);
	dp_sticky_forget_backend(&dp, SVC_DNS, 3);
}

static const struct fixture_test tests[] = {
	{"TCP SYN: no sticky entry", test_tcp_syn_writes_no_sticky},
	{"UDP: sticky entry at lookup time", test_udp_writes_sticky_at_once},
	{"TCP without sockops: sticky entry at the SYN",
	 test_tcp_without_sockops_writes_sticky},
	{"a SYN flood writes no sticky entry and no load",
	 test_syn_flood_writes_nothing},
	{"sticky rule: BPF and userspace agree",
	 test_sticky_rule_matches_userspace},
	{"UDP flows under a bound: flows stay, new ones spill and count",
	 test_udp_flows_under_bound},
};

int main(void)
{
	return fixture_main("steer_handoff", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

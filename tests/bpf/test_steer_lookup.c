// SPDX-License-Identifier: MIT
/*
 * The sk_lookup program under BPF_PROG_TEST_RUN, with real sockets in its
 * SOCKMAP: the kernel's choice (reported as the selected socket's cookie)
 * must equal the userspace replica of the walk for every client, and
 * service matching, failover, weights and fallback must behave.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "replica.h"
#include "bpf_fixture.h"
#include "dataplane.h"
#include "hash.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define NBACKENDS 4
#define SVC_WEB	  0 /* tcp 198.18.0.10/32:80 and [2001:db8::10]:80 */
#define SVC_WIDE  1 /* tcp 198.18.0.0/24 every port, 4 backends */
#define SVC_UDP	  2 /* udp 198.18.0.10:53, no backends, fallback drop */

static struct rs_dataplane dp;
static int tcp_fds[NBACKENDS], tcp6_fds[NBACKENDS], udp_fd = -1;
/* Backend 3 has no IPv6 socket: IPv6 clients must skip it. */
static uint64_t cookies[NBACKENDS], cookies6[NBACKENDS];
static const bool has_v6[NBACKENDS] = {true, true, true, false};
static struct rs_backend backends[8];
static struct rs_service services[3];
static struct rs_ring ring_web;
static const char *const names[NBACKENDS] = {"cache-a", "cache-b", "cache-c",
					     "cache-d"};

/* The listens of the tests; @wide: with the /24 on every TCP port. */
static int sync_binds(bool wide)
{
	struct rs_bind_key keys[4];
	struct rs_bind vals[4];

	if (fixture_bind_entry(&keys[0], &vals[0], IPPROTO_TCP, AF_INET,
			       "198.18.0.10", 32, 80, SVC_WEB) ||
	    fixture_bind_entry(&keys[1], &vals[1], IPPROTO_TCP, AF_INET6,
			       "2001:db8::10", 128, 80, SVC_WEB) ||
	    fixture_bind_entry(&keys[2], &vals[2], IPPROTO_UDP, AF_INET,
			       "198.18.0.10", 32, 53, SVC_UDP) ||
	    fixture_bind_entry(&keys[3], &vals[3], IPPROTO_TCP, AF_INET,
			       "198.18.0.0", 24, 0, SVC_WIDE))
		return -1;
	return dp_sync_binds(&dp, keys, vals, wide ? 4 : 3);
}

static int setup(void)
{
	struct rs_ring_member m[NBACKENDS];
	struct rs_ring wide = {0}, none = {0};

	if (dp_open(&dp, NULL))
		return -1;
	for (int i = 0; i < NBACKENDS; i++) {
		tcp_fds[i] = fixture_loopback_socket(AF_INET, SOCK_STREAM,
						     &cookies[i]);
		if (tcp_fds[i] < 0 ||
		    dp_set_socket(&dp, rs_socket_slot(i, 0), tcp_fds[i]))
			return -1;
		tcp6_fds[i] = -1;
		if (has_v6[i]) {
			tcp6_fds[i] = fixture_loopback_socket(
				AF_INET6, SOCK_STREAM, &cookies6[i]);
			if (tcp6_fds[i] < 0 ||
			    dp_set_socket(&dp, rs_socket_slot(i, 1),
					  tcp6_fds[i]))
				return -1;
		}
		m[i].name = names[i];
		m[i].backend = i;
		m[i].points = 160;
		backends[i].state = RS_BACKEND_UP;
		backends[i].active_points = 160;
		backends[i].max_points = 160;
		if (dp_set_backend(&dp, i, &backends[i]))
			return -1;
	}
	udp_fd = fixture_loopback_socket(AF_INET, SOCK_DGRAM, NULL);
	for (int s = 0; s < 3; s++) {
		services[s].id = s;
		services[s].enabled = 1;
		services[s].seed = 7 + s;
		services[s].prefix4 = 32;
		services[s].prefix6 = 64;
		services[s].protocol = s == SVC_UDP ? IPPROTO_UDP : IPPROTO_TCP;
	}
	services[SVC_WIDE].prefix4 = 24;
	services[SVC_UDP].fallback = RS_FALLBACK_DROP;
	if (ring_build(m, NBACKENDS, services[SVC_WEB].seed, &ring_web) ||
	    ring_build(m, NBACKENDS, services[SVC_WIDE].seed, &wide))
		return -1;
	ring_set_key(&wide, &services[SVC_WIDE]);
	if (dp_swap_ring(&dp, SVC_WEB, &ring_web) < 0 ||
	    dp_swap_ring(&dp, SVC_WIDE, &wide) < 0 ||
	    dp_swap_ring(&dp, SVC_UDP, &none) < 0)
		return -1;
	ring_free(&wide);
	for (int s = 0; s < 3; s++)
		if (dp_set_service(&dp, s, &services[s]))
			return -1;
	return sync_binds(true);
}

struct verdict {
	int retval;	 /* SK_PASS (1) or SK_DROP (0) */
	uint64_t cookie; /* 0 when no socket was selected */
};

/* One test run of the program on @ctx, which it updates. */
static struct verdict run_lookup(struct bpf_sk_lookup *ctx)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ctx,
		    .ctx_size_in = sizeof(*ctx), .ctx_out = ctx,
		    .ctx_size_out = sizeof(*ctx));
	struct verdict v = {-1, 0};

	if (bpf_prog_test_run_opts(bpf_program__fd(dp.skel->progs.steer_lookup),
				   &opts))
		return v;
	v.retval = (int)opts.retval;
	v.cookie = ctx->cookie;
	return v;
}

static struct verdict run4(int proto, const char *src, uint16_t sport,
			   const char *dst, uint16_t dport)
{
	struct bpf_sk_lookup ctx = {.family = AF_INET, .protocol = proto};

	inet_pton(AF_INET, src, &ctx.remote_ip4);
	inet_pton(AF_INET, dst, &ctx.local_ip4);
	ctx.remote_port = htons(sport);
	ctx.local_port = dport;
	return run_lookup(&ctx);
}

static struct verdict run6(const char *src, const char *dst, uint16_t dport)
{
	struct bpf_sk_lookup ctx = {.family = AF_INET6,
				    .protocol = IPPROTO_TCP};

	inet_pton(AF_INET6, src, ctx.remote_ip6);
	inet_pton(AF_INET6, dst, ctx.local_ip6);
	ctx.remote_port = htons(40000);
	ctx.local_port = dport;
	return run_lookup(&ctx);
}

static int expected_backend(const struct rs_service *svc, int family,
			    const char *src, const bool *has_socket)
{
	struct rs_ring_view view = {.backends = backends,
				    .has_socket = has_socket,
				    .nbackends = NBACKENDS};
	uint8_t addr[16] = {0};

	inet_pton(family, src, addr);
	return replica_backend(&ring_web, svc, &view, family, addr, 0, NULL);
}

static int backend_of_cookie(uint64_t cookie)
{
	for (int i = 0; i < NBACKENDS; i++)
		if (cookie && (cookies[i] == cookie || cookies6[i] == cookie))
			return i;
	return -1;
}

static void client_addr(char *buf, size_t len, int i)
{
	snprintf(buf, len, "198.18.%d.%d", 1 + i / 250, 1 + i % 250);
}

static void test_v4_agrees_with_userspace(void)
{
	int mismatches = 0, seen[NBACKENDS] = {0};
	char src[32];

	for (int i = 0; i < 1000; i++) {
		struct verdict v;
		int want;

		client_addr(src, sizeof(src), i);
		v = run4(IPPROTO_TCP, src, 1024 + i, "198.18.0.10", 80);
		want = expected_backend(&services[SVC_WEB], AF_INET, src, NULL);
		CU_ASSERT_EQUAL(v.retval, SK_PASS);
		mismatches += backend_of_cookie(v.cookie) != want;
		if (want >= 0)
			seen[want]++;
	}
	CU_ASSERT_EQUAL(mismatches, 0);
	for (int i = 0; i < NBACKENDS; i++)
		CU_ASSERT(seen[i] > 100);
}

static void test_v6_agrees_with_userspace(void)
{
	int mismatches = 0, to_v4_only = 0, wrong_family = 0;
	char src[64];

	for (int i = 0; i < 300; i++) {
		struct verdict v;

		snprintf(src, sizeof(src), "2001:db8:1:%x::%x", i, i + 1);
		v = run6(src, "2001:db8::10", 80);
		CU_ASSERT_EQUAL(v.retval, SK_PASS);
		mismatches += backend_of_cookie(v.cookie) !=
			      expected_backend(&services[SVC_WEB], AF_INET6,
					       src, has_v6);
		to_v4_only += backend_of_cookie(v.cookie) == 3;
		/* The IPv6 socket, never the IPv4 one, takes IPv6 clients. */
		wrong_family += v.cookie && v.cookie != cookies6[0] &&
				v.cookie != cookies6[1] &&
				v.cookie != cookies6[2];
	}
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT_EQUAL(to_v4_only, 0);
	CU_ASSERT_EQUAL(wrong_family, 0);
	/* prefix6 = 64: the interface identifier never matters. */
	CU_ASSERT_EQUAL(
		run6("2001:db8:1:5::1", "2001:db8::10", 80).cookie,
		run6("2001:db8:1:5:ffff::99", "2001:db8::10", 80).cookie);
}

static void test_same_client_same_backend(void)
{
	uint64_t first =
		run4(IPPROTO_TCP, "198.18.3.3", 1000, "198.18.0.10", 80).cookie;

	CU_ASSERT_NOT_EQUAL(first, 0);
	for (int p = 0; p < 50; p++)
		CU_ASSERT_EQUAL(run4(IPPROTO_TCP, "198.18.3.3", 2000 + p,
				     "198.18.0.10", 80)
					.cookie,
				first);
}

static void test_service_matching(void)
{
	struct verdict v;

	/* Not ours: no socket chosen, the kernel's lookup proceeds. */
	v = run4(IPPROTO_TCP, "198.18.1.1", 1000, "198.18.9.9", 80);
	CU_ASSERT_EQUAL(v.retval, SK_PASS);
	CU_ASSERT_EQUAL(v.cookie, 0);
	v = run4(IPPROTO_UDP, "198.18.1.1", 1000, "198.18.0.10", 80);
	CU_ASSERT_EQUAL(v.retval, SK_PASS);
	CU_ASSERT_EQUAL(v.cookie, 0);
	/* /24 on every port: prefix4 = 24, so a whole /24 shares a backend. */
	v = run4(IPPROTO_TCP, "198.18.4.1", 1000, "198.18.0.77", 8080);
	CU_ASSERT_NOT_EQUAL(v.cookie, 0);
	CU_ASSERT_EQUAL(
		run4(IPPROTO_TCP, "198.18.4.200", 1000, "198.18.0.77", 443)
			.cookie,
		v.cookie);
}

static uint64_t port_word(uint8_t protocol, uint16_t port)
{
	__u32 w = rs_port_word(protocol, port);
	__u64 v = 0;

	CU_ASSERT_EQUAL(bpf_map_lookup_elem(bpf_map__fd(dp.skel->maps.rs_ports),
					    &w, &v),
			0);
	return v;
}

static bool port_unused(uint8_t protocol, uint16_t port)
{
	return (port_word(protocol, port) >> (port % 64)) & 1;
}

/*
 * rs_ports names the ports no listen covers, per protocol, and the
 * program turns those away before any bind lookup: a bit set by hand on
 * a port in use takes its service away until the binds are synced.
 */
static void test_unused_ports(void)
{
	__u32 w = rs_port_word(IPPROTO_TCP, 80);
	__u64 all = ~0ull;

	/* The /24 listens on every TCP port; UDP has 53 alone. */
	CU_ASSERT_FALSE(port_unused(IPPROTO_TCP, 8080));
	CU_ASSERT_FALSE(port_unused(IPPROTO_TCP, 65535));
	CU_ASSERT_FALSE(port_unused(IPPROTO_UDP, 53));
	CU_ASSERT_TRUE(port_unused(IPPROTO_UDP, 52));
	CU_ASSERT_TRUE(port_unused(IPPROTO_UDP, 54));
	CU_ASSERT_EQUAL(port_word(IPPROTO_UDP, 80), ~0ull);
	CU_ASSERT_EQUAL(port_word(IPPROTO_UDP, 0), ~(1ull << 53));

	/* Without the /24: TCP 80 alone is open, 8080 turned away. */
	CU_ASSERT_EQUAL_FATAL(sync_binds(false), 0);
	CU_ASSERT_FALSE(port_unused(IPPROTO_TCP, 80));
	CU_ASSERT_TRUE(port_unused(IPPROTO_TCP, 8080));
	CU_ASSERT_TRUE(port_unused(IPPROTO_TCP, 0));
	CU_ASSERT_EQUAL(
		run4(IPPROTO_TCP, "198.18.4.1", 1000, "198.18.0.77", 8080)
			.cookie,
		0);
	CU_ASSERT_NOT_EQUAL(
		run4(IPPROTO_TCP, "198.18.4.1", 1000, "198.18.0.10", 80).cookie,
		0);

	/* The program reads the map: TCP 80 marked unused is not steered. */
	CU_ASSERT_EQUAL_FATAL(
		bpf_map_update_elem(bpf_map__fd(dp.skel->maps.rs_ports), &w,
				    &all, 0),
		0);
	CU_ASSERT_EQUAL(
		run4(IPPROTO_TCP, "198.18.4.1", 1000, "198.18.0.10", 80).cookie,
		0);

	/* A sync puts it right; the /24 back opens every TCP port. */
	CU_ASSERT_EQUAL_FATAL(sync_binds(true), 0);
	CU_ASSERT_FALSE(port_unused(IPPROTO_TCP, 8080));
	CU_ASSERT_NOT_EQUAL(
		run4(IPPROTO_TCP, "198.18.4.1", 1000, "198.18.0.10", 80).cookie,
		0);
	CU_ASSERT_NOT_EQUAL(
		run4(IPPROTO_TCP, "198.18.4.1", 1000, "198.18.0.77", 8080)
			.cookie,
		0);
}

/* The /32:80 bind beats the /24:0 bind; count lookups per service. */
static void test_longest_prefix_wins(void)
{
	int svc_web_hits = 0;
	char src[32];

	for (int i = 0; i < 64; i++) {
		struct verdict a, b;

		client_addr(src, sizeof(src), 500 + i);
		a = run4(IPPROTO_TCP, src, 1000, "198.18.0.10", 80);
		b = run4(IPPROTO_TCP, src, 1000, "198.18.0.10", 81);
		svc_web_hits += backend_of_cookie(a.cookie) ==
				expected_backend(&services[SVC_WEB], AF_INET,
						 src, NULL);
		CU_ASSERT_NOT_EQUAL(b.cookie, 0);
	}
	CU_ASSERT_EQUAL(svc_web_hits, 64);
}

static void set_state(int b, uint32_t state, uint32_t active)
{
	backends[b].state = state;
	backends[b].active_points = active;
	CU_ASSERT_EQUAL_FATAL(dp_set_backend(&dp, b, &backends[b]), 0);
}

/* Only the DOWN backend's clients move, to where userspace predicts. */
static void test_down_and_drain_move_only_their_clients(void)
{
	int moved_wrongly = 0, mismatches = 0, had = 0;
	uint32_t states[] = {RS_BACKEND_DOWN, RS_BACKEND_DRAIN};
	char src[32];

	for (int s = 0; s < 2; s++) {
		int before[400];

		for (int i = 0; i < 400; i++) {
			client_addr(src, sizeof(src), i);
			before[i] = backend_of_cookie(
				run4(IPPROTO_TCP, src, 1, "198.18.0.10", 80)
					.cookie);
		}
		set_state(1, states[s], 160);
		for (int i = 0; i < 400; i++) {
			int after;

			client_addr(src, sizeof(src), i);
			after = backend_of_cookie(
				run4(IPPROTO_TCP, src, 1, "198.18.0.10", 80)
					.cookie);
			had += before[i] == 1;
			if (before[i] != 1 && after != before[i])
				moved_wrongly++;
			if (after == 1)
				moved_wrongly++;
			mismatches +=
				after != expected_backend(&services[SVC_WEB],
							  AF_INET, src, NULL);
		}
		set_state(1, RS_BACKEND_UP, 160);
	}
	CU_ASSERT(had > 0);
	CU_ASSERT_EQUAL(moved_wrongly, 0);
	CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_lowered_weight_matches_userspace(void)
{
	int mismatches = 0;
	char src[32];

	set_state(2, RS_BACKEND_UP, 40);
	for (int i = 0; i < 400; i++) {
		client_addr(src, sizeof(src), i);
		mismatches += backend_of_cookie(run4(IPPROTO_TCP, src, 1,
						     "198.18.0.10", 80)
							.cookie) !=
			      expected_backend(&services[SVC_WEB], AF_INET, src,
					       NULL);
	}
	set_state(2, RS_BACKEND_UP, 160);
	CU_ASSERT_EQUAL(mismatches, 0);
}

/* An empty SOCKMAP slot (backend exited) counts as DOWN by itself. */
static void test_closed_socket_fails_over(void)
{
	bool has[NBACKENDS] = {true, true, true, false};
	int mismatches = 0, to_dead = 0;
	char src[32];

	close(tcp_fds[3]);
	tcp_fds[3] = -1;
	for (int i = 0; i < 400; i++) {
		int got;

		client_addr(src, sizeof(src), i);
		got = backend_of_cookie(
			run4(IPPROTO_TCP, src, 1, "198.18.0.10", 80).cookie);
		to_dead += got == 3;
		mismatches += got != expected_backend(&services[SVC_WEB],
						      AF_INET, src, has);
	}
	CU_ASSERT_EQUAL(to_dead, 0);
	CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_fallback_pass_and_drop(void)
{
	struct verdict v;

	/* SVC_UDP has an empty ring and fallback = drop. */
	v = run4(IPPROTO_UDP, "198.18.1.1", 5000, "198.18.0.10", 53);
	CU_ASSERT_EQUAL(v.retval, SK_DROP);
	CU_ASSERT_EQUAL(v.cookie, 0);
	/* Everything down on a pass service: the kernel decides. */
	for (int b = 0; b < NBACKENDS; b++)
		set_state(b, RS_BACKEND_DOWN, 160);
	v = run4(IPPROTO_TCP, "198.18.1.1", 5000, "198.18.0.10", 80);
	CU_ASSERT_EQUAL(v.retval, SK_PASS);
	CU_ASSERT_EQUAL(v.cookie, 0);
	for (int b = 0; b < NBACKENDS; b++)
		set_state(b, RS_BACKEND_UP, 160);
}

static int web_backend(const char *src)
{
	return backend_of_cookie(
		run4(IPPROTO_TCP, src, 1, "198.18.0.10", 80).cookie);
}

static void set_sticky(uint32_t ttl)
{
	services[SVC_WEB].sticky_ttl = ttl;
	CU_ASSERT_EQUAL_FATAL(dp_set_service(&dp, SVC_WEB, &services[SVC_WEB]),
			      0);
}

struct entry_count {
	uint32_t backend; /* RS_MAX_BACKENDS: every entry */
	int n;
};

static void count_backend_entry(const struct rs_affinity_key *key,
				const struct rs_sticky_entry *e, void *arg)
{
	struct entry_count *c = arg;

	(void)key;
	if (c->backend == RS_MAX_BACKENDS || e->backend == c->backend)
		c->n++;
}

static int sticky_entries_of(uint32_t backend)
{
	struct entry_count c = {.backend = backend};

	dp_sticky_each(&dp, SVC_WEB, count_backend_entry, &c);
	return c.n;
}

/*
 * Sticky clients keep their backend while it is UP or DRAIN, even when the
 * ring now says otherwise; DRAIN takes no new clients; DOWN ends it.
 */
static void test_sticky_table(void)
{
	int first[200], moved_sticky = 0, new_to_drain = 0, back = 0;
	int before1, before_all;
	struct rs_ring_member m[NBACKENDS - 1];
	struct rs_ring without0;
	char src[32];

	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&dp, SVC_WEB, 1024), 0);
	CU_ASSERT_EQUAL(dp_sticky_size(&dp, SVC_WEB), 1024);
	set_sticky(60);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		first[i] = web_backend(src);
	}
	/* A ring without backend 0: its sticky clients must not move. */
	for (int i = 1; i < NBACKENDS; i++) {
		m[i - 1].name = names[i];
		m[i - 1].backend = i;
		m[i - 1].points = 160;
	}
	CU_ASSERT_EQUAL_FATAL(
		ring_build(m, NBACKENDS - 1, services[SVC_WEB].seed, &without0),
		0);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_WEB, &without0) > 0);
	set_state(0, RS_BACKEND_DRAIN, 160);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		moved_sticky += web_backend(src) != first[i];
		/* Never seen before: the ring decides, DRAIN takes none. */
		client_addr(src, sizeof(src), 600 + i);
		new_to_drain += web_backend(src) == 0;
	}
	CU_ASSERT_EQUAL(moved_sticky, 0);
	CU_ASSERT_EQUAL(new_to_drain, 0);

	/* DOWN: the sticky clients of backend 0 go where the ring says. */
	set_state(0, RS_BACKEND_DOWN, 160);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		if (first[i] == 0)
			back += web_backend(src) != 0;
	}
	CU_ASSERT(back > 0);
	set_state(0, RS_BACKEND_UP, 160);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_WEB, &ring_web) > 0);

	/* Forgetting a backend drops exactly its entries. */
	before1 = sticky_entries_of(1);
	before_all = sticky_entries_of(RS_MAX_BACKENDS);
	CU_ASSERT(before1 > 0);
	CU_ASSERT_EQUAL(dp_sticky_forget_backend(&dp, SVC_WEB, 1), 0);
	CU_ASSERT_EQUAL(sticky_entries_of(1), 0);
	CU_ASSERT_EQUAL(sticky_entries_of(RS_MAX_BACKENDS),
			before_all - before1);
	set_sticky(0);
	CU_ASSERT_EQUAL(dp_sticky_remove(&dp, SVC_WEB), 0);
	ring_free(&without0);
}

/*
 * A backend whose socket is gone for a moment (its process restarting)
 * while it is still UP: its sticky clients go elsewhere meanwhile, but
 * their entries stand, and they are back on it once it listens again.
 */
static void test_sticky_survives_restart(void)
{
	int first[200], during = 0, back = 0, mine = 0, b;
	uint32_t slot;
	char src[32];

	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&dp, SVC_WEB, 1024), 0);
	set_sticky(60);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		first[i] = web_backend(src);
	}
	b = first[0];
	slot = rs_socket_slot(b, 0);
	CU_ASSERT_EQUAL_FATAL(dp_clear_socket(&dp, slot), 0);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		mine += first[i] == b;
		during += web_backend(src) == b;
	}
	CU_ASSERT_EQUAL_FATAL(dp_set_socket(&dp, slot, tcp_fds[b]), 0);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		back += first[i] == b && web_backend(src) == b;
	}
	CU_ASSERT(mine > 0);
	CU_ASSERT_EQUAL(during, 0);
	CU_ASSERT_EQUAL(back, mine);
	set_sticky(0);
	CU_ASSERT_EQUAL(dp_sticky_remove(&dp, SVC_WEB), 0);
}

/* A reload that resizes the table keeps its clients where they were. */
static void test_sticky_resize_keeps_clients(void)
{
	struct rs_ring_member m[1] = {
		{.name = names[1], .backend = 1, .points = 160}};
	int first[100], moved = 0, elsewhere = 0;
	struct rs_ring only1;
	char src[32];

	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&dp, SVC_WEB, 1024), 0);
	set_sticky(60);
	for (int i = 0; i < 100; i++) {
		client_addr(src, sizeof(src), 700 + i);
		first[i] = web_backend(src);
		elsewhere += first[i] != 1;
	}
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 1, services[SVC_WEB].seed, &only1),
			      0);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_WEB, &only1) > 0);
	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&dp, SVC_WEB, 4096), 0);
	CU_ASSERT_EQUAL(dp_sticky_size(&dp, SVC_WEB), 4096);
	for (int i = 0; i < 100; i++) {
		client_addr(src, sizeof(src), 700 + i);
		moved += web_backend(src) != first[i];
	}
	CU_ASSERT(elsewhere > 40); /* the ring alone would move these */
	CU_ASSERT_EQUAL(moved, 0);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_WEB, &ring_web) > 0);
	CU_ASSERT_EQUAL(dp_sticky_remove(&dp, SVC_WEB), 0);
	set_sticky(0);
	ring_free(&only1);
}

/* The timeout slides with use and then lapses. */
static void test_sticky_ttl_lapses(void)
{
	struct rs_ring_member m[1] = {
		{.name = names[2], .backend = 2, .points = 160}};
	struct rs_ring only2;
	int stayed = 0, lapsed = 0;
	char src[32];

	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&dp, SVC_WEB, 1024), 0);
	set_sticky(1);
	for (int i = 0; i < 50; i++) {
		client_addr(src, sizeof(src), 300 + i);
		web_backend(src);
	}
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 1, services[SVC_WEB].seed, &only2),
			      0);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_WEB, &only2) > 0);
	for (int i = 0; i < 50; i++) {
		client_addr(src, sizeof(src), 300 + i);
		stayed += web_backend(src) != 2;
	}
	/*
	 * A fixed wait on purpose: the entries lapse with the clock, and no
	 * poll can ask the program whether they have, since a lookup slides
	 * their timeout.
	 */
	usleep(1300 * 1000);
	for (int i = 0; i < 50; i++) {
		client_addr(src, sizeof(src), 300 + i);
		lapsed += web_backend(src) == 2;
	}
	CU_ASSERT(stayed > 20); /* about 3 in 4 were elsewhere */
	CU_ASSERT_EQUAL(lapsed, 50);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_WEB, &ring_web) > 0);
	CU_ASSERT_EQUAL(dp_sticky_remove(&dp, SVC_WEB), 0);
	CU_ASSERT_EQUAL(dp_sticky_size(&dp, SVC_WEB), 0);
	set_sticky(0);
	ring_free(&only2);
}

/* A full table evicts its oldest entries and the ring keeps deciding. */
static void test_sticky_table_full(void)
{
	const bool has[NBACKENDS] = {true, true, true, false};
	int wrong = 0, entries = 0;
	char src[32];

	CU_ASSERT_EQUAL_FATAL(dp_sticky_create(&dp, SVC_WEB, 8), 0);
	set_sticky(60);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 300; i++) {
			client_addr(src, sizeof(src), i);
			wrong += web_backend(src) !=
				 expected_backend(&services[SVC_WEB], AF_INET,
						  src, has);
		}
	}
	entries = sticky_entries_of(RS_MAX_BACKENDS);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(entries > 0 && entries <= 8 + 2 * 4); /* LRU per-CPU slack */
	CU_ASSERT_EQUAL(dp_sticky_remove(&dp, SVC_WEB), 0);
	set_sticky(0);
}

static void test_counters(void)
{
	int ss_fd = bpf_map__fd(dp.skel->maps.rs_service_stats);
	int bs_fd = bpf_map__fd(dp.skel->maps.rs_backend_stats);
	uint64_t assigned = 0, spills = 0, sticky = 0;
	struct rs_service_stats ss;
	struct rs_backend_stats bs;

	CU_ASSERT_EQUAL_FATAL(
		fixture_percpu_sum(ss_fd, SVC_UDP, &ss, sizeof(ss)), 0);
	CU_ASSERT_EQUAL(ss.lookups, 1);
	CU_ASSERT_EQUAL(ss.no_backend, 1);
	for (uint32_t key = 0; key < NBACKENDS; key++) {
		CU_ASSERT_EQUAL_FATAL(
			fixture_percpu_sum(bs_fd, key, &bs, sizeof(bs)), 0);
		assigned += bs.assigned;
		spills += bs.spills;
		sticky += bs.sticky_hits;
	}
	CU_ASSERT(assigned > 1000);
	CU_ASSERT(spills > 0); /* the DOWN/DRAIN and closed-socket cases */
	CU_ASSERT(sticky > 0);
}

enum hold_want { WALKS_ON, WAITS };

/*
 * restart_grace: a UDP flow waits for its backend (dropped, counted as
 * held) while a slot the daemon holds for it (held_slots) is empty, and
 * only then (rs_restart_holds()); a TCP connection never waits.
 */
static void test_restart_holds_udp_flows(void)
{
	static const struct {
		const char *what;
		uint32_t state, held_slots;
		enum hold_want want;
	} cases[] = {
		{"empty slot, nothing held", RS_BACKEND_UP, 0, WALKS_ON},
		{"IPv4 slot held", RS_BACKEND_UP, 1, WAITS},
		{"both slots held", RS_BACKEND_UP, 3, WAITS},
		{"only the IPv6 slot held", RS_BACKEND_UP, 2, WALKS_ON},
		{"DOWN, IPv4 slot held", RS_BACKEND_DOWN, 1, WALKS_ON},
	};
	struct rs_ring_member m[2] = {
		{.name = "dns-a", .backend = 4, .points = 160},
		{.name = "dns-b", .backend = 5, .points = 160}};
	int ss_fd = bpf_map__fd(dp.skel->maps.rs_service_stats), fds[2];
	struct rs_ring ring = {0}, none = {0};
	struct rs_service_stats before, after;
	bool owned[200];
	uint64_t uc[2];
	int mine = 0;
	char src[32];

	for (int i = 0; i < 2; i++) {
		fds[i] = fixture_loopback_socket(AF_INET, SOCK_DGRAM, &uc[i]);
		CU_ASSERT_FATAL(fds[i] >= 0);
		CU_ASSERT_EQUAL_FATAL(
			dp_set_socket(&dp, rs_socket_slot(4 + i, 0), fds[i]),
			0);
		backends[4 + i] = (struct rs_backend){
			.state = RS_BACKEND_UP,
			.active_points = 160,
			.max_points = 160,
			.service = SVC_UDP,
		};
		CU_ASSERT_EQUAL_FATAL(
			dp_set_backend(&dp, 4 + i, &backends[4 + i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(ring_build(m, 2, services[SVC_UDP].seed, &ring),
			      0);
	CU_ASSERT_FATAL(dp_swap_ring(&dp, SVC_UDP, &ring) >= 0);
	for (int i = 0; i < 200; i++) {
		client_addr(src, sizeof(src), i);
		owned[i] = run4(IPPROTO_UDP, src, 5000, "198.18.0.10", 53)
				   .cookie == uc[0];
		mine += owned[i];
	}
	CU_ASSERT_FATAL(mine > 0 && mine < 200);
	CU_ASSERT_EQUAL_FATAL(dp_clear_socket(&dp, rs_socket_slot(4, 0)), 0);
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		int bad = 0;

		backends[4].state = cases[c].state;
		backends[4].held_slots = cases[c].held_slots;
		CU_ASSERT_EQUAL_FATAL(dp_set_backend(&dp, 4, &backends[4]), 0);
		fixture_percpu_sum(ss_fd, SVC_UDP, &before, sizeof(before));
		for (int i = 0; i < 200; i++) {
			struct verdict v;
			bool waits = owned[i] && cases[c].want == WAITS;

			client_addr(src, sizeof(src), i);
			v = run4(IPPROTO_UDP, src, 5000, "198.18.0.10", 53);
			bad += waits ? v.retval != SK_DROP || v.cookie != 0
				     : v.retval != SK_PASS || v.cookie != uc[1];
		}
		fixture_percpu_sum(ss_fd, SVC_UDP, &after, sizeof(after));
		if (bad ||
		    after.held - before.held !=
			    (cases[c].want == WAITS ? (uint64_t)mine : 0))
			fprintf(stderr, "  %s: %d wrong, %llu held of %d\n",
				cases[c].what, bad,
				(unsigned long long)(after.held - before.held),
				mine);
		CU_ASSERT_EQUAL(bad, 0);
		CU_ASSERT_EQUAL(after.held - before.held,
				cases[c].want == WAITS ? (uint64_t)mine : 0);
		CU_ASSERT_EQUAL(after.no_backend, before.no_backend);
	}
	/* TCP: the slot held and empty, the next backend takes it. */
	backends[0].held_slots = 3;
	CU_ASSERT_EQUAL_FATAL(dp_set_backend(&dp, 0, &backends[0]), 0);
	CU_ASSERT_EQUAL_FATAL(dp_clear_socket(&dp, rs_socket_slot(0, 0)), 0);
	{
		int not_served = 0;

		for (int i = 0; i < 200; i++) {
			client_addr(src, sizeof(src), i);
			not_served += web_backend(src) < 0;
		}
		CU_ASSERT_EQUAL(not_served, 0);
	}
	backends[0].held_slots = 0;
	CU_ASSERT_EQUAL(dp_set_backend(&dp, 0, &backends[0]), 0);
	CU_ASSERT_EQUAL(dp_set_socket(&dp, rs_socket_slot(0, 0), tcp_fds[0]),
			0);
	CU_ASSERT(dp_swap_ring(&dp, SVC_UDP, &none) >= 0);
	ring_free(&ring);
	for (int i = 0; i < 2; i++)
		close(fds[i]);
}

static void teardown(void)
{
	ring_free(&ring_web);
	dp_close(&dp);
}

static const struct fixture_test tests[] = {
	{"IPv4: kernel == userspace walk (1000 clients)",
	 test_v4_agrees_with_userspace},
	{"IPv6: kernel == userspace walk, /64 key",
	 test_v6_agrees_with_userspace},
	{"same client, any port: same backend", test_same_client_same_backend},
	{"service matching by proto/prefix/port", test_service_matching},
	{"longest prefix wins over port 0", test_longest_prefix_wins},
	{"ports no listen covers: turned away first", test_unused_ports},
	{"DOWN/DRAIN move only their clients",
	 test_down_and_drain_move_only_their_clients},
	{"lowered active_points == userspace",
	 test_lowered_weight_matches_userspace},
	{"closed socket fails over", test_closed_socket_fails_over},
	{"fallback pass and drop", test_fallback_pass_and_drop},
	{"sticky table: DRAIN keeps, ring change keeps, DOWN ends",
	 test_sticky_table},
	{"sticky table: resize keeps its clients",
	 test_sticky_resize_keeps_clients},
	{"sticky table: TTL lapses", test_sticky_ttl_lapses},
	{"sticky entries stand while their backend restarts",
	 test_sticky_survives_restart},
	{"sticky table full: the ring decides", test_sticky_table_full},
	{"per-service and per-backend counters", test_counters},
	{"restart_grace: UDP flows wait, TCP goes on",
	 test_restart_holds_udp_flows},
};

int main(void)
{
	return fixture_main("steer_lookup", setup, teardown, tests,
			    ARRAY_SIZE(tests));
}

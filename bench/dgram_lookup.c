// SPDX-License-Identifier: MIT
/*
 * A plain UDP datagram (a DNS query, say) is steered by steer_lookup at
 * the socket lookup of every datagram: the backend's socket is unconnected,
 * so the kernel looks it up each time. The service here has no cookie,
 * no sticky table and no bounded loads; the clients' addresses vary, so
 * the hash and the ring walk are not the same every run. A second service
 * like it has generations (issue 38): each backend's socket is its working
 * one, and a client's datagrams after its first find their flow recorded
 * there (the steady state of a flow).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_fixture.h"
#include "dataplane.h"
#include "dgram_lookup.h"
#include "floor_lookup.skel.h"
#include "ring.h"
#include "steer_lookup.skel.h"

#define MAX_BE	 32
#define SVC	 0
#define SVC_GEN	 1 /* backends nb..2nb-1 */
#define SVC_PORT 53

static const char *const svc_addr[] = {"198.18.0.40", "198.18.0.41"};
static struct rs_dataplane dp;
static struct floor_lookup_bpf *floor_skel;
static uint64_t cookies[2 * MAX_BE + 1]; /* the floor's socket last */
static unsigned int nbackends;

/* Service @svc's backends are @first.. @first + @nb - 1. */
static int set_ring(uint32_t svc, unsigned int first, unsigned int nb,
		    unsigned int points)
{
	static char names[2 * MAX_BE][16];
	struct rs_ring_member m[MAX_BE];
	struct rs_service s = {.id = svc,
			       .enabled = 1,
			       .seed = 0x5eedull,
			       .protocol = IPPROTO_UDP,
			       .prefix4 = 32,
			       .prefix6 = 64,
			       .generations = svc == SVC_GEN};
	struct rs_ring ring = {0};
	int err;

	for (unsigned int i = 0; i < nb; i++) {
		unsigned int b = first + i;
		struct rs_backend be = {.state = RS_BACKEND_UP,
					.service = svc,
					.active_points = points,
					.max_points = points};

		snprintf(names[b], sizeof(names[b]), "backend-%02u", b);
		memcpy(be.name, names[b], sizeof(names[b]));
		m[i] = (struct rs_ring_member){names[b], b, points};
		if (dp_set_backend(&dp, b, &be))
			return -1;
	}
	snprintf(s.name, sizeof(s.name), svc == SVC_GEN ? "dns-gen" : "dns");
	if (ring_build(m, nb, s.seed, &ring))
		return -1;
	ring_set_key(&ring, &s);
	err = dp_swap_ring(&dp, svc, &ring) < 0 || dp_set_service(&dp, svc, &s);
	ring_free(&ring);
	return err ? -1 : 0;
}

/* Socket @fd becomes backend @b's working one, as the daemon makes it. */
static int set_working(unsigned int b, int fd, uint64_t cookie)
{
	__u32 slot = rs_socket_slot(b, 0);
	__u64 v = (__u64)fd;

	if (bpf_map_update_elem(bpf_map__fd(dp.skel->maps.rs_gen_sockets),
				&cookie, &v, BPF_ANY) ||
	    dp_set_socket(&dp, slot, fd))
		return -1;
	return bpf_map_update_elem(bpf_map__fd(dp.skel->maps.rs_gen_working),
				   &slot, &cookie, BPF_ANY);
}

int dgram_lookup_setup(unsigned int nb, unsigned int points)
{
	struct rs_bind_key key[2];
	struct rs_bind val[2];
	__u32 slot = 0;
	__u64 ffd;
	int fd = -1;

	if (nb < 1 || nb > MAX_BE || dp_open(&dp, NULL))
		return -1;
	floor_skel = floor_lookup_bpf__open_and_load();
	if (!floor_skel)
		return -1;
	nbackends = nb;
	for (unsigned int i = 0; i <= 2 * nb; i++) {
		fd = fixture_loopback_socket(AF_INET, SOCK_DGRAM, &cookies[i]);
		if (fd < 0)
			return -1;
		if (i < nb && dp_set_socket(&dp, rs_socket_slot(i, 0), fd))
			return -1;
		if (i >= nb && i < 2 * nb && set_working(i, fd, cookies[i]))
			return -1;
	}
	/* SOCKMAP values are 64-bit: the fd goes in a __u64. */
	ffd = (__u64)fd;
	if (bpf_map_update_elem(bpf_map__fd(floor_skel->maps.floor_sockets),
				&slot, &ffd, BPF_ANY) ||
	    set_ring(SVC, 0, nb, points) || set_ring(SVC_GEN, nb, nb, points))
		return -1;
	for (uint32_t s = SVC; s <= SVC_GEN; s++)
		if (fixture_bind_entry(&key[s], &val[s], IPPROTO_UDP, AF_INET,
				       svc_addr[s], 32, SVC_PORT, s))
			return -1;
	return dp_sync_binds(&dp, key, val, 2);
}

double dgram_lookup_run(enum dgram_row row, unsigned int client,
			unsigned int repeat)
{
	bool floor = row == DGRAM_FLOOR;
	unsigned int first = row == DGRAM_GEN ? nbackends : 0;
	const char *dst = svc_addr[row == DGRAM_GEN ? SVC_GEN : SVC];
	struct bpf_sk_lookup ctx = {.family = AF_INET,
				    .protocol = IPPROTO_UDP,
				    .remote_port =
					    htons(40000 + client % 20000),
				    .local_port = SVC_PORT};
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx), .repeat = repeat);
	int prog = floor ? bpf_program__fd(floor_skel->progs.floor_lookup)
			 : bpf_program__fd(dp.skel->progs.steer_lookup);
	char a[32];

	snprintf(a, sizeof(a), "198.18.%u.%u", 1 + client / 250 % 250,
		 1 + client % 250);
	inet_pton(AF_INET, a, &ctx.remote_ip4);
	inet_pton(AF_INET, dst, &ctx.local_ip4);
	if (bpf_prog_test_run_opts(prog, &o) || o.retval != SK_PASS)
		return -1;
	if (floor)
		return ctx.cookie == cookies[2 * nbackends] ? (double)o.duration
							    : -1;
	for (unsigned int i = first; i < first + nbackends; i++)
		if (ctx.cookie && ctx.cookie == cookies[i])
			return (double)o.duration;
	return -1;
}

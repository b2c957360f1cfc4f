// SPDX-License-Identifier: MIT
/*
 * A plain UDP datagram (a DNS query, say) is steered by steer_lookup at
 * the socket lookup of every datagram: the backend's socket is unconnected,
 * so the kernel looks it up each time. The service here has no cookie,
 * no sticky table and no bounded loads; the clients' addresses vary, so
 * the hash and the ring walk are not the same every run.
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

#define MAX_BE	 64
#define SVC	 0
#define SVC_ADDR "198.18.0.40"
#define SVC_PORT 53

static struct rs_dataplane dp;
static struct floor_lookup_bpf *floor_skel;
static uint64_t cookies[MAX_BE + 1]; /* the floor's socket last */
static unsigned int nbackends;

static int set_ring(unsigned int nb, unsigned int points)
{
	static char names[MAX_BE][16];
	struct rs_ring_member m[MAX_BE];
	struct rs_service s = {.id = SVC,
			       .enabled = 1,
			       .seed = 0x5eedull,
			       .protocol = IPPROTO_UDP,
			       .prefix4 = 32,
			       .prefix6 = 64};
	struct rs_ring ring = {0};
	int err;

	for (unsigned int i = 0; i < nb; i++) {
		struct rs_backend be = {.state = RS_BACKEND_UP,
					.service = SVC,
					.active_points = points,
					.max_points = points};

		snprintf(names[i], sizeof(names[i]), "backend-%02u", i);
		memcpy(be.name, names[i], sizeof(names[i]));
		m[i] = (struct rs_ring_member){names[i], i, points};
		if (dp_set_backend(&dp, i, &be))
			return -1;
	}
	snprintf(s.name, sizeof(s.name), "dns");
	if (ring_build(m, nb, s.seed, &ring))
		return -1;
	ring_set_key(&ring, &s);
	err = dp_swap_ring(&dp, SVC, &ring) < 0 || dp_set_service(&dp, SVC, &s);
	ring_free(&ring);
	return err ? -1 : 0;
}

int dgram_lookup_setup(unsigned int nb, unsigned int points)
{
	struct rs_bind_key key;
	struct rs_bind val;
	__u32 slot = 0;
	__u64 ffd;
	int fd;

	if (nb < 1 || nb > MAX_BE || dp_open(&dp, NULL))
		return -1;
	floor_skel = floor_lookup_bpf__open_and_load();
	if (!floor_skel)
		return -1;
	nbackends = nb;
	for (unsigned int i = 0; i <= nb; i++) {
		fd = fixture_loopback_socket(AF_INET, SOCK_DGRAM, &cookies[i]);
		if (fd < 0)
			return -1;
		if (i < nb && dp_set_socket(&dp, rs_socket_slot(i, 0), fd))
			return -1;
	}
	/* SOCKMAP values are 64-bit: the fd goes in a __u64. */
	ffd = (__u64)fd;
	if (bpf_map_update_elem(bpf_map__fd(floor_skel->maps.floor_sockets),
				&slot, &ffd, BPF_ANY) ||
	    set_ring(nb, points) ||
	    fixture_bind_entry(&key, &val, IPPROTO_UDP, AF_INET, SVC_ADDR, 32,
			       SVC_PORT, SVC))
		return -1;
	return dp_sync_binds(&dp, &key, &val, 1);
}

double dgram_lookup_run(bool floor, unsigned int client, unsigned int repeat)
{
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
	inet_pton(AF_INET, SVC_ADDR, &ctx.local_ip4);
	if (bpf_prog_test_run_opts(prog, &o) || o.retval != SK_PASS)
		return -1;
	if (floor)
		return ctx.cookie == cookies[nbackends] ? (double)o.duration
							: -1;
	for (unsigned int i = 0; i < nbackends; i++)
		if (ctx.cookie && ctx.cookie == cookies[i])
			return (double)o.duration;
	return -1;
}

// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_fixture.h"
#include "ring_fixture.h"
#include "steer_lookup.skel.h"

int ring_fixture_setup(struct ring_fixture *f, const char *const *names, int n,
		       uint32_t points, uint64_t seed)
{
	struct rs_ring_member m[RING_FIXTURE_MAX];
	struct rs_bind_key key;
	struct rs_bind val;

	memset(f, 0, sizeof(*f));
	for (int i = 0; i < RING_FIXTURE_MAX; i++)
		f->fds[i] = -1;
	if (n > RING_FIXTURE_MAX || dp_open(&f->dp, NULL))
		return -1;
	f->n = n;
	for (int i = 0; i < n; i++) {
		f->fds[i] = fixture_loopback_socket(AF_INET, SOCK_STREAM,
						    &f->cookies[i]);
		if (f->fds[i] < 0 ||
		    dp_set_socket(&f->dp, rs_socket_slot(i, 0), f->fds[i]))
			return -1;
		f->has_socket[i] = true;
		m[i] = (struct rs_ring_member){names[i], (uint32_t)i, points};
		f->backends[i].state = RS_BACKEND_UP;
		f->backends[i].active_points = points;
		f->backends[i].max_points = points;
		if (dp_set_backend(&f->dp, i, &f->backends[i]))
			return -1;
	}
	f->service.enabled = 1;
	f->service.seed = seed;
	f->service.prefix4 = 32;
	f->service.prefix6 = 64;
	f->service.protocol = IPPROTO_TCP;
	f->service.fallback = RS_FALLBACK_DROP;
	if (ring_build(m, n, seed, &f->ring))
		return -1;
	ring_set_key(&f->ring, &f->service);
	if (dp_swap_ring(&f->dp, RING_FIXTURE_SVC, &f->ring) < 0 ||
	    dp_set_service(&f->dp, RING_FIXTURE_SVC, &f->service))
		return -1;
	if (fixture_bind_entry(&key, &val, IPPROTO_TCP, AF_INET, "198.18.0.10",
			       32, 80, RING_FIXTURE_SVC))
		return -1;
	return dp_sync_binds(&f->dp, &key, &val, 1);
}

void ring_fixture_teardown(struct ring_fixture *f)
{
	for (int i = 0; i < RING_FIXTURE_MAX; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	ring_free(&f->ring);
	dp_close(&f->dp);
}

int ring_fixture_choice(struct ring_fixture *f, uint32_t src, int *retval)
{
	struct bpf_sk_lookup ctx = {.family = AF_INET,
				    .protocol = IPPROTO_TCP,
				    .remote_ip4 = src,
				    .remote_port = htons(40000),
				    .local_port = 80};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx));
	int prog = bpf_program__fd(f->dp.skel->progs.steer_lookup);

	inet_pton(AF_INET, "198.18.0.10", &ctx.local_ip4);
	if (retval)
		*retval = -1;
	if (bpf_prog_test_run_opts(prog, &opts))
		return -2;
	if (retval)
		*retval = (int)opts.retval;
	for (int i = 0; i < f->n; i++)
		if (ctx.cookie && ctx.cookie == f->cookies[i])
			return i;
	return -1;
}

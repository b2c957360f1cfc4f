// SPDX-License-Identifier: MIT
/*
 * The loaded steer_lookup run on a crafted context (BPF_PROG_TEST_RUN),
 * for `ringsteer lookup --kernel`: what the kernel decides for one client
 * now, from the maps in force, beside what the daemon's replica says
 * (Katran's simulator, but the real program). It is a real run: the
 * service's counters count it, and for a UDP service with a sticky table
 * it writes or refreshes the client's entry as the client's next
 * datagram would.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dataplane_internal.h"

int dp_lookup_run(struct rs_dataplane *dp, const struct dp_lookup_probe *p,
		  int *verdict, uint64_t *cookie)
{
	struct bpf_sk_lookup ctx = {
		.family = p->family,
		.protocol = p->protocol,
		.remote_port = htons(p->client_port),
		.local_port = p->local_port,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx));

	if (!dp->skel)
		return -ENOENT;
	if (p->family == AF_INET) {
		memcpy(&ctx.remote_ip4, p->client, 4);
		memcpy(&ctx.local_ip4, p->local, 4);
	} else {
		memcpy(ctx.remote_ip6, p->client, 16);
		memcpy(ctx.local_ip6, p->local, 16);
	}
	if (bpf_prog_test_run_opts(
		    bpf_program__fd(dp->skel->progs.steer_lookup), &opts))
		return -errno;
	*verdict = (int)opts.retval;
	*cookie = ctx.cookie;
	return 0;
}

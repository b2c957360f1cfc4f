// SPDX-License-Identifier: MIT
/*
 * decision_cost: what one steering decision costs in the kernel.
 *
 *   decision_cost [--repeat N] [--rounds R] [--clients K]
 *                 [--backends 1,4,16,64] [--points 160,1024,4096]
 *                 --tsv FILE --md FILE
 *
 * The real steer_lookup program (loaded unpinned, as tests/bpf does) and a
 * floor program that assigns one fixed socket (bench/bpf/floor_lookup.bpf.c)
 * run under BPF_PROG_TEST_RUN with a repeat count; the kernel reports the
 * mean time per run. Both SOCKMAPs hold real listening sockets. For every
 * cell (family, sticky table off/on, backends, points per backend) the two
 * programs run alternately, client address by client address, round after
 * round, so the floor is measured in the same moments as the program it
 * is compared with. Reported: the median over all runs of each, and their
 * ratio.
 *
 * Tracing (issue 24, `ringsteer trace`): three cells on the last ring,
 * plain path: trace off (the one read of rs_trace_ctl.enabled), trace on
 * with a filter no decision matches (another service), and trace on with
 * an event per decision (read from the ring buffer between runs, with a
 * shorter repeat so that the 1 MiB buffer never fills within a run).
 *
 * The sticky table is switched on through BTF: rs_service.sticky_ttl is set
 * at the offset the loaded object's BTF gives, and an LRU inner map is put
 * into rs_sticky for the service. A build whose program has no sticky table
 * simply ignores both, and the "sticky_active" column then says 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "dataplane.h"
#include "hash.h"
#include "ring.h"
#include "steer_lookup.skel.h"
#include "floor_lookup.skel.h"

#define MAX_BACKENDS 64
#define MAX_LIST     8
#define MAX_CLIENTS  256
#define SVC	     0
#define SVC_SEED     0x5eedull
#define STICKY_TTL_S 3600
#define STICKY_MAX   65536

struct opts {
	unsigned int repeat;
	unsigned int rounds;
	unsigned int clients;
	unsigned int backends[MAX_LIST];
	unsigned int nbackends;
	unsigned int points[MAX_LIST];
	unsigned int npoints;
	const char *tsv;
	const char *md;
};

struct cell {
	int family;
	bool sticky;
	bool bounded; /* balance_factor 1.25, every backend under its bound */
	/*
	 * steer_sockops attached (rs_meta.handoff), as in production: the
	 * production TCP decision (issue 21 keeps the row's name; since then
	 * it writes nothing, the listener's rs_listen storage carries the
	 * backend to establishment).
	 */
	bool handoff;
	bool miss;	/* address of no service: only the bind match runs */
	bool miss_port; /* a port no service uses: turned away first */
	int trace;	/* TRACE_*: a tracing cell */
	unsigned int backends;
	unsigned int points;
	double steer_ns;
	double floor_ns;
	double ratio;
	bool sticky_active;
};

static struct opts g_opt = {
	.repeat = 20000,
	.rounds = 5,
	.clients = 16,
	.backends = {1, 4, 16, 64},
	.nbackends = 4,
	.points = {160, 1024, 4096},
	.npoints = 3,
};

enum { TRACE_NONE, TRACE_OFF, TRACE_NOMATCH, TRACE_EVENT };
#define TRACE_EVENT_REPEAT 4000

static struct rs_dataplane dp;
static struct ring_buffer *trace_rb;
static struct floor_lookup_bpf *floor_skel;
static int sock4[MAX_BACKENDS], sock6[MAX_BACKENDS];
static uint64_t cookie4[MAX_BACKENDS], cookie6[MAX_BACKENDS];
static int floor4 = -1, floor6 = -1;
static uint64_t floor_cookie4, floor_cookie6;
static struct rs_backend backends[MAX_BACKENDS];
static struct rs_service service;
static struct rs_ring ring;
static long sticky_ttl_off = -1; /* in struct rs_service, from BTF */
static int sticky_value_size = -1;
static int sticky_inner_fd = -1;

static int listen_on(int family, uint64_t *cookie)
{
	struct sockaddr_in sa4 = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	socklen_t len = sizeof(*cookie);
	int one = 1, fd;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		goto err;
	if (family == AF_INET ? bind(fd, (struct sockaddr *)&sa4, sizeof(sa4))
			      : bind(fd, (struct sockaddr *)&sa6, sizeof(sa6)))
		goto err;
	if (listen(fd, 16) ||
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &len))
		goto err;
	return fd;
err:
	close(fd);
	return -1;
}

static long btf_member_offset(const struct btf *btf, const char *sname,
			      const char *mname)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	if (id < 0)
		return -1;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), mname))
			return btf_member_bit_offset(t, i) / 8;
	return -1;
}

/* Whether this build's program and ABI know the sticky table at all. */
static void probe_sticky(void)
{
	const struct btf *btf = bpf_object__btf(dp.skel->obj);
	int id;

	if (!btf || !bpf_object__find_map_by_name(dp.skel->obj, "rs_sticky"))
		return;
	sticky_ttl_off = btf_member_offset(btf, "rs_service", "sticky_ttl");
	id = btf__find_by_name_kind(btf, "rs_sticky_entry", BTF_KIND_STRUCT);
	if (id > 0)
		sticky_value_size = btf__resolve_size(btf, id);
}

static bool sticky_possible(void)
{
	return sticky_ttl_off >= 0 && sticky_value_size > 0;
}

/*
 * Writes the service with sticky_ttl set (or 0) and, when on, a fresh LRU
 * inner map, so no entry from an earlier cell survives.
 */
static int set_sticky(bool on)
{
	struct bpf_map *svc_map = dp.skel->maps.rs_services;
	struct bpf_map *outer;
	__u32 key = SVC, ttl = on ? STICKY_TTL_S : 0;
	size_t vsz = bpf_map__value_size(svc_map);
	unsigned char *buf;
	int err, fd;

	if (dp_set_service(&dp, SVC, &service))
		return -1;
	if (!sticky_possible())
		return on ? -1 : 0;
	buf = calloc(1, vsz);
	if (!buf)
		return -1;
	err = bpf_map_lookup_elem(bpf_map__fd(svc_map), &key, buf);
	if (!err && sticky_ttl_off + sizeof(ttl) <= vsz) {
		memcpy(buf + sticky_ttl_off, &ttl, sizeof(ttl));
		err = bpf_map_update_elem(bpf_map__fd(svc_map), &key, buf, 0);
	}
	free(buf);
	if (err || !on)
		return err ? -1 : 0;
	outer = bpf_object__find_map_by_name(dp.skel->obj, "rs_sticky");
	fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "rs_sticky_bench",
			    sizeof(struct rs_affinity_key), sticky_value_size,
			    STICKY_MAX, NULL);
	if (fd < 0)
		return -1;
	if (bpf_map_update_elem(bpf_map__fd(outer), &key, &fd, 0)) {
		close(fd);
		return -1;
	}
	if (sticky_inner_fd >= 0)
		close(sticky_inner_fd);
	sticky_inner_fd = fd;
	return 0;
}

static uint64_t sticky_hits(void)
{
	int ncpu = libbpf_num_possible_cpus();
	struct rs_backend_stats *bs = calloc(ncpu, sizeof(*bs));
	uint64_t hits = 0;

	if (!bs)
		return 0;
	for (__u32 b = 0; b < MAX_BACKENDS; b++) {
		if (bpf_map_lookup_elem(
			    bpf_map__fd(dp.skel->maps.rs_backend_stats), &b,
			    bs))
			continue;
		for (int c = 0; c < ncpu; c++)
			hits += bs[c].sticky_hits;
	}
	free(bs);
	return hits;
}

static int setup(void)
{
	struct rs_bind_key keys[2] = {0};
	struct rs_bind vals[2] = {0};
	struct bpf_map *fm;
	__u32 slot;

	if (dp_open(&dp, NULL))
		return -1;
	floor_skel = floor_lookup_bpf__open_and_load();
	if (!floor_skel)
		return -1;
	for (int i = 0; i < MAX_BACKENDS; i++) {
		sock4[i] = listen_on(AF_INET, &cookie4[i]);
		sock6[i] = listen_on(AF_INET6, &cookie6[i]);
		if (sock4[i] < 0 || sock6[i] < 0 ||
		    dp_set_socket(&dp, rs_socket_slot(i, 0), sock4[i]) ||
		    dp_set_socket(&dp, rs_socket_slot(i, 1), sock6[i]))
			return -1;
	}
	floor4 = listen_on(AF_INET, &floor_cookie4);
	floor6 = listen_on(AF_INET6, &floor_cookie6);
	if (floor4 < 0 || floor6 < 0)
		return -1;
	/* SOCKMAP values are 64-bit: the fd goes in a __u64. */
	fm = floor_skel->maps.floor_sockets;
	for (slot = 0; slot < 2; slot++) {
		__u64 fd = slot ? floor6 : floor4;

		if (bpf_map_update_elem(bpf_map__fd(fm), &slot, &fd, BPF_ANY))
			return -1;
	}

	service.id = SVC;
	service.enabled = 1;
	service.seed = SVC_SEED;
	service.protocol = IPPROTO_TCP;
	service.prefix4 = 32;
	service.prefix6 = 64;
	snprintf(service.name, sizeof(service.name), "bench");
	keys[0].prefixlen = 32 + 32;
	keys[0].protocol = IPPROTO_TCP;
	keys[0].family = AF_INET;
	keys[0].port = 80;
	inet_pton(AF_INET, "198.18.0.10", keys[0].addr);
	keys[1].prefixlen = 32 + 128;
	keys[1].protocol = IPPROTO_TCP;
	keys[1].family = AF_INET6;
	keys[1].port = 80;
	inet_pton(AF_INET6, "2001:db8::10", keys[1].addr);
	vals[0].service = vals[1].service = SVC;
	vals[0].addr_prefixlen = 32;
	vals[1].addr_prefixlen = 128;
	if (dp_sync_binds(&dp, keys, vals, 2))
		return -1;
	probe_sticky();
	return set_sticky(false);
}

static int set_ring(unsigned int nb, unsigned int points)
{
	static char names[MAX_BACKENDS][16];
	struct rs_ring_member m[MAX_BACKENDS];

	for (unsigned int i = 0; i < MAX_BACKENDS; i++) {
		snprintf(names[i], sizeof(names[i]), "backend-%02u", i);
		m[i].name = names[i];
		m[i].backend = i;
		m[i].points = points;
		backends[i].state = i < nb ? RS_BACKEND_UP : RS_BACKEND_DOWN;
		backends[i].active_points = points;
		backends[i].max_points = points;
		backends[i].service = SVC;
		memcpy(backends[i].name, names[i], sizeof(names[i]));
		if (dp_set_backend(&dp, i, &backends[i]))
			return -1;
	}
	ring_free(&ring);
	if (ring_build(m, nb, SVC_SEED, &ring))
		return -1;
	return dp_swap_ring(&dp, SVC, &ring) < 0 ? -1 : 0;
}

/*
 * Bounded loads on (balance_factor 1.25) or off for the backends of the
 * ring in place. The gauges stay at 0, so no backend is at its bound and
 * the choice is the same: this measures what checking the bound costs on
 * every decision, the common case.
 */
static int set_bounded(bool on, unsigned int nb)
{
	for (unsigned int i = 0; i < MAX_BACKENDS; i++) {
		backends[i].balance_milli = on ? 1250 : 0;
		backends[i].bound_points =
			on ? nb * backends[i].active_points : 0;
		if (dp_set_backend(&dp, i, &backends[i]))
			return -1;
	}
	return 0;
}

/* rs_meta.handoff, as dp_sockops_attach() sets it when sockops runs. */
static int set_handoff(bool on)
{
	int fd = bpf_map__fd(dp.skel->maps.rs_meta);
	struct rs_meta meta;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -1;
	meta.handoff = on;
	return bpf_map_update_elem(fd, &zero, &meta, 0) ? -1 : 0;
}

static void client_ctx(int family, unsigned int k, const struct cell *c,
		       struct bpf_sk_lookup *ctx)
{
	bool miss = c->miss;

	char a[64];

	memset(ctx, 0, sizeof(*ctx));
	ctx->family = family;
	ctx->protocol = IPPROTO_TCP;
	ctx->remote_port = htons(40000 + k);
	ctx->local_port = c->miss_port ? 81 : 80;
	if (family == AF_INET) {
		snprintf(a, sizeof(a), "198.18.%u.%u", 1 + k / 250,
			 1 + k % 250);
		inet_pton(AF_INET, a, &ctx->remote_ip4);
		inet_pton(AF_INET, miss ? "198.18.0.99" : "198.18.0.10",
			  &ctx->local_ip4);
	} else {
		snprintf(a, sizeof(a), "2001:db8:1:%x::%x", k, k + 1);
		inet_pton(AF_INET6, a, ctx->remote_ip6);
		inet_pton(AF_INET6, miss ? "2001:db8::99" : "2001:db8::10",
			  ctx->local_ip6);
	}
}

static int trace_discard(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

/* rs_trace_ctl for @mode, and a reader of the events. */
static int set_trace(int mode)
{
	struct rs_trace_ctl t = {
		.enabled = mode == TRACE_NOMATCH || mode == TRACE_EVENT,
		.service = mode == TRACE_NOMATCH ? SVC + 1 : RS_NONE,
		.backend = RS_NONE};
	__u32 zero = 0;

	if (!trace_rb)
		trace_rb = ring_buffer__new(
			bpf_map__fd(dp.skel->maps.rs_trace_events),
			trace_discard, NULL, NULL);
	if (!trace_rb)
		return -1;
	ring_buffer__consume(trace_rb);
	return bpf_map_update_elem(bpf_map__fd(dp.skel->maps.rs_trace_ctl),
				   &zero, &t, 0)
		       ? -1
		       : 0;
}

/* Mean ns per run over @repeat runs; the chosen socket's cookie in @cookie. */
static int test_run(int prog_fd, const struct bpf_sk_lookup *in,
		    unsigned int repeat, uint64_t *cookie, double *ns)
{
	struct bpf_sk_lookup ctx = *in;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx), .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &opts))
		return -1;
	if (opts.retval != SK_PASS)
		return -1;
	*cookie = ctx.cookie;
	*ns = opts.duration;
	return 0;
}

static int expected_backend(int family, const struct bpf_sk_lookup *ctx)
{
	struct rs_ring_view view = {.backends = backends,
				    .nbackends = MAX_BACKENDS};
	struct rs_affinity_key key;
	struct rs_ring_choice c;
	uint8_t addr[16] = {0};

	if (family == AF_INET)
		memcpy(addr, &ctx->remote_ip4, 4);
	else
		memcpy(addr, ctx->remote_ip6, 16);
	rs_affinity_key_build(&key, &service, family, addr, 0);
	if (ring_lookup(&ring, &view, rs_hash_key(&key, service.seed), &c,
			NULL))
		return -1;
	return (int)c.backend;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	if (n == 0)
		return 0;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int measure(struct cell *c)
{
	int steer_fd = bpf_program__fd(dp.skel->progs.steer_lookup);
	int floor_fd = bpf_program__fd(floor_skel->progs.floor_lookup);
	size_t n = (size_t)g_opt.rounds * g_opt.clients, i = 0;
	double *steer = calloc(n, sizeof(double));
	double *flr = calloc(n, sizeof(double));
	uint64_t hits0 = sticky_hits();
	int rc = -1;

	if (!steer || !flr)
		goto out;
	for (unsigned int r = 0; r < g_opt.rounds; r++) {
		for (unsigned int k = 0; k < g_opt.clients; k++, i++) {
			struct bpf_sk_lookup ctx;
			uint64_t ck, fck = c->family == AF_INET6
						   ? floor_cookie6
						   : floor_cookie4;
			int want;

			client_ctx(c->family, k, c, &ctx);
			if (test_run(floor_fd, &ctx, g_opt.repeat, &ck,
				     &flr[i]) ||
			    ck != fck) {
				fprintf(stderr, "decision_cost: floor did not "
						"assign its socket\n");
				goto out;
			}
			if (test_run(steer_fd, &ctx,
				     c->trace == TRACE_EVENT &&
						     g_opt.repeat >
							     TRACE_EVENT_REPEAT
					     ? TRACE_EVENT_REPEAT
					     : g_opt.repeat,
				     &ck, &steer[i]))
				goto out;
			if (c->trace == TRACE_EVENT)
				ring_buffer__consume(trace_rb);
			if (c->miss || c->miss_port) {
				/* Not ours: the kernel's own lookup decides. */
				if (ck) {
					fprintf(stderr,
						"decision_cost: a "
						"miss chose a socket\n");
					goto out;
				}
				continue;
			}
			want = expected_backend(c->family, &ctx);
			if (want < 0 ||
			    ck != (c->family == AF_INET6 ? cookie6[want]
							 : cookie4[want])) {
				fprintf(stderr,
					"decision_cost: steer_lookup chose "
					"cookie %llu, expected backend %d\n",
					(unsigned long long)ck, want);
				goto out;
			}
		}
	}
	c->steer_ns = median(steer, n);
	c->floor_ns = median(flr, n);
	c->ratio = c->floor_ns > 0 ? c->steer_ns / c->floor_ns : 0;
	c->sticky_active = sticky_hits() > hits0;
	rc = 0;
out:
	free(steer);
	free(flr);
	return rc;
}

static int parse_list(const char *s, unsigned int *out, unsigned int *n,
		      unsigned int max_value)
{
	char *dup = strdup(s), *save = NULL, *tok;

	*n = 0;
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v == 0 || v > max_value || *n == MAX_LIST) {
			free(dup);
			return -1;
		}
		out[(*n)++] = v;
	}
	free(dup);
	return *n ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: decision_cost [--repeat N] [--rounds R] "
		   "[--clients K] [--backends LIST] [--points LIST] "
		   "--tsv FILE --md FILE\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{"repeat", required_argument, NULL, 'r'},
		{"rounds", required_argument, NULL, 'R'},
		{"clients", required_argument, NULL, 'k'},
		{"backends", required_argument, NULL, 'b'},
		{"points", required_argument, NULL, 'p'},
		{"tsv", required_argument, NULL, 't'},
		{"md", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			g_opt.repeat = strtoul(optarg, NULL, 10);
			break;
		case 'R':
			g_opt.rounds = strtoul(optarg, NULL, 10);
			break;
		case 'k':
			g_opt.clients = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			if (parse_list(optarg, g_opt.backends, &g_opt.nbackends,
				       MAX_BACKENDS))
				return -1;
			break;
		case 'p':
			if (parse_list(optarg, g_opt.points, &g_opt.npoints,
				       RS_MAX_RING_POINTS / MAX_BACKENDS))
				return -1;
			break;
		case 't':
			g_opt.tsv = optarg;
			break;
		case 'm':
			g_opt.md = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc || !g_opt.tsv || !g_opt.md || !g_opt.repeat ||
	    !g_opt.rounds || !g_opt.clients || g_opt.clients > MAX_CLIENTS)
		return -1;
	return 0;
}

static const char *fam_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

static void write_md(FILE *f, const struct cell *cells, size_t n)
{
	bool any_active = false;

	for (size_t i = 0; i < n; i++)
		any_active |= cells[i].sticky && cells[i].sticky_active;
	fprintf(f,
		"Repeat count %u per test run; %u client addresses x %u "
		"rounds per cell, floor and steer_lookup alternating; "
		"medians of the per-run means.\n\n",
		g_opt.repeat, g_opt.clients, g_opt.rounds);
	if (!sticky_possible())
		fprintf(f, "**The loaded program has no sticky table** "
			   "(no `rs_service.sticky_ttl` or "
			   "`rs_sticky_entry` in its BTF): the sticky columns "
			   "were not measured.\n\n");
	else if (!any_active)
		fprintf(f, "**The sticky table was switched on but the "
			   "program never hit it** (`sticky_hits` stayed 0): "
			   "the sticky columns equal the plain ones.\n\n");
	else
		fprintf(f, "The sticky columns are the hit path: the same "
			   "client repeats, so after its first run every run "
			   "finds its entry (`sticky_hits` counted them).\n\n");
	fprintf(f,
		"Columns, each a ratio to the floor measured beside it: "
		"**plain** (no sticky table, bounded loads off, no hand-off), "
		"**sticky hit**, **+hand-off** (steer_sockops attached, as in "
		"production; the name is kept from before issue 21, when "
		"every TCP decision wrote an `rs_handoff` entry: now it "
		"writes nothing, and the backend travels to establishment in "
		"the listener's `rs_listen` storage), **bounded** "
		"(balance_factor 1.25 with sockops attached: the production "
		"path of a bounded service).\n\n");
	for (int fam = 0; fam < 2; fam++) {
		int family = fam ? AF_INET6 : AF_INET;

		fprintf(f, "%s:\n\n", fam_name(family));
		fprintf(f, "| backends | points/backend | ring points | "
			   "floor ns | plain ns | x floor | sticky hit ns | "
			   "x floor | +hand-off ns | x floor | bounded ns | "
			   "x floor |\n");
		fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			   "---:|---:|\n");
		for (size_t i = 0; i < n; i++) {
			const struct cell *a = &cells[i];
			const struct cell *k[3] = {NULL, NULL, NULL};

			if (a->family != family || a->sticky || a->miss ||
			    a->miss_port || a->bounded || a->handoff ||
			    a->trace)
				continue;
			for (size_t j = 0; j < n; j++) {
				const struct cell *o = &cells[j];

				if (o->family != family ||
				    o->backends != a->backends ||
				    o->points != a->points || o->miss ||
				    o->miss_port || o->trace)
					continue;
				if (o->sticky)
					k[0] = o;
				else if (o->bounded)
					k[1] = o;
				else if (o->handoff)
					k[2] = o;
			}
			fprintf(f, "| %u | %u | %u | %.1f | %.1f | %.2f |",
				a->backends, a->points, a->backends * a->points,
				a->floor_ns, a->steer_ns, a->ratio);
			for (int x = 0; x < 3; x++) {
				const struct cell *o = k[x == 0	  ? 0
							 : x == 1 ? 2
								  : 1];

				if (o)
					fprintf(f, " %.1f | %.2f |",
						o->steer_ns, o->ratio);
				else
					fprintf(f, " - | - |");
			}
			fprintf(f, "\n");
		}
		fprintf(f, "\n");
	}
	fprintf(f,
		"Tracing (`ringsteer trace`), on the last ring, plain path: "
		"**off** (no trace: one read of `rs_trace_ctl.enabled`), "
		"**no match** (a trace whose filter names another service), "
		"**event** (every decision an event in the ring buffer, "
		"read between runs; repeat %u):\n\n",
		g_opt.repeat > TRACE_EVENT_REPEAT ? TRACE_EVENT_REPEAT
						  : g_opt.repeat);
	fprintf(f, "| family | trace | floor ns | steer ns | x floor | ns over "
		   "off |\n");
	fprintf(f, "|---|---|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < n; i++) {
		const struct cell *off = NULL;

		if (!cells[i].trace)
			continue;
		for (size_t j = 0; j < n; j++)
			if (cells[j].trace == TRACE_OFF &&
			    cells[j].family == cells[i].family)
				off = &cells[j];
		fprintf(f, "| %s | %s | %.1f | %.1f | %.2f | %+.1f |\n",
			fam_name(cells[i].family),
			cells[i].trace == TRACE_OFF	  ? "off"
			: cells[i].trace == TRACE_NOMATCH ? "no match"
							  : "event",
			cells[i].floor_ns, cells[i].steer_ns, cells[i].ratio,
			off ? cells[i].steer_ns - off->steer_ns : 0);
	}
	fprintf(f, "\n");
	fprintf(f,
		"Not a service: the program returns without choosing, which is "
		"what every other new connection in the namespace pays. "
		"**Other port**: 198.18.0.10:81 or [2001:db8::10]:81, a port "
		"no `listen` names (turned away by `rs_ports`, one array "
		"read); **other address**: 198.18.0.99:80 or "
		"[2001:db8::99]:80, a service's port at an address no "
		"`listen` covers (a miss in the exact-bind hash table):\n\n");
	fprintf(f,
		"| family | destination | floor ns | steer ns | x floor |\n");
	fprintf(f, "|---|---|---:|---:|---:|\n");
	for (size_t i = 0; i < n; i++)
		if (cells[i].miss || cells[i].miss_port)
			fprintf(f, "| %s | %s | %.1f | %.1f | %.2f |\n",
				fam_name(cells[i].family),
				cells[i].miss_port ? "other port"
						   : "other address",
				cells[i].floor_ns, cells[i].steer_ns,
				cells[i].ratio);
	fprintf(f, "\n");
}

int main(int argc, char **argv)
{
	size_t max = 4 * 2 * MAX_LIST * MAX_LIST + 4 + 6, n = 0;
	struct cell *cells = calloc(max, sizeof(*cells));
	FILE *tsv, *md;

	if (!cells || parse_args(argc, argv)) {
		usage(stderr);
		return 2;
	}
	if (!getenv("BENCH_DEBUG"))
		libbpf_set_print(NULL);
	if (setup()) {
		fprintf(stderr, "decision_cost: setup failed: %s\n",
			strerror(errno));
		return 1;
	}
	for (unsigned int b = 0; b < g_opt.nbackends; b++) {
		for (unsigned int p = 0; p < g_opt.npoints; p++) {
			if (set_ring(g_opt.backends[b], g_opt.points[p])) {
				fprintf(stderr, "decision_cost: ring %ux%u\n",
					g_opt.backends[b], g_opt.points[p]);
				return 1;
			}
			/*
			 * 0: plain, 1: sticky hit, 2: bounded loads on
			 * (with the hand-off), 3: the hand-off alone.
			 */
			for (int s = 0; s < 4; s++) {
				if (s == 1 && !sticky_possible())
					continue;
				if (set_sticky(s == 1) ||
				    set_bounded(s == 2, g_opt.backends[b]) ||
				    set_handoff(s >= 2))
					return 1;
				for (int fam = 0; fam < 2; fam++) {
					struct cell *c = &cells[n];

					c->family = fam ? AF_INET6 : AF_INET;
					c->sticky = s == 1;
					c->bounded = s == 2;
					c->handoff = s >= 2;
					c->backends = g_opt.backends[b];
					c->points = g_opt.points[p];
					if (measure(c))
						return 1;
					fprintf(stderr,
						"decision_cost: %s %-9s %2u x "
						"%4u: floor %.1f ns, steer "
						"%.1f ns (x%.2f)\n",
						fam_name(c->family),
						s == 3	 ? "handoff"
						: s == 2 ? "bounded"
						: s == 1 ? "sticky"
							 : "no-sticky",
						c->backends, c->points,
						c->floor_ns, c->steer_ns,
						c->ratio);
					n++;
				}
			}
		}
	}
	/* The bind match alone, on the last ring (it is not searched). */
	if (set_sticky(false) ||
	    set_bounded(false, g_opt.backends[g_opt.nbackends - 1]) ||
	    set_handoff(false))
		return 1;
	for (int m = 0; m < 2; m++) {
		for (int fam = 0; fam < 2; fam++) {
			struct cell *c = &cells[n];

			c->family = fam ? AF_INET6 : AF_INET;
			c->miss = m == 0;
			c->miss_port = m == 1;
			c->backends = g_opt.backends[g_opt.nbackends - 1];
			c->points = g_opt.points[g_opt.npoints - 1];
			if (measure(c))
				return 1;
			fprintf(stderr,
				"decision_cost: %s no service (%s): floor "
				"%.1f ns, steer %.1f ns (x%.2f)\n",
				fam_name(c->family),
				m ? "other port" : "other address", c->floor_ns,
				c->steer_ns, c->ratio);
			n++;
		}
	}
	/*
	 * Tracing, on the last ring: the three modes one after another,
	 * each alternating with the floor as every cell does; compare each
	 * with the floor measured beside it, not only with the off row.
	 */
	for (int m = TRACE_OFF; m <= TRACE_EVENT; m++) {
		for (int fam = 0; fam < 2; fam++) {
			struct cell *c = &cells[n];

			c->family = fam ? AF_INET6 : AF_INET;
			c->trace = m;
			c->backends = g_opt.backends[g_opt.nbackends - 1];
			c->points = g_opt.points[g_opt.npoints - 1];
			if (set_trace(m) || measure(c))
				return 1;
			fprintf(stderr,
				"decision_cost: %s trace %s: floor %.1f ns, "
				"steer %.1f ns (x%.2f)\n",
				fam_name(c->family),
				m == TRACE_OFF	     ? "off"
				: m == TRACE_NOMATCH ? "no match"
						     : "event",
				c->floor_ns, c->steer_ns, c->ratio);
			n++;
		}
	}
	if (set_trace(TRACE_OFF))
		return 1;
	tsv = fopen(g_opt.tsv, "w");
	md = fopen(g_opt.md, "w");
	if (!tsv || !md) {
		perror("decision_cost: output");
		return 1;
	}
	fprintf(tsv, "family\tsticky\tbackends\tpoints\tfloor_ns\tsteer_ns\t"
		     "ratio\tsticky_active\n");
	for (size_t i = 0; i < n; i++)
		fprintf(tsv, "%s\t%s\t%u\t%u\t%.2f\t%.2f\t%.3f\t%d\n",
			fam_name(cells[i].family),
			cells[i].trace == TRACE_OFF	  ? "trace-off"
			: cells[i].trace == TRACE_NOMATCH ? "trace-nomatch"
			: cells[i].trace == TRACE_EVENT	  ? "trace-event"
			: cells[i].miss			  ? "miss"
			: cells[i].miss_port		  ? "port"
			: cells[i].bounded		  ? "bounded"
			: cells[i].handoff		  ? "handoff"
			: cells[i].sticky		  ? "1"
							  : "0",
			cells[i].backends, cells[i].points, cells[i].floor_ns,
			cells[i].steer_ns, cells[i].ratio,
			cells[i].sticky_active);
	write_md(md, cells, n);
	fclose(tsv);
	fclose(md);
	set_sticky(false);
	ring_free(&ring);
	ring_buffer__free(trace_rb);
	floor_lookup_bpf__destroy(floor_skel);
	dp_close(&dp);
	free(cells);
	return 0;
}

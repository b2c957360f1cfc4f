// SPDX-License-Identifier: MIT
/*
 * quic_lb_cost: what steering one datagram costs in the kernel
 * (docs/benchmarks.md, section 1b), as ratios to a floor measured in the
 * same rounds.
 *
 *   quic_lb_cost [-r REPEAT] [-n ROUNDS] [-t TSV]
 *
 * At TC: the floor (bench/bpf/floor_tc.bpf.c: parse to the UDP header, one
 * SOCKMAP lookup, bpf_sk_assign), the same reading the headers the way
 * steer_tc does, and the real steer_tc on a datagram to no service, on a
 * plain UDP service's datagram (cookie = none: what a DNS query pays at
 * TC) and on a 1-RTT QUIC datagram per QUIC-LB mode: plaintext,
 * single-pass, four-pass decoded in three passes and in four, with the
 * software AES (steer_tc) and the kernel's crypto kfuncs (steer_tc_kfunc,
 * where the kernel has them). At the socket lookup: a plain UDP datagram
 * through steer_lookup (16 backends x 1024 points), the same to a service
 * with generations (issue 38), and through its floor
 * (bench/bpf/floor_lookup.bpf.c). The real programs with private maps.
 *
 * Each datagram runs REPEAT times under BPF_PROG_TEST_RUN; every row runs
 * once per round, in turn, so that a noisy neighbour touches them all
 * alike. Every run is checked: a QUIC row's backend must count one cookie
 * hit per run, the floors must find their socket, steer_lookup must pick
 * one of the service's. Ratios and differences to the floor are medians
 * of the per-round ones.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf_fixture.h"
#include "dgram_lookup.h"
#include "floor_tc.skel.h"
#include "frames.h"
#include "quic_cid.h"
#include "steer_tc_kfunc.skel.h"
#include "tc_fixture.h"

#define NMODES	   4
#define MAX_ROUNDS 64
#define PLAIN_SVC  NMODES /* the service id of cookie = none */

static const struct {
	const char *name, *key;
	uint8_t sid_len, cid_len, encrypted;
} modes[NMODES] = {
	{"plaintext", "plaintext", 2, 9, 0},
	{"single-pass (16 bytes)", "single", 3, 17, 1},
	{"four-pass, 3 passes (2+6)", "four3", 2, 9, 1},
	{"four-pass, 4 passes (6+4)", "four4", 6, 11, 1},
};

struct variant {
	struct steer_tc_bpf *skel;
	struct steer_tc_kfunc_bpf *k;
	const char *aes;
	uint8_t frame[NMODES][256];
	size_t len[NMODES];
	double ns[NMODES][MAX_ROUNDS];
};

/* The rows that are not a QUIC mode, in the order of the table. */
enum extra {
	X_FLOOR,      /* floor_tc on the plaintext datagram */
	X_FLOOR_COPY, /* floor_tc_copy, the same */
	X_NOSVC,      /* steer_tc: a datagram to no service */
	X_PLAIN,      /* steer_tc: a service with cookie = none */
	X_LFLOOR,     /* floor_lookup: a UDP datagram at the socket lookup */
	X_LOOKUP,     /* steer_lookup: the same */
	X_LGEN,	      /* steer_lookup: the same with generations */
	NEXTRA
};

static const struct {
	const char *path, *what, *key;
} extras[NEXTRA] = {
	{"TC", "**floor**: parse to UDP, SOCKMAP lookup, bpf_sk_assign",
	 "floor_tc"},
	{"TC", "floor copying the headers out with bpf_skb_load_bytes",
	 "floor_tc_copy"},
	{"TC", "steer_tc: UDP datagram to no service", "tc_nosvc"},
	{"TC", "steer_tc: plain UDP service (cookie = none)", "tc_plain"},
	{"sk_lookup", "**floor**: SOCKMAP lookup, bpf_sk_assign",
	 "lookup_floor"},
	{"sk_lookup", "steer_lookup: plain UDP, 16 x 1024 points",
	 "lookup_udp"},
	{"sk_lookup",
	 "steer_lookup: UDP with generations, a recorded flow, 16 x 1024",
	 "lookup_gen"},
};

static struct floor_tc_bpf *g_floor;
static uint8_t g_frame_nosvc[256], g_frame_plain[256];
static size_t g_len_nosvc, g_len_plain;
static double g_x[NEXTRA][MAX_ROUNDS];

static int add_plain_service(struct variant *v, int fd4)
{
	struct rs_service s;

	tc_quic_service(&s, PLAIN_SVC, 2, 9, 1);
	s.cookie = RS_COOKIE_NONE;
	snprintf(s.name, sizeof(s.name), "dns");
	if (tc_set_service(v->skel, &s) ||
	    tc_add_bind(v->skel, AF_INET, "198.18.0.40", 32, 53, PLAIN_SVC) ||
	    tc_set_backend(v->skel, PLAIN_SVC, PLAIN_SVC, RS_BACKEND_UP))
		return -1;
	return tc_set_socket(v->skel, rs_socket_slot(PLAIN_SVC, 0), fd4);
}

static int setup(struct variant *v)
{
	static const char *const addr[NMODES] = {"198.18.0.30", "198.18.0.31",
						 "198.18.0.32", "198.18.0.33"};
	uint8_t key[16] = {0x8f, 0x95, 0xf0, 0x92, 0x45, 0x76, 0x5f, 0x80,
			   0x25, 0x69, 0x34, 0xe5, 0x0c, 0x66, 0x20, 0x7f};
	uint8_t sid[RS_QUIC_MAX_SERVER_ID], cid[QUIC_CID_MAX_LEN], p[128];
	int fd4 = fixture_socket(AF_INET, SOCK_DGRAM, "127.0.0.1", 0, false);

	if (fd4 < 0 || add_plain_service(v, fd4))
		return -1;
	for (uint32_t m = 0; m < NMODES; m++) {
		struct quic_cid_keys keys = {0};
		struct rs_service s;
		struct frame f;
		size_t plen;

		tc_quic_service(&s, m, modes[m].sid_len, modes[m].cid_len, 1);
		keys.mode[1] = modes[m].encrypted ? RS_QUIC_LB_ENCRYPTED
						  : RS_QUIC_LB_PLAINTEXT;
		memcpy(keys.key[1], key, 16);
		tc_sid_bytes(0x0102 + m, modes[m].sid_len, sid);
		if (tc_set_service(v->skel, &s) ||
		    tc_add_bind(v->skel, AF_INET, addr[m], 32, 443, m) ||
		    tc_set_backend(v->skel, m, m, RS_BACKEND_UP) ||
		    tc_set_socket(v->skel, rs_socket_slot(m, 0), fd4) ||
		    tc_set_cookie(v->skel, &s, sid, m) ||
		    tc_set_quic_lb(v->skel, v->k, m, 1, keys.mode[1], 0,
				   modes[m].encrypted ? key : NULL) ||
		    quic_cid_encode_keyed(&s, &keys, 1, sid, NULL, cid) !=
			    modes[m].cid_len)
			return -1;
		plen = quic_short(p, cid, modes[m].cid_len);
		frame_udp(&f, AF_INET, addr[m], 443, 0, p, plen);
		memcpy(v->frame[m], f.b, f.len);
		v->len[m] = f.len;
		if (m)
			continue;
		/* The same 1-RTT datagram to an address without a service. */
		frame_udp(&f, AF_INET, "198.18.0.99", 443, 0, p, plen);
		memcpy(g_frame_nosvc, f.b, f.len);
		g_len_nosvc = f.len;
		/* A DNS-sized query to the plain service. */
		memset(p, 0x5a, 40);
		frame_udp(&f, AF_INET, "198.18.0.40", 53, 0, p, 40);
		memcpy(g_frame_plain, f.b, f.len);
		g_len_plain = f.len;
	}
	return 0;
}

static int setup_floor(void)
{
	int fd4 = fixture_socket(AF_INET, SOCK_DGRAM, "127.0.0.1", 0, false);
	__u32 slot = 0;
	__u64 fd = (__u64)fd4;

	g_floor = floor_tc_bpf__open_and_load();
	if (!g_floor || fd4 < 0)
		return -1;
	return bpf_map_update_elem(bpf_map__fd(g_floor->maps.floor_tc_sockets),
				   &slot, &fd, BPF_ANY);
}

static uint64_t hits(struct variant *v, uint32_t m)
{
	struct rs_backend_stats be;

	if (fixture_percpu_sum(bpf_map__fd(v->skel->maps.rs_backend_stats), m,
			       &be, sizeof(be)))
		return 0;
	return be.cookie_hits;
}

/* Mean ns per run of @prog on a frame; -1 unless it returned @want. */
static double run_frame(int prog, const uint8_t *frame, size_t len, int want,
			unsigned int repeat)
{
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame,
		    .data_size_in = (__u32)len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = repeat);

	if (bpf_prog_test_run_opts(prog, &o) || (int)o.retval != want)
		return -1;
	return (double)o.duration;
}

/* ns per run of datagram @m; -1 if the program did not choose backend m. */
static double run(struct variant *v, uint32_t m, unsigned int repeat)
{
	uint64_t before = hits(v, m);
	double ns = run_frame(bpf_program__fd(v->skel->progs.steer_tc),
			      v->frame[m], v->len[m], TC_ACT_UNSPEC, repeat);

	return hits(v, m) - before == repeat ? ns : -1;
}

static double run_extra(const struct variant *v, int x, unsigned int r,
			unsigned int repeat)
{
	int tc = bpf_program__fd(v->skel->progs.steer_tc);

	switch (x) {
	case X_FLOOR:
		return run_frame(bpf_program__fd(g_floor->progs.floor_tc),
				 v->frame[0], v->len[0], TC_ACT_OK, repeat);
	case X_FLOOR_COPY:
		return run_frame(bpf_program__fd(g_floor->progs.floor_tc_copy),
				 v->frame[0], v->len[0], TC_ACT_OK, repeat);
	case X_NOSVC:
		return run_frame(tc, g_frame_nosvc, g_len_nosvc, TC_ACT_UNSPEC,
				 repeat);
	case X_PLAIN:
		return run_frame(tc, g_frame_plain, g_len_plain, TC_ACT_UNSPEC,
				 repeat);
	default:
		return dgram_lookup_run(x == X_LFLOOR ? DGRAM_FLOOR
					: x == X_LGEN ? DGRAM_GEN
						      : DGRAM_PLAIN,
					r, repeat);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n, double *lo, double *hi)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, sizeof(*v) * n);
	qsort(s, n, sizeof(*s), cmp);
	*lo = s[0];
	*hi = s[n - 1];
	return n & 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

struct stat_row {
	double ns, lo, hi, ratio, rlo, rhi, over, over_plain;
};

/* @ns against @floor (and @plain, or NULL) round by round. */
static struct stat_row stats(const double *ns, const double *floor,
			     const double *plain, int n)
{
	double ratio[MAX_ROUNDS] = {0}, over[MAX_ROUNDS] = {0};
	double op[MAX_ROUNDS] = {0}, a, b;
	struct stat_row s;

	for (int r = 0; r < n; r++) {
		ratio[r] = ns[r] / floor[r];
		over[r] = ns[r] - floor[r];
		op[r] = plain ? ns[r] - plain[r] : 0;
	}
	s.ns = median(ns, n, &s.lo, &s.hi);
	s.ratio = median(ratio, n, &s.rlo, &s.rhi);
	s.over = median(over, n, &a, &b);
	s.over_plain = median(op, n, &a, &b);
	return s;
}

static void print_row(FILE *tsv, const char *key, const char *path,
		      const char *what, const char *aes, struct stat_row s,
		      bool plain)
{
	char op[32] = "";

	if (plain)
		snprintf(op, sizeof(op), "%+.0f", s.over_plain);
	printf("| %s | %s | %s | %.0f | %.0f..%.0f | %.2fx (%.2f..%.2f) | "
	       "%+.0f | %s |\n",
	       path, what, aes, s.ns, s.lo, s.hi, s.ratio, s.rlo, s.rhi, s.over,
	       op);
	if (tsv)
		fprintf(tsv,
			"%s\t%s\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.1f\t%."
			"1f\n",
			key, aes, s.ns, s.lo, s.hi, s.ratio, s.rlo, s.rhi,
			s.over, s.over_plain);
}

static void report(const struct variant *v, int nv, int n, FILE *tsv)
{
	printf("| path | datagram, program | AES | ns per datagram (median) | "
	       "spread | x floor (spread) | over floor, ns | over "
	       "plaintext, ns |\n|---|---|---|---:|---|---|---:|---:|\n");
	for (int x = 0; x <= X_PLAIN; x++)
		print_row(tsv, extras[x].key, extras[x].path, extras[x].what,
			  "-", stats(g_x[x], g_x[X_FLOOR], NULL, n), false);
	for (int i = 0; i < nv; i++)
		for (uint32_t m = 0; m < NMODES; m++) {
			char what[96], key[64];

			snprintf(what, sizeof(what), "steer_tc: QUIC 1-RTT, %s",
				 modes[m].name);
			snprintf(key, sizeof(key), "quic_%s", modes[m].key);
			print_row(
				tsv, key, "TC", what, m ? v[i].aes : "-",
				stats(v[i].ns[m], g_x[X_FLOOR], v[i].ns[0], n),
				m != 0);
		}
	for (int x = X_LFLOOR; x < NEXTRA; x++)
		print_row(tsv, extras[x].key, extras[x].path, extras[x].what,
			  "-", stats(g_x[x], g_x[X_LFLOOR], NULL, n), false);
	if (nv == 1)
		printf("\n(no crypto kfuncs on this kernel: software only)\n");
}

/* One round: every row once, in turn; false when a run went wrong. */
static bool round_once(struct variant *v, int nv, unsigned int r,
		       unsigned int repeat)
{
	for (int x = 0; x < NEXTRA; x++) {
		g_x[x][r] = run_extra(&v[0], x, r, repeat);
		if (g_x[x][r] < 0) {
			fprintf(stderr, "quic_lb_cost: %s failed its check\n",
				extras[x].key);
			return false;
		}
	}
	for (int i = 0; i < nv; i++)
		for (uint32_t m = 0; m < NMODES; m++) {
			v[i].ns[m][r] = run(&v[i], m, repeat);
			if (v[i].ns[m][r] < 0) {
				fprintf(stderr,
					"quic_lb_cost: %s %s did not steer "
					"to its backend\n",
					v[i].aes, modes[m].name);
				return false;
			}
		}
	return true;
}

static int load(struct variant *v)
{
	v[0].skel = tc_fixture_load();
	if (!v[0].skel || setup(&v[0]) || setup_floor() ||
	    dgram_lookup_setup(16, 1024)) {
		fprintf(stderr, "quic_lb_cost: cannot load the programs "
				"(root?)\n");
		return -1;
	}
	v[1].skel = tc_fixture_load_kfunc(&v[1].k);
	if (!v[1].skel)
		return 1;
	if (setup(&v[1])) {
		fprintf(stderr, "quic_lb_cost: kfunc setup failed\n");
		return -1;
	}
	return 2;
}

int main(int argc, char **argv)
{
	unsigned int repeat = 200000, rounds = 9;
	struct variant v[2] = {{.aes = "software"}, {.aes = "kfunc"}};
	const char *tsv_path = NULL;
	FILE *tsv = NULL;
	int nv, c;

	while ((c = getopt(argc, argv, "r:n:t:")) != -1) {
		if (c == 'r')
			repeat = (unsigned int)atoi(optarg);
		else if (c == 'n')
			rounds = (unsigned int)atoi(optarg);
		else if (c == 't')
			tsv_path = optarg;
		else
			return 2;
	}
	if (!repeat || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: quic_lb_cost [-r REPEAT] [-n ROUNDS] "
				"[-t TSV]\n");
		return 2;
	}
	libbpf_set_print(NULL);
	nv = load(v);
	if (nv < 0)
		return 1;
	for (unsigned int r = 0; r < rounds; r++)
		if (!round_once(v, nv, r, repeat))
			return 1;
	if (tsv_path && !(tsv = fopen(tsv_path, "w"))) {
		perror(tsv_path);
		return 1;
	}
	report(v, nv, (int)rounds, tsv);
	if (tsv)
		fclose(tsv);
	printf("\n%u rounds of %u runs each; plaintext measured in each "
	       "object.\n",
	       rounds, repeat);
	return 0;
}

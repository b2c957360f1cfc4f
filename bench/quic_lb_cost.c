// SPDX-License-Identifier: MIT
/*
 * quic_lb_cost: what steer_tc's cookie step costs per 1-RTT datagram by
 * QUIC-LB mode (docs/benchmarks.md, "QUIC-LB"): plaintext, single-pass,
 * four-pass decoded in three passes and in four, with the software AES
 * (steer_tc) and the kernel's crypto kfuncs (steer_tc_kfunc, where the
 * kernel has them). The real programs with private maps, one service per
 * mode, one backend; each datagram runs --repeat times under
 * BPF_PROG_TEST_RUN, and every variant is run once per round, in turn,
 * so that a noisy neighbour touches them all alike. Every round also
 * checks the choice: the backend's cookie_hits must grow by one per run.
 *
 * Printed: a markdown table, the median ns per datagram of each variant,
 * its spread (min..max over rounds), and the difference to plaintext in
 * the same object.
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
#include "frames.h"
#include "quic_cid.h"
#include "steer_tc_kfunc.skel.h"
#include "tc_fixture.h"

#define NMODES 4

static const struct {
	const char *name;
	uint8_t sid_len, cid_len, encrypted;
} modes[NMODES] = {
	{"plaintext", 2, 9, 0},
	{"single-pass (16 bytes)", 3, 17, 1},
	{"four-pass, 3 passes (2+6)", 2, 9, 1},
	{"four-pass, 4 passes (6+4)", 6, 11, 1},
};

struct variant {
	struct steer_tc_bpf *skel;
	struct steer_tc_kfunc_bpf *k;
	const char *aes;
	uint8_t frame[NMODES][256];
	size_t len[NMODES];
	double ns[NMODES][64];
};

static int setup(struct variant *v)
{
	static const char *const addr[NMODES] = {"198.18.0.30", "198.18.0.31",
						 "198.18.0.32", "198.18.0.33"};
	uint8_t key[16] = {0x8f, 0x95, 0xf0, 0x92, 0x45, 0x76, 0x5f, 0x80,
			   0x25, 0x69, 0x34, 0xe5, 0x0c, 0x66, 0x20, 0x7f};
	uint8_t sid[RS_QUIC_MAX_SERVER_ID], cid[QUIC_CID_MAX_LEN], p[128];
	int fd4 = fixture_socket(AF_INET, SOCK_DGRAM, "127.0.0.1", 0, false);

	if (fd4 < 0)
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
	}
	return 0;
}

static uint64_t hits(struct variant *v, uint32_t m)
{
	struct rs_backend_stats be;

	if (fixture_percpu_sum(bpf_map__fd(v->skel->maps.rs_backend_stats), m,
			       &be, sizeof(be)))
		return 0;
	return be.cookie_hits;
}

/* ns per run of datagram @m; -1 if the program did not choose backend m. */
static double run(struct variant *v, uint32_t m, unsigned int repeat)
{
	uint8_t out[256];
	uint64_t before = hits(v, m);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = v->frame[m],
		    .data_size_in = (__u32)v->len[m], .data_out = out,
		    .data_size_out = sizeof(out), .repeat = repeat);

	if (bpf_prog_test_run_opts(bpf_program__fd(v->skel->progs.steer_tc),
				   &o) ||
	    (int)o.retval != TC_ACT_UNSPEC || hits(v, m) - before != repeat)
		return -1;
	return (double)o.duration;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n, double *lo, double *hi)
{
	double s[64];

	memcpy(s, v, sizeof(*v) * n);
	qsort(s, n, sizeof(*s), cmp);
	*lo = s[0];
	*hi = s[n - 1];
	return n & 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	unsigned int repeat = 200000, rounds = 9;
	struct variant v[2] = {{.aes = "software"}, {.aes = "kfunc"}};
	int nv = 1, c;

	while ((c = getopt(argc, argv, "r:n:")) != -1) {
		if (c == 'r')
			repeat = (unsigned int)atoi(optarg);
		else if (c == 'n')
			rounds = (unsigned int)atoi(optarg);
		else
			return 2;
	}
	if (!repeat || rounds < 1 || rounds > 64) {
		fprintf(stderr,
			"usage: quic_lb_cost [-r REPEAT] [-n ROUNDS]\n");
		return 2;
	}
	libbpf_set_print(NULL);
	v[0].skel = tc_fixture_load();
	if (!v[0].skel || setup(&v[0])) {
		fprintf(stderr, "quic_lb_cost: cannot load steer_tc (root?)\n");
		return 1;
	}
	v[1].skel = tc_fixture_load_kfunc(&v[1].k);
	if (v[1].skel) {
		if (setup(&v[1])) {
			fprintf(stderr, "quic_lb_cost: kfunc setup failed\n");
			return 1;
		}
		nv = 2;
	}
	for (unsigned int r = 0; r < rounds; r++)
		for (int i = 0; i < nv; i++)
			for (uint32_t m = 0; m < NMODES; m++) {
				v[i].ns[m][r] = run(&v[i], m, repeat);
				if (v[i].ns[m][r] < 0) {
					fprintf(stderr,
						"quic_lb_cost: %s %s did not "
						"steer to its backend\n",
						v[i].aes, modes[m].name);
					return 1;
				}
			}
	printf("| mode | AES | ns per datagram (median) | spread | over "
	       "plaintext |\n|---|---|---|---|---|\n");
	for (int i = 0; i < nv; i++) {
		double lo, hi, base = median(v[i].ns[0], (int)rounds, &lo, &hi);

		for (uint32_t m = 0; m < NMODES; m++) {
			double med = median(v[i].ns[m], (int)rounds, &lo, &hi);

			printf("| %s | %s | %.0f | %.0f..%.0f | %s%.0f |\n",
			       modes[m].name, m ? v[i].aes : "-", med, lo, hi,
			       m ? "+" : "", m ? med - base : 0.0);
		}
	}
	if (nv == 1)
		printf("\n(no crypto kfuncs on this kernel: software only)\n");
	printf("\n%u rounds of %u runs each; plaintext measured in each "
	       "object.\n",
	       rounds, repeat);
	return 0;
}

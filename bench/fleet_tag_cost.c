// SPDX-License-Identifier: MIT
/*
 * fleet_tag_cost: what a forwarded packet's tag costs, in ns per tag.
 *
 *   fleet_tag_cost [-n ROUNDS] [-r REPEAT]
 *
 * bench/bpf/fleet_tag.bpf.c computes the tag of a forwarded TCP segment
 * (IPv4 and IPv6) with the product's rs_fleet_tag_split(), the same
 * started from the member pair's SipHash state as steer_tc does
 * (struct rs_fleet_sip), that in wire version 3 (its shorter message),
 * and a floor that does the rest of what those programs do. Each runs REPEAT
 * times per BPF_PROG_TEST_RUN call, so the kernel's mean per run is exact to a
 * fraction of a ns (steer_tc's forwarding paths change the packet and
 * can only be timed one run per call: bench/fleet_cost.c, whose
 * differences carry tens of ns of noise). The seven run alternately, in
 * rotating order, ROUNDS times; printed: the median ns per run of each,
 * and the median over rounds of each round's difference to the floor,
 * with its range. Every run's tag is checked against the same function
 * computed here.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringsteer/abi.h>
#include <ringsteer/rules.h>

#include "fleet_tag.skel.h"

#define MAX_ROUNDS 64
#define INNER_OFF  14

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

/* Mean ns per run of @prog over @frame; -1 if its result is not @want. */
static double run(int prog, const uint8_t *frame, size_t len, unsigned repeat,
		  uint32_t want)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame,
		    .data_size_in = (__u32)len, .repeat = repeat);

	if (bpf_prog_test_run_opts(prog, &o) || o.retval != want)
		return -1;
	return (double)o.duration;
}

int main(int argc, char **argv)
{
	enum { NP = 7 };
	static const char *const names[NP] = {
		"floor",
		"IPv4 tag (7 words)",
		"IPv6 tag (13 words)",
		"IPv4 tag from the pair's state (6 words)",
		"IPv6 tag from the pair's state (9 words)",
		"IPv4 tag, wire version 3, from the pair's state (5 words)",
		"IPv6 tag, wire version 3, from the pair's state (7 words)",
	};
	struct rs_fleet_auth key = {.k0 = 0x0706050403020100ull,
				    .k1 = 0x0f0e0d0c0b0a0908ull,
				    .id = 1};
	struct rs_fleet_tag_msg msg = {0}, msg3;
	double ns[NP][MAX_ROUNDS], diff[NP][MAX_ROUNDS], lo, hi;
	struct rs_fleet_sip pair[4];
	int err = 0;
	unsigned int repeat = 1000000;
	uint32_t want[NP], zero = 0, one = 1;
	struct fleet_tag_bpf *skel;
	uint8_t frame[128];
	int rounds = 11, opt, prog[NP];

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			rounds = atoi(optarg);
		else if (opt == 'r')
			repeat = (unsigned int)strtoul(optarg, NULL, 0);
		else
			goto usage;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || !repeat)
		goto usage;

	skel = fleet_tag_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr,
			"fleet_tag_cost: cannot load fleet_tag.bpf.o\n");
		return 1;
	}
	/* A header as fleet_tag_head() builds it; the inner bytes vary. */
	msg.v6.meta.version = RS_FLEET_WIRE_VERSION;
	msg.v6.meta.hops = 1;
	msg.v6.meta.key_id = key.id;
	msg.v6.meta.inner_len = 60;
	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(i * 37 + 11);
	/* Outer addresses, the words the pair's state covers. */
	for (size_t i = 0; i < 32; i++)
		((uint8_t *)&msg)[i] = (uint8_t)(i * 13 + 5);
	rs_fleet_sip_make(&pair[0], &key, &msg, 0);
	rs_fleet_sip_make(&pair[1], &key, &msg, 1);
	msg3 = msg;
	msg3.v4.meta.version = msg3.v6.meta.version = RS_FLEET_WIRE_MAX;
	rs_fleet_sip_make(&pair[2], &key, &msg3, 0);
	rs_fleet_sip_make(&pair[3], &key, &msg3, 1);
	for (uint32_t i = 0; i < 4; i++)
		err = err ||
		      bpf_map_update_elem(bpf_map__fd(skel->maps.tag_sip), &i,
					  &pair[i], BPF_ANY);
	if (err ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.tag_msg), &zero, &msg,
				BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.tag_msg), &one, &msg3,
				BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.tag_key), &zero, &key,
				BPF_ANY)) {
		fprintf(stderr, "fleet_tag_cost: cannot fill the maps\n");
		fleet_tag_bpf__destroy(skel);
		return 1;
	}
	want[0] = (uint32_t)(frame[INNER_OFF] + key.id);
	/* From the pair's state or not, the same tag. */
	for (int v6 = 0; v6 < 2; v6++)
		want[1 + v6] = want[3 + v6] =
			(uint32_t)rs_fleet_tag_split(
				&key, &msg,
				(const rs_word_t *)(frame + INNER_OFF), v6) |
			1;
	for (int v6 = 0; v6 < 2; v6++)
		want[5 + v6] =
			(uint32_t)rs_fleet_tag_split(
				&key, &msg3,
				(const rs_word_t *)(frame + INNER_OFF), v6) |
			1;
	prog[0] = bpf_program__fd(skel->progs.tag_floor);
	prog[1] = bpf_program__fd(skel->progs.tag4);
	prog[2] = bpf_program__fd(skel->progs.tag6);
	prog[3] = bpf_program__fd(skel->progs.tag4_pair);
	prog[4] = bpf_program__fd(skel->progs.tag6_pair);
	prog[5] = bpf_program__fd(skel->progs.tag4_v3);
	prog[6] = bpf_program__fd(skel->progs.tag6_v3);

	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < NP; j++) {
			int p = (r + j) % NP;

			ns[p][r] = run(prog[p], frame, sizeof(frame), repeat,
				       want[p]);
			if (ns[p][r] < 0) {
				fprintf(stderr,
					"fleet_tag_cost: %s: wrong result or "
					"test run failed\n",
					names[p]);
				fleet_tag_bpf__destroy(skel);
				return 1;
			}
		}
		for (int p = 0; p < NP; p++)
			diff[p][r] = ns[p][r] - ns[0][r];
	}
	printf("| program | ns per run | tag's cost, ns (range over rounds) "
	       "|\n|---|---:|---:|\n");
	for (int p = 0; p < NP; p++) {
		double m = median(ns[p], rounds, &lo, &hi), d;

		if (!p) {
			printf("| %s | %.1f | |\n", names[p], m);
			continue;
		}
		d = median(diff[p], rounds, &lo, &hi);
		printf("| %s | %.1f | +%.1f (%+.1f..%+.1f) |\n", names[p], m, d,
		       lo, hi);
	}
	printf("\nMedians of %d rounds of %u runs each, alternating.\n", rounds,
	       repeat);
	fleet_tag_bpf__destroy(skel);
	return 0;
usage:
	fprintf(stderr, "usage: fleet_tag_cost [-n ROUNDS 1..%d] [-r REPEAT]\n",
		MAX_ROUNDS);
	return 2;
}

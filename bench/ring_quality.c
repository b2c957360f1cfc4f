// SPDX-License-Identifier: MIT
/*
 * ring_quality: balance and disruption of the product's vnode ring, next to
 * two references implemented here only (never in the product): a Maglev
 * lookup table and plain `hash % N`.
 *
 *   ring_quality [--keys K] [--backends LIST] [--points LIST]
 *                [--maglev LIST] [--seeds S] [--threads T]
 *                --tsv FILE --md FILE
 *
 * K synthetic clients (distinct IPv4 addresses) are hashed once with the
 * product's rs_hash_key(). For every cell (method, N backends[, points per
 * backend]) each key's owner is found with the product's ring_lookup() (or
 * the reference lookup) in the full set, with one backend removed and with
 * one backend added. Reported:
 *   balance     max/mean share and coefficient of variation of the key
 *               counts; for rings also the CV from exact arc lengths,
 *               averaged over S ring seeds (no sampling noise, less luck)
 *   disruption  keys moved on removal, next to the minimum (exactly the
 *               removed backend's keys) and the moves that were not needed;
 *               keys moved on addition, next to the ideal 1/(N+1) and the
 *               moves that did not go to the new backend
 *   cost        build time (median of 3) and memory of the table; for
 *               rings, the size of the BPF ring map ((points + 1) x 16 B)
 * Cells run on T threads; the key hashes are sorted once so lookups walk
 * the tables in order (results do not depend on the order of keys).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "hash.h"
#include "ring.h"

#define MAX_LIST   16
#define MAX_N	   512
#define NAME_LEN   24
#define RING_SEED  0ull
#define KEY_SEED   0ull
#define BUILD_REPS 3

enum method { M_RING, M_MAGLEV, M_MODN };

struct opts {
	unsigned long keys;
	unsigned int backends[MAX_LIST], nbackends;
	unsigned int points[MAX_LIST], npoints;
	unsigned int maglev[MAX_LIST], nmaglev;
	unsigned int seeds;
	unsigned int threads;
	const char *tsv;
	const char *md;
};

struct result {
	enum method method;
	unsigned int n;
	unsigned int param; /* points per backend, or Maglev table size */
	double max_mean;
	double cv;
	double arc_cv; /* rings only: mean over seeds, from arc lengths */
	double arc_max_mean;
	unsigned long rm_moved, rm_min, rm_extra;
	unsigned long add_moved, add_extra;
	double build_ms;
	size_t bytes;
	bool done;
};

/*
 * One key's owners: @o now, @ol with backend @rm removed, @om with backend
 * @n added. The minimum is @rm's own keys; anything else that moves did
 * not need to.
 */
static void tally_key(struct result *res, unsigned int o, unsigned int ol,
		      unsigned int om, unsigned int rm, unsigned int n)
{
	if (o == rm)
		res->rm_min++;
	if (ol != o) {
		res->rm_moved++;
		if (o != rm)
			res->rm_extra++;
	}
	if (om != o) {
		res->add_moved++;
		if (om != n)
			res->add_extra++;
	}
}

static struct opts g_opt = {
	.keys = 10000000,
	.backends = {4, 10, 32, 100},
	.nbackends = 4,
	.points = {10, 50, 150, 300, 1024, 4096},
	.npoints = 6,
	.maglev = {65537, 655373},
	.nmaglev = 2,
	.seeds = 16,
	.threads = 2,
};

static uint64_t *g_hash; /* sorted key hashes */
static char g_names[MAX_N + 1][NAME_LEN];
static struct result *g_res;
static size_t g_nres;
static atomic_size_t g_next;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void balance(const unsigned long *count, unsigned int n,
		    double *max_mean, double *cv)
{
	double mean = 0, var = 0, max = 0;

	for (unsigned int i = 0; i < n; i++) {
		mean += count[i];
		if (count[i] > max)
			max = count[i];
	}
	mean /= n;
	for (unsigned int i = 0; i < n; i++)
		var += (count[i] - mean) * (count[i] - mean);
	var /= n;
	*max_mean = mean > 0 ? max / mean : 0;
	*cv = mean > 0 ? sqrt(var) / mean : 0;
}

/* --- The product's ring --------------------------------------------- */

/* ids[] are backend ids (and name indexes) of the members, in order. */
static int ring_make(const unsigned int *ids, unsigned int n,
		     unsigned int points, uint64_t seed, struct rs_ring *ring)
{
	struct rs_ring_member m[MAX_N + 1];

	for (unsigned int i = 0; i < n; i++) {
		m[i].name = g_names[ids[i]];
		m[i].backend = ids[i];
		m[i].points = points;
	}
	return ring_build(m, n, seed, ring);
}

struct ring_ctx {
	struct rs_ring ring;
	struct rs_backend be[MAX_N + 1];
	struct rs_ring_view view;
};

static int ring_ctx_init(struct ring_ctx *c, const unsigned int *ids,
			 unsigned int n, unsigned int points)
{
	memset(c, 0, sizeof(*c));
	for (unsigned int i = 0; i < n; i++) {
		c->be[ids[i]].state = RS_BACKEND_UP;
		c->be[ids[i]].active_points = points;
		c->be[ids[i]].max_points = points;
	}
	c->view.backends = c->be;
	c->view.nbackends = MAX_N + 1;
	return ring_make(ids, n, points, RING_SEED, &c->ring);
}

static unsigned int ring_owner(const struct ring_ctx *c, uint64_t h)
{
	struct rs_ring_choice ch;

	if (ring_lookup(&c->ring, &c->view, h, &ch, NULL))
		return MAX_N;
	return ch.backend;
}

/* Exact shares from arc lengths: point i owns (pos[i-1], pos[i]]. */
static void ring_arc_balance(const struct rs_ring *r, unsigned int n,
			     double *max_mean, double *cv)
{
	double share[MAX_N + 1] = {0}, mean = 1.0 / n, var = 0, max = 0;

	for (uint32_t i = 0; i < r->npoints; i++) {
		uint64_t prev = r->points[i ? i - 1 : r->npoints - 1].pos;
		uint64_t len = r->points[i].pos - prev; /* wraps for i = 0 */

		share[r->points[i].backend] +=
			(double)len / 18446744073709551616.0;
	}
	if (r->npoints == 1)
		share[r->points[0].backend] = 1;
	for (unsigned int b = 0; b < n; b++) {
		var += (share[b] - mean) * (share[b] - mean);
		if (share[b] > max)
			max = share[b];
	}
	*max_mean = max / mean;
	*cv = sqrt(var / n) / mean;
}

static int run_ring(struct result *res)
{
	unsigned int n = res->n, p = res->param, rm = n / 2;
	unsigned int ids[MAX_N + 1], rm_ids[MAX_N];
	unsigned long count[MAX_N + 1] = {0};
	struct ring_ctx *base, *less, *more;
	double t[BUILD_REPS], mm, cv, acv = 0, amm = 0;
	uint8_t bits;
	int rc = -1;

	base = malloc(sizeof(*base));
	less = malloc(sizeof(*less));
	more = malloc(sizeof(*more));
	if (!base || !less || !more)
		goto out;
	for (unsigned int i = 0; i <= n; i++)
		ids[i] = i;
	for (unsigned int i = 0, j = 0; i < n; i++)
		if (i != rm)
			rm_ids[j++] = i;
	for (int r = 0; r < BUILD_REPS; r++) {
		struct rs_ring tmp;
		double t0 = now_ms();

		if (ring_make(ids, n, p, RING_SEED, &tmp))
			goto out;
		t[r] = now_ms() - t0;
		ring_free(&tmp);
	}
	qsort(t, BUILD_REPS, sizeof(double), cmp_double);
	res->build_ms = t[BUILD_REPS / 2];
	if (ring_ctx_init(base, ids, n, p) ||
	    ring_ctx_init(less, rm_ids, n - 1, p) ||
	    ring_ctx_init(more, ids, n + 1, p))
		goto out;
	/* As the data plane holds it: header, points, flat table, trailer. */
	bits = ring_bucket_bits(base->ring.npoints);
	res->bytes = (size_t)ring_map_slots(base->ring.npoints, bits) *
		     sizeof(struct rs_ring_slot);
	for (unsigned long k = 0; k < g_opt.keys; k++) {
		uint64_t h = g_hash[k];
		unsigned int o = ring_owner(base, h);
		unsigned int ol = ring_owner(less, h);
		unsigned int om = ring_owner(more, h);

		count[o]++;
		tally_key(res, o, ol, om, rm, n);
	}
	balance(count, n, &res->max_mean, &res->cv);
	for (unsigned int s = 1; s <= g_opt.seeds; s++) {
		struct rs_ring r;

		if (ring_make(ids, n, p, s, &r))
			goto out;
		ring_arc_balance(&r, n, &mm, &cv);
		acv += cv;
		amm += mm;
		ring_free(&r);
	}
	res->arc_cv = acv / g_opt.seeds;
	res->arc_max_mean = amm / g_opt.seeds;
	rc = 0;
out:
	if (base)
		ring_free(&base->ring);
	if (less)
		ring_free(&less->ring);
	if (more)
		ring_free(&more->ring);
	free(base);
	free(less);
	free(more);
	return rc;
}

/* --- Reference: Maglev (Eisenbud et al., NSDI 2016) ------------------ */

static uint32_t *maglev_build(const unsigned int *ids, unsigned int n,
			      uint32_t m)
{
	uint32_t *table = malloc(sizeof(uint32_t) * m);
	uint32_t *off = malloc(sizeof(uint32_t) * n);
	uint32_t *skip = malloc(sizeof(uint32_t) * n);
	uint32_t *next = calloc(n, sizeof(uint32_t));
	uint32_t filled = 0;

	if (!table || !off || !skip || !next) {
		free(table);
		table = NULL;
		goto out;
	}
	memset(table, 0xff, sizeof(uint32_t) * m);
	for (unsigned int i = 0; i < n; i++) {
		const char *name = g_names[ids[i]];
		size_t len = strlen(name);

		off[i] = XXH64(name, len, 0x6d61676c) % m;
		skip[i] = XXH64(name, len, 0x736b6970) % (m - 1) + 1;
	}
	while (filled < m) {
		for (unsigned int i = 0; i < n && filled < m; i++) {
			uint32_t c;

			do {
				c = (uint32_t)((off[i] +
						(uint64_t)next[i] * skip[i]) %
					       m);
				next[i]++;
			} while (table[c] != UINT32_MAX);
			table[c] = ids[i];
			filled++;
		}
	}
out:
	free(off);
	free(skip);
	free(next);
	return table;
}

static int run_maglev(struct result *res)
{
	unsigned int n = res->n, rm = n / 2, ids[MAX_N + 1], rm_ids[MAX_N];
	unsigned long count[MAX_N + 1] = {0};
	uint32_t m = res->param, *base, *less, *more;
	double t[BUILD_REPS];

	for (unsigned int i = 0; i <= n; i++)
		ids[i] = i;
	for (unsigned int i = 0, j = 0; i < n; i++)
		if (i != rm)
			rm_ids[j++] = i;
	for (int r = 0; r < BUILD_REPS; r++) {
		double t0 = now_ms();
		uint32_t *tmp = maglev_build(ids, n, m);

		if (!tmp)
			return -1;
		t[r] = now_ms() - t0;
		free(tmp);
	}
	qsort(t, BUILD_REPS, sizeof(double), cmp_double);
	res->build_ms = t[BUILD_REPS / 2];
	res->bytes = (size_t)m * sizeof(uint32_t);
	base = maglev_build(ids, n, m);
	less = maglev_build(rm_ids, n - 1, m);
	more = maglev_build(ids, n + 1, m);
	if (!base || !less || !more) {
		free(base);
		free(less);
		free(more);
		return -1;
	}
	for (unsigned long k = 0; k < g_opt.keys; k++) {
		uint32_t slot = g_hash[k] % m;
		unsigned int o = base[slot], ol = less[slot], om = more[slot];

		count[o]++;
		tally_key(res, o, ol, om, rm, n);
	}
	balance(count, n, &res->max_mean, &res->cv);
	free(base);
	free(less);
	free(more);
	return 0;
}

/* --- Reference: hash % N -------------------------------------------- */

static int run_modn(struct result *res)
{
	unsigned int n = res->n, rm = n / 2, rm_ids[MAX_N] = {0};
	unsigned long count[MAX_N + 1] = {0};

	for (unsigned int i = 0, j = 0; i < n; i++)
		if (i != rm)
			rm_ids[j++] = i;
	res->build_ms = 0;
	res->bytes = 0;
	for (unsigned long k = 0; k < g_opt.keys; k++) {
		uint64_t h = g_hash[k];
		unsigned int o = h % n, ol = rm_ids[h % (n - 1)];
		unsigned int om = h % (n + 1);

		count[o]++;
		tally_key(res, o, ol, om, rm, n);
	}
	balance(count, n, &res->max_mean, &res->cv);
	return 0;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		size_t i = atomic_fetch_add(&g_next, 1);
		struct result *r;
		double t0;
		int rc;

		if (i >= g_nres)
			return NULL;
		r = &g_res[i];
		t0 = now_ms();
		rc = r->method == M_RING     ? run_ring(r)
		     : r->method == M_MAGLEV ? run_maglev(r)
					     : run_modn(r);
		if (rc) {
			fprintf(stderr, "ring_quality: cell %zu failed\n", i);
			continue;
		}
		r->done = true;
		fprintf(stderr,
			"ring_quality: %s n=%u param=%u cv=%.4f "
			"(%.1f s)\n",
			r->method == M_RING	? "ring"
			: r->method == M_MAGLEV ? "maglev"
						: "modn",
			r->n, r->param, r->cv, (now_ms() - t0) / 1e3);
	}
}

static void make_keys(void)
{
	struct rs_service svc = {.prefix4 = 32, .prefix6 = 128};
	struct rs_affinity_key key;

	for (unsigned long i = 0; i < g_opt.keys; i++) {
		/* An odd multiplier permutes 2^32: distinct addresses. */
		uint32_t a = (uint32_t)(0x0a000001u + i * 2654435761u);
		uint8_t addr[16] = {a >> 24, a >> 16, a >> 8, a};

		rs_affinity_key_build(&key, &svc, 2 /* AF_INET */, addr, 0);
		g_hash[i] = rs_hash_key(&key, KEY_SEED);
	}
	qsort(g_hash, g_opt.keys, sizeof(uint64_t), cmp_u64);
}

static const char *method_label(const struct result *r, char *buf, size_t len)
{
	if (r->method == M_RING)
		snprintf(buf, len, "ring, %u points", r->param);
	else if (r->method == M_MAGLEV)
		snprintf(buf, len, "Maglev M=%u", r->param);
	else
		snprintf(buf, len, "hash %% N");
	return buf;
}

static double pct(unsigned long x)
{
	return 100.0 * x / g_opt.keys;
}

static void write_outputs(FILE *tsv, FILE *md)
{
	char label[64];

	fprintf(tsv, "method\tn\tparam\tmax_mean\tcv\tarc_cv\tarc_max_mean\t"
		     "rm_moved\trm_min\trm_extra\tadd_moved\tadd_ideal\t"
		     "add_extra\tbuild_ms\tbytes\n");
	for (size_t i = 0; i < g_nres; i++) {
		const struct result *r = &g_res[i];

		if (!r->done)
			continue;
		fprintf(tsv,
			"%s\t%u\t%u\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t"
			"%.4f\t%.4f\t%.4f\t%.4f\t%.3f\t%zu\n",
			r->method == M_RING	? "ring"
			: r->method == M_MAGLEV ? "maglev"
						: "modn",
			r->n, r->param, r->max_mean, r->cv, r->arc_cv,
			r->arc_max_mean, pct(r->rm_moved), pct(r->rm_min),
			pct(r->rm_extra), pct(r->add_moved), 100.0 / (r->n + 1),
			pct(r->add_extra), r->build_ms, r->bytes);
	}

	fprintf(md,
		"%lu keys (distinct IPv4 clients hashed with "
		"`rs_hash_key`), ring seed %llu; arc CV is the mean over "
		"%u other seeds of the exact CV from arc lengths.\n\n",
		g_opt.keys, RING_SEED, g_opt.seeds);
	fprintf(md, "Balance and cost:\n\n");
	fprintf(md,
		"| N | method | max/mean | CV | arc CV (mean of %u) | "
		"build ms | memory |\n",
		g_opt.seeds);
	fprintf(md, "|---:|---|---:|---:|---:|---:|---:|\n");
	for (unsigned int b = 0; b < g_opt.nbackends; b++) {
		for (size_t i = 0; i < g_nres; i++) {
			const struct result *r = &g_res[i];
			char mem[32], acv[16];

			if (!r->done || r->n != g_opt.backends[b])
				continue;
			if (r->bytes >= 1 << 20)
				snprintf(mem, sizeof(mem), "%.1f MiB",
					 r->bytes / 1048576.0);
			else if (r->bytes)
				snprintf(mem, sizeof(mem), "%.1f KiB",
					 r->bytes / 1024.0);
			else
				snprintf(mem, sizeof(mem), "none");
			if (r->method == M_RING)
				snprintf(acv, sizeof(acv), "%.1f%%",
					 100 * r->arc_cv);
			else
				snprintf(acv, sizeof(acv), "-");
			fprintf(md,
				"| %u | %s | %.3f | %.1f%% | %s | %.2f | "
				"%s |\n",
				r->n, method_label(r, label, sizeof(label)),
				r->max_mean, 100 * r->cv, acv, r->build_ms,
				mem);
		}
	}
	fprintf(md, "\nDisruption (percent of all keys; backend N/2 "
		    "removed, one new backend added):\n\n");
	fprintf(md, "| N | method | removal: moved | minimum | not needed "
		    "| addition: moved | ideal 1/(N+1) | not to the new one "
		    "|\n");
	fprintf(md, "|---:|---|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned int b = 0; b < g_opt.nbackends; b++) {
		for (size_t i = 0; i < g_nres; i++) {
			const struct result *r = &g_res[i];

			if (!r->done || r->n != g_opt.backends[b])
				continue;
			fprintf(md,
				"| %u | %s | %.2f | %.2f | %.2f | %.2f | "
				"%.2f | %.2f |\n",
				r->n, method_label(r, label, sizeof(label)),
				pct(r->rm_moved), pct(r->rm_min),
				pct(r->rm_extra), pct(r->add_moved),
				100.0 / (r->n + 1), pct(r->add_extra));
		}
	}
	fprintf(md, "\n");
}

static int parse_list(const char *s, unsigned int *out, unsigned int *n,
		      unsigned int min, unsigned int max)
{
	char *dup = strdup(s), *save = NULL, *tok;

	*n = 0;
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v < min || v > max || *n == MAX_LIST) {
			free(dup);
			return -1;
		}
		out[(*n)++] = v;
	}
	free(dup);
	return *n ? 0 : -1;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{"keys", required_argument, NULL, 'k'},
		{"backends", required_argument, NULL, 'b'},
		{"points", required_argument, NULL, 'p'},
		{"maglev", required_argument, NULL, 'm'},
		{"seeds", required_argument, NULL, 's'},
		{"threads", required_argument, NULL, 'j'},
		{"tsv", required_argument, NULL, 't'},
		{"md", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'k':
			g_opt.keys = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			if (parse_list(optarg, g_opt.backends, &g_opt.nbackends,
				       2, MAX_N - 1))
				return -1;
			break;
		case 'p':
			if (parse_list(optarg, g_opt.points, &g_opt.npoints, 1,
				       65536))
				return -1;
			break;
		case 'm':
			if (parse_list(optarg, g_opt.maglev, &g_opt.nmaglev, 3,
				       1u << 30))
				return -1;
			break;
		case 's':
			g_opt.seeds = strtoul(optarg, NULL, 10);
			break;
		case 'j':
			g_opt.threads = strtoul(optarg, NULL, 10);
			break;
		case 't':
			g_opt.tsv = optarg;
			break;
		case 'o':
			g_opt.md = optarg;
			break;
		default:
			return -1;
		}
	}
	return optind == argc && g_opt.tsv && g_opt.md && g_opt.keys &&
			       g_opt.seeds && g_opt.threads &&
			       g_opt.threads <= 64
		       ? 0
		       : -1;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	FILE *tsv, *md;
	double t0;

	if (parse_args(argc, argv)) {
		fprintf(stderr,
			"usage: ring_quality [--keys K] [--backends LIST] "
			"[--points LIST] [--maglev LIST] [--seeds S] "
			"[--threads T] --tsv FILE --md FILE\n");
		return 2;
	}
	for (unsigned int i = 0; i <= MAX_N; i++)
		snprintf(g_names[i], NAME_LEN, "node-%03u", i);
	g_hash = malloc(sizeof(uint64_t) * g_opt.keys);
	g_res = calloc((size_t)g_opt.nbackends *
			       (g_opt.npoints + g_opt.nmaglev + 1),
		       sizeof(*g_res));
	if (!g_hash || !g_res) {
		perror("ring_quality");
		return 1;
	}
	t0 = now_ms();
	make_keys();
	fprintf(stderr, "ring_quality: %lu keys hashed and sorted (%.1f s)\n",
		g_opt.keys, (now_ms() - t0) / 1e3);
	/* Largest rings first, so the threads finish together. */
	for (int p = (int)g_opt.npoints - 1; p >= 0; p--)
		for (int b = (int)g_opt.nbackends - 1; b >= 0; b--)
			g_res[g_nres++] = (struct result){
				.method = M_RING,
				.n = g_opt.backends[b],
				.param = g_opt.points[p],
			};
	for (unsigned int b = 0; b < g_opt.nbackends; b++) {
		for (unsigned int m = 0; m < g_opt.nmaglev; m++)
			g_res[g_nres++] = (struct result){
				.method = M_MAGLEV,
				.n = g_opt.backends[b],
				.param = g_opt.maglev[m],
			};
		g_res[g_nres++] = (struct result){.method = M_MODN,
						  .n = g_opt.backends[b]};
	}
	for (unsigned int i = 0; i < g_opt.threads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL)) {
			perror("ring_quality: pthread_create");
			return 1;
		}
	for (unsigned int i = 0; i < g_opt.threads; i++)
		pthread_join(th[i], NULL);
	fprintf(stderr, "ring_quality: done in %.1f s\n",
		(now_ms() - t0) / 1e3);
	/* Sort for the tables: by N, then method, then parameter. */
	for (size_t i = 0; i < g_nres; i++)
		for (size_t j = i + 1; j < g_nres; j++) {
			struct result *a = &g_res[i], *b = &g_res[j];

			if (b->n < a->n ||
			    (b->n == a->n && (b->method < a->method ||
					      (b->method == a->method &&
					       b->param < a->param)))) {
				struct result t = *a;

				*a = *b;
				*b = t;
			}
		}
	tsv = fopen(g_opt.tsv, "w");
	md = fopen(g_opt.md, "w");
	if (!tsv || !md) {
		perror("ring_quality: output");
		return 1;
	}
	write_outputs(tsv, md);
	fclose(tsv);
	fclose(md);
	for (size_t i = 0; i < g_nres; i++)
		if (!g_res[i].done)
			return 1;
	free(g_hash);
	free(g_res);
	return 0;
}

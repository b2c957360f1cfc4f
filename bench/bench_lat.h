/* SPDX-License-Identifier: MIT */
/*
 * bench_lat.h: the latencies a load generator records (bench_load,
 * bench_dgram), kept whole rather than in a histogram: a run makes at
 * most a few million, and exact percentiles need no bucket choice.
 * Header-only: each generator is one file built with the e2e tools' lib.
 */
#ifndef BENCH_LAT_H
#define BENCH_LAT_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct bench_lat {
	uint32_t *ns;
	size_t n, cap;
};

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* One latency; dropped (not fatal to the run) when memory runs out. */
static inline void bench_lat_add(struct bench_lat *l, uint64_t ns)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1 << 16;
		uint32_t *p = realloc(l->ns, cap * sizeof(*p));

		if (!p)
			return;
		l->ns = p;
		l->cap = cap;
	}
	l->ns[l->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static inline int bench_lat_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static inline void bench_lat_sort(struct bench_lat *l)
{
	qsort(l->ns, l->n, sizeof(*l->ns), bench_lat_cmp);
}

/* Quantile @q (0..1) in µs of sorted latencies; 0 when there are none. */
static inline double bench_lat_us(const struct bench_lat *l, double q)
{
	return l->n ? l->ns[(size_t)(q * (l->n - 1) + 0.5)] / 1000.0 : 0;
}

#endif /* BENCH_LAT_H */

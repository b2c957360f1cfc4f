// SPDX-License-Identifier: MIT
/*
 * The load of a UDP service with a bound: its live flows. UDP has no
 * connection to count, so a flow is an affinity key with a datagram
 * within the sticky TTL, i.e. a live entry of the service's sticky table
 * (config_checks.c requires one). steer_lookup counts a new flow up at
 * once (REMEMBER_FLOW); nothing in the kernel sees a flow lapse, so once
 * a second this recount sets each gauge to the live entries naming each
 * backend, which takes back the lapsed ones (and the ones the LRU
 * evicted). Between recounts the gauge can only run high by the flows
 * that lapsed within the second, and low by the flows created while the
 * table was read.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <time.h>

#include "state.h"

#define FLOWS_EVERY 1.0
/*
 * A full table is read in the time it takes: at 1M live entries (a flood
 * of datagrams from forged sources fills it) a pass is about 0.4 s, so a
 * pass every second would take 40% of a core. The next pass waits at
 * least this many times as long as the last one took: at most 5% of a
 * core, and the gauge lags by that much longer.
 */
#define FLOWS_DUTY 20.0

struct flow_count {
	uint64_t now_ns, ttl_ns;
	int64_t *per_backend; /* by backend id */
	int64_t total;
};

static void count_entry(const struct rs_affinity_key *key,
			const struct rs_sticky_entry *e, void *arg)
{
	struct flow_count *fc = arg;

	(void)key;
	/* Unsigned, as steer_sticky reads it. */
	if (fc->now_ns - e->last_seen_ns > fc->ttl_ns ||
	    e->backend >= RS_MAX_BACKENDS)
		return;
	fc->per_backend[e->backend]++;
	fc->total++;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Gauges of UDP service @s: its live flows, or 0 without a bound. */
static void flows_recount_service(struct daemon *d, size_t s,
				  int64_t *per_backend)
{
	const struct rs_service_conf *sc = &d->st.cfg.services[s];
	struct flow_count fc = {.per_backend = per_backend};
	int64_t g;

	for (uint32_t b = 0; b < RS_MAX_BACKENDS; b++)
		per_backend[b] = 0;
	if (sc->balance_milli && sc->sticky_ttl) {
		fc.now_ns = mono_ns();
		fc.ttl_ns = (uint64_t)sc->sticky_ttl * 1000000000ull;
		dp_sticky_each(&d->dp, d->st.svcs[s].id, count_entry, &fc);
	}
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		uint32_t id = d->st.bes[i].id;

		if (d->st.cfg.backends[i].service != s ||
		    dp_backend_load(&d->dp, id, &g))
			continue;
		dp_load_add(&d->dp, id, RS_NONE, per_backend[id] - g);
	}
	if (!dp_service_load(&d->dp, d->st.svcs[s].id, &g))
		dp_load_add(&d->dp, RS_NONE, d->st.svcs[s].id, fc.total - g);
}

void load_flows_recount(struct daemon *d)
{
	int64_t *per_backend = NULL;

	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		if (d->st.cfg.services[s].protocol != IPPROTO_UDP)
			continue;
		if (!per_backend) {
			per_backend =
				calloc(RS_MAX_BACKENDS, sizeof(*per_backend));
			if (!per_backend)
				return;
		}
		flows_recount_service(d, s, per_backend);
	}
	free(per_backend);
}

static void on_flows(struct ev_loop *loop, ev_timer *w, int revents)
{
	ev_tstamp t0 = ev_time(), took;

	(void)revents;
	load_flows_recount(w->data);
	took = ev_time() - t0;
	w->repeat = took * FLOWS_DUTY > FLOWS_EVERY ? took * FLOWS_DUTY
						    : FLOWS_EVERY;
	ev_timer_again(loop, w);
}

void load_flows_start(struct daemon *d)
{
	ev_timer_init(&d->load_flows, on_flows, FLOWS_EVERY, FLOWS_EVERY);
	d->load_flows.data = d;
	ev_timer_start(d->loop, &d->load_flows);
}

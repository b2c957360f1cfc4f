// SPDX-License-Identifier: MIT
/*
 * Reload: the file read and checked whole, a new state built beside the
 * one in force (ids kept by name, runtime state and rings carried), the
 * reload's own refusals (keys only a restart changes, a service left
 * all-out), then the writer's pipeline (apply.c) and, when a write fails
 * part-way, the rollback through the same pipeline.
 */
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "all_out.h"
#include "config_diff.h"
#include "fleet.h"
#include "ids.h"
#include "log.h"
#include "state.h"
#include "view.h"
#include "apply.h"
#include "ring_cache.h"

/*
 * Each service of @to that @from has too (by name) takes over the ring
 * @from installed, and what is known of it (generation, shape, table,
 * rebuilds): that ring is what the data plane holds until @to builds one.
 * It moves (13 MB at 200 backends, never copied): a reload's new state
 * takes it from the state in force, and a rollback, or a refused reload,
 * takes it back from the new state, where it is the ring installed.
 */
static void rings_carry(struct rs_state *to, struct rs_state *from)
{
	for (size_t s = 0; s < to->cfg.n_services; s++) {
		int o = view_find_service(from, to->cfg.services[s].name);
		struct svc_rt *t = &to->svcs[s];
		struct svc_rt *f;

		if (o < 0)
			continue;
		f = &from->svcs[o];
		ring_free(&t->ring);
		t->ring = f->ring;
		memset(&f->ring, 0, sizeof(f->ring));
		t->generation = f->generation;
		t->compact = f->compact;
		t->needs_table = f->needs_table;
		t->rebuilds = f->rebuilds;
		t->full_serial = f->full_serial;
	}
}

/*
 * The control socket and the metrics listener are bound once, at start:
 * a reload that changes where they are keeps them where they are, says
 * so, and keeps the values in force in the daemon's configuration, so
 * that `status` shows what is true.
 */
static void keep_bound_globals(const char *path, const struct rs_config *cur,
			       struct rs_config *next)
{
	if (strcmp(cur->control_socket, next->control_socket)) {
		rs_warn("%s: [global] control_socket %s takes effect at the "
			"next restart; the daemon stays on %s",
			path, next->control_socket, cur->control_socket);
		memcpy(next->control_socket, cur->control_socket,
		       sizeof(next->control_socket));
	}
	if (cur->has_metrics != next->has_metrics ||
	    cur->metrics_family != next->metrics_family ||
	    cur->metrics_port != next->metrics_port ||
	    memcmp(cur->metrics_addr, next->metrics_addr,
		   sizeof(cur->metrics_addr)) ||
	    cur->metrics_clients_max != next->metrics_clients_max) {
		rs_warn("%s: [global] metrics and metrics_clients_max take "
			"effect at the next restart; the metrics endpoint "
			"stays as it is",
			path);
		next->has_metrics = cur->has_metrics;
		next->metrics_family = cur->metrics_family;
		next->metrics_port = cur->metrics_port;
		memcpy(next->metrics_addr, cur->metrics_addr,
		       sizeof(next->metrics_addr));
		next->metrics_clients_max = cur->metrics_clients_max;
	}
}

/*
 * The new state failed part-way: put the previous one (@old: its
 * configuration and runtime state, untouched by the attempt) back in
 * force, from whatever the data plane holds now. The same pipeline
 * applies it, so the data plane ends where it was before the reload
 * (rings, words, sticky tables, lookup tables); ids the attempt used
 * that the previous state does not are retired. Returns 0 when the
 * previous state is back.
 */
static int rollback(struct daemon *d, struct rs_state *old)
{
	struct rs_state failed = d->st;
	struct snapshot *now = calloc(1, sizeof(*now));
	int err;

	if (!now)
		return -ENOMEM;
	snapshot_of(d, &failed, now);
	d->st = *old;
	/* What is installed now is what the rollback starts from. */
	rings_carry(&d->st, &failed);
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		d->st.bes[i].pushed_valid = false;
	err = apply_state(d, now);
	free(now);
	runtime_free(&failed);
	return err;
}

/*
 * [global] keys a reload cannot change, and what to do instead: whether
 * @next changes one of them, said in @err_text.
 */
static bool restart_only_changed(const struct daemon *d,
				 const struct rs_config *next, char *err_text,
				 size_t errlen)
{
	const struct {
		const char *key, *now, *next, *instead;
	} keys[] = {
		{"bpffs", d->st.cfg.bpffs, next->bpffs,
		 "restart with --detach first"},
		{"sockops_cgroup", d->st.cfg.sockops_cgroup,
		 next->sockops_cgroup,
		 "a restart moves steer_sockops, counting nothing twice"},
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].now, keys[i].next)) {
			snprintf(err_text, errlen,
				 "%s: %s cannot change on reload (%s)",
				 d->config_path, keys[i].key, keys[i].instead);
			return true;
		}
	return false;
}

/* Whether @a and @b probe the same way, to the same place. */
static bool same_check(const struct rs_backend_conf *a,
		       const struct rs_backend_conf *b)
{
	const struct rs_health_conf *x = &a->health, *y = &b->health;

	return x->type == y->type && x->interval_ms == y->interval_ms &&
	       x->timeout_ms == y->timeout_ms && x->port == y->port &&
	       !strcmp(x->path, y->path) && !strcmp(x->host, y->host) &&
	       x->expect_min == y->expect_min &&
	       x->expect_max == y->expect_max && rs_backend_addrs_equal(a, b);
}

/*
 * A reload stops every health check and starts them again: a backend
 * whose check is unchanged starts where its schedule was (its probe due
 * when it was due, at once if one was out), not spread anew over the
 * interval, so a reload delays a check by no more than its own length.
 */
static void checks_carry(struct daemon *d, struct rs_state *next,
			 const struct rs_state *old)
{
	for (size_t i = 0; i < next->cfg.n_backends; i++) {
		int o = view_find_backend(old, next->cfg.backends[i].name);
		const struct rs_check *c;
		double due;

		if (o < 0 ||
		    !same_check(&next->cfg.backends[i], &old->cfg.backends[o]))
			continue;
		c = &old->bes[o].check;
		if (!c->running)
			continue;
		due = c->inflight || !ev_is_active(&c->interval)
			      ? 0
			      : ev_timer_remaining(d->loop,
						   (ev_timer *)&c->interval);
		next->bes[i].check_carried = true;
		next->bes[i].check_due_ms =
			due > 0 ? (uint32_t)(due * 1000) : 0;
	}
}

/* Rings swapped into the data plane so far, over @st's services. */
static uint64_t swaps_of(const struct rs_state *st)
{
	uint64_t n = 0;

	for (size_t s = 0; s < st->cfg.n_services; s++)
		n += st->svcs[s].rebuilds;
	return n;
}

/*
 * What the reload cost in ring work, from the counts before it (@made:
 * rings made, services untouched, lookup tables written; @swaps): an
 * unchanged file makes, swaps and writes nothing.
 */
static void log_ring_work(const struct daemon *d, const uint64_t made[5],
			  uint64_t swaps)
{
	rs_info("reload: full rings %llu built, %llu merged from the last, "
		"%llu reused unchanged; %llu rings swapped; %llu of %zu "
		"services' rings untouched; %llu lookup tables written",
		(unsigned long long)(d->rings_made[RING_CACHE_BUILT] -
				     made[RING_CACHE_BUILT]),
		(unsigned long long)(d->rings_made[RING_CACHE_MERGED] -
				     made[RING_CACHE_MERGED]),
		(unsigned long long)(d->rings_made[RING_CACHE_SAME] -
				     made[RING_CACHE_SAME]),
		(unsigned long long)(swaps_of(&d->st) - swaps),
		(unsigned long long)(d->rings_untouched - made[3]),
		d->st.cfg.n_services,
		(unsigned long long)(d->lookups_written - made[4]));
}

int daemon_reload(struct daemon *d, bool force, char *err_text, size_t errlen)
{
	struct rs_state next = {0}, old = d->st;
	struct snapshot *before;
	struct rs_config_diff diff;
	uint64_t made[5], swaps;
	char why[512] = "";
	int err, rb;

	err = rs_config_load(d->config_path, &next.cfg, err_text, errlen);
	if (err) {
		d->reload_failures++;
		return err;
	}
	if (restart_only_changed(d, &next.cfg, err_text, errlen) ||
	    dp_sizing_fits(&d->dp, next.cfg.fleet.enabled, next.cfg.flow_table,
			   err_text, errlen)) {
		rs_config_free(&next.cfg);
		d->reload_failures++;
		return -EINVAL;
	}
	before = calloc(1, sizeof(*before));
	if (!before || alloc_runtime(&next)) {
		free(before);
		free(next.svcs);
		free(next.bes);
		rs_config_free(&next.cfg);
		d->reload_failures++;
		return -ENOMEM;
	}
	keep_bound_globals(d->config_path, &old.cfg, &next.cfg);
	snapshot_of(d, &old, before);
	err = assign_ids(d, &next, before);
	if (err) {
		snprintf(err_text, errlen, "%s: out of ids", d->config_path);
		goto refused;
	}
	rings_carry(&next, &old);
	backends_carry(d, &next, &old);
	err = reload_all_out(d, &next, force, why, sizeof(why));
	if (err) {
		snprintf(err_text, errlen, "%s: %s", d->config_path, why);
		/* The rings go back to the state in force. */
		rings_carry(&d->st, &next);
		goto refused;
	}
	if (!rs_config_diff(&d->st.cfg, &next.cfg, &diff))
		rs_info("reload: %s", diff.summary);
	rs_config_empty_services(&next.cfg, log_warning);
	rs_config_fleet_ipv6_notes(&next.cfg, log_warning);
	memcpy(made, d->rings_made, sizeof(d->rings_made));
	made[3] = d->rings_untouched;
	made[4] = d->lookups_written;
	/* rings_carry() carried the counts of swaps. */
	swaps = swaps_of(&next);
	checks_carry(d, &next, &old);
	/* From here on the new state is the state; apply it. */
	checks_stop(d);
	d->st = next;
	dp_faults_arm_from_env();
	err = apply_state(d, before);
	dp_faults_disarm();
	free(before);
	if (err) {
		d->reload_failures++;
		rs_err("reload: applying %s failed: %s; rolling back to the "
		       "previous configuration",
		       d->config_path, strerror(-err));
		rb = rollback(d, &old);
		if (rb)
			rs_err("reload: the rollback failed too: %s; the data "
			       "plane may hold parts of both configurations "
			       "until the next successful reload",
			       strerror(-rb));
		else
			rs_info("reload: rolled back, the previous "
				"configuration is in force");
		snprintf(err_text, errlen, "applying %s failed: %s; %s",
			 d->config_path, strerror(-err),
			 rb ? "the rollback failed too (see the log)"
			    : "rolled back, nothing changed");
		daemon_reconcile_sockets(d);
		checks_start(d);
		return err;
	}
	log_ring_work(d, made, swaps);
	daemon_reconcile_sockets(d);
	/* Backends gone or added: where steer_sockops sits may change. */
	if (d->dp.sockops_auto)
		load_check_soon(d);
	checks_start(d);
	runtime_free(&old);
	d->reloads++;
	return 0;
refused:
	free(before);
	runtime_free(&next);
	d->reload_failures++;
	return err;
}

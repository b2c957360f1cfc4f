/* SPDX-License-Identifier: MIT */
/*
 * Between the files of the daemon's state engine: backends.c (operator
 * state, weight, health, slow start), apply/words.c (the state words,
 * written where they differ), apply/rings.c (which ring is installed),
 * ids.c (which id each object gets), apply.c (the one pipeline that
 * writes a configuration into the data plane, at start-up and on reload)
 * and sockets.c (backend sockets in their SOCKMAP slots).
 *
 * Rule of thumb: anything that does not change ring membership or a
 * backend's maximum points is one state-word write to rs_backends. Ring
 * rebuilds happen only when membership or a maximum changes, or when the
 * walk bound would otherwise be at risk.
 */
#ifndef RS_STATE_H
#define RS_STATE_H

#include "daemon.h"

/* backends.c */
uint32_t backend_full_points(const struct daemon *d, const struct be_rt *be);
int service_fit_points(struct rs_state *st, size_t svc, uint64_t *points);
int backend_changed(struct daemon *d, struct be_rt *be);
/* Backend @i of @st, new: @d is the daemon whose checks will run it. */
void backend_init(struct daemon *d, struct rs_state *st, size_t i);
void backends_adopt(struct daemon *d, const struct rs_backend *pinned);
/* Runtime state of @old's backends that @st keeps, carried by name. */
void backends_carry(struct daemon *d, struct rs_state *st,
		    const struct rs_state *old);
void checks_start(struct daemon *d);
void checks_stop(struct daemon *d);
void on_ramp(struct ev_loop *loop, ev_timer *w, int revents);

/* apply/words.c: a backend's word, written if it changed. */
int backend_push(struct daemon *d, struct be_rt *be);
/*
 * Every word of service @svc; the first error. The others are still
 * written, and each one that was is recorded as pushed.
 */
int service_push(struct daemon *d, size_t svc);

/* apply/rings.c */
enum refresh {
	REFRESH_CHECK,	 /* only if the installed ring is no longer right */
	REFRESH_REBUILD, /* built points changed: rebuild, swap if it differs */
	REFRESH_FORCE,	 /* rebuild and swap even if nothing changed */
};
int ring_build_full(struct daemon *d, size_t s, struct rs_ring **ring);
bool ring_unchanged(struct daemon *d, size_t s,
		    const struct rs_backend *before);
void rings_cache_free(struct daemon *d);
int ring_refresh(struct daemon *d, size_t s, enum refresh how, const char *why);
int ring_install_trimmed(struct daemon *d, size_t s, const struct rs_ring *ring,
			 const struct rs_backend *words, const char *why);
void rings_read_pinned(struct daemon *d);

/*
 * sockets.c: @refresh: rings are in place and follow who has a socket.
 * True when a backend gained or lost its socket.
 */
bool sockets_reconcile_all(struct daemon *d, bool refresh);
/* Passes of sockets_reconcile_all() so far (the metrics). */
uint64_t sockets_reconcile_passes(void);
void on_reconcile(struct ev_loop *loop, ev_timer *w, int revents);

/*
 * load_reconcile.c: the load gauge checked against the sockets sock_diag
 * shows, at start and then periodically; returns negative errno when the
 * sockets could not be read.
 */
int load_reconcile(struct daemon *d);
void load_check_start(struct daemon *d);
/* The next pass in a second (a listener came or went). */
void load_check_soon(struct daemon *d);
/* load_flows.c: UDP gauges set to live flows, every second. */
void load_flows_recount(struct daemon *d);
void load_flows_start(struct daemon *d);
/* restart_watch.c: sockets of restart_grace services, every 50 ms. */
void restart_watch_start(struct daemon *d);

#endif /* RS_STATE_H */

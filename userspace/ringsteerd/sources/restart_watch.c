// SPDX-License-Identifier: MIT
/*
 * A backend's new socket, taken within 50 ms of its appearing, and
 * restart_grace. Every datagram of a UDP service is steered, so while a
 * backend's socket is gone its flows would go to other backends, whose
 * processes know nothing of them; with restart_grace they wait for it
 * instead (steer_lookup and steer_tc drop their datagrams,
 * rs_restart_holds()). The sooner the new socket is in the slots, the
 * fewer datagrams wait, and the sooner a restarted TCP backend takes its
 * clients back. Every 50 ms this looks, with sock_diag, at the addresses
 * whose socket went less than a while ago (the grace, or RETAKE_WINDOW),
 * and, for restart_grace services, reads the slots of the sockets that
 * are there (a map read each), so that a grace is counted from when the
 * socket went. Backends of generations services are looked at on every
 * pass: a new process's socket beside the old one empties no slot, and
 * it must take new flows at once (generations.c: a sock_diag dump per
 * address, /proc walked only when the address's sockets changed). A grace that
 * ended without a socket is written (held_slots cleared): its flows then go on
 * as to a backend without a socket. The once-a-second reconcile (sockets.c)
 * keeps doing the rest.
 */
#include <netinet/in.h>

#include "generations.h"
#include "log.h"
#include "sockets.h"
#include "state.h"
#include "view.h"

#define WATCH_EVERY 0.05
/*
 * A backend without restart_grace whose socket went less than this ago is
 * looked for every 50 ms too: a restart takes a second or two.
 */
#define RETAKE_WINDOW 10.0
/*
 * Backends with a socket gone that one pass looks for with sock_diag: a
 * mass restart (every backend at once) must not keep the loop busy with
 * a dump per address every 50 ms; the rest wait for the next passes,
 * which start where this one stopped.
 */
#define LOOKS_PER_PASS 16

static void log_change(const struct daemon *d, const struct be_rt *be, bool had,
		       uint32_t held, double grace)
{
	const char *name = d->st.cfg.backends[be->idx].name;

	if (had && !be->has_socket && held)
		rs_info("backend %s: socket gone; its flows wait for it up to "
			"%.3g s (restart_grace)",
			name, grace);
	else if (!be->has_socket && !held && be->pushed_valid &&
		 be->pushed.held_slots)
		rs_warn("backend %s: no socket within restart_grace (%.3g "
			"s): its flows go to other backends",
			name, grace);
}

static void watch_backend(struct daemon *d, size_t i, double now, double grace,
			  bool gen)
{
	struct be_rt *be = &d->st.bes[i];
	size_t s = d->st.cfg.backends[i].service;
	struct sock_scope scope = {
		.now = now,
		.window = grace ? grace : RETAKE_WINDOW,
		.present = grace > 0 || gen,
	};
	bool had = be->has_socket;
	uint32_t held;

	be->has_socket =
		sockets_reconcile_backend(&d->dp, &d->st.cfg, i, be->id,
					  d->st.svcs[s].id, &be->sock, &scope);
	held = view_held_slots(&d->st, be, now);
	if (had == be->has_socket &&
	    (!be->pushed_valid || be->pushed.held_slots == held))
		return;
	log_change(d, be, had, held, grace);
	/* A failed write is retried on the next pass: pushed is unchanged. */
	(void)backend_changed(d, be);
}

/* An address of @be has no socket since less than @window ago. */
static bool recently_gone(const struct be_rt *be, size_t n_addrs, double now,
			  double window)
{
	for (size_t a = 0; a < n_addrs; a++) {
		const struct rs_addr_rt *r = &be->sock.addr[a];

		if (!r->has_socket && r->gone_since > 0 &&
		    now < r->gone_since + window)
			return true;
	}
	return false;
}

static void on_watch(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;
	size_t n = d->st.cfg.n_backends, looks = 0;
	size_t start = n ? d->restart_watch_next % n : 0;
	double now = ev_now(loop);

	(void)revents;
	for (size_t k = 0; k < n; k++) {
		size_t i = (start + k) % n;
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];
		const struct rs_service_conf *sc =
			&d->st.cfg.services[bc->service];
		double grace = sc->protocol == IPPROTO_UDP
				       ? sc->restart_grace_ms / 1000.0
				       : 0;
		bool gone = recently_gone(&d->st.bes[i], bc->n_addrs, now,
					  grace ? grace : RETAKE_WINDOW);
		bool gen = generations_on(&d->st.cfg, bc);

		if (gone && looks == LOOKS_PER_PASS) {
			d->restart_watch_next = i;
			return;
		}
		looks += gone;
		if (grace > 0 || gone || gen)
			watch_backend(d, i, now, grace, gen);
	}
	d->restart_watch_next = start;
}

void restart_watch_start(struct daemon *d)
{
	ev_timer_init(&d->restart_watch, on_watch, WATCH_EVERY, WATCH_EVERY);
	d->restart_watch.data = d;
	ev_timer_start(d->loop, &d->restart_watch);
}

// SPDX-License-Identifier: MIT
/*
 * No silent all-out: an operator action (drain, down, weight) or a reload
 * that would leave a service with no backend able to take a new
 * connection is refused, naming the service and why each backend cannot,
 * unless forced; a forced one is logged, and shown in `ringsteer status`
 * and the metrics while it lasts.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "all_out.h"
#include "log.h"
#include "sockets.h"
#include "state.h"
#include "view.h"

/*
 * The one rule for "can take a new connection", for the operator's check,
 * the reload's, status, the metrics and `ring stats`, so that what is
 * refused is what they show. A new connection needs each of:
 *   - UP: operator up and health up (DOWN takes nothing; a drained
 *     backend keeps its sticky clients but is given no new one);
 *   - points in use (weight 0 leaves none): the ring never picks a
 *     backend without them for a new client;
 *   - a listening socket: steering hands the connection to that socket;
 *     the lookup walks past a backend without one (and with none left
 *     falls back, `fallback`), so it takes nothing however UP it is.
 * Where has_socket says nothing yet (a reload adds the backend, takes it
 * back into the file, or changes its addresses: the socket is taken when
 * the new state is applied) the reload's check asks sock_diag whether
 * anything listens there (reload_all_out()): a file whose only takers
 * have no process is all-out (found by a chaos run), while one that adds
 * a backend before its process listens, next to others that take, is
 * not; nor is a file that adds a service whose backends do not run yet
 * (it takes nothing away). Everywhere else the daemon knows, and no
 * socket means no.
 */
bool backend_takes_new(const struct daemon *d, size_t i)
{
	return view_takes_new(&d->st, i, ev_now(d->loop));
}

uint32_t service_takers(const struct daemon *d, size_t svc)
{
	return view_service_takers(&d->st, svc, ev_now(d->loop));
}

/* "web-1 drained, web-2 weight 0, web-3 no socket" for @why. */
static void why_not(const struct rs_state *st, size_t svc, char *buf,
		    size_t len)
{
	size_t off = 0;

	snprintf(buf, len, "no backend in the file");
	for (size_t i = 0; i < st->cfg.n_backends && off < len; i++) {
		const struct be_rt *be = &st->bes[i];
		const char *r;

		if (st->cfg.backends[i].service != svc)
			continue;
		if (be->op == RS_OP_DRAIN)
			r = "drained";
		else if (be->op == RS_OP_DOWN)
			r = "down";
		else if (!be->health.up)
			r = "failing its health check";
		else if (!be->weight)
			r = "weight 0";
		else if (!be->has_socket && !be->socket_unknown)
			r = "no socket";
		else
			r = "ok";
		off += (size_t)snprintf(buf + off, len - off, "%s%s %s",
					off ? ", " : "",
					st->cfg.backends[i].name, r);
	}
}

int all_out_check(struct daemon *d, size_t svc, uint32_t before, bool force,
		  const char *action, char *why, size_t whylen)
{
	char detail[384];

	if (before == 0 || service_takers(d, svc) > 0)
		return 0;
	why_not(&d->st, svc, detail, sizeof(detail));
	if (!force) {
		snprintf(why, whylen,
			 "refused: %s would leave service %s with no backend "
			 "that takes new connections (%s); --force does it "
			 "anyway",
			 action, d->st.cfg.services[svc].name, detail);
		return -EBUSY;
	}
	d->st.svcs[svc].all_out_forced = true;
	d->forced_all_out++;
	rs_warn("service %s: ALL OUT, forced by the operator (%s): no backend "
		"takes new connections (%s)",
		d->st.cfg.services[svc].name, action, detail);
	return 0;
}

int reload_all_out(struct daemon *d, struct rs_state *next, bool force,
		   char *why, size_t whylen)
{
	const struct rs_state *cur = &d->st;
	double now = ev_now(d->loop);
	size_t off = 0;

	why[0] = 0;
	/*
	 * Only for services that exist now: a new service has no clients to
	 * lose, and its backends may well start after the file that adds it.
	 */
	for (size_t i = 0; i < next->cfg.n_backends; i++) {
		const char *svc =
			next->cfg.services[next->cfg.backends[i].service].name;

		if (next->bes[i].socket_unknown &&
		    view_find_service(cur, svc) >= 0 &&
		    !sockets_listening(&next->cfg, i))
			next->bes[i].socket_unknown = false;
	}
	for (size_t s = 0; s < next->cfg.n_services; s++) {
		int o = view_find_service(cur, next->cfg.services[s].name);
		bool has_backends = false;
		char detail[384];

		for (size_t i = 0; i < next->cfg.n_backends; i++)
			has_backends |= next->cfg.backends[i].service == s;
		/*
		 * A service already all-out is not this file's doing, nor a new
		 * one without backends (--check warns of it). One whose every
		 * backend the file takes out is: its clients find nothing
		 * listening after it (found by a chaos run).
		 */
		if (view_service_takers(next, s, now) > 0 ||
		    (o >= 0 && view_service_takers(cur, (size_t)o, now) == 0) ||
		    (o < 0 && !has_backends))
			continue;
		why_not(next, s, detail, sizeof(detail));
		if (force) {
			next->svcs[s].all_out_forced = true;
			d->forced_all_out++;
			rs_warn("service %s: ALL OUT, forced by the operator "
				"(reload --force): no backend takes new "
				"connections (%s)",
				next->cfg.services[s].name, detail);
			continue;
		}
		if (off < whylen)
			off += (size_t)snprintf(
				why + off, whylen - off,
				"%sservice %s would have no backend that takes "
				"new connections (%s)",
				off ? "; " : "", next->cfg.services[s].name,
				detail);
	}
	if (!why[0])
		return 0;
	if (off < whylen)
		snprintf(why + off, whylen - off,
			 "; refused, nothing changed (`ringsteer reload "
			 "--force` does it anyway)");
	return -EBUSY;
}

bool service_all_out(const struct daemon *d, size_t svc)
{
	return service_takers(d, svc) == 0;
}

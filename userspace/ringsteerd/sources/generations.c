// SPDX-License-Identifier: MIT
/*
 * A generations backend address holds the sockets of several processes:
 * a graceful restart binds the new process next to the old one (with
 * SO_REUSEPORT or SO_REUSEADDR) and lets the old one finish. Every socket
 * goes into rs_gen_sockets; the newest (by its oldest holder's start
 * time) is the working one, in the backend's rs_sockets slots and in
 * rs_gen_working, and takes new flows; the data plane keeps each older
 * one's recorded flows on it until it closes (the kernel then drops it
 * from the maps by itself).
 */
#include "generations.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "backend_socket.h"
#include "log.h"
#include "socket_generations.h"
#include "socket_slots.h"
#include "state.h"

static void count_soon(void);

_Static_assert(RS_ADDR_GENERATIONS == RS_GEN_PER_ADDR,
	       "rs_addr_rt keeps every generation sock_generations() gives");

bool generations_on(const struct rs_config *cfg,
		    const struct rs_backend_conf *bc)
{
	const struct rs_service_conf *sc = &cfg->services[bc->service];

	return sc->generations && sc->protocol == IPPROTO_UDP;
}

/* The sockets found are the ones @rt has, the working one in its slots. */
static bool unchanged(struct rs_dataplane *dp, const struct rs_addr_rt *rt,
		      const struct rs_sock_found *found, size_t n)
{
	if (!rt->has_socket || n != rt->n_gen || !rt->nslots ||
	    !sockets_slots_hold(dp, rt->slots, rt->nslots, rt->cookie))
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < n && rt->gen_cookies[k] != found[i].cookie)
			k++;
		if (k == n)
			return false;
	}
	return true;
}

/* Only the user expected on the address serves there (owner =). */
static size_t keep_owner(const struct rs_backend_conf *bc,
			 const struct rs_backend_addr *ba,
			 struct rs_addr_rt *rt, struct rs_sock_gen *g, size_t n)
{
	const struct rs_sock_found *refused = NULL;
	size_t kept = 0;
	uint32_t want;

	if (!sockets_owner_expected(bc, rt, &want))
		return n;
	for (size_t i = 0; i < n; i++)
		if (g[i].found.uid == want)
			g[kept++] = g[i];
		else
			refused = &g[i].found;
	/*
	 * Only the newest refused socket is noted: the note remembers one
	 * socket, and noting each of two every pass would count and log
	 * them anew 20 times a second.
	 */
	if (refused)
		sockets_note_refused(bc, ba, refused, want, rt);
	return kept;
}

/* Generation number of @cookie on the address, 0 when not one of them. */
static uint64_t number_of(const struct rs_addr_rt *rt, uint64_t cookie)
{
	for (size_t i = 0; i < rt->n_gen; i++)
		if (rt->gen_cookies[i] == cookie)
			return rt->gen_numbers[i];
	return 0;
}

static bool known(const struct rs_addr_rt *rt, uint64_t cookie)
{
	return number_of(rt, cookie) != 0;
}

/* @g into the maps: the SOCKHASH always, the slots when it is @working. */
static int install(struct rs_dataplane *dp, const struct rs_sock_gen *g,
		   const uint32_t *slots, size_t nslots, bool working,
		   bool in_hash)
{
	int fd = sock_take(g->pid, g->fd, g->found.inode), err = 0;

	if (fd < 0)
		return fd;
	if (!in_hash)
		err = dp_set_gen_socket(dp, g->found.cookie, fd);
	for (size_t i = 0; working && i < nslots && !err; i++)
		err = dp_set_socket(dp, slots[i], fd);
	for (size_t i = 0; working && i < nslots && !err; i++)
		err = dp_set_gen_working(dp, slots[i], g->found.cookie);
	close(fd);
	return err;
}

static void note_taken(const struct rs_backend_conf *bc,
		       const struct rs_backend_addr *ba,
		       const struct rs_addr_rt *rt, const struct rs_sock_gen *w,
		       size_t n, double now)
{
	char where[80];

	rs_addr_format(ba->family, ba->addr, ba->port, where, sizeof(where));
	if (rt->has_socket && rt->cookie == w->found.cookie)
		return;
	rs_info("backend %s: socket %s (cookie %llu) of pid %d is the working "
		"one; %zu older generation(s) keep their flows",
		bc->name, where, (unsigned long long)w->found.cookie,
		(int)w->pid, n - 1);
	/* The other end of "socket gone", as without generations. */
	if (rt->gone_since > 0)
		rs_info("backend %s: socket %s back after %.0f ms", bc->name,
			where, (now - rt->gone_since) * 1000.0);
}

static void keep_state(struct rs_addr_rt *rt, const struct rs_sock_gen *g,
		       size_t n, const uint32_t *slots, size_t nslots,
		       double now)
{
	const struct rs_sock_gen *w = &g[n - 1];
	uint64_t numbers[RS_ADDR_GENERATIONS];

	for (size_t i = 0; i < n; i++) {
		numbers[i] = number_of(rt, g[i].found.cookie);
		if (!numbers[i])
			numbers[i] = ++rt->gen_seen;
	}
	if (!rt->has_socket || rt->cookie != w->found.cookie) {
		rt->taken++;
		rt->taken_at = now;
	}
	rt->has_socket = true;
	rt->reported_missing = false;
	rt->cookie = w->found.cookie;
	rt->owner = w->pid;
	rt->cgroup_id = w->found.cgroup_id;
	rt->uid_known = true;
	rt->uid = w->found.uid;
	rt->nslots = nslots;
	memcpy(rt->slots, slots, nslots * sizeof(*slots));
	rt->held_mask = sockets_slot_mask(slots, nslots);
	rt->gone_since = 0;
	rt->n_gen = n;
	for (size_t i = 0; i < n; i++) {
		rt->gen_cookies[i] = g[i].found.cookie;
		rt->gen_pids[i] = g[i].pid;
		rt->gen_numbers[i] = numbers[i];
	}
}

void generations_reconcile_addr(struct rs_dataplane *dp,
				const struct rs_config *cfg, size_t idx,
				uint32_t id, size_t a, struct rs_addr_rt *rt,
				double now)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];
	const struct rs_backend_addr *ba = &bc->addrs[a];
	struct rs_sock_found found[RS_GEN_PER_ADDR];
	struct rs_sock_gen g[RS_GEN_PER_ADDR];
	struct rs_sock_addr sa;
	uint32_t slots[2];
	size_t nslots;
	int n, err = 0;

	sockets_sock_addr(cfg, bc, ba, &sa);
	/* The pass's dump alone: /proc is walked only when something moved. */
	n = sock_diag_find_all(&sa, found, RS_GEN_PER_ADDR);
	if (n > 0 && unchanged(dp, rt, found, (size_t)n))
		return;
	if (n > 0)
		n = sock_generations(&sa, g, RS_GEN_PER_ADDR);
	if (n > 0)
		n = (int)keep_owner(bc, ba, rt, g, (size_t)n);
	if (n <= 0) {
		char where[80];

		rs_addr_format(ba->family, ba->addr, ba->port, where,
			       sizeof(where));
		if (rt->has_socket && n < 0)
			rs_warn("backend %s: the sockets on %s not read (%s)",
				bc->name, where, strerror(-n));
		else if (rt->has_socket)
			rs_warn("backend %s: no socket of any generation left "
				"on %s",
				bc->name, where);
		rt->n_gen = 0;
		rt->nslots = 0;
		sockets_gone(rt, now);
		rt->reported_missing = true;
		return;
	}
	nslots = sockets_target_slots(bc, id, ba, &g[n - 1].found, slots);
	for (int i = 0; i < n && !err; i++) {
		bool working = i == n - 1;
		bool placed = working && sockets_slots_hold(dp, slots, nslots,
							    g[i].found.cookie);

		if (!known(rt, g[i].found.cookie) || (working && !placed))
			err = install(dp, &g[i], slots, nslots, working,
				      known(rt, g[i].found.cookie));
	}
	if (err) {
		rs_warn("backend %s: a generation's socket not taken (%s); "
			"retrying",
			bc->name, strerror(-err));
		return;
	}
	note_taken(bc, ba, rt, &g[n - 1], (size_t)n, now);
	keep_state(rt, g, (size_t)n, slots, nslots, now);
	/* Flows per generation as of this change, not up to 5 s later. */
	count_soon();
}

/* ---- the flow table's sweep ---- */

/* Idle entries go within this of their idle time; the counts are as old. */
#define SWEEP_EVERY 5.0
#define COUNTED_MAX 1024

static struct {
	double last;
	size_t n;
	struct dp_flow_gen c[COUNTED_MAX];
	uint64_t swept;
} sweep;

static void count_soon(void)
{
	sweep.last = 0;
}

uint64_t generations_flows(uint32_t backend, uint64_t cookie)
{
	for (size_t i = 0; i < sweep.n; i++)
		if (sweep.c[i].backend == backend &&
		    sweep.c[i].cookie == cookie)
			return sweep.c[i].flows;
	return 0;
}

uint64_t generations_swept(void)
{
	return sweep.swept;
}

void generations_sweep(struct daemon *d)
{
	static uint32_t idle[RS_MAX_BACKENDS];
	struct dp_flow_count count = {.c = sweep.c, .max = COUNTED_MAX};
	double now = ev_now(d->loop);
	struct timespec ts;
	int n;

	if (!d->st.cfg.flow_table || now < sweep.last + SWEEP_EVERY)
		return;
	sweep.last = now;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];

		if (d->st.bes[i].id < RS_MAX_BACKENDS)
			idle[d->st.bes[i].id] =
				d->st.cfg.services[bc->service].flow_idle_s;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = dp_sweep_flows(&d->dp, (uint32_t)ts.tv_sec, idle, &count);
	if (n < 0)
		return;
	sweep.n = count.n;
	sweep.swept += (uint64_t)n;
	if (n)
		rs_debug("generations: %d idle flow entries deleted", n);
}

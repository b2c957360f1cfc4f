// SPDX-License-Identifier: MIT
/*
 * Who holds the metrics endpoint's connections, and for how long.
 *
 * The library's own limits count idle time only and refuse the newcomer at
 * a cap: a client sending one byte every few seconds keeps its slot for
 * ever, and a handful of them lock every scraper out. Here a connection
 * gets client_idle_timeout to send its whole request (and as long again to
 * take the reply, or to start the next request), and at a cap the oldest
 * connection goes, never the newcomer: a scraper that asks and reads at
 * once always gets its answer, whatever slow clients do.
 *
 * A connection is dropped by shutting its socket down: the library sees
 * the stream end and closes it the usual way (and tells mclients_notify).
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "metrics_clients.h"

/* At most one "dropped at the cap" warning per this many seconds. */
#define DROP_WARN_INTERVAL 60.0

struct mconn {
	struct mconn *prev, *next;
	int fd;
	bool shut;
	ev_tstamp deadline;
	sa_family_t family;
	uint8_t addr[16]; /* the peer's address, without the port */
};

static double budget(const struct metrics_clients *mc)
{
	return mc->d->st.cfg.client_idle_ms / 1000.0;
}

static void shut(struct metrics_clients *mc, struct mconn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->shut = true;
	mc->live--;
}

static void arm(struct metrics_clients *mc)
{
	struct ev_loop *loop = mc->d->loop;
	ev_tstamp first = 0;

	for (struct mconn *c = mc->head; c; c = c->next)
		if (!c->shut && (!first || c->deadline < first))
			first = c->deadline;
	ev_timer_stop(loop, &mc->sweep);
	if (!first)
		return;
	first -= ev_now(loop);
	ev_timer_set(&mc->sweep, first > 0 ? first : 0, 0.);
	ev_timer_start(loop, &mc->sweep);
}

static void on_sweep(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct metrics_clients *mc = w->data;
	unsigned int late = 0;

	(void)revents;
	for (struct mconn *c = mc->head; c; c = c->next) {
		if (c->shut || c->deadline > ev_now(loop))
			continue;
		shut(mc, c);
		late++;
	}
	if (late)
		rs_debug("metrics: dropped %u clients that took over %.1fs",
			 late, budget(mc));
	arm(mc);
}

static bool same_addr(const struct mconn *a, const struct mconn *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/* The oldest live connection but @c (from @c's address only, if @same). */
static struct mconn *oldest(struct metrics_clients *mc, const struct mconn *c,
			    bool same)
{
	for (struct mconn *o = mc->head; o; o = o->next)
		if (!o->shut && o != c && (!same || same_addr(o, c)))
			return o;
	return NULL;
}

static void drop_oldest(struct metrics_clients *mc, struct mconn *victim)
{
	ev_tstamp now = ev_now(mc->d->loop);

	shut(mc, victim);
	mc->dropped++;
	if (mc->warned && now - mc->warned < DROP_WARN_INTERVAL)
		return;
	rs_warn("metrics: at %u clients at once (or %u from one address); "
		"dropped the oldest (%llu so far)",
		mc->cap, mc->per_addr, (unsigned long long)mc->dropped);
	mc->warned = now;
	mc->dropped = 0;
}

/*
 * A newcomer filling the last slot makes room for the next one: the
 * library stops accepting at the cap, and whoever waits behind it then
 * would wait on the slowest client.
 */
static void make_room(struct metrics_clients *mc, struct mconn *c)
{
	struct mconn *victim = NULL;
	unsigned int same = 0;

	for (struct mconn *o = mc->head; o; o = o->next)
		same += !o->shut && o != c && same_addr(o, c);
	if (same >= mc->per_addr)
		victim = oldest(mc, c, true);
	else if (mc->live >= mc->cap)
		victim = oldest(mc, c, false);
	if (victim)
		drop_oldest(mc, victim);
}

static void peer_of(struct MHD_Connection *conn, struct mconn *c)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = info ? info->client_addr : NULL;

	if (!sa)
		return;
	c->family = sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(c->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(c->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
}

static void add(struct metrics_clients *mc, struct MHD_Connection *conn,
		void **ctx)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct mconn *c = calloc(1, sizeof(*c));

	*ctx = c;
	if (!c || !info) {
		/* Untracked, it still has the library's idle timeout. */
		free(c);
		*ctx = NULL;
		return;
	}
	c->fd = info->connect_fd;
	c->deadline = ev_now(mc->d->loop) + budget(mc);
	peer_of(conn, c);
	c->prev = mc->tail;
	if (mc->tail)
		mc->tail->next = c;
	else
		mc->head = c;
	mc->tail = c;
	mc->live++;
	make_room(mc, c);
	if (!ev_is_active(&mc->sweep))
		arm(mc);
}

static void del(struct metrics_clients *mc, struct mconn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		mc->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		mc->tail = c->prev;
	if (!c->shut)
		mc->live--;
	free(c);
}

void mclients_notify(void *cls, struct MHD_Connection *conn, void **ctx,
		     enum MHD_ConnectionNotificationCode toe)
{
	struct metrics_clients *mc = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		add(mc, conn, ctx);
	else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *ctx)
		del(mc, *ctx);
}

void mclients_progress(struct metrics_clients *mc, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct mconn *c = info ? info->socket_context : NULL;

	if (c && !c->shut)
		c->deadline = ev_time() + budget(mc);
}

void mclients_init(struct metrics_clients *mc, struct daemon *d,
		   unsigned int cap, unsigned int per_addr)
{
	memset(mc, 0, sizeof(*mc));
	mc->d = d;
	mc->cap = cap;
	mc->per_addr = per_addr;
	ev_init(&mc->sweep, on_sweep);
	mc->sweep.data = mc;
}

/* After the library has stopped (and closed, telling us, every client). */
void mclients_stop(struct metrics_clients *mc)
{
	ev_timer_stop(mc->d->loop, &mc->sweep);
	while (mc->head)
		del(mc, mc->head);
}

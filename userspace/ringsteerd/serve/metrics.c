// SPDX-License-Identifier: MIT
/*
 * The metrics endpoint ([global] metrics): libmicrohttpd inside the
 * daemon's loop, answering GET /metrics with metrics_render()'s text
 * (metrics_render.c). Its clients' time and number are bounded in
 * metrics_clients.c.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "log.h"
#include "metrics.h"
#include "metrics_clients.h"

/*
 * A rendered body is served again until this many times the time it took
 * to render has passed: however many clients scrape, rendering takes at
 * most about 1/RENDER_SHARE of the loop (health checks, control, reloads
 * keep the rest), and a small daemon's scrapes stay fresh.
 */
#define RENDER_SHARE 20
/* However slow the host, a scrape is never older than this (seconds). */
#define RENDER_REUSE_MAX 5.0

/*
 * libmicrohttpd runs without threads of its own: its epoll fd is watched
 * by the daemon's loop, so rendering reads daemon state without locks.
 */
struct metrics_server {
	struct daemon *d;
	struct MHD_Daemon *mhd;
	ev_io io;
	ev_timer timer;
	uint32_t clients_max; /* fixed at start: the library cannot change it */
	struct metrics_clients clients;
	struct MHD_Response *body; /* the last render, shared by every reply */
	ev_tstamp body_until;	   /* served again until then */
};

/* The exposition, rendered again only once the last one has had its time. */
static struct MHD_Response *exposition(struct metrics_server *ms)
{
	ev_tstamp t0 = ev_time(), took;
	struct MHD_Response *resp;
	char *text;

	if (ms->body && t0 < ms->body_until)
		return ms->body;
	text = metrics_render(ms->d);
	if (!text)
		return NULL;
	resp = MHD_create_response_from_buffer(strlen(text), text,
					       MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return NULL;
	}
	MHD_add_response_header(resp, "Content-Type",
				"text/plain; version=0.0.4; charset=utf-8");
	took = ev_time() - t0;
	rs_debug("metrics: rendered in %.1f ms", took * 1000);
	/* Replies still being sent hold their own reference. */
	if (ms->body)
		MHD_destroy_response(ms->body);
	ms->body = resp;
	ms->body_until = ev_time() + (took * RENDER_SHARE < RENDER_REUSE_MAX
					      ? took * RENDER_SHARE
					      : RENDER_REUSE_MAX);
	return resp;
}

static struct MHD_Response *plain(const char *text)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);

	if (resp)
		MHD_add_response_header(resp, "Content-Type",
					"text/plain; charset=utf-8");
	return resp;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_len, void **con_cls)
{
	struct metrics_server *ms = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int status = MHD_HTTP_OK;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)con_cls;
	rs_debug("metrics: %s %s", method, url);
	mclients_progress(&ms->clients, conn);
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		resp = plain("only GET\n");
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		resp = plain("not found; see /metrics\n");
		status = MHD_HTTP_NOT_FOUND;
	} else {
		resp = exposition(ms);
		if (!resp)
			return MHD_NO;
		return MHD_queue_response(conn, status, resp);
	}
	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A reply is out: the connection may start its next request. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct metrics_server *ms = cls;

	(void)con_cls;
	(void)toe;
	mclients_progress(&ms->clients, conn);
}

static void metrics_arm_timer(struct metrics_server *ms)
{
	MHD_UNSIGNED_LONG_LONG ms_left;

	ev_timer_stop(ms->d->loop, &ms->timer);
	if (MHD_get_timeout(ms->mhd, &ms_left) == MHD_YES) {
		ev_timer_set(&ms->timer, ms_left / 1000.0, 0.);
		ev_timer_start(ms->d->loop, &ms->timer);
	}
}

static void on_mhd_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct metrics_server *ms = w->data;

	(void)loop;
	(void)revents;
	MHD_run(ms->mhd);
	metrics_arm_timer(ms);
}

static void on_mhd_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct metrics_server *ms = w->data;

	(void)loop;
	(void)revents;
	MHD_run(ms->mhd);
	metrics_arm_timer(ms);
}

int metrics_start(struct daemon *d)
{
	struct sockaddr_storage ss = {0};
	const union MHD_DaemonInfo *info;
	struct metrics_server *ms;
	char where[RS_ADDR_STRLEN];
	unsigned int flags = MHD_USE_EPOLL, per_ip, idle_s;

	if (!d->st.cfg.has_metrics)
		return 0;
	ms = calloc(1, sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	ms->d = d;
	if (d->st.cfg.metrics_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(d->st.cfg.metrics_port);
		memcpy(&in->sin_addr, d->st.cfg.metrics_addr, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(d->st.cfg.metrics_port);
		memcpy(&in6->sin6_addr, d->st.cfg.metrics_addr, 16);
		flags |= MHD_USE_IPv6;
	}
	rs_addr_format(d->st.cfg.metrics_family, d->st.cfg.metrics_addr,
		       d->st.cfg.metrics_port, where, sizeof(where));
	/*
	 * The library's cap bounds the descriptors clients hold (at it, new
	 * clients wait in the listen queue), and it closes a connection idle
	 * for the timeout (whole seconds only, rounded up). Who goes at the
	 * cap, and the time for a whole request: metrics_clients.c. One
	 * address gets a quarter of the cap.
	 */
	per_ip = d->metrics_clients_max / 4 ? d->metrics_clients_max / 4 : 1;
	idle_s = (d->st.cfg.client_idle_ms + 999) / 1000;
	mclients_init(&ms->clients, d, d->metrics_clients_max, per_ip);
	ms->mhd = MHD_start_daemon(
		flags, d->st.cfg.metrics_port, NULL, NULL, on_request, ms,
		MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)d->metrics_clients_max,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
		MHD_OPTION_NOTIFY_CONNECTION, mclients_notify, &ms->clients,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, ms, MHD_OPTION_END);
	if (!ms->mhd) {
		rs_err("metrics: cannot listen on %s", where);
		free(ms);
		return -EADDRNOTAVAIL;
	}
	info = MHD_get_daemon_info(ms->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	ev_io_init(&ms->io, on_mhd_io, info->epoll_fd, EV_READ);
	ms->io.data = ms;
	ev_io_start(d->loop, &ms->io);
	ev_timer_init(&ms->timer, on_mhd_timer, 0., 0.);
	ms->timer.data = ms;
	d->metrics = ms;
	ms->clients_max = d->metrics_clients_max;
	rs_info("metrics on http://%s/metrics (up to %u clients, %u per "
		"address)",
		where, ms->clients_max, per_ip);
	return 0;
}

void metrics_stop(struct daemon *d)
{
	struct metrics_server *ms = d->metrics;

	if (!ms)
		return;
	ev_io_stop(d->loop, &ms->io);
	ev_timer_stop(d->loop, &ms->timer);
	MHD_stop_daemon(ms->mhd);
	mclients_stop(&ms->clients);
	if (ms->body)
		MHD_destroy_response(ms->body);
	free(ms);
	d->metrics = NULL;
}

unsigned int metrics_clients(const struct daemon *d)
{
	const struct metrics_server *ms = d->metrics;
	const union MHD_DaemonInfo *info;

	if (!ms)
		return 0;
	info = MHD_get_daemon_info(ms->mhd,
				   MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return info ? info->num_connections : 0;
}

uint32_t metrics_clients_max(const struct daemon *d)
{
	const struct metrics_server *ms = d->metrics;

	return ms ? ms->clients_max : 0;
}

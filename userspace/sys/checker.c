// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "checker.h"
#include "log.h"

/* ---- libcurl multi driven by libev ---- */

struct curl_sock {
	ev_io io;
	struct rs_checker *checker;
};

static void check_multi_done(struct rs_checker *c);

static void on_curl_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct curl_sock *cs = (struct curl_sock *)w;
	/* The action may free @cs (CURL_POLL_REMOVE): keep what we need. */
	struct rs_checker *c = cs->checker;
	int running, action = 0;

	(void)loop;
	if (revents & EV_READ)
		action |= CURL_CSELECT_IN;
	if (revents & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	curl_multi_socket_action(c->multi, w->fd, action, &running);
	check_multi_done(c);
}

static int curl_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp,
			  void *socketp)
{
	struct rs_checker *c = userp;
	struct curl_sock *cs = socketp;
	int events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (cs) {
			ev_io_stop(c->loop, &cs->io);
			free(cs);
			curl_multi_assign(c->multi, s, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EV_READ;
	if (what & CURL_POLL_OUT)
		events |= EV_WRITE;
	if (!cs) {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return -1;
		cs->checker = c;
		curl_multi_assign(c->multi, s, cs);
	} else {
		ev_io_stop(c->loop, &cs->io);
	}
	ev_io_init(&cs->io, on_curl_io, s, events);
	ev_io_start(c->loop, &cs->io);
	return 0;
}

static void on_curl_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rs_checker *c = w->data;
	int running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_multi_done(c);
}

static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct rs_checker *c = userp;

	(void)multi;
	ev_timer_stop(c->loop, &c->curl_timer);
	if (timeout_ms >= 0) {
		ev_timer_set(&c->curl_timer, timeout_ms / 1000.0, 0.);
		ev_timer_start(c->loop, &c->curl_timer);
	}
	return 0;
}

int checker_init(struct rs_checker *c, struct ev_loop *loop)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -EIO;
	c->multi = curl_multi_init();
	if (!c->multi)
		return -ENOMEM;
	ev_timer_init(&c->curl_timer, on_curl_timer, 0., 0.);
	c->curl_timer.data = c;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	return 0;
}

void checker_fini(struct rs_checker *c)
{
	if (!c->multi)
		return;
	ev_timer_stop(c->loop, &c->curl_timer);
	curl_multi_cleanup(c->multi);
	c->multi = NULL;
	curl_global_cleanup();
}

/* ---- one check ---- */

static double elapsed_ms(struct rs_check *chk)
{
	return (ev_now(chk->checker->loop) - chk->started) * 1000.0;
}

static void report(struct rs_check *chk, bool ok, const char *reason)
{
	chk->inflight = false;
	chk->on_result(chk->arg, ok, reason, elapsed_ms(chk));
}

static const char *errno_reason(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return "refused";
	case ETIMEDOUT:
		return "timeout";
	case ENETUNREACH:
	case EHOSTUNREACH:
		return "unreachable";
	case ECONNRESET:
		return "reset";
	default:
		return strerror(err);
	}
}

static void tcp_finish(struct rs_check *chk, bool ok, const char *reason)
{
	struct ev_loop *loop = chk->checker->loop;

	ev_io_stop(loop, &chk->io);
	ev_timer_stop(loop, &chk->timeout);
	if (chk->fd >= 0)
		close(chk->fd);
	chk->fd = -1;
	report(chk, ok, reason);
}

static void on_tcp_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rs_check *chk = w->data;
	socklen_t len = sizeof(int);
	int err = 0;

	(void)loop;
	(void)revents;
	if (getsockopt(chk->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	tcp_finish(chk, err == 0, err ? errno_reason(err) : NULL);
}

static void on_tcp_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	tcp_finish(w->data, false, "timeout");
}

static socklen_t check_sockaddr(const struct rs_check *chk,
				struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (chk->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(chk->port);
		memcpy(&in->sin_addr, chk->addr, 4);
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(chk->port);
	memcpy(&in6->sin6_addr, chk->addr, 16);
	return sizeof(*in6);
}

static void tcp_probe(struct rs_check *chk)
{
	struct ev_loop *loop = chk->checker->loop;
	struct sockaddr_storage ss;
	socklen_t len = check_sockaddr(chk, &ss);

	chk->fd = socket(chk->family,
			 SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (chk->fd < 0) {
		report(chk, false, errno_reason(errno));
		return;
	}
	if (connect(chk->fd, (struct sockaddr *)&ss, len) &&
	    errno != EINPROGRESS) {
		tcp_finish(chk, false, errno_reason(errno));
		return;
	}
	ev_io_init(&chk->io, on_tcp_io, chk->fd, EV_WRITE);
	chk->io.data = chk;
	ev_io_start(loop, &chk->io);
	ev_timer_init(&chk->timeout, on_tcp_timeout,
		      chk->conf.timeout_ms / 1000.0, 0.);
	chk->timeout.data = chk;
	ev_timer_start(loop, &chk->timeout);
}

static const char *curl_reason(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return "refused";
	case CURLE_OPERATION_TIMEDOUT:
		return "timeout";
	case CURLE_GOT_NOTHING:
		return "empty reply";
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return "reset";
	default:
		return curl_easy_strerror(rc);
	}
}

static void http_done(struct rs_check *chk, CURLcode rc)
{
	char reason[64];
	long status = 0;

	curl_easy_getinfo(chk->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(chk->checker->multi, chk->easy);
	curl_easy_cleanup(chk->easy);
	chk->easy = NULL;
	if (rc != CURLE_OK) {
		report(chk, false, curl_reason(rc));
		return;
	}
	if (status >= chk->conf.expect_min && status <= chk->conf.expect_max) {
		report(chk, true, NULL);
		return;
	}
	snprintf(reason, sizeof(reason), "status %ld", status);
	report(chk, false, reason);
}

static void check_multi_done(struct rs_checker *c)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(c->multi, &left))) {
		struct rs_check *chk = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &chk);
		if (chk)
			http_done(chk, msg->data.result);
	}
}

/* Drains the response body: only the status matters. */
static size_t discard_body(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static void http_probe(struct rs_check *chk)
{
	CURL *e = curl_easy_init();

	if (!e) {
		report(chk, false, "out of memory");
		return;
	}
	chk->easy = e;
	curl_easy_setopt(e, CURLOPT_URL, chk->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, chk);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)chk->conf.timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* A new connection each time: the check is of the listener. */
	curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_USERAGENT, "ringsteerd-health/1");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
	if (chk->headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, chk->headers);
	/*
	 * Backends are local and addressed by IP, usually with certificates
	 * for public names: what is checked is that the service answers, as
	 * HAProxy's "check-ssl verify none" does.
	 */
	if (chk->conf.type == RS_CHECK_HTTPS) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (curl_multi_add_handle(chk->checker->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		chk->easy = NULL;
		report(chk, false, "curl multi refused the transfer");
	}
}

static void on_interval(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rs_check *chk = w->data;

	(void)revents;
	/* A probe still out (it has its own timeout) is not doubled. */
	if (chk->inflight)
		return;
	chk->inflight = true;
	chk->started = ev_now(loop);
	if (chk->conf.type == RS_CHECK_HTTP || chk->conf.type == RS_CHECK_HTTPS)
		http_probe(chk);
	else
		tcp_probe(chk);
}

static void check_target(struct rs_check *chk, uint8_t family,
			 const uint8_t addr[16])
{
	chk->family = family;
	rs_addr_connect_target(family, addr, chk->addr);
}

int check_start(struct rs_checker *c, struct rs_check *chk,
		const struct rs_health_conf *conf, uint8_t family,
		const uint8_t addr[16], uint16_t port, uint32_t first_delay_ms,
		rs_check_result_fn on_result, void *arg)
{
	char hostport[RS_ADDR_STRLEN], host[RS_CHECK_TEXT_MAX + 8];

	memset(chk, 0, sizeof(*chk));
	chk->checker = c;
	chk->conf = *conf;
	chk->port = port;
	chk->fd = -1;
	chk->on_result = on_result;
	chk->arg = arg;
	check_target(chk, family, addr);
	if (conf->type == RS_CHECK_NONE)
		return 0;
	if (conf->type == RS_CHECK_HTTP || conf->type == RS_CHECK_HTTPS) {
		rs_addr_format(chk->family, chk->addr, port, hostport,
			       sizeof(hostport));
		snprintf(chk->url, sizeof(chk->url), "%s://%s%s",
			 conf->type == RS_CHECK_HTTPS ? "https" : "http",
			 hostport, conf->path);
		if (conf->host[0]) {
			snprintf(host, sizeof(host), "Host: %s", conf->host);
			chk->headers = curl_slist_append(NULL, host);
			if (!chk->headers)
				return -ENOMEM;
		}
	}
	ev_timer_init(&chk->interval, on_interval, first_delay_ms / 1000.0,
		      conf->interval_ms / 1000.0);
	chk->interval.data = chk;
	ev_timer_start(c->loop, &chk->interval);
	chk->running = true;
	return 0;
}

void check_stop(struct rs_check *chk)
{
	struct ev_loop *loop;

	if (!chk->checker)
		return;
	loop = chk->checker->loop;
	ev_timer_stop(loop, &chk->interval);
	ev_timer_stop(loop, &chk->timeout);
	ev_io_stop(loop, &chk->io);
	if (chk->fd >= 0)
		close(chk->fd);
	chk->fd = -1;
	if (chk->easy) {
		curl_multi_remove_handle(chk->checker->multi, chk->easy);
		curl_easy_cleanup(chk->easy);
		chk->easy = NULL;
	}
	curl_slist_free_all(chk->headers);
	chk->headers = NULL;
	chk->running = false;
	chk->inflight = false;
}

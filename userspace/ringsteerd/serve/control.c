// SPDX-License-Identifier: MIT
/*
 * Control socket server, in the daemon's event loop. Each connection sends
 * one JSON object (terminated by a newline or by closing its write side),
 * gets one JSON object back and is closed. At most control_clients_max
 * clients at once (the longest idle makes room for a new one), each
 * dropped if its whole request takes over client_idle_timeout, or its
 * reply makes no progress for as long: idle or dribbling clients cannot
 * take the descriptors the health checks need.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "control_cmds.h"
#include "guard.h"
#include "log.h"

/* After EMFILE/ENFILE on accept: the listener rests this long. */
#define ACCEPT_BACKOFF 0.1
/* At most one "clients dropped at the cap" warning per this many seconds. */
#define DROP_WARN_INTERVAL 60.0

struct control_client;

struct control_server {
	struct daemon *d;
	int fd;
	ev_io accept_io;
	ev_timer backoff;
	bool accept_failing; /* logged; cleared by the next accept */
	/* Least recently active first: the first to go at the cap. */
	struct control_client *lru_head, *lru_tail;
	uint64_t dropped; /* at the cap, since the last warning */
	uint64_t next_ticket;
	struct control_client *current; /* whose request is being handled */
	ev_tstamp drop_warned;
	ino_t ino; /* of the socket file we bound: only that one is removed */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/*
 * A client reads one request into buf, then gets its reply from out,
 * written as the socket takes it: a reply of any size arrives whole
 * without blocking the loop.
 */
struct control_client {
	struct control_server *srv;
	struct control_client *prev, *next;
	int fd;
	ev_io io;
	ev_timer idle; /* restarted by every byte read or written */
	char *out;     /* the reply, NULL while reading */
	size_t out_len, out_off;
	size_t len;
	bool oversized;
	uint64_t
		ticket; /* nonzero while its reply is being made off the loop */
	char buf[RS_CONTROL_MAX_REQUEST + 1];
};

static void lru_unlink(struct control_client *c)
{
	struct control_server *srv = c->srv;

	if (c->prev)
		c->prev->next = c->next;
	else
		srv->lru_head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		srv->lru_tail = c->prev;
	c->prev = c->next = NULL;
}

static void lru_append(struct control_client *c)
{
	struct control_server *srv = c->srv;

	c->prev = srv->lru_tail;
	c->next = NULL;
	if (srv->lru_tail)
		srv->lru_tail->next = c;
	else
		srv->lru_head = c;
	srv->lru_tail = c;
}

/* @c is in the list: it is appended once accepted, unlinked when closed. */
static void client_active(struct control_client *c)
{
	lru_unlink(c);
	lru_append(c);
}

/* Accepted, or its reply moved on: client_idle_timeout from now. */
static void client_touch(struct control_client *c)
{
	struct daemon *d = c->srv->d;

	c->idle.repeat = d->st.cfg.client_idle_ms / 1000.0;
	ev_timer_again(d->loop, &c->idle);
	client_active(c);
}

static void client_close(struct control_client *c)
{
	struct control_server *srv = c->srv;
	struct daemon *d = srv->d;

	ev_io_stop(d->loop, &c->io);
	ev_timer_stop(d->loop, &c->idle);
	lru_unlink(c);
	d->control_open--;
	close(c->fd);
	free(c->out);
	free(c);
	/* The reply to "detach" is out (or its reader gone): now stop. */
	if (d->detach_requested)
		ev_break(d->loop, EVBREAK_ALL);
}

/* One try, for short error replies to clients that are let go at once. */
static void send_once(int fd, json_t *reply)
{
	char *text = json_dumps(reply, JSON_COMPACT);

	json_decref(reply);
	if (!text)
		return;
	if (send(fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
		send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(text);
}

/* Write what the socket takes; close when all is out or the peer is gone. */
static void client_flush(struct control_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
		client_touch(c);
	}
	client_close(c);
}

static void on_client_write(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	client_flush(w->data);
}

static void client_queue_reply(struct control_client *c, json_t *reply)
{
	struct ev_loop *loop = c->srv->d->loop;
	char *text = json_dumps(reply, JSON_COMPACT);
	size_t len = text ? strlen(text) : 0;
	char *out = text ? realloc(text, len + 2) : NULL;

	json_decref(reply);
	if (!out) {
		rs_err("control: out of memory for a reply of %zu bytes", len);
		free(text);
		client_close(c);
		return;
	}
	out[len] = '\n';
	out[len + 1] = '\0';
	c->out = out;
	c->out_len = len + 1;
	ev_io_stop(loop, &c->io);
	ev_io_set(&c->io, c->fd, EV_WRITE);
	c->io.cb = on_client_write;
	ev_io_start(loop, &c->io);
	client_flush(c);
}

static void client_finish(struct control_client *c)
{
	struct daemon *d = c->srv->d;
	json_error_t jerr;
	json_t *req, *reply;

	if (c->oversized) {
		reply = err_reply("request larger than %d bytes",
				  RS_CONTROL_MAX_REQUEST);
	} else {
		c->buf[c->len] = '\0';
		req = json_loads(c->buf, JSON_REJECT_DUPLICATES, &jerr);
		if (!req) {
			reply = err_reply("malformed request: %s (at %d:%d)",
					  jerr.text, jerr.line, jerr.column);
		} else {
			c->srv->current = c;
			reply = control_handle(d, req);
			c->srv->current = NULL;
			json_decref(req);
		}
	}
	/* Deferred: control_reply_later() answers (or the client goes). */
	if (!reply && c->ticket) {
		ev_io_stop(d->loop, &c->io);
		return;
	}
	c->ticket = 0;
	if (!reply)
		reply = err_reply("internal error: no reply");
	client_queue_reply(c, reply);
}

uint64_t control_defer(struct daemon *d)
{
	struct control_server *srv = d->control;

	if (!srv || !srv->current)
		return 0;
	srv->current->ticket = ++srv->next_ticket;
	return srv->current->ticket;
}

void control_reply_later(struct daemon *d, uint64_t ticket, json_t *reply)
{
	struct control_server *srv = d->control;
	struct control_client *c;

	for (c = srv ? srv->lru_head : NULL; c; c = c->next)
		if (c->ticket == ticket && ticket)
			break;
	if (!c) {
		/* Gone meanwhile (idle timeout, dropped at the cap). */
		json_decref(reply);
		return;
	}
	c->ticket = 0;
	client_queue_reply(c, reply);
}

static void on_client_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control_client *c = w->data;
	char *nl;
	ssize_t n;

	(void)loop;
	(void)revents;
	if (c->len == RS_CONTROL_MAX_REQUEST) {
		char sink[4096];

		/* Keep reading to the end so the reply is not a reset. */
		c->oversized = true;
		n = recv(c->fd, sink, sizeof(sink), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n > 0)
			client_active(c);
		if (n > 0 && !memchr(sink, '\n', (size_t)n))
			return;
		client_finish(c);
		return;
	}
	n = recv(c->fd, c->buf + c->len, RS_CONTROL_MAX_REQUEST - c->len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (c->len == 0 && n == 0) {
			client_close(c);
			return;
		}
		client_finish(c);
		return;
	}
	/*
	 * Not a new deadline: a byte every few seconds must not hold the
	 * connection for ever.
	 */
	client_active(c);
	nl = memchr(c->buf + c->len, '\n', (size_t)n);
	c->len += (size_t)n;
	if (nl)
		client_finish(c);
}

static void on_client_idle(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct control_client *c = w->data;

	(void)loop;
	(void)revents;
	if (!c->out && c->len)
		send_once(c->fd,
			  err_reply("request not complete within %.1fs",
				    c->srv->d->st.cfg.client_idle_ms / 1000.0));
	rs_debug("control: dropped a client idle for %.1fs",
		 c->srv->d->st.cfg.client_idle_ms / 1000.0);
	client_close(c);
}

static bool peer_is_root(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	return cred.uid == 0;
}

/* The cap is reached: the client that did nothing for longest goes. */
static void drop_oldest(struct control_server *srv)
{
	ev_tstamp now = ev_now(srv->d->loop);

	client_close(srv->lru_head);
	srv->dropped++;
	if (srv->drop_warned && now - srv->drop_warned < DROP_WARN_INTERVAL)
		return;
	rs_warn("control: %u clients at once (control_clients_max); dropped "
		"the longest idle (%llu so far)",
		srv->d->control_clients_max, (unsigned long long)srv->dropped);
	srv->drop_warned = now;
	srv->dropped = 0;
}

static void on_backoff(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct control_server *srv = w->data;

	(void)revents;
	ev_io_start(loop, &srv->accept_io);
}

/*
 * Out of descriptors, the listener stays readable: polling it again at
 * once would spin. It rests briefly; the clients already in keep running.
 */
static void accept_failed(struct control_server *srv, int err)
{
	struct ev_loop *loop = srv->d->loop;

	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return;
	if (!srv->accept_failing)
		rs_warn("control: accept: %s; pausing new clients for %.1fs",
			strerror(err), ACCEPT_BACKOFF);
	srv->accept_failing = true;
	ev_io_stop(loop, &srv->accept_io);
	ev_timer_set(&srv->backoff, ACCEPT_BACKOFF, 0.);
	ev_timer_start(loop, &srv->backoff);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control_server *srv = w->data;
	struct control_client *c;
	int fd;

	(void)revents;
	fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		accept_failed(srv, errno);
		return;
	}
	srv->accept_failing = false;
	if (!peer_is_root(fd)) {
		rs_warn("control: refused a request from a non-root peer");
		send_once(fd, err_reply("permission denied: root only"));
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	if (srv->d->control_open >= srv->d->control_clients_max &&
	    srv->lru_head)
		drop_oldest(srv);
	c->srv = srv;
	c->fd = fd;
	srv->d->control_open++;
	ev_io_init(&c->io, on_client_read, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_init(&c->idle, on_client_idle);
	c->idle.data = c;
	lru_append(c);
	client_touch(c);
}

static int mkdir_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int control_start(struct daemon *d)
{
	struct control_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int err;

	if (!srv)
		return -ENOMEM;
	srv->d = d;
	/* The parser refuses paths longer than sun_path. */
	memcpy(srv->path, d->st.cfg.control_socket, sizeof(srv->path) - 1);
	memcpy(sa.sun_path, srv->path, sizeof(sa.sun_path));
	err = mkdir_parent(srv->path);
	srv->fd =
		socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (err || srv->fd < 0) {
		err = err ? err : -errno;
		goto fail;
	}
	/* A stale socket from a previous run would make bind() fail. */
	err = control_path_claim(srv->path);
	if (err)
		goto fail;
	if (bind(srv->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto fail;
	}
	srv->ino = control_path_ino(srv->path);
	if (chmod(srv->path, 0600) || listen(srv->fd, 64)) {
		err = -errno;
		goto fail;
	}
	ev_io_init(&srv->accept_io, on_accept, srv->fd, EV_READ);
	srv->accept_io.data = srv;
	ev_timer_init(&srv->backoff, on_backoff, ACCEPT_BACKOFF, 0.);
	srv->backoff.data = srv;
	ev_io_start(d->loop, &srv->accept_io);
	d->control = srv;
	rs_info("control socket %s", srv->path);
	return 0;
fail:
	rs_err("control: cannot listen on %s: %s", srv->path, strerror(-err));
	if (srv->fd >= 0)
		close(srv->fd);
	control_path_release(srv->path, srv->ino);
	free(srv);
	return err;
}

void control_stop(struct daemon *d)
{
	struct control_server *srv = d->control;

	if (!srv)
		return;
	ev_io_stop(d->loop, &srv->accept_io);
	ev_timer_stop(d->loop, &srv->backoff);
	/* Not a detach: the loop has already left. */
	while (srv->lru_head)
		client_close(srv->lru_head);
	close(srv->fd);
	control_path_release(srv->path, srv->ino);
	free(srv);
	d->control = NULL;
}

json_t *control_handle(struct daemon *d, json_t *req)
{
	const char *cmd;

	if (!json_is_object(req))
		return err_reply("a request is a JSON object");
	cmd = json_string_value(json_object_get(req, "cmd"));
	if (!cmd)
		return err_reply("missing \"cmd\"");
	rs_debug("control: %s request", cmd);
	return control_dispatch(d, cmd, req);
}

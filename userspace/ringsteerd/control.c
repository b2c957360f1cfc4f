// SPDX-License-Identifier: MIT
/*
 * Control socket server, in the daemon's event loop. Each connection sends
 * one JSON object (terminated by a newline or by closing its write side),
 * gets one JSON object back and is closed.
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

#define CLIENT_TIMEOUT 5.0

struct control_server {
	struct daemon *d;
	int fd;
	ev_io accept_io;
	ino_t ino; /* of the socket file we bound: only that one is removed */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct control_client {
	struct control_server *srv;
	int fd;
	ev_io io;
	ev_timer timeout;
	size_t len;
	bool oversized;
	char buf[RS_CONTROL_MAX_REQUEST + 1];
};

static void client_close(struct control_client *c)
{
	struct ev_loop *loop = c->srv->d->loop;

	ev_io_stop(loop, &c->io);
	ev_timer_stop(loop, &c->timeout);
	close(c->fd);
	free(c);
}

/* Replies are small; a blocking write with a send timeout is enough. */
static void client_reply(struct control_client *c, json_t *reply)
{
	char *text = json_dumps(reply, JSON_COMPACT);
	size_t off = 0, len;

	json_decref(reply);
	if (!text)
		return;
	len = strlen(text);
	text[len] = '\0';
	while (off < len) {
		ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	send(c->fd, "\n", 1, MSG_NOSIGNAL);
	free(text);
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
			reply = control_handle(d, req);
			json_decref(req);
		}
	}
	client_reply(c, reply);
	client_close(c);
	if (d->detach_requested)
		ev_break(d->loop, EVBREAK_ALL);
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
	nl = memchr(c->buf + c->len, '\n', (size_t)n);
	c->len += (size_t)n;
	if (nl)
		client_finish(c);
}

static void on_client_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct control_client *c = w->data;

	(void)loop;
	(void)revents;
	client_reply(c, err_reply("request not complete within %.0fs",
				  CLIENT_TIMEOUT));
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

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct control_server *srv = w->data;
	struct control_client *c;
	int fd;

	(void)revents;
	fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = srv;
	c->fd = fd;
	if (!peer_is_root(fd)) {
		rs_warn("control: refused a request from a non-root peer");
		client_reply(c, err_reply("permission denied: root only"));
		close(fd);
		free(c);
		return;
	}
	ev_io_init(&c->io, on_client_read, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_timer_init(&c->timeout, on_client_timeout, CLIENT_TIMEOUT, 0.);
	c->timeout.data = c;
	ev_timer_start(loop, &c->timeout);
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
	memcpy(srv->path, d->cfg.control_socket, sizeof(srv->path) - 1);
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
	return control_dispatch(d, cmd, req);
}

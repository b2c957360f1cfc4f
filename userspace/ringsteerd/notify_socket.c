// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <ev.h>

#include "log.h"
#include "notify_socket.h"

/*
 * Enough for every reload of a burst to keep its RELOADING=1/READY=1 pair
 * while the manager is busy for a few seconds; beyond it a manager that
 * does not read at all loses the newest messages (logged).
 */
#define QUEUE_MAX 64

/* One manager per process, as one NOTIFY_SOCKET per environment. */
static struct {
	int fd;		 /* connected, non-blocking; -1 when not */
	bool off;	 /* NOTIFY_SOCKET unset or unusable: say nothing */
	bool warned;	 /* the socket's trouble is logged once */
	bool overflowed; /* the queue's overflow is logged once per episode */
	char *queue[QUEUE_MAX];
	size_t head, n;
	ev_io io;
} ns = {.fd = -1};

static void warn_once(const char *what, int err)
{
	if (ns.warned)
		return;
	ns.warned = true;
	rs_warn("systemd notify: %s %s: %s; not telling systemd until it "
		"can be reached",
		what, getenv("NOTIFY_SOCKET"), strerror(err));
}

/* 0 with ns.fd connected; -1 when the socket is unset or unreachable. */
static int notify_connect(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (ns.fd >= 0)
		return 0;
	if (ns.off)
		return -1;
	if (!path || !*path) {
		ns.off = true;
		return -1;
	}
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len < 2 ||
	    len >= sizeof(sa.sun_path)) {
		ns.off = true;
		rs_warn("systemd notify: NOTIFY_SOCKET=%s is not a unix socket "
			"path; not telling systemd",
			path);
		return -1;
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		warn_once("socket for", errno);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				len))) {
		warn_once("cannot connect to", errno);
		close(fd);
		return -1;
	}
	ns.fd = fd;
	return 0;
}

/* 1 sent, 0 the socket is full (try later), -1 lost (socket closed). */
static int send_one(const char *msg)
{
	if (send(ns.fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) {
		ns.warned = false;
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	/* The manager's socket went away: reconnect at the next message. */
	warn_once("cannot send to", errno);
	close(ns.fd);
	ns.fd = -1;
	return -1;
}

static void queue_drop_all(void)
{
	for (; ns.n; ns.n--, ns.head = (ns.head + 1) % QUEUE_MAX)
		free(ns.queue[ns.head]);
	ns.head = 0;
}

/* Send what is queued, in order, as far as the socket takes it. */
static void queue_drain(void)
{
	while (ns.n) {
		int r = send_one(ns.queue[ns.head]);

		if (!r)
			return;
		if (r < 0) {
			queue_drop_all();
			break;
		}
		free(ns.queue[ns.head]);
		ns.head = (ns.head + 1) % QUEUE_MAX;
		ns.n--;
	}
	if (ns.overflowed)
		rs_info("systemd notify: the manager reads again");
	ns.overflowed = false;
	ev_io_stop(EV_DEFAULT, &ns.io);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	if (ns.fd < 0) {
		queue_drop_all();
		ev_io_stop(EV_DEFAULT, &ns.io);
		return;
	}
	queue_drain();
}

static void queue_push(const char *msg)
{
	char *copy;

	/* A watchdog ping already waiting says all another would. */
	if (!strcmp(msg, "WATCHDOG=1"))
		for (size_t i = 0; i < ns.n; i++)
			if (!strcmp(ns.queue[(ns.head + i) % QUEUE_MAX], msg))
				return;
	if (ns.n == QUEUE_MAX) {
		if (!ns.overflowed)
			rs_warn("systemd notify: the manager has not read the "
				"last %d messages; dropping new ones until it "
				"does",
				QUEUE_MAX);
		ns.overflowed = true;
		return;
	}
	copy = strdup(msg);
	if (!copy)
		return;
	ns.queue[(ns.head + ns.n) % QUEUE_MAX] = copy;
	if (!ns.n++) {
		ev_io_init(&ns.io, on_writable, ns.fd, EV_WRITE);
		ev_io_start(EV_DEFAULT, &ns.io);
	}
}

void notify_socket_send(const char *msg)
{
	if (notify_connect())
		return;
	if (!ns.n && send_one(msg))
		return;
	if (ns.fd >= 0)
		queue_push(msg);
}

unsigned int notify_socket_queued(void)
{
	return (unsigned int)ns.n;
}

void notify_socket_flush(double timeout_s)
{
	double left = timeout_s;

	while (ns.n && ns.fd >= 0 && left > 0) {
		struct pollfd p = {.fd = ns.fd, .events = POLLOUT};

		if (poll(&p, 1, 50) < 0 && errno != EINTR)
			break;
		left -= 0.05;
		queue_drain();
	}
	if (ns.n)
		rs_warn("systemd notify: %zu messages never read", ns.n);
	queue_drop_all();
	ev_io_stop(EV_DEFAULT, &ns.io);
}

// SPDX-License-Identifier: MIT
/*
 * bench_backend: the backend of the connection-rate benchmark.
 *
 *   bench_backend --name NAME --tcp ADDR:PORT [--tcp ADDR:PORT]...
 *
 * One thread, epoll. Every connection sends one small request line; the
 * backend reads it, answers "NAME\n" and closes. Reading the request before
 * closing matters: closing a socket with unread data sends a RST, which
 * the client could see before the reply (rs_backend, which answers at
 * accept, has that race; it does not matter for its tests). "ready" on
 * stdout once every socket listens. SIGTERM/SIGINT end it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tool_net.h"

#define MAX_LISTENERS 16
#define BACKLOG	      4096
#define BURST	      128
#define EV_SIGNAL     UINT64_MAX
#define EV_LISTENER   (1ull << 62) /* | listener index */

static const char *g_name;
static char g_reply[80];
static size_t g_reply_len;
static int g_lfd[MAX_LISTENERS];
static const char *g_spec[MAX_LISTENERS];
static int g_nl;

static int open_listener(const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd;

	if (g_nl == MAX_LISTENERS || tool_parse_hostport(spec, &ss, &len)) {
		fprintf(stderr, "bench_backend: bad --tcp '%s'\n", spec);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		goto err;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    tool_set_freebind(fd, ss.ss_family) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, BACKLOG))
		goto err;
	g_spec[g_nl] = spec;
	g_lfd[g_nl++] = fd;
	return 0;
err:
	fprintf(stderr, "bench_backend: listen on %s: %s\n", spec,
		strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * Returns true when the connection is finished (answered, or gone) and
 * was closed; false when the request has not arrived yet.
 */
static bool serve(int fd)
{
	char buf[512];
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0) {
			if (!memchr(buf, '\n', n))
				continue; /* more of the line to come */
			send(fd, g_reply, g_reply_len, MSG_NOSIGNAL);
			break;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		break; /* EOF or error: nothing to answer */
	}
	close(fd);
	return true;
}

static void accept_burst(int ep, int lfd, const char *spec)
{
	for (int i = 0; i < BURST; i++) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				fprintf(stderr,
					"bench_backend: accept %s: %s\n", spec,
					strerror(errno));
			return;
		}
		/* Usually the request is there already: no epoll at all. */
		if (serve(fd))
			continue;
		ev.data.u64 = (uint64_t)fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			close(fd);
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"name", required_argument, NULL, 'n'},
		{"tcp", required_argument, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	struct epoll_event evs[256];
	sigset_t set;
	int c, ep, sfd;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'n')
			g_name = optarg;
		else if (c != 't' || open_listener(optarg))
			return 2;
	}
	if (!g_name || !g_nl || optind != argc) {
		fprintf(stderr, "usage: bench_backend --name NAME "
				"--tcp ADDR:PORT...\n");
		return 2;
	}
	g_reply_len = snprintf(g_reply, sizeof(g_reply), "%.64s\n", g_name);
	tool_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0) {
		perror("bench_backend");
		return 1;
	}
	evs[0] = (struct epoll_event){.events = EPOLLIN, .data.u64 = EV_SIGNAL};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &evs[0]))
		return 1;
	for (int i = 0; i < g_nl; i++) {
		evs[0] = (struct epoll_event){.events = EPOLLIN,
					      .data.u64 = EV_LISTENER | i};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, g_lfd[i], &evs[0]))
			return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);

		if (n < 0 && errno != EINTR) {
			perror("bench_backend: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;

			if (d == EV_SIGNAL)
				return 0;
			if (d & EV_LISTENER) {
				int l = (int)(d & ~EV_LISTENER);

				accept_burst(ep, g_lfd[l], g_spec[l]);
				continue;
			}
			/* close() also removes it from the epoll set. */
			serve((int)d);
		}
	}
}

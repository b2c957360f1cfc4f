// SPDX-License-Identifier: MIT
/*
 * bench_backend: the backend of the connection-rate benchmark.
 *
 *   bench_backend --name NAME [--tcp ADDR:PORT]... [--udp ADDR:PORT]...
 *
 * One thread, epoll. Every connection sends one small request line; the
 * backend reads it, answers "NAME\n" and closes. Reading the request before
 * closing matters: closing a socket with unread data sends a RST, which
 * the client could see before the reply (rs_backend, which answers at
 * accept, has that race; it does not matter for its tests). A --udp
 * socket sends every datagram back to its sender as it came (the
 * datagram benchmark's client matches replies by their bytes), a batch
 * per recvmmsg/sendmmsg, as a busy DNS or QUIC server would, and from the
 * address it was sent to (IP_PKTINFO, as DNS servers do): a steered
 * datagram was sent to the service's address, and the client's connected
 * socket takes replies from there only. "ready" on
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
#define EV_UDP	      (1ull << 61) /* | listener index */
#define UDP_BATCH     64
#define UDP_MAX	      1500

static const char *g_name;
static char g_reply[80];
static size_t g_reply_len;
static int g_lfd[MAX_LISTENERS];
static const char *g_spec[MAX_LISTENERS];
static bool g_udp[MAX_LISTENERS];
static int g_nl;

static int open_listener(const char *spec, bool udp)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd;

	if (g_nl == MAX_LISTENERS || tool_parse_hostport(spec, &ss, &len)) {
		fprintf(stderr, "bench_backend: bad address '%s'\n", spec);
		return -1;
	}
	fd = socket(ss.ss_family,
		    (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK |
			    SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		goto err;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    tool_set_freebind(fd, ss.ss_family) ||
	    bind(fd, (struct sockaddr *)&ss, len) ||
	    (!udp && listen(fd, BACKLOG)) ||
	    (udp && ss.ss_family == AF_INET &&
	     setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one))) ||
	    (udp && ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))))
		goto err;
	g_udp[g_nl] = udp;
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

/*
 * The reply's source: the destination the datagram came to. A received
 * IP_PKTINFO names it in ipi_addr; sent, ipi_spec_dst sets the source.
 */
static void reply_from(struct msghdr *h)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(h);

	if (c && c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
		struct in_pktinfo pi;

		memcpy(&pi, CMSG_DATA(c), sizeof(pi));
		pi.ipi_spec_dst = pi.ipi_addr;
		pi.ipi_ifindex = 0;
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	}
	if (!c)
		h->msg_controllen = 0;
}

/* Every datagram waiting on @fd back to its sender, a batch at a time. */
static void echo_burst(int fd)
{
	static char buf[UDP_BATCH][UDP_MAX];
	static char ctl[UDP_BATCH][64] __attribute__((aligned(8)));
	static struct sockaddr_storage peer[UDP_BATCH];
	static struct iovec iov[UDP_BATCH];
	static struct mmsghdr msg[UDP_BATCH];

	for (int round = 0; round < 4; round++) {
		int n, sent = 0;

		for (int i = 0; i < UDP_BATCH; i++) {
			iov[i] = (struct iovec){buf[i], UDP_MAX};
			msg[i].msg_hdr = (struct msghdr){
				.msg_name = &peer[i],
				.msg_namelen = sizeof(peer[i]),
				.msg_iov = &iov[i],
				.msg_iovlen = 1,
				.msg_control = ctl[i],
				.msg_controllen = sizeof(ctl[i])};
		}
		n = recvmmsg(fd, msg, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			iov[i].iov_len = msg[i].msg_len;
			reply_from(&msg[i].msg_hdr);
		}
		while (sent < n) {
			int k = sendmmsg(fd, msg + sent, n - sent, 0);

			if (k <= 0)
				break; /* a full queue loses the rest */
			sent += k;
		}
		if (n < UDP_BATCH)
			return;
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"name", required_argument, NULL, 'n'},
		{"tcp", required_argument, NULL, 't'},
		{"udp", required_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	struct epoll_event evs[256];
	sigset_t set;
	int c, ep, sfd;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'n')
			g_name = optarg;
		else if ((c != 't' && c != 'u') ||
			 open_listener(optarg, c == 'u'))
			return 2;
	}
	if (!g_name || !g_nl || optind != argc) {
		fprintf(stderr, "usage: bench_backend --name NAME "
				"[--tcp ADDR:PORT]... [--udp ADDR:PORT]...\n");
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
		evs[0] = (struct epoll_event){
			.events = EPOLLIN,
			.data.u64 = (g_udp[i] ? EV_UDP : EV_LISTENER) | i};
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
			if (d & EV_UDP) {
				echo_burst(g_lfd[d & ~EV_UDP]);
				continue;
			}
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

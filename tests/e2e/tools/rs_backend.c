// SPDX-License-Identifier: MIT
/*
 * rs_backend: a minimal backend for the end-to-end tests and the demo.
 *
 *   rs_backend --name NAME [--tcp ADDR:PORT]... [--udp ADDR:PORT]...
 *              [--pidfile FILE]
 *
 * Every TCP connection gets "NAME <peer-ip>\n" and is closed; every UDP
 * datagram is answered with the same line. The line tells the test which
 * backend the steering program picked and which client address the
 * backend saw. "ready\n" on stdout means every socket is listening.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tool_net.h"

#define MAX_LISTENERS  64
#define LISTEN_BACKLOG 4096
#define NAME_MAX_LEN   64
/* Bounded so one busy socket cannot starve the others. */
#define BURST	  256
#define REPLY_MAX (NAME_MAX_LEN + INET6_ADDRSTRLEN + 4)

struct listener {
	int fd;
	int type; /* SOCK_STREAM or SOCK_DGRAM */
	int family;
	uint16_t port; /* bound port, network byte order */
	const char *spec;
};

static const char *g_name;
static struct listener g_listeners[MAX_LISTENERS];
static int g_nlisteners;

static void usage(FILE *f)
{
	fprintf(f, "usage: rs_backend --name NAME [--tcp ADDR:PORT]... "
		   "[--udp ADDR:PORT]... [--pidfile FILE]\n"
		   "  ADDR is an IPv4 address or [IPv6 address]\n");
}

/*
 * A listener spec must keep to the documented form, brackets exactly for
 * IPv6; tool_parse_hostport() alone also takes "[1.2.3.4]:80" and
 * "::1:80", which the clients allow but rs_backend never has.
 */
static int parse_listen_addr(const char *spec, struct sockaddr_storage *ss,
			     socklen_t *len)
{
	if (tool_parse_hostport(spec, ss, len))
		return -1;
	return (spec[0] == '[') == (ss->ss_family == AF_INET6) ? 0 : -1;
}

static uint16_t sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ((const struct sockaddr_in6 *)ss)->sin6_port;
	return ((const struct sockaddr_in *)ss)->sin_port;
}

/* Takes a setsockopt() result so tool_set_freebind() fails the same way. */
static int report_setopt(int rc, const char *what, const char *spec)
{
	if (rc < 0) {
		fprintf(stderr, "rs_backend: setsockopt(%s) for %s: %s\n", what,
			spec, strerror(errno));
		return -1;
	}
	return 0;
}

static int setopt_int(int fd, int level, int opt, int val, const char *what,
		      const char *spec)
{
	return report_setopt(setsockopt(fd, level, opt, &val, sizeof(val)),
			     what, spec);
}

/*
 * Service addresses are only routed locally, so every socket, listener or
 * reply socket, needs freebind to bind them (see tool_set_freebind()).
 */
static int set_bind_opts(int fd, int family, const char *spec)
{
	if (setopt_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", spec))
		return -1;
	if (family == AF_INET6 &&
	    setopt_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1, "IPV6_V6ONLY", spec))
		return -1;
	return report_setopt(
		tool_set_freebind(fd, family),
		family == AF_INET6 ? "IPV6_FREEBIND" : "IP_FREEBIND", spec);
}

/* The destination address and port are needed to reply from them. */
static int set_udp_recv_opts(int fd, int family, const char *spec)
{
	if (family == AF_INET)
		return setopt_int(fd, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO",
				  spec) ||
		       setopt_int(fd, IPPROTO_IP, IP_RECVORIGDSTADDR, 1,
				  "IP_RECVORIGDSTADDR", spec);
	return setopt_int(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1,
			  "IPV6_RECVPKTINFO", spec) ||
	       setopt_int(fd, IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, 1,
			  "IPV6_RECVORIGDSTADDR", spec);
}

static int open_listener(const char *spec, int type)
{
	const char *proto = type == SOCK_STREAM ? "tcp" : "udp";
	struct sockaddr_storage ss;
	struct listener *l;
	socklen_t len;
	int fd;

	if (g_nlisteners == MAX_LISTENERS) {
		fprintf(stderr, "rs_backend: too many sockets (max %d)\n",
			MAX_LISTENERS);
		return -1;
	}
	if (parse_listen_addr(spec, &ss, &len)) {
		fprintf(stderr, "rs_backend: bad --%s address '%s'\n", proto,
			spec);
		return -1;
	}
	fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "rs_backend: socket for %s %s: %s\n", proto,
			spec, strerror(errno));
		return -1;
	}
	if (set_bind_opts(fd, ss.ss_family, spec) ||
	    (type == SOCK_DGRAM && set_udp_recv_opts(fd, ss.ss_family, spec)))
		goto err;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		fprintf(stderr, "rs_backend: bind %s %s: %s\n", proto, spec,
			strerror(errno));
		goto err;
	}
	if (type == SOCK_STREAM && listen(fd, LISTEN_BACKLOG) < 0) {
		fprintf(stderr, "rs_backend: listen %s: %s\n", spec,
			strerror(errno));
		goto err;
	}
	l = &g_listeners[g_nlisteners++];
	l->fd = fd;
	l->type = type;
	l->family = ss.ss_family;
	l->port = sockaddr_port(&ss);
	l->spec = spec;
	return 0;
err:
	close(fd);
	return -1;
}

static int format_reply(char *buf, const struct sockaddr_storage *peer)
{
	char ip[INET6_ADDRSTRLEN];

	return snprintf(buf, REPLY_MAX, "%s %s\n", g_name,
			tool_addr_str(peer, ip, sizeof(ip)));
}

/*
 * The reply fits in any fresh socket's send buffer, so a single
 * non-blocking send either succeeds or the client is already gone; no
 * per-connection state is needed and the connection is closed at once.
 */
static void serve_tcp(struct listener *l)
{
	struct sockaddr_storage peer;
	char reply[REPLY_MAX];
	socklen_t plen;
	int i, fd, n;

	for (i = 0; i < BURST; i++) {
		plen = sizeof(peer);
		fd = accept4(l->fd, (struct sockaddr *)&peer, &plen,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "rs_backend: accept on tcp %s: %s\n",
				l->spec, strerror(errno));
			return;
		}
		n = format_reply(reply, &peer);
		if (send(fd, reply, n, MSG_NOSIGNAL) < 0 && errno != EPIPE &&
		    errno != ECONNRESET)
			fprintf(stderr, "rs_backend: send on tcp %s: %s\n",
				l->spec, strerror(errno));
		close(fd);
	}
}

/* Where a datagram was sent to, from its control messages. */
struct udp_dst {
	bool have_pktinfo;
	bool have_orig;
	struct in_pktinfo pi4;
	struct in6_pktinfo pi6;
	struct sockaddr_storage orig; /* address and port */
};

static void parse_udp_cmsgs(struct msghdr *msg, struct udp_dst *d)
{
	struct cmsghdr *c;

	memset(d, 0, sizeof(*d));
	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			memcpy(&d->pi4, CMSG_DATA(c), sizeof(d->pi4));
			d->have_pktinfo = true;
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_PKTINFO) {
			memcpy(&d->pi6, CMSG_DATA(c), sizeof(d->pi6));
			d->have_pktinfo = true;
		} else if (c->cmsg_level == IPPROTO_IP &&
			   c->cmsg_type == IP_ORIGDSTADDR) {
			memcpy(&d->orig, CMSG_DATA(c),
			       sizeof(struct sockaddr_in));
			d->have_orig = true;
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_ORIGDSTADDR) {
			memcpy(&d->orig, CMSG_DATA(c),
			       sizeof(struct sockaddr_in6));
			d->have_orig = true;
		}
	}
}

/*
 * Replies must leave from the address the client sent to (the service
 * address), not from the address the socket is bound to, or a connected
 * client socket drops them. Echo the received destination back as the
 * pktinfo source.
 */
static size_t build_pktinfo_cmsg(int family, const struct udp_dst *d,
				 char *cbuf, size_t clen)
{
	struct msghdr out = {.msg_control = cbuf, .msg_controllen = clen};
	struct cmsghdr *c;

	if (!d->have_pktinfo)
		return 0;
	memset(cbuf, 0, clen);
	c = CMSG_FIRSTHDR(&out);
	if (family == AF_INET) {
		struct in_pktinfo pi = d->pi4;

		pi.ipi_spec_dst = pi.ipi_addr;
		pi.ipi_ifindex = 0;
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		return CMSG_SPACE(sizeof(pi));
	} else {
		struct in6_pktinfo pi = d->pi6;

		/* Only link-local sources need the interface pinned. */
		if (!IN6_IS_ADDR_LINKLOCAL(&pi.ipi6_addr))
			pi.ipi6_ifindex = 0;
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		return CMSG_SPACE(sizeof(pi));
	}
}

static void report_send_error(struct listener *l,
			      const struct sockaddr_storage *peer,
			      const char *what)
{
	char ip[INET6_ADDRSTRLEN];

	fprintf(stderr, "rs_backend: %s on udp %s to %s: %s\n", what, l->spec,
		tool_addr_str(peer, ip, sizeof(ip)), strerror(errno));
}

/*
 * A steered datagram may arrive for a port other than the one this socket
 * is bound to, and pktinfo can only fix the source address. The reply then
 * goes out through a short-lived socket bound to the original destination
 * address and port. SO_REUSEADDR lets several backends do this at once.
 */
static void reply_from_orig(struct listener *l, const struct udp_dst *d,
			    const struct sockaddr_storage *peer,
			    socklen_t peer_len, const char *buf, size_t len)
{
	socklen_t olen = d->orig.ss_family == AF_INET6
				 ? sizeof(struct sockaddr_in6)
				 : sizeof(struct sockaddr_in);
	int fd;

	fd = socket(d->orig.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		report_send_error(l, peer, "reply socket");
		return;
	}
	if (set_bind_opts(fd, d->orig.ss_family, l->spec))
		goto out;
	if (bind(fd, (const struct sockaddr *)&d->orig, olen) < 0) {
		report_send_error(l, peer, "bind reply socket");
		goto out;
	}
	if (sendto(fd, buf, len, MSG_DONTWAIT, (const struct sockaddr *)peer,
		   peer_len) < 0)
		report_send_error(l, peer, "sendto");
out:
	close(fd);
}

static void serve_udp(struct listener *l)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
			 CMSG_SPACE(sizeof(struct sockaddr_in6)) + 64];
		struct cmsghdr align;
	} cin, cout;
	struct sockaddr_storage peer;
	char data[2048], reply[REPLY_MAX];
	struct udp_dst dst;
	struct iovec iov;
	struct msghdr msg;
	ssize_t n;
	int i;

	for (i = 0; i < BURST; i++) {
		iov = (struct iovec){.iov_base = data, .iov_len = sizeof(data)};
		msg = (struct msghdr){
			.msg_name = &peer,
			.msg_namelen = sizeof(peer),
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cin.buf,
			.msg_controllen = sizeof(cin.buf),
		};
		n = recvmsg(l->fd, &msg, 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			/* ICMP errors from earlier replies land here too. */
			if (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
			    errno == ENETUNREACH)
				continue;
			fprintf(stderr, "rs_backend: recvmsg on udp %s: %s\n",
				l->spec, strerror(errno));
			return;
		}
		parse_udp_cmsgs(&msg, &dst);
		n = format_reply(reply, &peer);
		if (dst.have_orig && sockaddr_port(&dst.orig) != l->port) {
			reply_from_orig(l, &dst, &peer, msg.msg_namelen, reply,
					n);
			continue;
		}
		iov.iov_base = reply;
		iov.iov_len = n;
		msg.msg_controllen = build_pktinfo_cmsg(
			l->family, &dst, cout.buf, sizeof(cout.buf));
		msg.msg_control = msg.msg_controllen ? cout.buf : NULL;
		if (sendmsg(l->fd, &msg, MSG_DONTWAIT) < 0)
			report_send_error(l, &peer, "sendmsg");
	}
}

static int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "rs_backend: open pidfile %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f)) {
		fprintf(stderr, "rs_backend: write pidfile %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* A signalfd turns SIGTERM into an ordinary epoll event: no races. */
static int setup_signals(void)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		perror("rs_backend: sigprocmask");
		return -1;
	}
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		perror("rs_backend: signalfd");
	return fd;
}

static int epoll_add(int ep, int fd, uint64_t data)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = data};

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		perror("rs_backend: epoll_ctl");
		return -1;
	}
	return 0;
}

/* Returns when a termination signal arrives; 0 on clean shutdown. */
static int event_loop(int ep, int sfd)
{
	struct epoll_event evs[64];
	int i, n;

	for (;;) {
		n = epoll_wait(ep, evs, 64, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("rs_backend: epoll_wait");
			return -1;
		}
		for (i = 0; i < n; i++) {
			struct listener *l;

			if (evs[i].data.u64 == (uint64_t)-1) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					return 0;
				continue;
			}
			l = &g_listeners[evs[i].data.u64];
			if (l->type == SOCK_STREAM)
				serve_tcp(l);
			else
				serve_udp(l);
		}
	}
}

static int parse_args(int argc, char **argv, const char **pidfile)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"tcp", required_argument, NULL, 't'},
		{"udp", required_argument, NULL, 'u'},
		{"pidfile", required_argument, NULL, 'p'},
		TOOL_OPTS_END,
	};
	int c;

	while ((c = tool_getopt(argc, argv, opts, usage)) != -1) {
		switch (c) {
		case 'n':
			g_name = optarg;
			break;
		case 't':
			if (open_listener(optarg, SOCK_STREAM))
				return -1;
			break;
		case 'u':
			if (open_listener(optarg, SOCK_DGRAM))
				return -1;
			break;
		case 'p':
			*pidfile = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc || !g_name || !g_nlisteners) {
		usage(stderr);
		return -1;
	}
	if (!*g_name || strlen(g_name) > NAME_MAX_LEN || strchr(g_name, ' ') ||
	    strchr(g_name, '\n')) {
		fprintf(stderr,
			"rs_backend: --name must be 1-%d characters "
			"without spaces\n",
			NAME_MAX_LEN);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *pidfile = NULL;
	int ep, sfd, i, rc;

	tool_raise_nofile();
	sfd = setup_signals();
	if (sfd < 0)
		return 1;
	if (parse_args(argc, argv, &pidfile))
		return 2;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("rs_backend: epoll_create1");
		return 1;
	}
	if (epoll_add(ep, sfd, (uint64_t)-1))
		return 1;
	for (i = 0; i < g_nlisteners; i++) {
		if (epoll_add(ep, g_listeners[i].fd, i))
			return 1;
		fprintf(stderr, "rs_backend: %s listening on %s %s\n", g_name,
			g_listeners[i].type == SOCK_STREAM ? "tcp" : "udp",
			g_listeners[i].spec);
	}
	if (pidfile && write_pidfile(pidfile))
		return 1;

	printf("ready\n");
	fflush(stdout);

	rc = event_loop(ep, sfd);
	for (i = 0; i < g_nlisteners; i++)
		close(g_listeners[i].fd);
	if (pidfile)
		unlink(pidfile);
	return rc ? 1 : 0;
}

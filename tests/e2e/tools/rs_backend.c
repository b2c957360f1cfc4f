// SPDX-License-Identifier: MIT
/*
 * rs_backend: a minimal backend for the end-to-end tests and the demo.
 *
 *   rs_backend --name NAME [--tcp ADDR:PORT]... [--udp ADDR:PORT]...
 *              [--http ADDR:PORT]... [--status-file FILE]
 *              [--status-pattern CODES] [--hold] [--pidfile FILE]
 *              [--reuseport] [--keepalive S]
 *
 * Every TCP connection gets "NAME <peer-ip>\n" and is closed; every UDP
 * datagram is answered with the same line. The line tells the test which
 * backend the steering program picked and which client address the
 * backend saw. "ready\n" on stdout means every socket is listening.
 *
 * With --hold a TCP connection stays open after that line and every line
 * the client sends is echoed back as "NAME line", until the client closes:
 * long-lived flows for tests of what happens to established connections.
 * --keepalive S makes the kernel probe a held connection idle for S
 * seconds and drop it when one probe goes unanswered (a client that
 * vanished): the timeout path by which a connection ends.
 *
 * An --http listener is a health check endpoint: each request gets an
 * HTTP/1.0 response with the status from --status-file or
 * --status-pattern (200 by default) and the body "NAME <code>\n". SIGUSR1
 * prints the number of requests answered so far on stderr.
 *
 * Everything runs in one epoll loop on non-blocking sockets.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool_net.h"

#define MAX_LISTENERS  64
#define LISTEN_BACKLOG 4096
#define NAME_MAX_LEN   64
/* Bounded so one busy socket cannot starve the others. */
#define BURST	  256
#define REPLY_MAX (NAME_MAX_LEN + INET6_ADDRSTRLEN + 4)

/* An HTTP request is read up to its blank line or this many bytes. */
#define HTTP_REQ_MAX 4096
/* HTTP connections without progress for this long are closed. */
#define HTTP_IDLE_MS 5000
#define MAX_PATTERN  256
/* A held connection stops reading while this much echo is unsent. */
#define OUT_HIGH   (64 * 1024)
#define READ_CHUNK 4096

/*
 * What an epoll event points at. Each of the structs below starts with
 * its kind, so the event loop can tell them apart.
 */
enum src_kind { SRC_SIGNAL, SRC_LISTENER, SRC_CONN };

struct listener {
	enum src_kind kind;
	int fd;
	int type; /* SOCK_STREAM or SOCK_DGRAM */
	int family;
	bool http;	   /* an --http listener (SOCK_STREAM) */
	uint16_t port;	   /* bound port, network byte order */
	const char *proto; /* "tcp", "udp" or "http", for messages */
	const char *spec;
};

/*
 * An open connection: a held --tcp connection or an HTTP request. Output
 * that the socket does not take at once waits in out[], and reading stops
 * while much is waiting, so a client that does not read cannot make the
 * backend buffer without bound.
 */
struct conn {
	enum src_kind kind;
	int fd;
	const struct listener *l;
	uint32_t events;    /* the current epoll interest */
	bool eof;	    /* the peer closed its side */
	bool at_line_start; /* hold: the next byte echoed needs the prefix */
	bool answered;	    /* http: the response is queued */
	bool draining; /* http: response sent, reading until the peer closes */
	char *out;
	size_t out_off, out_len, out_cap;
	char *req; /* http: the request so far */
	size_t req_len;
	/* http: on the idle list, least recently active first */
	uint64_t last_ms;
	struct conn *prev, *next;
};

static const char *g_name;
static struct listener g_listeners[MAX_LISTENERS];
static int g_nlisteners;
static bool g_hold;
static unsigned long g_keepalive; /* seconds idle before a probe, 0 = off */
static const char *g_status_file;
static int g_pattern[MAX_PATTERN];
static int g_npattern;
static unsigned long long g_http_requests;
static struct conn *g_idle_head, *g_idle_tail;
static int g_ep = -1;

static void usage(FILE *f)
{
	fputs("usage: rs_backend --name NAME [--tcp ADDR:PORT]... "
	      "[--udp ADDR:PORT]...\n"
	      "         [--http ADDR:PORT]... [--status-file FILE]\n"
	      "         [--status-pattern CODES] [--hold] [--pidfile FILE]\n"
	      "         [--reuseport]\n"
	      "  ADDR is an IPv4 address or [IPv6 address]\n"
	      "  --reuseport             SO_REUSEPORT on the listeners given\n"
	      "                          after it\n"
	      "  --http ADDR:PORT        HTTP/1.0 health endpoint: answers\n"
	      "                          \"NAME <code>\" and closes\n"
	      "  --status-file FILE      while FILE exists, its number is the\n"
	      "                          status (500 if it holds no code)\n"
	      "  --status-pattern CODES  e.g. 503,503,200: request N (from 0)\n"
	      "                          gets CODES[N mod count]\n"
	      "                          (the file wins; by default 200)\n"
	      "  --hold                  keep --tcp connections open past\n"
	      "                          the greeting, echo \"NAME line\"\n"
	      "  --keepalive S           probe held connections idle S s;\n"
	      "                          one unanswered probe drops them\n"
	      "  SIGUSR1 prints http_requests=N on stderr\n"
	      "  SIGUSR2 closes the listening sockets, keeps connections\n",
	      f);
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
/* --reuseport, before the listeners it applies to (test_kernel.sh). */
static bool g_reuseport;

static int set_bind_opts(int fd, int family, const char *spec)
{
	if (setopt_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", spec))
		return -1;
	if (g_reuseport &&
	    setopt_int(fd, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT", spec))
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

static int open_listener(const char *spec, int type, bool http)
{
	const char *proto = http ? "http" : type == SOCK_STREAM ? "tcp" : "udp";
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
	l->kind = SRC_LISTENER;
	l->fd = fd;
	l->type = type;
	l->family = ss.ss_family;
	l->http = http;
	l->proto = proto;
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

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void idle_unlink(struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else if (g_idle_head == c)
		g_idle_head = c->next;
	else
		return; /* not on the list */
	if (c->next)
		c->next->prev = c->prev;
	else
		g_idle_tail = c->prev;
	c->prev = c->next = NULL;
}

/* Marks progress on an HTTP connection: it moves to the list's tail. */
static void idle_touch(struct conn *c)
{
	idle_unlink(c);
	c->last_ms = now_ms();
	c->prev = g_idle_tail;
	if (g_idle_tail)
		g_idle_tail->next = c;
	else
		g_idle_head = c;
	g_idle_tail = c;
}

static void conn_close(struct conn *c)
{
	if (c->l->http)
		idle_unlink(c);
	close(c->fd); /* also drops it from the epoll set */
	free(c->out);
	free(c->req);
	free(c);
}

static int conn_append(struct conn *c, const char *data, size_t len)
{
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 256;
		char *p;

		while (cap < c->out_len + len)
			cap *= 2;
		p = realloc(c->out, cap);
		if (!p) {
			fprintf(stderr, "rs_backend: out of memory\n");
			return -1;
		}
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

static size_t conn_pending(const struct conn *c)
{
	return c->out_len - c->out_off;
}

/* Sends what it can of the output; -1 when the connection is dead. */
static int conn_flush(struct conn *c)
{
	ssize_t n;

	while (conn_pending(c)) {
		n = send(c->fd, c->out + c->out_off, conn_pending(c),
			 MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno != EPIPE && errno != ECONNRESET)
				fprintf(stderr,
					"rs_backend: send on %s %s: %s\n",
					c->l->proto, c->l->spec,
					strerror(errno));
			return -1;
		}
		c->out_off += n;
		if (c->l->http)
			idle_touch(c);
	}
	c->out_off = c->out_len = 0;
	return 0;
}

/*
 * Reads while there is room for what they produce, writes while output
 * is pending; a connection needing neither is done and is closed.
 */
static void conn_update(struct conn *c)
{
	struct epoll_event ev = {.data.ptr = c};
	uint32_t want = 0;

	/* The response is out: say so with a FIN, then wait for the client. */
	if (c->answered && !c->draining && !conn_pending(c)) {
		shutdown(c->fd, SHUT_WR);
		c->draining = true;
	}
	if (!c->eof && (!c->answered || c->draining) &&
	    conn_pending(c) < OUT_HIGH)
		want |= EPOLLIN;
	if (conn_pending(c))
		want |= EPOLLOUT;
	if (!want) {
		conn_close(c);
		return;
	}
	if (want == c->events)
		return;
	ev.events = want;
	if (epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		perror("rs_backend: epoll_ctl");
		conn_close(c);
		return;
	}
	c->events = want;
}

static struct conn *conn_new(struct listener *l, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!c || (l->http && !(c->req = malloc(HTTP_REQ_MAX)))) {
		fprintf(stderr, "rs_backend: out of memory\n");
		goto err;
	}
	c->kind = SRC_CONN;
	c->fd = fd;
	c->l = l;
	c->at_line_start = true;
	c->events = EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		perror("rs_backend: epoll_ctl");
		goto err;
	}
	if (l->http)
		idle_touch(c);
	return c;
err:
	if (c)
		free(c->req);
	free(c);
	close(fd);
	return NULL;
}

/*
 * The reply fits in any fresh socket's send buffer, so a single
 * non-blocking send either succeeds or the client is already gone; no
 * per-connection state is needed and the connection is closed at once.
 * Held and HTTP connections get a struct conn and stay in the loop.
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
			fprintf(stderr, "rs_backend: accept on %s %s: %s\n",
				l->proto, l->spec, strerror(errno));
			return;
		}
		if (l->http) {
			conn_new(l, fd);
			continue;
		}
		n = format_reply(reply, &peer);
		if (g_hold && g_keepalive) {
			int on = 1, idle = (int)g_keepalive, cnt = 1;

			setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on,
				   sizeof(on));
			setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
				   sizeof(idle));
			setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &on,
				   sizeof(on));
			setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt,
				   sizeof(cnt));
		}
		if (g_hold) {
			struct conn *c = conn_new(l, fd);

			if (!c)
				continue;
			if (conn_append(c, reply, n) || conn_flush(c)) {
				conn_close(c);
				continue;
			}
			conn_update(c);
			continue;
		}
		if (send(fd, reply, n, MSG_NOSIGNAL) < 0 && errno != EPIPE &&
		    errno != ECONNRESET)
			fprintf(stderr, "rs_backend: send on tcp %s: %s\n",
				l->spec, strerror(errno));
		close(fd);
	}
}

/*
 * Echoes @buf as lines prefixed with the name. A line may arrive in pieces;
 * only its first piece gets the prefix.
 */
static int echo_lines(struct conn *c, const char *buf, size_t len)
{
	size_t off = 0, seg;
	const char *nl;

	while (off < len) {
		nl = memchr(buf + off, '\n', len - off);
		seg = nl ? (size_t)(nl - (buf + off)) + 1 : len - off;
		if (c->at_line_start &&
		    (conn_append(c, g_name, strlen(g_name)) ||
		     conn_append(c, " ", 1)))
			return -1;
		if (conn_append(c, buf + off, seg))
			return -1;
		c->at_line_start = nl != NULL;
		off += seg;
	}
	return 0;
}

/* Reads are bounded per event, as accepts are, for fairness. */
#define READS_PER_EVENT 16

/* A held connection: echo what comes in; -1 when it is dead. */
static int hold_read(struct conn *c)
{
	char buf[READ_CHUNK];
	ssize_t n;
	int i;

	for (i = 0; i < READS_PER_EVENT && conn_pending(c) < OUT_HIGH; i++) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0) {
			c->eof = true;
			/* A last line without its newline still gets one. */
			if (!c->at_line_start && conn_append(c, "\n", 1))
				return -1;
			return conn_flush(c);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno != ECONNRESET)
				fprintf(stderr,
					"rs_backend: recv on tcp %s: %s\n",
					c->l->spec, strerror(errno));
			return -1;
		}
		if (echo_lines(c, buf, n) || conn_flush(c))
			return -1;
	}
	return 0;
}

static const char *http_reason(int code)
{
	static const struct {
		int code;
		const char *reason;
	} reasons[] = {
		{200, "OK"},
		{201, "Created"},
		{202, "Accepted"},
		{204, "No Content"},
		{301, "Moved Permanently"},
		{302, "Found"},
		{304, "Not Modified"},
		{400, "Bad Request"},
		{401, "Unauthorized"},
		{403, "Forbidden"},
		{404, "Not Found"},
		{405, "Method Not Allowed"},
		{408, "Request Timeout"},
		{429, "Too Many Requests"},
		{500, "Internal Server Error"},
		{501, "Not Implemented"},
		{502, "Bad Gateway"},
		{503, "Service Unavailable"},
		{504, "Gateway Timeout"},
	};
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == code)
			return reasons[i].reason;
	return "Status";
}

/* Parses a status code, 100-599, with surrounding whitespace allowed. */
static int parse_code(const char *s, const char *end, int *code)
{
	long v = 0;
	int digits = 0;

	while (s < end && isspace((unsigned char)*s))
		s++;
	while (s < end && *s >= '0' && *s <= '9' && digits < 4) {
		v = v * 10 + (*s++ - '0');
		digits++;
	}
	while (s < end && isspace((unsigned char)*s))
		s++;
	if (!digits || s != end || v < 100 || v > 599)
		return -1;
	*code = (int)v;
	return 0;
}

/*
 * The status --status-file asks for; 0 when the file does not exist. A
 * file that cannot be read or holds no status code answers 500, said once
 * on stderr until the file is good again (write it elsewhere and rename it
 * into place to avoid a half-written file being read).
 */
static int status_from_file(void)
{
	static bool warned;
	char buf[64];
	const char *why;
	ssize_t n;
	int fd, code;

	fd = open(g_status_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		why = strerror(errno);
		goto bad;
	}
	n = read(fd, buf, sizeof(buf));
	why = n < 0 ? strerror(errno) : "not a status code";
	close(fd);
	if (n >= 0 && n < (ssize_t)sizeof(buf) &&
	    !parse_code(buf, buf + n, &code)) {
		warned = false;
		return code;
	}
bad:
	if (!warned)
		fprintf(stderr,
			"rs_backend: status file %s: %s; answering 500\n",
			g_status_file, why);
	warned = true;
	return 500;
}

/* Request number @n (from 0) gets this status. */
static int http_status(unsigned long long n)
{
	int code;

	if (g_status_file) {
		code = status_from_file();
		if (code)
			return code;
	}
	if (g_npattern)
		return g_pattern[n % g_npattern];
	return 200;
}

static int http_respond(struct conn *c)
{
	char body[NAME_MAX_LEN + 8], head[256];
	int code, blen, hlen;

	code = http_status(g_http_requests++);
	blen = snprintf(body, sizeof(body), "%s %d\n", g_name, code);
	hlen = snprintf(head, sizeof(head),
			"HTTP/1.0 %d %s\r\n"
			"Content-Type: text/plain\r\n"
			"Content-Length: %d\r\n"
			"Connection: close\r\n\r\n",
			code, http_reason(code), blen);
	c->answered = true;
	if (conn_append(c, head, hlen) || conn_append(c, body, blen))
		return -1;
	return conn_flush(c);
}

/* Whether the request's blank line has arrived, new bytes from @old on. */
static bool http_complete(const struct conn *c, size_t old)
{
	size_t from = old > 3 ? old - 3 : 0;

	return memmem(c->req + from, c->req_len - from, "\r\n\r\n", 4) ||
	       memmem(c->req + from, c->req_len - from, "\n\n", 2);
}

/*
 * An HTTP connection: read the request, answer it, then read and discard
 * until the client closes, so that closing with unread data cannot reset
 * the connection before the client has the response. -1 when it is dead.
 */
static int http_read(struct conn *c)
{
	char junk[READ_CHUNK];
	size_t old;
	ssize_t n;
	int i;

	for (i = 0; i < READS_PER_EVENT && !c->eof; i++) {
		if (c->answered && !c->draining)
			return 0;
		if (!c->answered && c->req_len == HTTP_REQ_MAX)
			return http_respond(c);
		old = c->req_len;
		if (c->draining)
			n = recv(c->fd, junk, sizeof(junk), 0);
		else
			n = recv(c->fd, c->req + old, HTTP_REQ_MAX - old, 0);
		if (n == 0) {
			c->eof = true;
			/* A request cut short still gets its answer. */
			if (!c->answered && old)
				return http_respond(c);
			return 0;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno != ECONNRESET)
				fprintf(stderr,
					"rs_backend: recv on http %s: %s\n",
					c->l->spec, strerror(errno));
			return -1;
		}
		idle_touch(c);
		if (c->draining)
			continue;
		c->req_len += n;
		if (http_complete(c, old) || c->req_len == HTTP_REQ_MAX)
			return http_respond(c);
	}
	return 0;
}

static void serve_conn(struct conn *c, uint32_t events)
{
	if ((events & EPOLLOUT) && conn_flush(c)) {
		conn_close(c);
		return;
	}
	/* Not reading and the peer is gone: nothing more can be sent. */
	if ((events & (EPOLLHUP | EPOLLERR)) && !(c->events & EPOLLIN)) {
		conn_close(c);
		return;
	}
	if ((c->events & EPOLLIN) &&
	    (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
	    (c->l->http ? http_read(c) : hold_read(c))) {
		conn_close(c);
		return;
	}
	conn_update(c);
}

/* Closes HTTP connections idle too long; the wait until the next one. */
static int idle_expire(void)
{
	uint64_t now = now_ms();

	while (g_idle_head && now - g_idle_head->last_ms >= HTTP_IDLE_MS)
		conn_close(g_idle_head);
	if (!g_idle_head)
		return -1;
	return (int)(g_idle_head->last_ms + HTTP_IDLE_MS - now);
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

/*
 * A signalfd turns SIGTERM into an ordinary epoll event: no races. SIGUSR1
 * asks for the HTTP request count instead; SIGUSR2 closes the listeners
 * and serves the connections it has (a backend on its way out, whose
 * accepted connections outlive its listener).
 */
static int setup_signals(void)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		perror("rs_backend: sigprocmask");
		return -1;
	}
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		perror("rs_backend: signalfd");
	return fd;
}

static int epoll_add(int ep, int fd, void *data)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = data};

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		perror("rs_backend: epoll_ctl");
		return -1;
	}
	return 0;
}

static enum src_kind g_signal_src = SRC_SIGNAL;

/* Closing an fd takes it out of the epoll set too. */
static void close_listeners(void)
{
	for (int i = 0; i < g_nlisteners; i++)
		if (g_listeners[i].fd >= 0) {
			close(g_listeners[i].fd);
			g_listeners[i].fd = -1;
		}
	fprintf(stderr, "listeners closed\n");
}

/* Returns when a termination signal arrives; 0 on clean shutdown. */
static int event_loop(int ep, int sfd)
{
	struct epoll_event evs[64];
	int i, n;

	for (;;) {
		n = epoll_wait(ep, evs, 64, idle_expire());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("rs_backend: epoll_wait");
			return -1;
		}
		for (i = 0; i < n; i++) {
			enum src_kind *kind = evs[i].data.ptr;
			struct listener *l;

			if (*kind == SRC_SIGNAL) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGUSR2) {
					close_listeners();
					continue;
				}
				if (si.ssi_signo != SIGUSR1)
					return 0;
				fprintf(stderr, "http_requests=%llu\n",
					g_http_requests);
				continue;
			}
			if (*kind == SRC_CONN) {
				serve_conn((struct conn *)kind, evs[i].events);
				continue;
			}
			l = (struct listener *)kind;
			if (l->type == SOCK_STREAM)
				serve_tcp(l);
			else
				serve_udp(l);
		}
	}
}

static int parse_pattern(const char *arg)
{
	const char *s = arg, *comma;

	g_npattern = 0;
	for (;;) {
		comma = strchr(s, ',');
		if (!comma)
			comma = s + strlen(s);
		if (g_npattern == MAX_PATTERN ||
		    parse_code(s, comma, &g_pattern[g_npattern])) {
			fprintf(stderr,
				"rs_backend: bad --status-pattern '%s' (status "
				"codes 100-599, comma-separated, at most %d)\n",
				arg, MAX_PATTERN);
			return -1;
		}
		g_npattern++;
		if (!*comma)
			return 0;
		s = comma + 1;
	}
}

static int parse_args(int argc, char **argv, const char **pidfile)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"tcp", required_argument, NULL, 't'},
		{"udp", required_argument, NULL, 'u'},
		{"http", required_argument, NULL, 'H'},
		{"status-file", required_argument, NULL, 'f'},
		{"status-pattern", required_argument, NULL, 'P'},
		{"hold", no_argument, NULL, 'o'},
		{"pidfile", required_argument, NULL, 'p'},
		{"reuseport", no_argument, NULL, 'r'},
		{"keepalive", required_argument, NULL, 'k'},
		TOOL_OPTS_END,
	};
	int c;

	while ((c = tool_getopt(argc, argv, opts, usage)) != -1) {
		switch (c) {
		case 'n':
			g_name = optarg;
			break;
		case 't':
			if (open_listener(optarg, SOCK_STREAM, false))
				return -1;
			break;
		case 'u':
			if (open_listener(optarg, SOCK_DGRAM, false))
				return -1;
			break;
		case 'H':
			if (open_listener(optarg, SOCK_STREAM, true))
				return -1;
			break;
		case 'f':
			g_status_file = optarg;
			break;
		case 'P':
			if (parse_pattern(optarg))
				return -1;
			break;
		case 'o':
			g_hold = true;
			break;
		case 'p':
			*pidfile = optarg;
			break;
		case 'r':
			g_reuseport = true;
			break;
		case 'k':
			if (tool_parse_ulong("rs_backend", "--keepalive",
					     optarg, 1, 3600, &g_keepalive))
				return -1;
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
	g_ep = ep;
	if (epoll_add(ep, sfd, &g_signal_src))
		return 1;
	for (i = 0; i < g_nlisteners; i++) {
		if (epoll_add(ep, g_listeners[i].fd, &g_listeners[i]))
			return 1;
		fprintf(stderr, "rs_backend: %s listening on %s %s\n", g_name,
			g_listeners[i].proto, g_listeners[i].spec);
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

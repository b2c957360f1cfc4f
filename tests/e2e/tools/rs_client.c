// SPDX-License-Identifier: MIT
/*
 * rs_client: load and affinity client for the end-to-end tests.
 *
 *   rs_client --target ADDR:PORT [--udp] --src-base IP --count N
 *             [--rounds R] [--concurrency C] [--timeout-ms T]
 *             [--loop-seconds S] [--forbid NAME]... [--src-step K]
 *
 * Every attempt uses a new socket bound to one of N client addresses,
 * consecutive or K apart (--src-step 256: one per /24), so the steering
 * program sees N distinct clients. The backend
 * (rs_backend) answers "NAME <peer-ip>"; NAME is what the tests check.
 *
 * Attempt mode prints "<src-ip> <round> <backend-or-ERR:reason>" per
 * attempt, grouped by source, rounds numbered from 0. Loop mode prints
 * only a summary; SIGUSR1 ends it early (in-flight attempts finish).
 * Exit status is 0 when every attempt got a reply and no reply came from
 * a --forbid backend, 1 otherwise, 2 on usage errors.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool_net.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define UDP_TRIES     4 /* the first send plus 3 retries */
#define REPLY_MAX     192
#define MAX_LABELS    1024
#define MAX_FORBID    32
#define UDP_PAYLOAD   "hello"
#define MAX_LABEL_LEN 80

struct options {
	struct tool_endpoints ep;
	bool udp;
	unsigned long count;
	unsigned long rounds;
	unsigned int concurrency;
	unsigned int timeout_ms;
	unsigned int loop_seconds;
	unsigned long src_step; /* addresses between two clients' sources */
	const char *forbid[MAX_FORBID];
	int nforbid;
	const char *src_list; /* sources one per line, instead of a range */
};

/* One distinct reply text ("web1") or failure ("ERR:timeout"). */
struct label {
	char text[MAX_LABEL_LEN];
	bool is_err;
	bool forbidden;
	unsigned long long count;
};

struct slot {
	int fd; /* -1 when free */
	unsigned long src_idx;
	unsigned long long seq;
	uint64_t deadline_ms;
	int tries;
	bool connected;
	int late_err; /* reset seen when the connect completed */
	size_t len;
	char buf[REPLY_MAX];
};

struct stats {
	unsigned long long attempts, ok, failed, forbidden;
};

static struct options g_opt = {
	.rounds = 1,
	.concurrency = 32,
	.timeout_ms = 1000,
	.src_step = 1,
};
static struct label g_labels[MAX_LABELS];
static int g_nlabels;
/* Attempt mode: label index per attempt, indexed by round * count + src. */
static uint16_t *g_results;
/* --src-list: the sources, in the file's order. */
static struct sockaddr_storage *g_srcs;
static unsigned long g_nsrcs;
static struct stats g_stats;
/* Replies read whole from a connection reset after them (stderr). */
static unsigned long long g_resets_after_reply;
static int g_ep;

static void usage(FILE *f)
{
	fprintf(f, "usage: rs_client --target ADDR:PORT [--udp] --src-base IP "
		   "--count N\n"
		   "                 [--rounds R] [--concurrency C] "
		   "[--timeout-ms T]\n"
		   "                 [--loop-seconds S] [--forbid NAME]... "
		   "[--src-step K]\n"
		   "                 [--src-list FILE (one source per line, "
		   "instead of --src-base)]\n"
		   "  ADDR is an IPv4 address or [IPv6 address]\n");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Client @idx's source address; returns its length for bind(). */
static socklen_t src_addr(unsigned long idx, struct sockaddr_storage *ss)
{
	if (!g_nsrcs)
		return tool_src_addr(&g_opt.ep.src_base, idx * g_opt.src_step,
				     ss);
	*ss = g_srcs[idx % g_nsrcs];
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

static const char *src_str(unsigned long idx, char *buf, size_t len)
{
	struct sockaddr_storage ss;

	src_addr(idx, &ss);
	return tool_addr_str(&ss, buf, len);
}

/*
 * The sources of --src-list: one address per line, all of one family;
 * the first also stands as --src-base. Returns 0 or -1.
 */
static int read_src_list(const char *path)
{
	char line[128];
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "rs_client: --src-list %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = 0;
		if (!line[0])
			continue;
		if (g_nsrcs == cap) {
			void *n;

			cap = cap ? 2 * cap : 64;
			n = realloc(g_srcs, cap * sizeof(*g_srcs));
			if (!n) {
				fclose(f);
				return -1;
			}
			g_srcs = n;
		}
		if (tool_parse_ip(line, &g_srcs[g_nsrcs]) ||
		    (g_nsrcs &&
		     g_srcs[g_nsrcs].ss_family != g_srcs[0].ss_family)) {
			fprintf(stderr,
				"rs_client: --src-list %s: bad source '%s'\n",
				path, line);
			fclose(f);
			return -1;
		}
		g_nsrcs++;
	}
	fclose(f);
	if (!g_nsrcs) {
		fprintf(stderr, "rs_client: --src-list %s: no source\n", path);
		return -1;
	}
	g_opt.ep.src_base = g_srcs[0];
	g_opt.ep.have_src_base = true;
	if (!g_opt.count)
		g_opt.count = g_nsrcs;
	return 0;
}

static bool is_forbidden(const char *name)
{
	int i;

	for (i = 0; i < g_opt.nforbid; i++)
		if (!strcmp(g_opt.forbid[i], name))
			return true;
	return false;
}

static int intern_label(const char *text, bool is_err)
{
	int i;

	for (i = 0; i < g_nlabels; i++)
		if (!strcmp(g_labels[i].text, text))
			return i;
	if (g_nlabels == MAX_LABELS) {
		fprintf(stderr, "rs_client: more than %d distinct replies\n",
			MAX_LABELS);
		exit(1);
	}
	snprintf(g_labels[i].text, sizeof(g_labels[i].text), "%s", text);
	g_labels[i].is_err = is_err;
	g_labels[i].forbidden = !is_err && is_forbidden(text);
	return g_nlabels++;
}

static void record(struct slot *s, const char *text, bool is_err)
{
	int li = intern_label(text, is_err);

	g_labels[li].count++;
	g_stats.attempts++;
	if (is_err) {
		g_stats.failed++;
	} else {
		g_stats.ok++;
		if (g_labels[li].forbidden)
			g_stats.forbidden++;
	}
	if (g_results)
		g_results[s->seq] = li;
}

static void record_errno(struct slot *s, const char *what, int err)
{
	char text[MAX_LABEL_LEN];
	const char *name = tool_errno_name(err);

	if (what)
		snprintf(text, sizeof(text), "ERR:%s-%s", what, name);
	else
		snprintf(text, sizeof(text), "ERR:%s", name);
	record(s, text, true);
}

/*
 * Closing before the server's FIN would leave TIME_WAIT here and run the
 * sources out of ports in loop mode; an abortive close avoids that.
 */
static void slot_close(struct slot *s, bool abort)
{
	if (abort) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(s->fd);
	s->fd = -1;
}

static void fail(struct slot *s, const char *text)
{
	record(s, text, true);
	slot_close(s, true);
}

static void fail_errno(struct slot *s, const char *what, int err)
{
	record_errno(s, what, err);
	slot_close(s, true);
}

/* "NAME <peer-ip>"; the peer must be the source we bound to. */
static void finish_reply(struct slot *s, bool eof)
{
	char src[INET6_ADDRSTRLEN], *name, *peer, *save;

	s->buf[s->len] = '\0';
	s->buf[strcspn(s->buf, "\n")] = '\0';
	name = strtok_r(s->buf, " ", &save);
	peer = strtok_r(NULL, " ", &save);
	if (!name || strlen(name) >= MAX_LABEL_LEN) {
		fail(s, "ERR:bad-reply");
		return;
	}
	if (peer && strcmp(peer, src_str(s->src_idx, src, sizeof(src)))) {
		fail(s, "ERR:peer-mismatch");
		return;
	}
	record(s, name, false);
	slot_close(s, !eof);
}

static int open_socket(struct slot *s)
{
	int family = g_opt.ep.target.ss_family;
	int type = g_opt.udp ? SOCK_DGRAM : SOCK_STREAM;
	struct sockaddr_storage src;
	socklen_t slen;
	int one = 1;

	s->fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -errno;
	/* Best effort: a source that cannot be bound fails at bind() below. */
	tool_set_freebind(s->fd, family);
	/* Pick the port at connect time so it only has to be 4-tuple unique. */
	if (!g_opt.udp)
		setsockopt(s->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
			   sizeof(one));
	slen = src_addr(s->src_idx, &src);
	if (bind(s->fd, (struct sockaddr *)&src, slen) < 0)
		return -errno;
	return 0;
}

static void udp_send(struct slot *s)
{
	s->tries++;
	s->deadline_ms = now_ms() + g_opt.timeout_ms;
	if (send(s->fd, UDP_PAYLOAD, strlen(UDP_PAYLOAD), 0) < 0 &&
	    errno != EAGAIN && errno != ENOBUFS)
		fail_errno(s, "send", errno);
}

static void start_attempt(struct slot *s, unsigned long src_idx,
			  unsigned long long seq)
{
	struct epoll_event ev;
	int err;

	s->src_idx = src_idx;
	s->seq = seq;
	s->tries = 0;
	s->len = 0;
	s->connected = false;
	s->late_err = 0;
	s->deadline_ms = now_ms() + g_opt.timeout_ms;

	err = open_socket(s);
	if (err) {
		if (s->fd < 0)
			record_errno(s, "socket", -err);
		else
			fail_errno(s, "bind", -err);
		s->fd = -1;
		return;
	}
	/* UDP connect filters replies to those from the service address. */
	if (connect(s->fd, (struct sockaddr *)&g_opt.ep.target,
		    g_opt.ep.target_len) < 0 &&
	    errno != EINPROGRESS) {
		fail_errno(s, NULL, errno);
		return;
	}
	ev.events =
		g_opt.udp ? EPOLLIN : EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = s;
	if (epoll_ctl(g_ep, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
		fail_errno(s, "epoll", errno);
		return;
	}
	if (g_opt.udp)
		udp_send(s);
}

static void handle_tcp(struct slot *s)
{
	ssize_t n;

	if (!s->connected) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		/*
		 * A reset after the connection was made (EPIPE: after the
		 * backend's FIN) may follow a whole reply this loop was too
		 * slow to see: the reply, still queued, decides.
		 */
		if (err && err != EPIPE && err != ECONNRESET) {
			fail_errno(s, NULL, err);
			return;
		}
		s->late_err = err;
		s->connected = true;
	}
	for (;;) {
		n = recv(s->fd, s->buf + s->len, sizeof(s->buf) - 1 - s->len,
			 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			if ((errno == EPIPE || errno == ECONNRESET) &&
			    memchr(s->buf, '\n', s->len)) {
				g_resets_after_reply++;
				finish_reply(s, true);
				return;
			}
			fail_errno(s, NULL, errno);
			return;
		}
		if (n == 0) {
			if (memchr(s->buf, '\n', s->len))
				finish_reply(s, true);
			else
				fail(s, s->len ? "ERR:short-reply" : "ERR:eof");
			return;
		}
		s->len += n;
		if (s->len == sizeof(s->buf) - 1) {
			fail(s, "ERR:bad-reply");
			return;
		}
	}
	if (memchr(s->buf, '\n', s->len)) {
		g_resets_after_reply += s->late_err != 0;
		finish_reply(s, s->late_err != 0);
	} else if (s->late_err) {
		fail_errno(s, NULL, s->late_err);
	}
}

static void handle_udp(struct slot *s)
{
	ssize_t n;

	for (;;) {
		n = recv(s->fd, s->buf, sizeof(s->buf) - 1, 0);
		if (n >= 0)
			break;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno != EINTR) {
			fail_errno(s, NULL, errno);
			return;
		}
	}
	s->len = n;
	finish_reply(s, true);
}

static void handle_timeout(struct slot *s)
{
	if (g_opt.udp && s->tries < UDP_TRIES) {
		udp_send(s);
		return;
	}
	fail(s, "ERR:timeout");
}

static void expire_slots(struct slot *slots, unsigned int n, uint64_t now,
			 int *timeout)
{
	uint64_t next = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (slots[i].fd < 0)
			continue;
		if (slots[i].deadline_ms <= now)
			handle_timeout(&slots[i]);
		if (slots[i].fd >= 0 && slots[i].deadline_ms < next)
			next = slots[i].deadline_ms;
	}
	*timeout = next == UINT64_MAX ? -1 : (int)(next > now ? next - now : 0);
}

/*
 * Attempts are numbered round-major (all sources of round 0, then round 1)
 * so that the rounds run one after another; loop mode just keeps counting.
 */
/* SIGUSR1 in loop mode: start no more attempts, finish, summarize. */
static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
	(void)sig;
	g_stop = 1;
}

static bool next_attempt(unsigned long long seq, uint64_t end_ms,
			 unsigned long *src_idx)
{
	if (g_opt.loop_seconds) {
		if (now_ms() >= end_ms || g_stop)
			return false;
	} else if (seq >= (unsigned long long)g_opt.count * g_opt.rounds) {
		return false;
	}
	*src_idx = seq % g_opt.count;
	return true;
}

static int run(void)
{
	unsigned int c = g_opt.concurrency, i, active;
	uint64_t end_ms = now_ms() + (uint64_t)g_opt.loop_seconds * 1000;
	unsigned long long seq = 0;
	struct epoll_event *evs;
	struct slot *slots;
	unsigned long src_idx;
	bool more = true;
	int n, timeout;

	slots = calloc(c, sizeof(*slots));
	evs = calloc(c, sizeof(*evs));
	g_ep = epoll_create1(EPOLL_CLOEXEC);
	if (!slots || !evs || g_ep < 0) {
		perror("rs_client: setup");
		return -1;
	}
	for (i = 0; i < c; i++)
		slots[i].fd = -1;

	for (;;) {
		active = 0;
		for (i = 0; i < c; i++) {
			if (slots[i].fd < 0 && more) {
				more = next_attempt(seq, end_ms, &src_idx);
				if (more)
					start_attempt(&slots[i], src_idx,
						      seq++);
			}
			active += slots[i].fd >= 0;
		}
		if (!active && !more)
			break;
		expire_slots(slots, c, now_ms(), &timeout);
		/* Free slots (failed starts) or the end of loop mode. */
		if (more && active < c)
			timeout = 0;
		else if (more && (timeout < 0 || timeout > 100))
			timeout = 100;
		n = epoll_wait(g_ep, evs, c, timeout);
		if (n < 0 && errno != EINTR) {
			perror("rs_client: epoll_wait");
			return -1;
		}
		for (i = 0; i < (unsigned int)(n > 0 ? n : 0); i++) {
			struct slot *s = evs[i].data.ptr;

			if (s->fd < 0)
				continue;
			if (g_opt.udp)
				handle_udp(s);
			else
				handle_tcp(s);
		}
		expire_slots(slots, c, now_ms(), &timeout);
	}
	free(slots);
	free(evs);
	close(g_ep);
	return 0;
}

static void print_attempts(void)
{
	char src[INET6_ADDRSTRLEN];
	unsigned long s, r;

	for (s = 0; s < g_opt.count; s++) {
		src_str(s, src, sizeof(src));
		for (r = 0; r < g_opt.rounds; r++)
			printf("%s %lu %s\n", src, r,
			       g_labels[g_results[r * g_opt.count + s]].text);
	}
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->text,
		      ((const struct label *)b)->text);
}

static void print_loop_summary(void)
{
	int i;

	qsort(g_labels, g_nlabels, sizeof(g_labels[0]), cmp_label);
	printf("attempts=%llu ok=%llu failed=%llu\n", g_stats.attempts,
	       g_stats.ok, g_stats.failed);
	printf("forbidden=%llu\n", g_stats.forbidden);
	for (i = 0; i < g_nlabels; i++)
		if (!g_labels[i].is_err)
			printf("backend %s=%llu\n", g_labels[i].text,
			       g_labels[i].count);
	for (i = 0; i < g_nlabels; i++)
		if (g_labels[i].is_err)
			printf("error %s=%llu\n", g_labels[i].text + 4,
			       g_labels[i].count);
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		TOOL_OPTS_ENDPOINTS,
		{"udp", no_argument, NULL, 'u'},
		{"count", required_argument, NULL, 'n'},
		{"rounds", required_argument, NULL, 'r'},
		{"concurrency", required_argument, NULL, 'c'},
		{"timeout-ms", required_argument, NULL, 'T'},
		{"loop-seconds", required_argument, NULL, 'L'},
		{"forbid", required_argument, NULL, 'f'},
		{"src-step", required_argument, NULL, 'S'},
		{"src-list", required_argument, NULL, 'l'},
		TOOL_OPTS_END,
	};
	unsigned long v;
	int c;

	while ((c = tool_client_getopt("rs_client", argc, argv, opts, usage,
				       &g_opt.ep)) != -1) {
		switch (c) {
		case 'u':
			g_opt.udp = true;
			break;
		case 'n':
			if (tool_parse_ulong("rs_client", "--count", optarg, 1,
					     1ul << 24, &g_opt.count))
				return -1;
			break;
		case 'r':
			if (tool_parse_ulong("rs_client", "--rounds", optarg, 1,
					     1000000, &g_opt.rounds))
				return -1;
			break;
		case 'c':
			if (tool_parse_ulong("rs_client", "--concurrency",
					     optarg, 1, 65536, &v))
				return -1;
			g_opt.concurrency = v;
			break;
		case 'T':
			if (tool_parse_ulong("rs_client", "--timeout-ms",
					     optarg, 1, 600000, &v))
				return -1;
			g_opt.timeout_ms = v;
			break;
		case 'L':
			if (tool_parse_ulong("rs_client", "--loop-seconds",
					     optarg, 1, 86400, &v))
				return -1;
			g_opt.loop_seconds = v;
			break;
		case 'S':
			if (tool_parse_ulong("rs_client", "--src-step", optarg,
					     1, 1ul << 24, &g_opt.src_step))
				return -1;
			break;
		case 'l':
			g_opt.src_list = optarg;
			break;
		case 'f':
			if (g_opt.nforbid == MAX_FORBID) {
				fprintf(stderr,
					"rs_client: at most %d --forbid\n",
					MAX_FORBID);
				return -1;
			}
			g_opt.forbid[g_opt.nforbid++] = optarg;
			break;
		default:
			return -1;
		}
	}
	if (g_opt.src_list && read_src_list(g_opt.src_list))
		return -1;
	if (tool_client_args_done("rs_client", argc, &g_opt.ep,
				  g_opt.count != 0, usage))
		return -1;
	if (!g_opt.loop_seconds && g_opt.count * g_opt.rounds > (1ul << 26)) {
		fprintf(stderr, "rs_client: --count * --rounds is too large\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t start;

	if (parse_args(argc, argv))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	/* No SA_RESTART: the wait in run() returns and sees the flag. */
	sigaction(SIGUSR1, &(struct sigaction){.sa_handler = on_stop}, NULL);
	tool_raise_nofile();
	if (!g_opt.loop_seconds) {
		g_results =
			calloc(g_opt.count * g_opt.rounds, sizeof(*g_results));
		if (!g_results) {
			perror("rs_client: allocating results");
			return 1;
		}
	}

	start = now_ms();
	if (run())
		return 1;

	if (g_opt.loop_seconds)
		print_loop_summary();
	else
		print_attempts();
	fflush(stdout);
	fprintf(stderr,
		"rs_client: attempts=%llu ok=%llu failed=%llu forbidden=%llu "
		"resets_after_reply=%llu elapsed_ms=%llu\n",
		g_stats.attempts, g_stats.ok, g_stats.failed, g_stats.forbidden,
		g_resets_after_reply, (unsigned long long)(now_ms() - start));
	return g_stats.failed || g_stats.forbidden ? 1 : 0;
}

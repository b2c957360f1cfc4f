// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "tool_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Older libc headers lack it (the kernel added it in 4.15). */
#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif

int tool_parse_hostport(const char *s, struct sockaddr_storage *ss,
			socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port_s;
	size_t hlen;
	char *end;
	long port;

	memset(ss, 0, sizeof(*ss));
	/* An IPv6 address has colons of its own, hence the brackets. */
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return -1;
		hlen = rb - (s + 1);
		s++;
		port_s = rb + 2;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon)
			return -1;
		hlen = colon - s;
		port_s = colon + 1;
	}
	if (hlen >= sizeof(host))
		return -1;
	memcpy(host, s, hlen);
	host[hlen] = '\0';

	errno = 0;
	port = strtol(port_s, &end, 10);
	if (errno || end == port_s || *end || port < 1 || port > 65535)
		return -1;

	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) ==
	    1) {
		ss->ss_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(port);
		*len = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, host,
		      &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
		*len = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -1;
}

int tool_parse_ip(const char *s, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &((struct sockaddr_in6 *)ss)->sin6_addr) ==
	    1) {
		ss->ss_family = AF_INET6;
		return 0;
	}
	return -1;
}

/*
 * IPv4 increments the whole address so a range may cross octets. IPv6
 * increments only the last 32 bits: no client range comes near that many
 * sources, and one 32-bit word needs no carry across the address.
 */
socklen_t tool_src_addr(const struct sockaddr_storage *base, unsigned long idx,
			struct sockaddr_storage *out)
{
	*out = *base;
	if (out->ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;

		sin->sin_addr.s_addr =
			htonl(ntohl(sin->sin_addr.s_addr) + (uint32_t)idx);
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
		uint32_t last;

		memcpy(&last, &sin6->sin6_addr.s6_addr[12], 4);
		last = htonl(ntohl(last) + (uint32_t)idx);
		memcpy(&sin6->sin6_addr.s6_addr[12], &last, 4);
		return sizeof(*sin6);
	}
}

const char *tool_addr_str(const struct sockaddr_storage *ss, char *buf,
			  size_t len)
{
	const void *a;

	if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	else
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	/* The text goes into replies and reports; never leave it unset. */
	if (!inet_ntop(ss->ss_family, a, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/*
 * Service and client addresses are made local with a "local" route, not
 * assigned to an interface. IPv4 accepts binding to those; IPv6 does not,
 * nor takes them as an IPV6_PKTINFO source, unless the socket may bind
 * nonlocal addresses. Freebind for both families keeps them alike.
 */
int tool_set_freebind(int fd, int family)
{
	int one = 1;

	if (family == AF_INET6)
		return setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one,
				  sizeof(one));
	return setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
}

static int opt_target(const char *prog, const char *arg,
		      struct tool_endpoints *ep)
{
	if (tool_parse_hostport(arg, &ep->target, &ep->target_len)) {
		fprintf(stderr, "%s: bad --target '%s'\n", prog, arg);
		return -1;
	}
	ep->have_target = true;
	return 0;
}

static int opt_src_base(const char *prog, const char *arg,
			struct tool_endpoints *ep)
{
	if (tool_parse_ip(arg, &ep->src_base)) {
		fprintf(stderr, "%s: bad --src-base '%s'\n", prog, arg);
		return -1;
	}
	ep->have_src_base = true;
	return 0;
}

int tool_getopt(int argc, char **argv, const struct option *opts,
		void (*usage)(FILE *f))
{
	int c = getopt_long(argc, argv, "", opts, NULL);

	if (c == 'h') {
		usage(stdout);
		exit(0);
	}
	if (c == '?')
		usage(stderr);
	return c;
}

int tool_client_getopt(const char *prog, int argc, char **argv,
		       const struct option *opts, void (*usage)(FILE *f),
		       struct tool_endpoints *ep)
{
	int c;

	while ((c = tool_getopt(argc, argv, opts, usage)) == 't' || c == 's') {
		if (c == 't' ? opt_target(prog, optarg, ep)
			     : opt_src_base(prog, optarg, ep))
			return '?';
	}
	return c;
}

int tool_client_args_done(const char *prog, int argc,
			  const struct tool_endpoints *ep, bool complete,
			  void (*usage)(FILE *f))
{
	if (optind != argc || !ep->have_target || !ep->have_src_base ||
	    !complete) {
		usage(stderr);
		return -1;
	}
	if (ep->target.ss_family != ep->src_base.ss_family) {
		fprintf(stderr,
			"%s: --target and --src-base must be the same address "
			"family\n",
			prog);
		return -1;
	}
	return 0;
}

int tool_parse_ulong(const char *prog, const char *opt, const char *s,
		     unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "%s: %s must be a number in %lu..%lu\n", prog,
			opt, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

const char *tool_errno_name(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "unknown";
}

/*
 * Load tests open many sockets at once, more than the usual soft limit of
 * 1024; going past the hard limit would need privileges.
 */
void tool_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int tool_parse_hex(const char *prog, const char *opt, const char *s,
		   uint8_t *out, size_t max)
{
	size_t n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while (*s) {
		int hi, lo;

		if (*s == ':' || *s == ' ' || *s == '-') {
			s++;
			continue;
		}
		hi = hex_value(s[0]);
		lo = s[1] ? hex_value(s[1]) : -1;
		if (hi < 0 || lo < 0 || n == max)
			break;
		out[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	if (*s || !n) {
		fprintf(stderr, "%s: %s needs 1..%zu hex bytes\n", prog, opt,
			max);
		return -1;
	}
	return (int)n;
}

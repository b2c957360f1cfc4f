/* SPDX-License-Identifier: MIT */
/*
 * tool_net: address, socket and command-line helpers shared by the
 * end-to-end test tools (rs_backend, rs_client, mc_client, quic_client)
 * and the benchmark tools. They live here so that the tools cannot drift
 * apart on how an address is written on the command line or how the
 * numbered client sources are laid out; the shell tests rely on both.
 */
#ifndef TOOL_NET_H
#define TOOL_NET_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

/*
 * Parses "1.2.3.4:80" or "[2001:db8::1]:80" (port 1-65535). Either family
 * is accepted with or without brackets; a caller that wants the brackets
 * to decide the family checks that itself. Returns 0 or -1.
 */
int tool_parse_hostport(const char *s, struct sockaddr_storage *ss,
			socklen_t *len);

/* Parses a bare IPv4 or IPv6 address (no port). Returns 0 or -1. */
int tool_parse_ip(const char *s, struct sockaddr_storage *ss);

/*
 * Source address number @idx counted up from @base, as the tests lay out
 * their client ranges. Returns the sockaddr length for bind().
 */
socklen_t tool_src_addr(const struct sockaddr_storage *base, unsigned long idx,
			struct sockaddr_storage *out);

/* The address without the port; "?" when it cannot be printed. */
const char *tool_addr_str(const struct sockaddr_storage *ss, char *buf,
			  size_t len);

/*
 * Lets @fd bind an address that is only routed locally. Returns what
 * setsockopt() returns, so errno is left for the caller to report.
 */
int tool_set_freebind(int fd, int family);

/*
 * The --target ADDR:PORT and --src-base IP pair of the clients (rs_client,
 * mc_client, quic_client). Parsed here so that all of them accept the same
 * forms and word their errors the same way.
 */
struct tool_endpoints {
	struct sockaddr_storage target;
	socklen_t target_len;
	struct sockaddr_storage src_base;
	bool have_target;
	bool have_src_base;
};

/*
 * Ends each tool's option table, so that the --help entry tool_getopt()
 * relies on cannot be left out or mapped to another value.
 */
/* clang-format off */
#define TOOL_OPTS_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
/* clang-format on */

/*
 * getopt_long() with the conventions all three tools share: --help (mapped
 * to 'h') prints usage on stdout and exits 0; an unknown option or a
 * missing argument prints usage on stderr and comes back as '?', for the
 * caller to fail with its usage-error status.
 */
int tool_getopt(int argc, char **argv, const struct option *opts,
		void (*usage)(FILE *f));

/*
 * --target and --src-base in a client's option table, mapped to what
 * tool_client_getopt() expects.
 */
/* clang-format off */
#define TOOL_OPTS_ENDPOINTS                                                    \
	{"target", required_argument, NULL, 't'},                              \
	{"src-base", required_argument, NULL, 's'}
/* clang-format on */

/*
 * tool_getopt() for a client with TOOL_OPTS_ENDPOINTS in its option table:
 * --target and --src-base go into @ep and are not returned. A bad value is
 * reported, prefixed with @prog, and comes back as '?'.
 */
int tool_client_getopt(const char *prog, int argc, char **argv,
		       const struct option *opts, void (*usage)(FILE *f),
		       struct tool_endpoints *ep);

/*
 * Once a client's options are read: no operands left, --target and
 * --src-base both given and @complete (the client's own requirements met),
 * else usage on stderr; then both of the same address family, since
 * sources are bound and then connected to the target and saying so up
 * front beats a failure per attempt. Returns 0 or -1.
 */
int tool_client_args_done(const char *prog, int argc,
			  const struct tool_endpoints *ep, bool complete,
			  void (*usage)(FILE *f));

/*
 * Parses option @opt's value @s as a decimal number in @min..@max; says
 * otherwise on stderr, prefixed with @prog. Returns 0 or -1.
 */
int tool_parse_ulong(const char *prog, const char *opt, const char *s,
		     unsigned long min, unsigned long max, unsigned long *out);

/*
 * Option @opt's value @s as 1..@max bytes of hex (a QUIC connection ID:
 * "0x" in front and ':', ' ', '-' between bytes allowed) into @out;
 * says otherwise on stderr, prefixed with @prog. Returns the number of
 * bytes, or -1.
 */
int tool_parse_hex(const char *prog, const char *opt, const char *s,
		   uint8_t *out, size_t max);

/* The name of errno value @err ("ECONNREFUSED"), or "unknown". */
const char *tool_errno_name(int err);

/* Raises the soft RLIMIT_NOFILE to the hard limit; failure is ignored. */
void tool_raise_nofile(void);

#endif /* TOOL_NET_H */

/* SPDX-License-Identifier: MIT */
/*
 * tool_net: address, socket and command-line helpers shared by the
 * end-to-end test tools (rs_backend, rs_client, mc_client). They live here
 * so that the tools cannot drift apart on how an address is written on
 * the command line or how the numbered client sources are laid out; the
 * shell tests rely on both.
 */
#ifndef TOOL_NET_H
#define TOOL_NET_H

#include <getopt.h>
#include <stdbool.h>
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
 * The --target ADDR:PORT and --src-base IP pair of rs_client and
 * mc_client. Parsed here so that both clients accept the same forms and
 * word their errors the same way; @prog prefixes each message.
 */
struct tool_endpoints {
	struct sockaddr_storage target;
	socklen_t target_len;
	struct sockaddr_storage src_base;
	bool have_target;
	bool have_src_base;
};

int tool_opt_target(const char *prog, const char *arg,
		    struct tool_endpoints *ep);
int tool_opt_src_base(const char *prog, const char *arg,
		      struct tool_endpoints *ep);

/*
 * Sources are bound and then connected to the target, which cannot work
 * across families; saying so up front beats a failure per attempt.
 */
int tool_check_same_family(const char *prog, const struct tool_endpoints *ep);

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

/* Raises the soft RLIMIT_NOFILE to the hard limit; failure is ignored. */
void tool_raise_nofile(void);

#endif /* TOOL_NET_H */

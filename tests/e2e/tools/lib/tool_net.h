/* SPDX-License-Identifier: MIT */
/*
 * tool_net: address and socket helpers shared by the end-to-end test tools
 * (rs_backend, rs_client, mc_client). They live here so that the tools
 * agree on how an address is written on the command line and how the
 * numbered client sources are laid out; the shell tests rely on both.
 */
#ifndef TOOL_NET_H
#define TOOL_NET_H

#include <stddef.h>
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

/* Raises the soft RLIMIT_NOFILE to the hard limit; failure is ignored. */
void tool_raise_nofile(void);

#endif /* TOOL_NET_H */

// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"

/* Longest host text we pass to inet_pton(), plus "/128". */
#define HOST_MAX (INET6_ADDRSTRLEN + 4)

static int fail(const char **why, const char *reason, int err)
{
	if (why)
		*why = reason;
	return err;
}

unsigned int rs_addr_bits(int family)
{
	switch (family) {
	case AF_INET:
		return 32;
	case AF_INET6:
		return 128;
	default:
		return 0;
	}
}

int rs_addr_mask(int family, uint8_t addr[16], unsigned int prefixlen)
{
	unsigned int bits = rs_addr_bits(family);
	unsigned int i;

	if (!bits)
		return -EAFNOSUPPORT;
	if (prefixlen > bits)
		return -EINVAL;
	for (i = 0; i < 16; i++) {
		unsigned int first = i * 8;

		if (first >= prefixlen)
			addr[i] = 0;
		else if (first + 8 > prefixlen)
			addr[i] &= (uint8_t)(0xff << (first + 8 - prefixlen));
	}
	return 0;
}

void rs_addr_connect_target(int family, const uint8_t addr[16], uint8_t out[16])
{
	static const uint8_t zero[16];

	memcpy(out, addr, 16);
	if (memcmp(addr, zero, family == AF_INET ? 4 : 16))
		return;
	memset(out, 0, 16);
	if (family == AF_INET)
		inet_pton(AF_INET, "127.0.0.1", out);
	else
		out[15] = 1;
}

bool rs_addr_in_prefix(int family, const uint8_t addr[16],
		       const uint8_t net[16], unsigned int prefixlen)
{
	uint8_t masked[16];

	memcpy(masked, addr, 16);
	return !rs_addr_mask(family, masked, prefixlen) &&
	       !memcmp(masked, net, 16);
}

/*
 * Digits only: strtoul() would take signs, spaces and hex, none of which
 * belong in an address. Values are clamped at @max + 1 so that a long run
 * of digits cannot wrap around into range.
 */
static int parse_small_uint(const char *s, size_t n, unsigned long max,
			    unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v <= max)
			v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_port(const char *s, unsigned int flags, uint16_t *port,
		      const char **why)
{
	unsigned long v;
	int err;

	if (*s == '\0')
		return fail(why, "missing port", -EINVAL);
	err = parse_small_uint(s, strlen(s), 65535, &v);
	if (err == -ERANGE)
		return fail(why, "port out of range", err);
	if (err)
		return fail(why, "bad port", err);
	if (v == 0 && !(flags & RS_ADDR_PORT_ZERO))
		return fail(why, "port 0 not allowed", -ERANGE);
	*port = (uint16_t)v;
	return 0;
}

static bool is_v4_mapped(const uint8_t addr[16])
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	return memcmp(addr, mapped, sizeof(mapped)) == 0;
}

/* @host is "ADDR" or "ADDR/LEN" without brackets, @n bytes long. */
static int parse_host(const char *host, size_t n, unsigned int flags,
		      struct rs_addr *out, const char **why)
{
	unsigned int bits = rs_addr_bits(out->family);
	char buf[HOST_MAX + 1];
	uint8_t masked[16];
	unsigned long plen = bits;
	char *slash;
	int err;

	if (n == 0)
		return fail(why, "missing address", -EINVAL);
	if (n > HOST_MAX)
		return fail(why, "bad address", -EINVAL);
	memcpy(buf, host, n);
	buf[n] = '\0';

	slash = strchr(buf, '/');
	if (slash) {
		if (!(flags & RS_ADDR_PREFIX))
			return fail(why, "prefix not allowed", -EINVAL);
		*slash = '\0';
		err = parse_small_uint(slash + 1, strlen(slash + 1), bits,
				       &plen);
		if (err == -ERANGE)
			return fail(why, "prefix length out of range", err);
		if (err)
			return fail(why, "bad prefix length", err);
	}
	if (inet_pton(out->family, buf, out->addr) != 1)
		return fail(why,
			    out->family == AF_INET ? "bad IPv4 address"
						   : "bad IPv6 address",
			    -EINVAL);
	/* The data plane only ever sees IPv4 packets as AF_INET. */
	if (out->family == AF_INET6 && plen >= 96 && is_v4_mapped(out->addr))
		return fail(why, "IPv4-mapped address, write it as IPv4",
			    -EINVAL);

	memcpy(masked, out->addr, sizeof(masked));
	rs_addr_mask(out->family, masked, (unsigned int)plen);
	if (memcmp(masked, out->addr, sizeof(masked)) != 0)
		return fail(why, "host bits set", -EINVAL);
	out->prefixlen = (uint8_t)plen;
	return 0;
}

static int parse(const char *s, unsigned int flags, struct rs_addr *out,
		 const char **why)
{
	const char *host, *host_end, *colon;
	int err;

	if (*s == '\0')
		return fail(why, "empty address", -EINVAL);
	if (*s == '[') {
		out->family = AF_INET6;
		host = s + 1;
		host_end = strchr(host, ']');
		if (!host_end)
			return fail(why, "missing ']'", -EINVAL);
		colon = host_end + 1;
		if (*colon == '\0')
			return fail(why, "missing port", -EINVAL);
		if (*colon != ':')
			return fail(why, "expected ':' after ']'", -EINVAL);
	} else {
		out->family = AF_INET;
		host = s;
		colon = strchr(s, ':');
		if (!colon)
			return fail(why, "missing port", -EINVAL);
		if (strchr(colon + 1, ':'))
			return fail(why, "IPv6 address must be in brackets",
				    -EINVAL);
		host_end = colon;
	}

	err = parse_host(host, (size_t)(host_end - host), flags, out, why);
	if (err)
		return err;
	return parse_port(colon + 1, flags, &out->port, why);
}

int rs_addr_parse(const char *s, unsigned int flags, struct rs_addr *out,
		  const char **why)
{
	int err;

	if (!s || !out)
		return fail(why, "missing address", -EINVAL);
	memset(out, 0, sizeof(*out));
	err = parse(s, flags, out, why);
	/* A half-filled result must not pass for an address. */
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

int rs_addr_format_prefix(int family, const uint8_t addr[16],
			  unsigned int prefixlen, uint16_t port, char *buf,
			  size_t len)
{
	unsigned int bits = rs_addr_bits(family);
	char host[INET6_ADDRSTRLEN];
	char plen[12] = "";
	int n;

	if (!bits)
		return -EAFNOSUPPORT;
	if (prefixlen > bits)
		return -EINVAL;
	if (!inet_ntop(family, addr, host, sizeof(host)))
		return -errno;
	if (prefixlen < bits)
		snprintf(plen, sizeof(plen), "/%u", prefixlen);
	if (len == 0)
		return -ENOSPC;

	if (family == AF_INET)
		n = snprintf(buf, len, "%s%s:%u", host, plen, port);
	else
		n = snprintf(buf, len, "[%s%s]:%u", host, plen, port);
	if (n < 0)
		return -EINVAL;
	return (size_t)n >= len ? -ENOSPC : 0;
}

int rs_addr_format(int family, const uint8_t addr[16], uint16_t port, char *buf,
		   size_t len)
{
	return rs_addr_format_prefix(family, addr, rs_addr_bits(family), port,
				     buf, len);
}

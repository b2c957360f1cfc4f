/* SPDX-License-Identifier: MIT */
/*
 * Address text as written in the configuration and printed by the tools:
 * "198.18.0.10:80", "198.18.0.0/24:80", "[2001:db8::10]:80",
 * "[2001:db8::/64]:80". Addresses are 16 bytes in network byte order with
 * IPv4 in the first 4 bytes and the rest zero, as in the BPF map keys.
 */
#ifndef RS_ADDR_H
#define RS_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Enough for "[ffff:...:255.255.255.255/128]:65535" and the NUL. */
#define RS_ADDR_STRLEN 64

/* rs_addr_parse() flags */
#define RS_ADDR_PREFIX	  (1u << 0) /* accept "/len"; host bits must be 0 */
#define RS_ADDR_PORT_ZERO (1u << 1) /* accept port 0 */

struct rs_addr {
	uint8_t family;	   /* AF_INET or AF_INET6 */
	uint8_t prefixlen; /* 32 or 128 unless a prefix was given */
	uint16_t port;	   /* host byte order */
	uint8_t addr[16];  /* network byte order */
};

/*
 * Parse "ADDR[/LEN]:PORT" (IPv4) or "[ADDR[/LEN]]:PORT" (IPv6) into @out.
 * Returns 0, -EINVAL for malformed text or -ERANGE for a port or prefix
 * length out of range; then *@why (if @why is not NULL) points to a static
 * description such as "port out of range" or "host bits set".
 */
int rs_addr_parse(const char *s, unsigned int flags, struct rs_addr *out,
		  const char **why);

/*
 * "1.2.3.4:80" or "[2001:db8::1]:80" into @buf. Returns 0, -EAFNOSUPPORT
 * or -ENOSPC (@buf then holds a truncated, NUL-terminated string).
 */
int rs_addr_format(int family, const uint8_t addr[16], uint16_t port, char *buf,
		   size_t len);

/*
 * As rs_addr_format() but with "/LEN" when @prefixlen is shorter than the
 * address: "198.18.0.0/24:80", "[2001:db8::/64]:80". -EINVAL if @prefixlen
 * is too long for @family.
 */
int rs_addr_format_prefix(int family, const uint8_t addr[16],
			  unsigned int prefixlen, uint16_t port, char *buf,
			  size_t len);

/*
 * Zero every bit of @addr past @prefixlen, including bytes 4..15 of an IPv4
 * address. Returns 0, -EAFNOSUPPORT, or -EINVAL if @prefixlen is too long.
 */
int rs_addr_mask(int family, uint8_t addr[16], unsigned int prefixlen);

/*
 * Where a connect() to a socket bound to @addr goes: @addr itself, or
 * loopback for the wildcard address (all zero), which answers there.
 */
void rs_addr_connect_target(int family, const uint8_t addr[16],
			    uint8_t out[16]);

/* Is @addr (of @family) inside the prefix @net/@prefixlen? */
bool rs_addr_in_prefix(int family, const uint8_t addr[16],
		       const uint8_t net[16], unsigned int prefixlen);

/* Address length in bits for @family (32 or 128), 0 if unknown. */
unsigned int rs_addr_bits(int family);

#endif /* RS_ADDR_H */

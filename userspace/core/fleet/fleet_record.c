// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <ringsteer/abi.h>

#include "fleet_record.h"
#include "name.h"

const char *rs_fleet_addr4_problem(uint32_t addr)
{
	uint32_t a = ntohl(addr);

	if ((a >> 24) == 0)
		return "address in 0.0.0.0/8 (this network)";
	if ((a >> 24) == 127)
		return "loopback address";
	if ((a >> 16) == 0xa9fe)
		return "link-local address";
	if ((a >> 28) == 0xe)
		return "multicast address";
	if (a == 0xffffffffu)
		return "broadcast address";
	if ((a >> 28) == 0xf)
		return "reserved address (240.0.0.0/4)";
	return NULL;
}

const char *rs_fleet_addr6_problem(const uint8_t addr[16])
{
	static const uint8_t zero[16];
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	if (!memcmp(addr, zero, 16))
		return "unspecified IPv6 address";
	if (!memcmp(addr, zero, 15) && addr[15] == 1)
		return "loopback IPv6 address";
	if (!memcmp(addr, mapped, sizeof(mapped)))
		return "IPv4-mapped IPv6 address";
	if (addr[0] == 0xff)
		return "multicast IPv6 address";
	if (addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80)
		return "link-local IPv6 address";
	return NULL;
}

const char *rs_fleet_name_problem(const char *name)
{
	return rs_name_ok(name) ? NULL
				: "member name is not 1-63 letters, digits, "
				  "'.', '_' or '-' (not beginning with '-')";
}

static int candidate_cmp(const void *pa, const void *pb)
{
	const struct rs_fleet_candidate *a = pa, *b = pb;

	if (a->was_member != b->was_member)
		return a->was_member ? -1 : 1;
	if (a->created != b->created)
		return a->created < b->created ? -1 : 1;
	return strcmp(a->name, b->name);
}

size_t rs_fleet_choose(struct rs_fleet_candidate *c, size_t n, size_t max)
{
	qsort(c, n, sizeof(*c), candidate_cmp);
	return n < max ? n : max;
}

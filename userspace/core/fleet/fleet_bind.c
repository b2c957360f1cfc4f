// SPDX-License-Identifier: MIT
/*
 * Addresses bound to members in member_keys (docs/fleet.md, "Per-host
 * identities"): a signature says who wrote a record, not that the address
 * in it is the writer's. Without a binding, a member holding only its own
 * key could claim another's address while that one is away (restarting,
 * its lease gone) and keep it from coming back; with one, the address is
 * its owner's whether it is in the table or not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fleet_ident.h"
#include "fleet_record.h"

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static bool same(const struct rs_fleet_bound_addr *a, int family,
		 const void *addr)
{
	return a->family == family && !memcmp(a->addr, addr, addr_len(family));
}

/* @text as an address a member may forward from; 0 or -EINVAL with @why. */
static int addr_parse(const char *text, struct rs_fleet_bound_addr *a,
		      const char *where, char *why, size_t len)
{
	const char *problem;

	memset(a->addr, 0, sizeof(a->addr));
	if (inet_pton(AF_INET, text, a->addr) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, text, a->addr) == 1)
		a->family = AF_INET6;
	else {
		snprintf(why, len,
			 "%s: '%.60s' is not an IPv4 or IPv6 address (NAME "
			 "KEY [ADDRESS...])",
			 where, text);
		return -EINVAL;
	}
	if (a->family == AF_INET) {
		uint32_t v4;

		memcpy(&v4, a->addr, sizeof(v4));
		problem = rs_fleet_addr4_problem(v4);
	} else {
		problem = rs_fleet_addr6_problem(a->addr);
	}
	if (problem) {
		snprintf(why, len, "%s: %.60s: %s", where, text, problem);
		return -EINVAL;
	}
	return 0;
}

int rs_fleet_bound_add(struct rs_fleet_pubkeys *p, const char *name,
		       const char *text, int line, const char *where, char *why,
		       size_t len)
{
	struct rs_fleet_bound_addr a = {.line = line};

	if (addr_parse(text, &a, where, why, len))
		return -EINVAL;
	for (size_t i = 0; i < p->n_addr; i++) {
		if (!same(&p->a[i], a.family, a.addr))
			continue;
		if (!strcmp(p->a[i].name, name))
			return 0; /* again on a rotation's second line */
		/* One address, one host: else either may claim it. */
		snprintf(why, len,
			 "%s: address %.60s is %s's already (line %d): one "
			 "address, one host",
			 where, text, p->a[i].name, p->a[i].line);
		return -EINVAL;
	}
	if (p->n_addr == RS_FLEET_ID_ADDRS_MAX) {
		snprintf(why, len, "%s: more than %d addresses", where,
			 RS_FLEET_ID_ADDRS_MAX);
		return -E2BIG;
	}
	snprintf(a.name, sizeof(a.name), "%s", name);
	p->a[p->n_addr++] = a;
	return 0;
}

int rs_fleet_addr_check(const struct rs_fleet_pubkeys *p, const char *name,
			int family, const void *addr, char *why, size_t len)
{
	const struct rs_fleet_bound_addr *own = NULL;
	char text[INET6_ADDRSTRLEN];
	const char *label = family == AF_INET ? "address" : "address6";

	for (size_t i = 0; i < p->n_addr; i++) {
		if (same(&p->a[i], family, addr)) {
			if (!strcmp(p->a[i].name, name))
				return 0;
			inet_ntop(family, addr, text, sizeof(text));
			snprintf(why, len,
				 "%s %s is %s's in member_keys (line %d)",
				 label, text, p->a[i].name, p->a[i].line);
			return -EPERM;
		}
		if (!own && !strcmp(p->a[i].name, name))
			own = &p->a[i];
	}
	if (!own)
		return 0;
	inet_ntop(family, addr, text, sizeof(text));
	snprintf(why, len,
		 "%s %s is not %s's in member_keys (its addresses: line %d)",
		 label, text, name, own->line);
	return -EPERM;
}

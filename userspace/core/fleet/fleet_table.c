// SPDX-License-Identifier: MIT
/*
 * Buckets are cut from a consistent-hash ring of the eligible members
 * (points at XXH64("name#i", fleet seed), as backend points are): bucket b
 * belongs to the first point at or after its middle. A member joining or
 * leaving therefore moves about 1/H of the buckets, all to or from itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <xxhash.h>

#include "fleet_table.h"
#include "hash.h"

/* "fleet": fleet seeds never equal the rings' seeds. */
#define FLEET_SALT 0x666c656574ull

uint64_t rs_fleet_seed(const char *name, uint64_t seed)
{
	return XXH64(name, strlen(name), seed ^ FLEET_SALT);
}

void rs_fleet_key_build(struct rs_affinity_key *key,
			const struct rs_service *svc, int family,
			const uint8_t addr[16], uint16_t port)
{
	uint8_t a[16] = {0};

	memcpy(a, addr, family == AF_INET ? 4 : 16);
	rs_affinity_key_build(key, svc, (uint8_t)family, a, port);
	key->service = 0;
}

bool rs_fleet_eligible(const struct rs_fleet_member_info *m,
		       const char *service)
{
	if (m->drained)
		return false;
	for (size_t i = 0; i < m->n_caps; i++)
		if (!strcmp(m->caps[i].service, service))
			return m->caps[i].capacity > 0;
	return false;
}

struct owner_point {
	uint64_t pos;
	uint32_t member;
};

static int point_cmp(const void *a, const void *b)
{
	const struct owner_point *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	/* Equal positions (never seen, but possible): lower index first. */
	return x->member < y->member ? -1 : x->member > y->member;
}

int rs_fleet_buckets(const struct rs_fleet_member_info *members, size_t n,
		     const char *service, uint64_t fleet_seed,
		     uint8_t owners[RS_FLEET_BUCKETS])
{
	struct owner_point *pts;
	size_t np = 0, eligible = 0, j = 0;

	memset(owners, RS_FLEET_NO_OWNER, RS_FLEET_BUCKETS);
	if (n > RS_FLEET_MAX_MEMBERS)
		n = RS_FLEET_MAX_MEMBERS;
	pts = calloc(n * RS_FLEET_VNODES + 1, sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	for (size_t m = 0; m < n; m++) {
		if (!rs_fleet_eligible(&members[m], service))
			continue;
		eligible++;
		for (uint32_t i = 0; i < RS_FLEET_VNODES; i++) {
			pts[np].pos =
				rs_vnode_pos(members[m].name, i, fleet_seed);
			pts[np++].member = (uint32_t)m;
		}
	}
	if (np) {
		qsort(pts, np, sizeof(*pts), point_cmp);
		for (uint32_t b = 0; b < RS_FLEET_BUCKETS; b++) {
			uint64_t mid =
				((uint64_t)b << (64 - RS_FLEET_BUCKET_BITS)) |
				(1ull << (63 - RS_FLEET_BUCKET_BITS));

			while (j < np && pts[j].pos < mid)
				j++;
			owners[b] = (uint8_t)(pts[j < np ? j : 0].member + 1);
		}
	}
	free(pts);
	return (int)eligible;
}

// SPDX-License-Identifier: MIT
#include <string.h>
#include <sys/socket.h>

#include <ringsteer/rules.h>

#include "fleet_table.h"
#include "hash.h"
#include "replica.h"

int replica_backend(const struct rs_ring *ring, const struct rs_service *svc,
		    const struct rs_ring_view *view, int family,
		    const uint8_t *addr, uint16_t port,
		    struct rs_ring_choice *c)
{
	struct rs_affinity_key key;
	struct rs_ring_choice mine;
	uint8_t a[16] = {0};

	memcpy(a, addr, family == AF_INET ? 4 : 16);
	rs_affinity_key_build(&key, svc, (uint8_t)family, a, port);
	if (!c)
		c = &mine;
	if (ring_lookup(ring, view, rs_hash_key(&key, svc->seed), c, NULL))
		return -1;
	return (int)c->backend;
}

int replica_backend4(const struct rs_ring *ring, const struct rs_service *svc,
		     const struct rs_ring_view *view, uint32_t src,
		     struct rs_ring_choice *c)
{
	uint8_t a[16] = {0};

	memcpy(a, &src, sizeof(src));
	return replica_backend(ring, svc, view, AF_INET, a, 0, c);
}

int replica_fleet_owner(const struct rs_service *svc, uint64_t seed,
			const uint8_t *owners, int family, const uint8_t *addr)
{
	struct rs_affinity_key key;
	uint8_t o;

	rs_fleet_key_build(&key, svc, family, addr, 0);
	o = owners[rs_fleet_bucket(rs_hash_key(&key, seed))];
	return o == RS_FLEET_NO_OWNER ? -1 : o - 1;
}

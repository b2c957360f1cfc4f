/* SPDX-License-Identifier: MIT */
/*
 * The one replica the BPF tests compare the kernel with: the daemon's own
 * code (ring_lookup(), rs_fleet_key_build(), the rules of
 * include/ringsteer/rules.h), asked the way `ringsteer lookup` asks it.
 * Every test that checks "kernel == replica" goes through here, so a
 * change of the rule changes every comparison at once.
 */
#ifndef RS_TEST_REPLICA_H
#define RS_TEST_REPLICA_H

#include <stdint.h>

#include "ring.h"

/*
 * The backend @ring gives a client of service @svc at @addr (@family,
 * network order) and @port under the words and sockets of @view; -1 when
 * none. @c, when not NULL, gets the whole choice.
 */
int replica_backend(const struct rs_ring *ring, const struct rs_service *svc,
		    const struct rs_ring_view *view, int family,
		    const uint8_t *addr, uint16_t port,
		    struct rs_ring_choice *c);

/* The same for an IPv4 client in network order. */
int replica_backend4(const struct rs_ring *ring, const struct rs_service *svc,
		     const struct rs_ring_view *view, uint32_t src,
		     struct rs_ring_choice *c);

/*
 * Fleet mode: the member index owning a client of a service with fleet
 * seed @seed and bucket owners @owners (RS_FLEET_NO_OWNER or index + 1);
 * -1 for nobody. @svc gives the key policy and prefixes.
 */
int replica_fleet_owner(const struct rs_service *svc, uint64_t seed,
			const uint8_t *owners, int family, const uint8_t *addr);

#endif /* RS_TEST_REPLICA_H */

/* SPDX-License-Identifier: MIT */
/*
 * Turning a validated configuration into data-plane state: services, binds,
 * backends and rings, and keeping each backend's socket in its SOCKMAP slot.
 * Service ids and backend ids are positions in the configuration file.
 */
#ifndef RS_CONFIG_APPLY_H
#define RS_CONFIG_APPLY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "dataplane.h"

/* What ringsteerd knows about the socket on one backend address. */
struct rs_addr_rt {
	bool has_socket;
	bool reported_missing; /* "not listening" logged once, not per retry */
	uint64_t cookie;
	pid_t owner;
};

struct rs_backend_rt {
	struct rs_addr_rt addr[RS_MAX_BACKEND_ADDRS];
};

void rs_service_from_conf(const struct rs_config *cfg, uint32_t id,
			  struct rs_service *out);
void rs_backend_from_conf(const struct rs_config *cfg, uint32_t id,
			  struct rs_backend *out);

/* Build every service's ring from the configuration (caller frees each). */
int rs_rings_build(const struct rs_config *cfg, struct rs_ring *rings);

/*
 * Write services, backends and rings, then binds, so that a destination
 * starts matching only once its ring is in place.
 */
int config_apply(struct rs_dataplane *dp, const struct rs_config *cfg);

/*
 * Make each backend's SOCKMAP slot hold the socket listening on its
 * address now: acquire missing ones, replace ones from a restarted
 * backend. Returns the number of backends with at least one socket.
 */
int sockets_reconcile(struct rs_dataplane *dp, const struct rs_config *cfg,
		      struct rs_backend_rt *rt);

#endif /* RS_CONFIG_APPLY_H */

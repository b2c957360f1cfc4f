/* SPDX-License-Identifier: MIT */
/*
 * The sockets of a generations service's backends (docs/architecture.md
 * "Generations"): every socket bound on a backend address, the newest
 * the working one, in the data plane's generation maps.
 */
#ifndef RS_GENERATIONS_H
#define RS_GENERATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dataplane.h"
#include "rs_state.h"

struct daemon;

/* Backend @bc's service has generations (UDP only). */
bool generations_on(const struct rs_config *cfg,
		    const struct rs_backend_conf *bc);

/*
 * Address @a of backend @idx (id @id): every socket bound on it in
 * rs_gen_sockets, the newest process's in the backend's slots and in
 * rs_gen_working. Keeps @rt as sockets.c keeps it for one socket.
 */
void generations_reconcile_addr(struct rs_dataplane *dp,
				const struct rs_config *cfg, size_t idx,
				uint32_t id, size_t a, struct rs_addr_rt *rt,
				double now);

/*
 * Deletes idle flow entries and counts the rest per generation (for
 * `ringsteer backends` and the metrics): on a timer, off the hot path.
 */
void generations_sweep(struct daemon *d);

/* Flows recorded on generation @cookie of backend @backend, as of the last
 * sweep; entries deleted as idle since the start. */
uint64_t generations_flows(uint32_t backend, uint64_t cookie);
uint64_t generations_swept(void);

#endif /* RS_GENERATIONS_H */

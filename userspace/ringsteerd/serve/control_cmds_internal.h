/* SPDX-License-Identifier: MIT */
/*
 * For the control_*.c command files only: the helpers several subjects
 * share and the commands the table in control_cmds.c dispatches to. The
 * rest of the daemon knows control_cmds.h.
 */
#ifndef RS_CONTROL_CMDS_INTERNAL_H
#define RS_CONTROL_CMDS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "control_cmds.h"
#include "hex.h"

/* Helpers: control_reply.h. */

/* ---- version, status, services (control_status.c) ---- */

json_t *cmd_version(struct daemon *d, json_t *req);
json_t *cmd_status(struct daemon *d, json_t *req);
json_t *cmd_services(struct daemon *d, json_t *req);

/* ---- backends, backend ACTION (control_backends.c) ---- */

json_t *cmd_backends(struct daemon *d, json_t *req);
json_t *cmd_backend(struct daemon *d, json_t *req);
/* Backend @i's QUIC server ID as the configuration writes it, or null. */
json_t *server_id_json(const struct daemon *d, size_t i);

/* ---- ring show/stats/rebuild, lookup, sim (control_ring.c) ---- */

json_t *cmd_ring(struct daemon *d, json_t *req);
json_t *cmd_lookup(struct daemon *d, json_t *req);
/*
 * control_lookup_kernel.c: the loaded program's answer for the client
 * (@client of @family, network order; @port host order) of service @s,
 * as "kernel" in @reply, the replica's answer.
 */
void lookup_kernel(struct daemon *d, size_t s, int family,
		   const uint8_t *client, uint16_t port, json_t *reply);
json_t *cmd_sim(struct daemon *d, json_t *req);

/* ---- cid, cid decode (control_cid.c) ---- */

json_t *cmd_cid(struct daemon *d, json_t *req);

/* ---- fleet status/drain/undrain (control_fleet.c) ---- */

json_t *cmd_fleet(struct daemon *d, json_t *req);

#endif /* RS_CONTROL_CMDS_INTERNAL_H */

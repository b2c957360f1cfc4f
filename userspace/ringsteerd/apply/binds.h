/* SPDX-License-Identifier: MIT */
/*
 * Services and listens of a configuration as rs_services and rs_binds,
 * and their QUIC-LB configs as rs_quic_lb.
 */
#ifndef RS_BINDS_H
#define RS_BINDS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "quic_cid.h"
#include "dataplane.h"
#include "rs_state.h"

/* The data plane's view of configured service @idx, under id @id. */
/*
 * The QUIC-LB configs of service @sc as rs_quic_lb holds them: its
 * quic_config_id (encrypted with quic_key_file, else plaintext) and the
 * previous config of a rotation. All zero for a service without cookies.
 */
void rs_service_quic_lb(const struct rs_service_conf *sc,
			struct quic_cid_keys *out);

void rs_service_from_conf(const struct rs_config *cfg, size_t idx, uint32_t id,
			  struct rs_service *out);

/*
 * What rs_binds should hold: the listens of @cfg, service @i mapped to
 * @svc_ids[i], into @keys and @vals (RS_MAX_BINDS each). Returns how many.
 * dp_sync_binds() writes them, new entries before stale ones go.
 */
size_t binds_collect(const struct rs_config *cfg, const uint32_t *svc_ids,
		     struct rs_bind_key *keys, struct rs_bind *vals);

/*
 * rs_quic_lb from @st's configuration: for each cookie service (under
 * its id in @st) its current config (encrypted with quic_key_file, else
 * plaintext) and the previous one of a rotation; every other config id
 * is not decoded. Logs what it wrote.
 */
int quic_lb_apply(struct rs_dataplane *dp, const struct rs_state *st);

#endif /* RS_BINDS_H */

/* SPDX-License-Identifier: MIT */
/* Services and listens of a configuration as rs_services and rs_binds. */
#ifndef RS_BINDS_H
#define RS_BINDS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dataplane.h"

/* The data plane's view of configured service @idx, under id @id. */
void rs_service_from_conf(const struct rs_config *cfg, size_t idx, uint32_t id,
			  struct rs_service *out);

/*
 * Make rs_binds hold exactly the listens of @cfg, service @i mapped to
 * @svc_ids[i]. New entries are written before stale ones are deleted.
 */
int binds_apply(struct rs_dataplane *dp, const struct rs_config *cfg,
		const uint32_t *svc_ids);

#endif /* RS_BINDS_H */

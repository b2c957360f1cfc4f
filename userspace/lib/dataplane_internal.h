/* SPDX-License-Identifier: MIT */
/*
 * For the dataplane*.c files only: they all reach into the loaded skeleton
 * and share two map helpers. Everyone else goes through dataplane.h.
 */
#ifndef RS_DATAPLANE_INTERNAL_H
#define RS_DATAPLANE_INTERNAL_H

#include <stdint.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dataplane.h"
#include "steer_lookup.skel.h"

/* One element with BPF_ANY; a failure is logged as "update of @what". */
int dp_map_update(struct bpf_map *map, const void *key, const void *val,
		  const char *what);

/*
 * A new fd for the inner map in @svc_id's slot of the map-in-map @outer
 * (rs_rings, rs_sticky), negative when the slot is empty. The caller
 * closes it.
 */
int dp_inner_map_fd(struct rs_dataplane *dp, struct bpf_map *outer,
		    uint32_t svc_id);

/*
 * Create the pin directory @root if missing and check it is on a bpffs;
 * failures are logged here.
 */
int dp_prepare_root(const char *root);

#endif /* RS_DATAPLANE_INTERNAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * For the dataplane*.c files only: they all reach into the loaded skeleton
 * and share two map helpers. Everyone else goes through dataplane.h.
 */
#ifndef RS_DATAPLANE_INTERNAL_H
#define RS_DATAPLANE_INTERNAL_H

#include <stddef.h>
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
 * BTF for an inner map of __u32 keys and @value_type values (a struct of
 * abi.h), so that `bpftool map dump` shows its fields; left out when the
 * object's BTF lacks either type.
 */
void dp_inner_map_btf(struct rs_dataplane *dp, const char *value_type,
		      struct bpf_map_create_opts *opts);

/*
 * Create the pin directory @root if missing and check it is on a bpffs;
 * failures are logged here.
 */
int dp_prepare_root(const char *root);

/*
 * One __u32 field of rs_meta, at @offset (offsetof(struct rs_meta, ...)),
 * the others left as they are: several writers own one field each.
 */
int dp_meta_set(struct rs_dataplane *dp, size_t offset, uint32_t value);
/* rs_meta.netns_cookie, the other fields left as they are. */
int dp_meta_set_netns(struct rs_dataplane *dp, uint64_t cookie);

/* mkdir -p with mode 0700. */
int dp_mkdir_p(const char *path);

/* Kernel id of the map behind @fd, 0 when there is none. */
uint32_t dp_map_id_of_fd(int fd);

/*
 * Programs loaded next to steer_lookup share its maps (dataplane_share.c).
 * Before loading @obj: its maps sized as steer_lookup's (dp_size_maps()),
 * and for a data plane without a root, steer_lookup's map fds reused
 * (with a root, pin_root_path shares the pins).
 * After loading: every map of @obj must be steer_lookup's; otherwise
 * -EPROTO, logged with @prog's name.
 */
void dp_share_unpinned(struct rs_dataplane *dp, struct bpf_object *obj);
int dp_check_shared(struct rs_dataplane *dp, struct bpf_object *obj,
		    const char *prog);

/*
 * ---- spare ring maps (dataplane_ring_spare.c), for dataplane_rings.c ----
 * A ring map this data plane holds: its fd, its writable mapping (NULL
 * until it is mapped) and its slots.
 */
struct ring_map {
	int fd;
	void *mem;
	size_t len;
	uint32_t slots;
	uint32_t id; /* the kernel's map id */
};

/*
 * Service @svc_id's spare for a ring of @slots, moved into *@out (the
 * caller owns it now): 0, or -ENOENT (none, or not the size:
 * ring_map_fits()), -EAGAIN (no grace period can be proved), another
 * negative errno (it could not be mapped; it is let go).
 */
int dp_ring_spare_take(struct rs_dataplane *dp, uint32_t svc_id, uint32_t slots,
		       struct ring_map *out);
/* A spare taken and not swapped in goes back (*@m is reset). */
void dp_ring_spare_put(struct rs_dataplane *dp, uint32_t svc_id,
		       struct ring_map *m);
/*
 * After a swap of service @svc_id's ring: the map it replaced (@old_fd,
 * which this takes, -1 when there was none) becomes the spare when it
 * could take the ring swapped in (@used slots), with its mapping when
 * this data plane made it and the caller gave it back in *@installed
 * (then cleared there); @now is the map swapped in, whose mapping the
 * caller keeps (@handed_out) or this data plane does.
 */
void dp_ring_swapped(struct rs_dataplane *dp, uint32_t svc_id, int old_fd,
		     struct rs_ring *installed, const struct ring_map *now,
		     uint32_t used, bool handed_out);
/* The service's ring is gone: its spare and the mapping held go too. */
void dp_ring_spare_drop(struct rs_dataplane *dp, uint32_t svc_id);
/* Every spare and mapping held, at dp_close(). */
void dp_rings_release(struct rs_dataplane *dp);

#endif /* RS_DATAPLANE_INTERNAL_H */

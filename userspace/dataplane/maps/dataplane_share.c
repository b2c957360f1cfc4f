// SPDX-License-Identifier: MIT
/*
 * The programs loaded next to steer_lookup (steer_tc, steer_sockops) must
 * work on the very maps steer_lookup uses, through the same pins or,
 * unpinned, the same fds: a map of their own would steer by a state
 * nobody writes, or write one nobody reads.
 */
#include <errno.h>
#include <string.h>

#include "dataplane_internal.h"
#include "log.h"

uint32_t dp_map_id_of_fd(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

void dp_share_unpinned(struct rs_dataplane *dp, struct bpf_object *obj)
{
	struct bpf_map *m, *peer;

	/* Pinned, a map of another size would be refused as not ours. */
	dp_size_maps(obj);
	if (dp->root[0])
		return;
	bpf_object__for_each_map(m, obj)
	{
		if (bpf_map__is_internal(m))
			continue;
		bpf_map__set_pin_path(m, NULL);
		peer = bpf_object__find_map_by_name(dp->skel->obj,
						    bpf_map__name(m));
		if (peer)
			bpf_map__reuse_fd(m, bpf_map__fd(peer));
	}
}

int dp_check_shared(struct rs_dataplane *dp, struct bpf_object *obj,
		    const char *prog)
{
	struct bpf_map *m, *peer;

	bpf_object__for_each_map(m, obj)
	{
		if (bpf_map__is_internal(m))
			continue;
		peer = bpf_object__find_map_by_name(dp->skel->obj,
						    bpf_map__name(m));
		/* steer_tc_kfunc's crypto contexts are its own, unpinned. */
		if (!peer && !bpf_map__pin_path(m))
			continue;
		if (!peer || dp_map_id_of_fd(bpf_map__fd(m)) !=
				     dp_map_id_of_fd(bpf_map__fd(peer))) {
			rs_err("bpf: %s's map %s is not steer_lookup's: "
			       "refusing to run it",
			       prog, bpf_map__name(m));
			return -EPROTO;
		}
	}
	return 0;
}

int dp_meta_set_netns(struct rs_dataplane *dp, uint64_t cookie)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_meta);
	struct rs_meta meta;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -errno;
	meta.netns_cookie = cookie;
	return dp_map_update(dp->skel->maps.rs_meta, &zero, &meta, "rs_meta");
}

int dp_meta_set(struct rs_dataplane *dp, size_t offset, uint32_t value)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_meta);
	struct rs_meta meta;
	__u32 zero = 0;

	if (offset + sizeof(value) > sizeof(meta))
		return -EINVAL;
	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -errno;
	memcpy((char *)&meta + offset, &value, sizeof(value));
	return dp_map_update(dp->skel->maps.rs_meta, &zero, &meta, "rs_meta");
}

// SPDX-License-Identifier: MIT
/*
 * steer_tc, loaded only while a service has cookie = quic. It must work on
 * the very maps steer_lookup uses, through the same pins or, unpinned, the
 * same fds: a map of its own would steer by a state nobody writes. Its
 * filters on the interfaces are tc_attach.c's business.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"
#include "steer_tc.skel.h"

static uint32_t map_id_of_fd(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

/*
 * Every map of steer_tc must be the very map steer_lookup uses: a map
 * created afresh (a pin missing, a layout refused) would leave the TC
 * program steering by a state nobody writes.
 */
static int tc_maps_shared(struct rs_dataplane *dp)
{
	struct bpf_map *m, *peer;

	bpf_object__for_each_map(m, dp->tc_skel->obj)
	{
		if (bpf_map__is_internal(m))
			continue;
		peer = bpf_object__find_map_by_name(dp->skel->obj,
						    bpf_map__name(m));
		if (!peer || map_id_of_fd(bpf_map__fd(m)) !=
				     map_id_of_fd(bpf_map__fd(peer))) {
			rs_err("bpf: steer_tc's map %s is not steer_lookup's: "
			       "refusing to run it",
			       bpf_map__name(m));
			return -EPROTO;
		}
	}
	return 0;
}

int dp_tc_open(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .pin_root_path = dp->root[0] ? dp->root : NULL);
	struct bpf_map *m, *peer;
	int err;

	if (dp->tc_skel)
		return 0;
	dp->tc_skel = steer_tc_bpf__open_opts(&opts);
	if (!dp->tc_skel) {
		err = -errno;
		rs_err("bpf: cannot open steer_tc: %s", strerror(-err));
		return err;
	}
	if (!dp->root[0]) {
		/* No pins: share steer_lookup's maps by fd. */
		bpf_object__for_each_map(m, dp->tc_skel->obj)
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
	err = steer_tc_bpf__load(dp->tc_skel);
	if (err) {
		rs_err("bpf: cannot load steer_tc next to the maps under %s: "
		       "%s",
		       dp->root[0] ? dp->root : "(none)", strerror(-err));
		goto fail;
	}
	err = tc_maps_shared(dp);
	if (err)
		goto fail;
	return 0;
fail:
	steer_tc_bpf__destroy(dp->tc_skel);
	dp->tc_skel = NULL;
	return err;
}

void dp_tc_close(struct rs_dataplane *dp)
{
	if (dp->tc_skel)
		steer_tc_bpf__destroy(dp->tc_skel);
	dp->tc_skel = NULL;
}

bool dp_tc_loaded(const struct rs_dataplane *dp)
{
	return dp->tc_skel != NULL;
}

int dp_tc_prog_fd(struct rs_dataplane *dp)
{
	if (!dp->tc_skel)
		return -1;
	return bpf_program__fd(dp->tc_skel->progs.steer_tc);
}

uint32_t dp_tc_program_id(struct rs_dataplane *dp)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (!dp->tc_skel ||
	    bpf_obj_get_info_by_fd(bpf_program__fd(dp->tc_skel->progs.steer_tc),
				   &info, &len))
		return 0;
	return info.id;
}

uint32_t dp_sockets_map_id(struct rs_dataplane *dp)
{
	return map_id_of_fd(bpf_map__fd(dp->skel->maps.rs_sockets));
}

uint32_t dp_pinned_sockets_map_id(const char *root)
{
	char path[PATH_MAX + 16];
	uint32_t id;
	int fd;

	snprintf(path, sizeof(path), "%s/rs_sockets", root);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	id = map_id_of_fd(fd);
	close(fd);
	return id;
}

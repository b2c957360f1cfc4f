// SPDX-License-Identifier: MIT
/*
 * steer_tc, loaded only while a service has cookie = quic, on the very
 * maps steer_lookup uses (dataplane_share.c). Its filters on the
 * interfaces are tc_attach.c's business.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"
#include "steer_tc.skel.h"

int dp_tc_open(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .pin_root_path = dp->root[0] ? dp->root : NULL);
	int err;

	if (dp->tc_skel)
		return 0;
	dp->tc_skel = steer_tc_bpf__open_opts(&opts);
	if (!dp->tc_skel) {
		err = -errno;
		rs_err("bpf: cannot open steer_tc: %s", strerror(-err));
		return err;
	}
	dp_share_unpinned(dp, dp->tc_skel->obj);
	err = steer_tc_bpf__load(dp->tc_skel);
	if (err) {
		rs_err("bpf: cannot load steer_tc next to the maps under %s: "
		       "%s",
		       dp->root[0] ? dp->root : "(none)", strerror(-err));
		goto fail;
	}
	err = dp_check_shared(dp, dp->tc_skel->obj, "steer_tc");
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
	return dp_map_id_of_fd(bpf_map__fd(dp->skel->maps.rs_sockets));
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
	id = dp_map_id_of_fd(fd);
	close(fd);
	return id;
}

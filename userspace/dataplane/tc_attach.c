// SPDX-License-Identifier: MIT
/*
 * steer_tc as a cls_bpf filter on clsact ingress, through libbpf's tc API
 * (bpf_tc_hook_create, bpf_tc_attach, bpf_tc_query, bpf_tc_detach). See
 * tc_attach.h for what counts as "our" filter.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tc_attach.h"

/* A program of ours uses a handful of maps; more means it is not ours. */
#define MAX_PROG_MAPS 64

/* Name of program @prog_id, and whether it uses map @map_id. */
static int prog_describe(uint32_t prog_id, uint32_t map_id, char *name,
			 size_t len, bool *uses_map)
{
	uint32_t ids[MAX_PROG_MAPS];
	struct bpf_prog_info info;
	__u32 info_len = sizeof(info);
	int fd, err = 0;

	*uses_map = false;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = MAX_PROG_MAPS;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len)) {
		err = -errno;
		goto out;
	}
	snprintf(name, len, "%s", info.name);
	for (uint32_t i = 0; i < info.nr_map_ids && i < MAX_PROG_MAPS; i++)
		if (ids[i] == map_id)
			*uses_map = true;
out:
	close(fd);
	return err;
}

/*
 * "Is our filter there?" is asked of interfaces without a clsact qdisc
 * too; libbpf would print the kernel's "Parent Qdisc doesn't exists" each
 * time. The daemon is single-threaded, so muting libbpf here is safe.
 */
static int quiet_query(struct bpf_tc_hook *hook, struct bpf_tc_opts *opts)
{
	libbpf_print_fn_t prev = libbpf_set_print(NULL);
	int err = bpf_tc_query(hook, opts);

	libbpf_set_print(prev);
	return err;
}

/*
 * An existing clsact qdisc is fine; libbpf would print the kernel's
 * "Exclusivity flag on, cannot modify" for it.
 */
static int quiet_hook_create(struct bpf_tc_hook *hook)
{
	libbpf_print_fn_t prev = libbpf_set_print(NULL);
	int err = bpf_tc_hook_create(hook);

	libbpf_set_print(prev);
	return err;
}

int tc_query(int ifindex, uint32_t map_id, struct rs_tc_filter *out)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = RS_TC_HANDLE,
		    .priority = RS_TC_PRIORITY);
	bool uses_map;
	int err;

	memset(out, 0, sizeof(*out));
	err = quiet_query(&hook, &opts);
	/* No clsact qdisc at all reads as EINVAL: no filter either. */
	if (err == -EINVAL)
		return -ENOENT;
	if (err)
		return err;
	out->prog_id = opts.prog_id;
	err = prog_describe(opts.prog_id, map_id, out->prog_name,
			    sizeof(out->prog_name), &uses_map);
	if (err)
		return err;
	out->ours = !strcmp(out->prog_name, RS_TC_PROG_NAME) &&
		    (map_id == 0 || uses_map);
	return 0;
}

int tc_attach(int ifindex, int prog_fd, uint32_t map_id, uint32_t also_ours,
	      bool *replaced, int *kept_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = RS_TC_HANDLE,
		    .priority = RS_TC_PRIORITY, .prog_fd = prog_fd);
	struct rs_tc_filter cur;
	int err;

	*replaced = false;
	*kept_fd = -1;
	err = tc_query(ifindex, map_id, &cur);
	/* The filter of the data plane an upgrade retires is ours to take. */
	if (err == 0 && !cur.ours && also_ours) {
		err = tc_query(ifindex, also_ours, &cur);
		if (err == 0 && cur.ours)
			*kept_fd = bpf_prog_get_fd_by_id(cur.prog_id);
	}
	if (err == 0 && !cur.ours)
		return -EEXIST;
	if (err && err != -ENOENT)
		return err;
	if (err == 0) {
		opts.flags = BPF_TC_F_REPLACE;
		*replaced = true;
	}
	err = quiet_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

int tc_put_back(int ifindex, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = RS_TC_HANDLE,
		    .priority = RS_TC_PRIORITY, .prog_fd = prog_fd,
		    .flags = BPF_TC_F_REPLACE);

	return bpf_tc_attach(&hook, &opts);
}

int tc_detach(int ifindex, uint32_t map_id)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = RS_TC_HANDLE,
		    .priority = RS_TC_PRIORITY);
	struct rs_tc_filter cur;
	int err = tc_query(ifindex, map_id, &cur);

	if (err)
		return err;
	if (!cur.ours)
		return -EEXIST;
	err = bpf_tc_detach(&hook, &opts);
	return err == -EINVAL ? -ENOENT : err;
}

const char *tc_strerror(int err)
{
	if (err == -EEXIST)
		return "another filter (not ringsteer's) holds its pref and "
		       "handle";
	return strerror(-err);
}

// SPDX-License-Identifier: MIT
/*
 * steer_sockops at the root of the cgroup2 hierarchy: it counts the
 * connections accepted by the backends' listeners (rs_listen) and writes
 * their sticky entries when the handshake completes. A cgroup-attached program
 * sees the sockets of every cgroup below its own, and the root is above all of
 * them, whatever process or network namespace the backends run in.
 *
 * Hosts that mount only cgroup v1 have no cgroup2 directory to attach at,
 * so the daemon mounts the hierarchy for the moment of the attach (in a
 * fresh directory under its run directory) and unmounts it at once: the
 * link holds the cgroup, a mount is only a way to name it. The link is
 * pinned next to steer_lookup's, so steering survives the daemon, a
 * restart swaps the program behind it, and --detach removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"
#include "steer_sockops.skel.h"

static int sockops_load(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .pin_root_path = dp->root[0] ? dp->root : NULL);
	int err;

	dp->sockops_skel = steer_sockops_bpf__open_opts(&opts);
	if (!dp->sockops_skel)
		return -errno;
	dp_share_unpinned(dp, dp->sockops_skel->obj);
	err = steer_sockops_bpf__load(dp->sockops_skel);
	if (!err)
		err = dp_check_shared(dp, dp->sockops_skel->obj,
				      "steer_sockops");
	if (err) {
		steer_sockops_bpf__destroy(dp->sockops_skel);
		dp->sockops_skel = NULL;
	}
	return err;
}

/* A new link at the cgroup2 root, through a mount made for the moment. */
static int sockops_link_new(struct rs_dataplane *dp, const char *run_dir)
{
	char dir[PATH_MAX];
	struct bpf_link *link;
	int cg_fd, err;

	err = dp_mkdir_p(run_dir);
	if (err)
		return err;
	if (snprintf(dir, sizeof(dir), "%s/cgroup2-XXXXXX", run_dir) >=
	    (int)sizeof(dir))
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	if (mount("cgroup2", dir, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL)) {
		err = -errno;
		rmdir(dir);
		return err;
	}
	cg_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = cg_fd < 0 ? -errno : 0;
	if (!err) {
		link = bpf_program__attach_cgroup(
			dp->sockops_skel->progs.steer_sockops, cg_fd);
		err = libbpf_get_error(link);
		close(cg_fd);
	}
	umount2(dir, MNT_DETACH);
	rmdir(dir);
	if (err)
		return err;
	if (dp->root[0]) {
		char pin[PATH_MAX + 32];

		snprintf(pin, sizeof(pin), "%s/%s", dp->root,
			 RS_SOCKOPS_LINK_PIN_NAME);
		err = bpf_link__pin(link, pin);
		if (err) {
			bpf_link__destroy(link);
			return err;
		}
	}
	dp->sockops_link_fd = dup(bpf_link__fd(link));
	/* Pinned (or held by the fd): the kernel object outlives this. */
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return dp->sockops_link_fd < 0 ? -errno : 0;
}

/* The pinned link, with our program swapped in; -ENOENT if none. */
static int sockops_link_adopt(struct rs_dataplane *dp)
{
	char pin[PATH_MAX + 32];
	int fd;

	if (!dp->root[0])
		return -ENOENT;
	snprintf(pin, sizeof(pin), "%s/%s", dp->root, RS_SOCKOPS_LINK_PIN_NAME);
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return -errno;
	if (bpf_link_update(
		    fd, bpf_program__fd(dp->sockops_skel->progs.steer_sockops),
		    NULL)) {
		int err = -errno;

		close(fd);
		/* Not -ENOENT: a pin we cannot update must not be replaced. */
		return err == -ENOENT ? -EINVAL : err;
	}
	dp->sockops_link_fd = fd;
	dp->adopted_sockops_link = true;
	return 0;
}

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/*
 * The cookie of the caller's network namespace, the one steer_lookup is
 * attached to (Linux 5.14); 0 when the kernel cannot say.
 */
static uint64_t own_netns_cookie(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
		cookie = 0;
	close(fd);
	return cookie;
}

int dp_sockops_attach(struct rs_dataplane *dp, const char *near)
{
	char buf[PATH_MAX];
	int err;

	if (dp->sockops_link_fd >= 0)
		return 0;
	snprintf(buf, sizeof(buf), "%s", near);
	err = sockops_load(dp);
	if (!err) {
		err = sockops_link_adopt(dp);
		if (err == -ENOENT)
			err = sockops_link_new(dp, dirname(buf));
	}
	if (err) {
		rs_warn("bpf: steer_sockops not attached at the cgroup2 root "
			"(%s): TCP sticky entries are written at the SYN, "
			"where SYNs from forged addresses can evict real "
			"clients",
			strerror(-err));
		dp_sockops_close(dp);
		dp_meta_set(dp, offsetof(struct rs_meta, handoff), 0);
		return err;
	}
	/* Before hand-offs are read: only this namespace's connections. */
	dp_meta_set_netns(dp, own_netns_cookie());
	err = dp_meta_set(dp, offsetof(struct rs_meta, handoff), 1);
	if (!err)
		rs_info("bpf: steer_sockops %s at the cgroup2 root (%s/%s): "
			"TCP "
			"sticky entries are written at establishment",
			dp->adopted_sockops_link ? "swapped in" : "attached",
			dp->root[0] ? dp->root : "(unpinned)",
			RS_SOCKOPS_LINK_PIN_NAME);
	return err;
}

void dp_sockops_close(struct rs_dataplane *dp)
{
	if (dp->sockops_link_fd >= 0)
		close(dp->sockops_link_fd);
	dp->sockops_link_fd = -1;
	if (dp->sockops_skel)
		steer_sockops_bpf__destroy(dp->sockops_skel);
	dp->sockops_skel = NULL;
}

uint32_t dp_sockops_program_id(struct rs_dataplane *dp)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (dp->sockops_link_fd < 0 || !dp->sockops_skel ||
	    bpf_obj_get_info_by_fd(
		    bpf_program__fd(dp->sockops_skel->progs.steer_sockops),
		    &info, &len))
		return 0;
	return info.id;
}

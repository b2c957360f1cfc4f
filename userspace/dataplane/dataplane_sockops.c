// SPDX-License-Identifier: MIT
/*
 * steer_sockops on the cgroup2 hierarchy: it counts the connections
 * accepted by the backends' listeners (rs_listen) and writes their sticky
 * entries when the handshake completes. A cgroup-attached program sees the
 * sockets of every cgroup below its own: at the root, every socket of the
 * host, whatever process or network namespace owns it; at the cgroup
 * `[global] sockops_cgroup` names (the slice the caches run in, say), only
 * the sockets created there, which the backends' listeners and so their
 * accepted children must be (an accepted socket has its listener's
 * cgroup). Every other TCP socket of the host then never runs it.
 *
 * The hierarchy is reached through an existing cgroup2 mount; hosts that
 * mount only cgroup v1 have none, so the daemon mounts it for the moment
 * of the attach (in a fresh directory under its run directory) and
 * unmounts it at once: the link holds the cgroup, a mount is only a way to
 * name it. The link is pinned next to steer_lookup's, so steering
 * survives the daemon, a restart swaps the program behind it (or moves it
 * when sockops_cgroup changed), and --detach removes it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/*
 * The root of the cgroup2 hierarchy as a directory fd: an existing mount
 * of it (/sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a
 * hybrid one), else a mount made for the moment in a fresh directory under
 * @run_dir, whose path goes to @tmp (to be unmounted by cgroup2_done()).
 * Borrowing a mount first means a daemon killed during the attach leaves
 * no mount of its own behind.
 */
static int cgroup2_root(const char *run_dir, char *tmp, size_t n)
{
	char line[4096], dir[PATH_MAX], root[PATH_MAX], type[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int fd = -1, err;

	tmp[0] = '\0';
	while (f && fd < 0 && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - TYPE SOURCE ... */
		if (!sep ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, dir) != 2 ||
		    sscanf(sep + 3, "%63s", type) != 1 ||
		    strcmp(type, "cgroup2") || strcmp(root, "/") ||
		    strchr(dir, '\\'))
			continue;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (f)
		fclose(f);
	if (fd >= 0)
		return fd;
	err = dp_mkdir_p(run_dir);
	if (err)
		return err;
	if (snprintf(tmp, n, "%s/cgroup2-XXXXXX", run_dir) >= (int)n) {
		tmp[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(tmp)) {
		err = -errno;
		tmp[0] = '\0';
		return err;
	}
	if (mount("cgroup2", tmp, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL)) {
		err = -errno;
		rmdir(tmp);
		tmp[0] = '\0';
		return err;
	}
	fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void cgroup2_done(int root_fd, char *tmp)
{
	if (root_fd >= 0)
		close(root_fd);
	if (!tmp[0])
		return;
	umount2(tmp, MNT_DETACH);
	rmdir(tmp);
	tmp[0] = '\0';
}

/*
 * The cgroup @path names (as /proc/PID/cgroup shows it: "/" is the root)
 * as an fd, and its id (the cgroup2 directory's inode number, which
 * bpf_link_info and sock_diag report). A cgroup that does not exist falls
 * back to the root, logged here (the root covers every socket), and @path
 * becomes "/".
 */
static int cgroup_open(int root_fd, char *path, uint64_t *id)
{
	struct stat st;
	int fd;

	fd = path[1] ? openat(root_fd, path + 1,
			      O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		     : -1;
	if (path[1] && fd < 0) {
		rs_warn("bpf: sockops_cgroup %s: %s under the cgroup2 root; "
			"steer_sockops goes to the root instead, where every "
			"TCP socket of the host runs it",
			path, strerror(errno));
		/* Where it is attached, for status and the scope check. */
		strcpy(path, "/");
	}
	if (fd < 0)
		fd = dup(root_fd);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*id = st.st_ino;
	return fd;
}

/* A new link at the cgroup @cg_fd, pinned as @pin when there are pins. */
static int sockops_link_new(struct rs_dataplane *dp, int cg_fd, const char *pin)
{
	struct bpf_link *link;
	int err;

	link = bpf_program__attach_cgroup(dp->sockops_skel->progs.steer_sockops,
					  cg_fd);
	err = libbpf_get_error(link);
	if (err)
		return err;
	if (pin) {
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

static uint64_t link_cgroup_id(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len) ||
	    info.type != BPF_LINK_TYPE_CGROUP)
		return 0;
	return info.cgroup.cgroup_id;
}

/*
 * The pinned link: our program swapped in behind it when it is attached
 * at the cgroup @cg_id; when it is attached elsewhere (sockops_cgroup was
 * changed), a new link at @cg_fd takes its pin first and the old one is
 * detached after. In between, sockets under both run the program twice,
 * which counts nothing twice (RS_CONN_COUNTED). -ENOENT if no pin.
 */
static int sockops_link_adopt(struct rs_dataplane *dp, int cg_fd,
			      uint64_t cg_id, const char *cg_path)
{
	char pin[PATH_MAX + 32], next[PATH_MAX + 40];
	uint64_t was;
	int fd, err;

	if (!dp->root[0])
		return -ENOENT;
	snprintf(pin, sizeof(pin), "%s/%s", dp->root, RS_SOCKOPS_LINK_PIN_NAME);
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return -errno;
	was = link_cgroup_id(fd);
	if (was && was != cg_id) {
		/* bpffs refuses names with a dot (EPERM). */
		snprintf(next, sizeof(next), "%s_next", pin);
		unlink(next);
		err = sockops_link_new(dp, cg_fd, next);
		if (!err && rename(next, pin)) {
			err = -errno;
			unlink(next);
		}
		if (err) {
			if (dp->sockops_link_fd >= 0)
				close(dp->sockops_link_fd);
			dp->sockops_link_fd = -1;
			close(fd);
			return err == -ENOENT ? -EINVAL : err;
		}
		bpf_link_detach(fd);
		close(fd);
		rs_info("bpf: steer_sockops moved to cgroup %s (id %llu) from "
			"cgroup id %llu",
			cg_path, (unsigned long long)cg_id,
			(unsigned long long)was);
		dp->adopted_sockops_link = false;
		return 0;
	}
	if (bpf_link_update(
		    fd, bpf_program__fd(dp->sockops_skel->progs.steer_sockops),
		    NULL)) {
		err = -errno;
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

int dp_sockops_attach(struct rs_dataplane *dp, const char *near,
		      const char *cgroup)
{
	char buf[PATH_MAX], tmp[PATH_MAX], pin[PATH_MAX + 32];
	int root_fd, cg_fd = -1, err;
	uint64_t cg_id = 0;

	if (dp->sockops_link_fd >= 0)
		return 0;
	snprintf(buf, sizeof(buf), "%s", near);
	snprintf(dp->sockops_cgroup, sizeof(dp->sockops_cgroup), "%s",
		 cgroup && cgroup[0] ? cgroup : "/");
	root_fd = cgroup2_root(dirname(buf), tmp, sizeof(tmp));
	err = root_fd < 0 ? root_fd : 0;
	if (!err) {
		cg_fd = cgroup_open(root_fd, dp->sockops_cgroup, &cg_id);
		err = cg_fd < 0 ? cg_fd : 0;
	}
	if (!err)
		err = sockops_load(dp);
	if (!err) {
		err = sockops_link_adopt(dp, cg_fd, cg_id, dp->sockops_cgroup);
		if (err == -ENOENT) {
			snprintf(pin, sizeof(pin), "%s/%s", dp->root,
				 RS_SOCKOPS_LINK_PIN_NAME);
			err = sockops_link_new(dp, cg_fd,
					       dp->root[0] ? pin : NULL);
		}
	}
	if (cg_fd >= 0)
		close(cg_fd);
	cgroup2_done(root_fd, tmp);
	dp->sockops_cgroup_id = err ? 0 : cg_id;
	if (err) {
		rs_warn("bpf: steer_sockops not attached at cgroup %s (%s): "
			"TCP sticky entries are written at the SYN, where SYNs "
			"from forged addresses can evict real clients",
			dp->sockops_cgroup, strerror(-err));
		dp_sockops_close(dp);
		dp_meta_set(dp, offsetof(struct rs_meta, handoff), 0);
		return err;
	}
	/* Before hand-offs are read: only this namespace's connections. */
	dp_meta_set_netns(dp, own_netns_cookie());
	err = dp_meta_set(dp, offsetof(struct rs_meta, handoff), 1);
	if (!err)
		rs_info("bpf: steer_sockops %s at %s%s (%s/%s): TCP sticky "
			"entries are written at establishment",
			dp->adopted_sockops_link ? "swapped in" : "attached",
			strcmp(dp->sockops_cgroup, "/") ? "cgroup "
							: "the cgroup2 root",
			strcmp(dp->sockops_cgroup, "/") ? dp->sockops_cgroup
							: "",
			dp->root[0] ? dp->root : "(unpinned)",
			RS_SOCKOPS_LINK_PIN_NAME);
	return err;
}

/* The ids of @dir_fd's cgroup and of every cgroup below it, into @ids. */
static int subtree_ids(int dir_fd, uint64_t **ids, size_t *n, size_t *cap,
		       int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int err = 0;

	if (fstat(dir_fd, &st)) {
		close(dir_fd);
		return -errno;
	}
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		uint64_t *q = reallocarray(*ids, c, sizeof(**ids));

		if (!q) {
			close(dir_fd);
			return -ENOMEM;
		}
		*ids = q;
		*cap = c;
	}
	(*ids)[(*n)++] = st.st_ino;
	dir = fdopendir(dir_fd);
	if (!dir) {
		close(dir_fd);
		return -errno;
	}
	/* cgroup2 nests far less deep; the bound keeps a loop out. */
	while (!err && depth < 64 && (de = readdir(dir))) {
		int fd;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		fd = openat(dirfd(dir), de->d_name,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			err = subtree_ids(fd, ids, n, cap, depth + 1);
	}
	closedir(dir);
	return err;
}

int dp_sockops_scope(struct rs_dataplane *dp, const char *near, uint64_t **ids,
		     size_t *n)
{
	char buf[PATH_MAX], tmp[PATH_MAX];
	size_t cap = 0;
	int root_fd, fd, err;

	*ids = NULL;
	*n = 0;
	if (!dp->sockops_cgroup_id || !strcmp(dp->sockops_cgroup, "/"))
		return 0;
	snprintf(buf, sizeof(buf), "%s", near);
	root_fd = cgroup2_root(dirname(buf), tmp, sizeof(tmp));
	if (root_fd < 0)
		return root_fd;
	fd = openat(root_fd, dp->sockops_cgroup + 1,
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = fd < 0 ? -errno : subtree_ids(fd, ids, n, &cap, 0);
	cgroup2_done(root_fd, tmp);
	if (!err && (!*n || (*ids)[0] != dp->sockops_cgroup_id))
		err = -ESTALE; /* not the cgroup the link is attached at */
	if (err) {
		free(*ids);
		*ids = NULL;
		*n = 0;
	}
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

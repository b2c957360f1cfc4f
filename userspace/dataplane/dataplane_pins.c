// SPDX-License-Identifier: MIT
/*
 * Guarding the pinned state: one daemon per pin directory (a flock() on the
 * directory), and a running daemon putting back pins removed under it. A
 * pin is only a name; without it a restart creates fresh maps or a second
 * link, and a stop drops the last reference to an unpinned link, which
 * detaches steering.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"

/*
 * The pid /proc/locks shows for a flock() on @dev/@ino: translated into our
 * pid namespace by the kernel, and there is no pid file to go stale.
 */
static pid_t flock_holder(dev_t dev, ino_t ino)
{
	char line[256], want[64];
	pid_t pid = 0;
	FILE *f;

	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%02x:%02x:%lu", major(dev), minor(dev),
		 (unsigned long)ino);
	while (fgets(line, sizeof(line), f)) {
		char type[16], id[64];
		int p;

		/* "1: FLOCK  ADVISORY  WRITE 1234 00:27:1875834 0 EOF"; a
		 * waiter's line has "->" where FLOCK is. */
		if (sscanf(line, "%*d: %15s %*s %*s %d %63s", type, &p, id) ==
			    3 &&
		    !strcmp(type, "FLOCK") && !strcmp(id, want) && p > 0) {
			pid = p;
			break;
		}
	}
	fclose(f);
	return pid;
}

int dp_pins_lock(struct rs_pins_lock *lk, const char *root, bool create,
		 pid_t *holder)
{
	struct stat st;
	int fd, err;

	lk->fd = -1;
	*holder = 0;
	if (create) {
		err = dp_prepare_root(root);
		if (err)
			return err;
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err != -ENOENT)
			rs_err("bpffs: cannot open %s: %s", root,
			       strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		rs_err("bpffs: cannot stat %s: %s", root, strerror(-err));
		close(fd);
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (err == -EWOULDBLOCK) {
			*holder = flock_holder(st.st_dev, st.st_ino);
			err = -EBUSY;
		} else {
			rs_err("bpffs: cannot lock %s: %s", root,
			       strerror(-err));
		}
		close(fd);
		return err;
	}
	lk->fd = fd;
	lk->dev = st.st_dev;
	lk->ino = st.st_ino;
	lk->failing = false;
	return 0;
}

void dp_pins_unlock(struct rs_pins_lock *lk)
{
	if (lk->fd >= 0)
		close(lk->fd);
	lk->fd = -1;
}

/* The directory we locked is gone or replaced: make it again, lock that. */
static int check_root(struct rs_dataplane *dp, struct rs_pins_lock *lk)
{
	struct rs_pins_lock fresh;
	struct stat st;
	pid_t holder = 0;
	int err;

	if (!stat(dp->root, &st) && st.st_dev == lk->dev &&
	    st.st_ino == lk->ino)
		return 0;
	/* Its parent is the bpffs it was made on: mkdir, not dp_prepare_root,
	 * which would log every second while this fails. */
	if (mkdir(dp->root, 0700) && errno != EEXIST)
		err = -errno;
	else
		err = dp_pins_lock(&fresh, dp->root, false, &holder);
	if (err) {
		if (!lk->failing && err == -EBUSY)
			rs_err("bpffs: %s was removed under this daemon and "
			       "another process (pid %d) holds the new one: "
			       "its pins are no longer kept here",
			       dp->root, (int)holder);
		else if (!lk->failing)
			rs_err("bpffs: %s was removed under this daemon and "
			       "cannot be made again: %s",
			       dp->root, strerror(-err));
		lk->failing = true;
		return err;
	}
	dp_pins_unlock(lk);
	*lk = fresh;
	rs_warn("bpffs: %s was removed under the running daemon: made it "
		"again",
		dp->root);
	return 1;
}

/* 1 when @path was missing and @fd is pinned there again. */
static int repin(int fd, const char *path)
{
	struct stat st;
	int err;

	if (!stat(path, &st) || errno != ENOENT)
		return 0;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		rs_err("bpf: %s was unpinned under the running daemon and "
		       "cannot be pinned again: %s",
		       path, strerror(-err));
		return err;
	}
	rs_warn("bpf: %s was unpinned under the running daemon: pinned again",
		path);
	return 1;
}

static uint32_t link_id(int fd)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/*
 * A netns link detached behind our back (bpftool link detach, an older
 * `ringsteerd --detach`) reports no netns: steering stopped, attach again.
 */
static int check_link(struct rs_dataplane *dp, const char *path)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	int pinned, err;

	if (dp->link_fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(dp->link_fd, &info, &len) ||
	    info.netns.netns_ino)
		return repin(dp->link_fd, path);
	rs_warn("bpf: sk_lookup link %u was detached under the running "
		"daemon: attaching again",
		info.id);
	pinned = bpf_obj_get(path);
	if (pinned >= 0) {
		if (link_id(pinned) == info.id)
			unlink(path);
		close(pinned);
	}
	close(dp->link_fd);
	dp->link_fd = -1;
	err = dp_attach(dp);
	return err ? err : 1;
}

int dp_pins_check(struct rs_dataplane *dp, struct rs_pins_lock *lk)
{
	char path[PATH_MAX + 32];
	struct bpf_map *map;
	int n, err, first_err = 0;

	if (!dp->skel || !dp->root[0] || lk->fd < 0)
		return 0;
	n = check_root(dp, lk);
	if (n < 0)
		return n;
	bpf_object__for_each_map(map, dp->skel->obj)
	{
		const char *pin = bpf_map__pin_path(map);

		if (!pin)
			continue;
		err = repin(bpf_map__fd(map), pin);
		if (err < 0 && !first_err)
			first_err = err;
		n += err > 0;
	}
	snprintf(path, sizeof(path), "%s/%s", dp->root, RS_LINK_PIN_NAME);
	err = check_link(dp, path);
	if (err < 0 && !first_err)
		first_err = err;
	n += err > 0;
	/* The sockops link holds its cgroup: only its pin can go missing. */
	if (dp->sockops_link_fd >= 0) {
		snprintf(path, sizeof(path), "%s/%s", dp->root,
			 RS_SOCKOPS_LINK_PIN_NAME);
		err = repin(dp->sockops_link_fd, path);
		if (err < 0 && !first_err)
			first_err = err;
		n += err > 0;
	}
	return first_err ? first_err : n;
}

int dp_read_pinned_backends(const char *root, struct rs_backend *words)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/rs_backends", root);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	/* Another ABI's words would be read at the wrong offsets. */
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.value_size != sizeof(*words) ||
	    info.max_entries != RS_MAX_BACKENDS)
		err = -EPROTO;
	for (__u32 id = 0; id < RS_MAX_BACKENDS && !err; id++)
		if (bpf_map_lookup_elem(fd, &id, &words[id]))
			err = -errno;
	close(fd);
	return err;
}

// SPDX-License-Identifier: MIT
#include "cgroup2.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataplane_internal.h"

/*
 * The root of the cgroup2 hierarchy as a directory fd: an existing mount
 * of it (/sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a
 * hybrid one), else a mount made for the moment in a fresh directory under
 * @run_dir, whose path goes to @tmp (to be unmounted by cgroup2_done()).
 * Borrowing a mount first means a daemon killed during the attach leaves
 * no mount of its own behind.
 */
int cgroup2_root(const char *run_dir, char *tmp, size_t n)
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

void cgroup2_done(int root_fd, char *tmp)
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
 * One level at a time: @dir_fd is consumed. cgroup2 nests far less deep
 * than the bound, which keeps a loop (a bind mount inside) out.
 */
static int walk(int dir_fd, char *path, size_t len,
		int (*fn)(uint64_t id, const char *path, void *arg), void *arg,
		int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int err;

	if (fstat(dir_fd, &st)) {
		err = -errno;
		close(dir_fd);
		return err;
	}
	err = fn(st.st_ino, len ? path : "/", arg);
	if (err) {
		close(dir_fd);
		return err;
	}
	dir = fdopendir(dir_fd);
	if (!dir) {
		err = -errno;
		close(dir_fd);
		return err;
	}
	while (!err && depth < 64 && (de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		int fd;

		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    len + 1 + n >= PATH_MAX)
			continue;
		fd = openat(dirfd(dir), de->d_name,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue; /* removed since readdir: not a cgroup now */
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, n + 1);
		err = walk(fd, path, len + 1 + n, fn, arg, depth + 1);
		path[len] = '\0';
	}
	closedir(dir);
	return err;
}

int cgroup2_walk(int dir_fd, const char *base,
		 int (*fn)(uint64_t id, const char *path, void *arg), void *arg)
{
	char path[PATH_MAX];
	size_t len = strcmp(base, "/") ? strlen(base) : 0;
	int fd;

	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, base, len);
	path[len] = '\0';
	/* Not dup(): that shares the directory offset an earlier walk left. */
	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return walk(fd, path, len, fn, arg, 0);
}

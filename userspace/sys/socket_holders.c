// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socket_holders.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Returns non-zero when @fn ended the scan. */
static int scan_pid(int proc_fd, pid_t pid, const uint64_t *inodes, size_t n,
		    socket_holder_fn fn, void *arg)
{
	char path[64], target[64];
	struct dirent *de;
	int dfd, stop = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%d/fd", (int)pid);

	dfd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return 0;
	}
	while (!stop && (de = readdir(dir))) {
		unsigned long long ino;
		const uint64_t *hit;
		uint64_t key;
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		len = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%llu]", &ino) != 1)
			continue;
		key = ino;
		hit = bsearch(&key, inodes, n, sizeof(*inodes), cmp_u64);
		if (hit)
			stop = fn((size_t)(hit - inodes), pid, atoi(de->d_name),
				  arg);
	}
	closedir(dir);
	return stop;
}

int socket_holders_scan(const uint64_t *inodes, size_t n, socket_holder_fn fn,
			void *arg)
{
	pid_t self = getpid();
	struct dirent *de;
	int proc_fd, err;
	DIR *proc;

	if (!n)
		return 0;
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	proc = fdopendir(dup(proc_fd));
	if (!proc) {
		err = -errno;
		close(proc_fd);
		return err;
	}
	while ((de = readdir(proc))) {
		char *end;
		long p = strtol(de->d_name, &end, 10);

		if (*end || p <= 0 || p == self)
			continue;
		if (scan_pid(proc_fd, (pid_t)p, inodes, n, fn, arg))
			break;
	}
	closedir(proc);
	close(proc_fd);
	return 0;
}

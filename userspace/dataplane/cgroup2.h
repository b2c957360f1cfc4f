/* SPDX-License-Identifier: MIT */
/*
 * The cgroup2 hierarchy, as steer_sockops's attach needs it: its root as a
 * directory fd, and a walk that names every cgroup by its path (as
 * /proc/PID/cgroup shows it) and its id (the directory's inode number,
 * which bpf_link_info and sock_diag report).
 */
#ifndef RS_CGROUP2_H
#define RS_CGROUP2_H

#include <stddef.h>
#include <stdint.h>

/*
 * The root as a directory fd: an existing mount of it (/sys/fs/cgroup on
 * a unified host, /sys/fs/cgroup/unified on a hybrid one), else a mount
 * made for the moment in a fresh directory under @run_dir, whose path
 * goes to @tmp (unmounted by cgroup2_done()).
 */
int cgroup2_root(const char *run_dir, char *tmp, size_t n);
void cgroup2_done(int root_fd, char *tmp);

/*
 * @fn(id, path, arg) for the cgroup at @dir_fd (its path @base) and every
 * one below it; a nonzero return from @fn stops the walk and is returned.
 */
int cgroup2_walk(int dir_fd, const char *base,
		 int (*fn)(uint64_t id, const char *path, void *arg),
		 void *arg);

#endif /* RS_CGROUP2_H */

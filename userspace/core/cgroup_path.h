/* SPDX-License-Identifier: MIT */
/*
 * cgroup2 paths as /proc/PID/cgroup shows them ("/" is the root, no
 * trailing slash elsewhere): where a cgroup-attached program must sit to
 * see the sockets of several cgroups is their deepest common ancestor.
 */
#ifndef RS_CGROUP_PATH_H
#define RS_CGROUP_PATH_H

#include <stdbool.h>

/*
 * Cut @acc to the deepest cgroup that holds both it and @path; an empty
 * @acc (nothing yet) becomes a copy of @path. @acc has room for @path.
 */
void rs_cgroup_common(char *acc, const char *path);
/* Whether @path is the cgroup @dir or below it. */
bool rs_cgroup_within(const char *path, const char *dir);

#endif /* RS_CGROUP_PATH_H */

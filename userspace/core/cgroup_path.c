// SPDX-License-Identifier: MIT
#include "cgroup_path.h"

#include <string.h>

bool rs_cgroup_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return path[0] == '/';
	/* "/a.slice" holds "/a.slice/b" but not "/a.slice2". */
	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

void rs_cgroup_common(char *acc, const char *path)
{
	size_t keep = 0, i;

	if (!acc[0]) {
		strcpy(acc, path);
		return;
	}
	for (i = 0; acc[i] && acc[i] == path[i]; i++)
		if (acc[i] == '/')
			keep = i;
	/* Equal, or one ends where the other has a component boundary. */
	if ((!acc[i] && (!path[i] || path[i] == '/')) ||
	    (!path[i] && acc[i] == '/'))
		keep = i;
	acc[keep ? keep : 1] = '\0';
	if (!keep)
		acc[0] = '/';
}

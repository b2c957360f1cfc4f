// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "pinned_words.h"

static int words_have_btf(const char *root, const char *name)
{
	struct bpf_map_info info;
	char path[PATH_MAX + 32];
	__u32 len = sizeof(info);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else if (!info.btf_id || !info.btf_value_type_id)
		err = -EPROTO;
	close(fd);
	return err;
}

int rs_pinned_words_readable(const char *root)
{
	int err = words_have_btf(root, "rs_services");

	return err ? err : words_have_btf(root, "rs_backends");
}

// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sk_lookup_links.h"

#define BPFFS_TOP "/sys/fs/bpf"

uint64_t rs_netns_ino_self(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

/* Whether the link pinned at @path is @link_id. */
static bool pin_is(const char *path, uint32_t link_id)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);
	bool same;

	if (fd < 0)
		return false;
	same = !bpf_obj_get_info_by_fd(fd, &info, &len) && info.id == link_id;
	close(fd);
	return same;
}

/*
 * A pin named RS_SK_LOOKUP_PIN of @link_id under @dir, @depth levels
 * down at most: ringsteer's pins are one directory below the bpffs root
 * by default, a test's or a package's a level or two further.
 */
static bool find_pin(const char *dir, int depth, uint32_t link_id, char *buf,
		     size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path))
			continue;
		if (de->d_type == DT_DIR && depth > 0)
			found = find_pin(path, depth - 1, link_id, buf, len);
		else if (!strcmp(de->d_name, RS_SK_LOOKUP_PIN) &&
			 pin_is(path, link_id)) {
			snprintf(buf, len, "%s", path);
			found = true;
		}
	}
	closedir(d);
	return found;
}

static void prog_name(uint32_t prog_id, char *buf, size_t len)
{
	struct bpf_prog_info info = {0};
	__u32 ilen = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(prog_id);

	buf[0] = '\0';
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &ilen))
		snprintf(buf, len, "%s", info.name);
	close(fd);
}

/* One link of the walk: 1 when it is an sk_lookup link in @netns_ino. */
static int link_at(uint32_t id, uint64_t netns_ino, struct rs_sk_lookup_link *l)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	int fd = bpf_link_get_fd_by_id(id);
	int match;

	if (fd < 0)
		return 0; /* gone since the walk saw it */
	match = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
		info.type == BPF_LINK_TYPE_NETNS &&
		info.netns.attach_type == BPF_SK_LOOKUP &&
		info.netns.netns_ino == netns_ino;
	close(fd);
	if (!match)
		return 0;
	memset(l, 0, sizeof(*l));
	l->link_id = id;
	l->prog_id = info.prog_id;
	l->netns_ino = netns_ino;
	prog_name(info.prog_id, l->prog_name, sizeof(l->prog_name));
	l->ringsteer = !strcmp(l->prog_name, "steer_lookup");
	find_pin(BPFFS_TOP, 3, id, l->pin, sizeof(l->pin));
	return 1;
}

int rs_sk_lookup_links(uint64_t netns_ino, struct rs_sk_lookup_link *out,
		       size_t max, size_t *n)
{
	struct rs_sk_lookup_link l;
	__u32 id = 0;
	int err;

	*n = 0;
	if (!netns_ino)
		netns_ino = rs_netns_ino_self();
	while (!(err = bpf_link_get_next_id(id, &id) ? -errno : 0)) {
		if (!link_at(id, netns_ino, &l))
			continue;
		if (*n < max)
			out[*n] = l;
		(*n)++;
	}
	return err == -ENOENT ? 0 : err;
}

void rs_sk_lookup_link_format(const struct rs_sk_lookup_link *l, char *buf,
			      size_t len)
{
	if (l->pin[0])
		snprintf(buf, len, "link %u (program %s id %u, pinned at %s)",
			 l->link_id, l->prog_name[0] ? l->prog_name : "?",
			 l->prog_id, l->pin);
	else
		snprintf(buf, len, "link %u (program %s id %u, not pinned)",
			 l->link_id, l->prog_name[0] ? l->prog_name : "?",
			 l->prog_id);
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cli.h"
#include "links.h"
#include "sk_lookup_links.h"

#define MAX_LINKS 16

json_t *links_json(uint64_t netns_ino, uint32_t our_link)
{
	struct rs_sk_lookup_link l[MAX_LINKS];
	json_t *arr;
	size_t n;
	int err = rs_sk_lookup_links(netns_ino, l, MAX_LINKS, &n);

	if (err)
		return json_string(strerror(-err));
	arr = json_array();
	for (size_t i = 0; i < n && i < MAX_LINKS; i++)
		json_array_append_new(
			arr, json_pack("{s:I, s:I, s:s, s:s?, s:b, s:b}",
				       "link_id", (json_int_t)l[i].link_id,
				       "prog_id", (json_int_t)l[i].prog_id,
				       "program", l[i].prog_name, "pin",
				       l[i].pin[0] ? l[i].pin : NULL,
				       "ringsteer", l[i].ringsteer, "ours",
				       l[i].link_id == our_link));
	return arr;
}

uint64_t links_netns_of_prog(uint32_t prog_id)
{
	struct bpf_link_info info;
	__u32 id = 0, len;
	uint64_t ino = 0;

	while (!ino && !bpf_link_get_next_id(id, &id)) {
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    info.type == BPF_LINK_TYPE_NETNS &&
		    info.netns.attach_type == BPF_SK_LOOKUP &&
		    info.prog_id == prog_id)
			ino = info.netns.netns_ino;
		close(fd);
	}
	return ino;
}

json_t *links_foreign(json_t *links)
{
	json_t *v;
	size_t i;

	json_array_foreach(links, i, v)
	{
		if (json_is_true(json_object_get(v, "ringsteer")) &&
		    !json_is_true(json_object_get(v, "ours")))
			return v;
	}
	return NULL;
}

/* "pinned at PATH" or "not pinned" */
static const char *pin_of(json_t *v, char *buf, size_t len)
{
	const char *pin = json_string_value(json_object_get(v, "pin"));

	if (!pin)
		return "not pinned";
	snprintf(buf, len, "pinned at %s", pin);
	return buf;
}

void links_print(json_t *links)
{
	char where[PATH_MAX + 16];
	json_t *v;
	size_t i;

	if (json_is_string(links)) {
		printf("sk_lookup programs in this netns: cannot list them "
		       "(%s): run as root\n",
		       json_string_value(links));
		return;
	}
	printf("sk_lookup programs in this netns: %zu (run in this order)\n",
	       json_array_size(links));
	json_array_foreach(links, i, v) printf(
		"  link %lld: program %s id %lld, %s%s\n", jint(v, "link_id"),
		jstr(v, "program"), jint(v, "prog_id"),
		pin_of(v, where, sizeof(where)),
		json_is_true(json_object_get(v, "ours")) ? " (ours)" : "");
	v = links_foreign(links);
	if (v)
		warning("link %lld is another ringsteer data plane (%s): it "
			"decides beside this one. Remove it with `ringsteerd "
			"--detach -c FILE` (FILE with its bpffs) or `bpftool "
			"link detach id %lld`",
			jint(v, "link_id"), pin_of(v, where, sizeof(where)),
			jint(v, "link_id"));
}

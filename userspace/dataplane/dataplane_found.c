// SPDX-License-Identifier: MIT
/*
 * dp_pins_probe(): pins_found.h. Reads, never writes: it runs under
 * `ringsteerd --check`, where nothing may change.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"
#include "pinned_words.h"
#include "pins_found.h"

static char config_path[PATH_MAX];

void dp_pins_config(const char *config)
{
	snprintf(config_path, sizeof(config_path), "%s", config ? config : "");
}

const char *dp_pins_config_path(void)
{
	return config_path[0] ? config_path : NULL;
}

/* 1 when @dir holds anything, 0 when empty or missing, -errno. */
static int has_pins(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while (!n && (de = readdir(d)))
		n = de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* "" when @info is what @map would be created as, else how it differs. */
static void compare(const struct bpf_map *map, const struct bpf_map_info *info,
		    char *buf, size_t len)
{
	buf[0] = '\0';
	if (info->type != bpf_map__type(map))
		snprintf(buf, len, "map type %u, this build's %u", info->type,
			 bpf_map__type(map));
	else if (info->key_size != bpf_map__key_size(map))
		snprintf(buf, len, "key size %u, this build's %u",
			 info->key_size, bpf_map__key_size(map));
	else if (info->value_size != bpf_map__value_size(map))
		snprintf(buf, len, "value size %u, this build's %u",
			 info->value_size, bpf_map__value_size(map));
	else if (info->max_entries != bpf_map__max_entries(map))
		snprintf(buf, len, "%u entries, this build's %u",
			 info->max_entries, bpf_map__max_entries(map));
	else if (info->map_flags != bpf_map__map_flags(map))
		snprintf(buf, len, "flags 0x%x, this build's 0x%x",
			 info->map_flags, bpf_map__map_flags(map));
}

/* rs_meta's first word, whatever its value size: the ABI stamp. */
static uint32_t read_abi(int fd, const struct bpf_map_info *info)
{
	uint32_t abi = 0, zero = 0;
	void *val;

	if (info->type != BPF_MAP_TYPE_ARRAY || info->key_size != 4 ||
	    info->value_size < 4 || !(val = calloc(1, info->value_size)))
		return 0;
	if (!bpf_map_lookup_elem(fd, &zero, val))
		memcpy(&abi, val, sizeof(abi));
	free(val);
	return abi;
}

/* Each pinned map of this build's object against what is pinned. */
static int probe_maps(struct bpf_object *obj, const char *dir,
		      struct dp_pins_found *out)
{
	struct bpf_map *map;
	char path[PATH_MAX + 32];
	int found = 0;

	bpf_object__for_each_map(map, obj)
	{
		struct bpf_map_info info = {0};
		__u32 len = sizeof(info);
		int fd;

		if (!bpf_map__pin_path(map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		fd = bpf_obj_get(path);
		if (fd < 0 && (errno == EACCES || errno == EPERM))
			return -errno;
		if (fd < 0)
			continue; /* new in this build: a start creates it */
		found++;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
			if (!strcmp(bpf_map__name(map), "rs_meta"))
				out->abi = read_abi(fd, &info);
			if (!out->map[0]) {
				compare(map, &info, out->differs,
					sizeof(out->differs));
				if (out->differs[0])
					snprintf(out->map, sizeof(out->map),
						 "%s", bpf_map__name(map));
			}
		}
		close(fd);
	}
	return found;
}

static void probe_link(const char *dir, struct dp_pins_found *out)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, RS_LINK_PIN_NAME);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
		out->link = info.netns.netns_ino != 0;
		out->link_id = info.id;
		out->prog_id = info.prog_id;
		out->netns_ino = info.netns.netns_ino;
	}
	close(fd);
}

int dp_pins_probe(const char *pin_dir, struct dp_pins_found *out)
{
	struct steer_lookup_bpf *skel;
	int n;

	memset(out, 0, sizeof(*out));
	n = has_pins(pin_dir);
	if (n <= 0) {
		out->kind = n ? DP_PINS_UNREADABLE : DP_PINS_NONE;
		out->err = -n;
		return out->kind;
	}
	skel = steer_lookup_bpf__open();
	if (!skel)
		return -errno;
	/* At the configured sizes: pins of others are "another layout". */
	n = dp_size_maps(skel->obj);
	if (!n)
		n = probe_maps(skel->obj, pin_dir, out);
	steer_lookup_bpf__destroy(skel);
	if (n < 0) {
		out->kind = DP_PINS_UNREADABLE;
		out->err = -n;
		return out->kind;
	}
	probe_link(pin_dir, out);
	if (out->map[0] || (out->abi && out->abi != RS_ABI_VERSION))
		out->kind = DP_PINS_OTHER;
	else
		out->kind = n ? DP_PINS_SAME : DP_PINS_NONE;
	return out->kind;
}

enum dp_start_kind dp_start_kind(const char *pin_dir, struct dp_pins_found *out)
{
	switch (dp_pins_probe(pin_dir, out)) {
	case DP_PINS_NONE:
		return DP_START_CREATE;
	case DP_PINS_SAME:
		return DP_START_ADOPT;
	case DP_PINS_OTHER:
		/* What upgrade.c needs to build beside them: their words. */
		if (rs_pinned_words_readable(pin_dir))
			return DP_START_REFUSE;
		return out->abi == RS_ABI_VERSION ? DP_START_RESIZE
						  : DP_START_UPGRADE;
	default:
		return DP_START_UNCHECKED;
	}
}

void dp_start_beside(enum dp_start_kind kind, const struct dp_pins_found *f,
		     const char *pin_dir, char *buf, size_t len)
{
	char what[256];

	if (kind == DP_START_RESIZE)
		snprintf(what, sizeof(what),
			 "of this build's ABI (%d) sized for another "
			 "configuration (%s: %s): a start builds one of this "
			 "file's sizes",
			 RS_ABI_VERSION, f->map, f->differs);
	else
		snprintf(what, sizeof(what),
			 "of ABI %u%s%s%s, this build is ABI %d: a start "
			 "builds its own",
			 f->abi, f->map[0] ? " (" : "", f->map,
			 f->map[0] ? " differs)" : "", RS_ABI_VERSION);
	snprintf(buf, len,
		 "%s holds a data plane %s beside it, carries its operator "
		 "state and sticky entries over, attaches, then retires it: "
		 "no gap, no client moved (docs/operations.md, \"Upgrades "
		 "across an ABI change\")",
		 pin_dir, what);
}

void dp_pins_refusal(const struct dp_pins_found *f, const char *pin_dir,
		     const char *config, char *buf, size_t len)
{
	char what[256], cmd[PATH_MAX + 40];

	snprintf(cmd, sizeof(cmd), "`ringsteerd --detach%s%s`",
		 config ? " -c " : "", config ? config : "");
	if (f->abi && f->abi != RS_ABI_VERSION)
		snprintf(what, sizeof(what),
			 "are of ABI %u, this build is ABI %d", f->abi,
			 RS_ABI_VERSION);
	else if (f->abi)
		snprintf(what, sizeof(what),
			 "say ABI %u but %s has %s (a layout changed "
			 "without an ABI bump)",
			 f->abi, f->map, f->differs);
	else
		snprintf(what, sizeof(what),
			 "are of an earlier ABI (no ABI stamp; %s has %s), "
			 "this build is ABI %d",
			 f->map, f->differs, RS_ABI_VERSION);
	snprintf(buf, len,
		 "the maps pinned under %s %s: a start refuses to mix them. "
		 "%s removes them (steering stops until the new daemon "
		 "starts)%s",
		 pin_dir, what, cmd,
		 f->link ? "; until then their sk_lookup link goes on "
			   "steering with their last state"
			 : "");
}

/* The data plane an upgrade is retiring (upgrade.c), or "". */
static char retiring[PATH_MAX];

void dp_pins_retiring(const char *dir)
{
	snprintf(retiring, sizeof(retiring), "%s", dir ? dir : "");
}

int dp_foreign_links(const char *pin_dir, struct rs_sk_lookup_link *out,
		     size_t max, size_t *n)
{
	struct rs_sk_lookup_link all[16];
	struct dp_pins_found own = {0}, going = {0};
	size_t found;
	int err;

	*n = 0;
	err = rs_sk_lookup_links(0, all, 16, &found);
	if (err)
		return err;
	probe_link(pin_dir, &own);
	if (retiring[0])
		probe_link(retiring, &going);
	for (size_t i = 0; i < found && i < 16; i++) {
		if (!all[i].ringsteer || all[i].link_id == own.link_id ||
		    (going.link && all[i].link_id == going.link_id))
			continue;
		if (*n < max)
			out[*n] = all[i];
		(*n)++;
	}
	return 0;
}

void dp_foreign_refusal(const struct rs_sk_lookup_link *l, char *buf,
			size_t len)
{
	char what[PATH_MAX + 128], dir[PATH_MAX];
	char *slash;

	rs_sk_lookup_link_format(l, what, sizeof(what));
	snprintf(dir, sizeof(dir), "%s", l->pin);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (l->pin[0])
		snprintf(buf, len,
			 "another ringsteer data plane is attached to this "
			 "network namespace: %s. It goes on steering, and a "
			 "second one beside it would leave two deciding: "
			 "refusing to start. Remove it with `ringsteerd "
			 "--detach -c FILE` (FILE: a configuration with "
			 "bpffs = %s) or `bpftool link detach id %u`",
			 what, dir, l->link_id);
	else
		snprintf(buf, len,
			 "another ringsteer data plane is attached to this "
			 "network namespace: %s, held by a running process "
			 "(another ringsteerd?). It goes on steering, and a "
			 "second one beside it would leave two deciding: "
			 "refusing to start. Stop that process, or `bpftool "
			 "link detach id %u`",
			 what, l->link_id);
}

// SPDX-License-Identifier: MIT
/*
 * The data plane's life cycle: steer_lookup loaded with its maps pinned
 * under one bpffs directory, attached through a pinned netns link, and all
 * of it taken down again. The pins are what let a restarted daemon, the CLI
 * and bpftool find the same state; what goes into the maps is the business
 * of the other dataplane_*.c files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <bpf/btf.h>

#include "dataplane_internal.h"
#include "log.h"
#include "pins_found.h"

int dp_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int check_bpffs(const char *root)
{
	struct statfs st;

	if (statfs(root, &st))
		return -errno;
	if ((unsigned long)st.f_type != BPF_FS_MAGIC)
		return -ENOTDIR;
	return 0;
}

int dp_prepare_root(const char *root)
{
	int err = dp_mkdir_p(root);

	if (err) {
		rs_err("bpffs: cannot create %s: %s", root, strerror(-err));
		return err;
	}
	err = check_bpffs(root);
	if (err)
		rs_err("bpffs: %s is not on a bpf filesystem (mount -t bpf bpf "
		       "/sys/fs/bpf)",
		       root);
	return err;
}

/*
 * Stamp our ABI on fresh maps. Pins of another ABI were refused before
 * loading (refuse_other_pins); this catches a stamp written since.
 */
static int check_abi(struct rs_dataplane *dp)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_meta);
	struct dp_pins_found f = {.kind = DP_PINS_OTHER};
	struct rs_meta meta = {0};
	char why[PATH_MAX + 512];
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -errno;
	if (meta.abi_version && meta.abi_version != RS_ABI_VERSION) {
		f.abi = meta.abi_version;
		dp_pins_refusal(&f, dp->root, dp_pins_config_path(), why,
				sizeof(why));
		rs_err("bpf: %s", why);
		return -EPROTO;
	}
	meta.abi_version = RS_ABI_VERSION;
	if (bpf_map_update_elem(fd, &zero, &meta, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * Before libbpf sees the pins: its own refusal of another layout says
 * only "couldn't reuse pinned map ... parameter mismatch", which names
 * neither the ABI nor the way out.
 */
static int refuse_other_pins(const char *root)
{
	struct dp_pins_found f;
	char why[PATH_MAX + 512];

	if (dp_pins_probe(root, &f) != DP_PINS_OTHER)
		return 0;
	dp_pins_refusal(&f, root, dp_pins_config_path(), why, sizeof(why));
	rs_err("bpf: %s", why);
	return -EPROTO;
}

/*
 * One data plane per netns: checked before anything is pinned, so a
 * refused start leaves nothing behind. Not finding out (no
 * CAP_SYS_ADMIN) is said, not fatal: attaching would fail the same way.
 */
static int refuse_other_dataplanes(const char *root)
{
	struct rs_sk_lookup_link l;
	char why[2 * PATH_MAX + 512];
	size_t n;
	int err = dp_foreign_links(root, &l, 1, &n);

	if (err) {
		rs_warn("bpf: cannot list the sk_lookup programs of this "
			"network namespace (%s): another data plane attached "
			"here would not be seen",
			strerror(-err));
		return 0;
	}
	if (!n)
		return 0;
	dp_foreign_refusal(&l, why, sizeof(why));
	rs_err("bpf: %s", why);
	return -EEXIST;
}

int dp_open(struct rs_dataplane *dp, const char *root)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = root);
	struct bpf_map *map;
	int err;

	memset(dp, 0, sizeof(*dp));
	dp->link_fd = -1;
	dp->sockops_link_fd = -1;
	if (root) {
		snprintf(dp->root, sizeof(dp->root), "%s", root);
		err = dp_prepare_root(root);
		if (!err)
			err = refuse_other_pins(root);
		if (!err)
			err = refuse_other_dataplanes(root);
		if (err)
			return err;
	}
	dp->skel = steer_lookup_bpf__open_opts(&opts);
	if (!dp->skel) {
		err = -errno;
		rs_err("bpf: cannot open steer_lookup: %s", strerror(-err));
		return err;
	}
	if (!root) {
		for (map = bpf_object__next_map(dp->skel->obj, NULL); map;
		     map = bpf_object__next_map(dp->skel->obj, map))
			bpf_map__set_pin_path(map, NULL);
	}
	err = dp_size_maps(dp->skel->obj);
	if (!err)
		err = steer_lookup_bpf__load(dp->skel);
	if (err) {
		rs_err("bpf: cannot load steer_lookup (pinned maps under %s "
		       "from an incompatible build? see `ringsteerd "
		       "--detach`): "
		       "%s",
		       root ? root : "(none)", strerror(-err));
		steer_lookup_bpf__destroy(dp->skel);
		dp->skel = NULL;
		return err;
	}
	err = check_abi(dp);
	if (err) {
		steer_lookup_bpf__destroy(dp->skel);
		dp->skel = NULL;
	}
	return err;
}

static void link_pin_path(const struct rs_dataplane *dp, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dp->root, RS_LINK_PIN_NAME);
}

/*
 * Maps that no program of this version uses any more, pinned by an older
 * daemon whose programs were just replaced: rs_handoff (a TCP decision per
 * SYN until issue 21). A program still holding one keeps it alive; the
 * pin only kept it listed.
 */
static void drop_stale_pins(const struct rs_dataplane *dp)
{
	static const char *const stale[] = {"rs_handoff"};
	char path[PATH_MAX + 32];

	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dp->root, stale[i]);
		if (!unlink(path))
			rs_info("bpf: removed the pin %s (an earlier version's "
				"map, unused now)",
				path);
	}
}

int dp_attach(struct rs_dataplane *dp)
{
	int prog_fd = bpf_program__fd(dp->skel->progs.steer_lookup);
	char path[PATH_MAX + 32];
	int link_fd, netns_fd, err;

	link_pin_path(dp, path, sizeof(path));
	link_fd = bpf_obj_get(path);
	if (link_fd >= 0) {
		err = bpf_link_update(link_fd, prog_fd, NULL);
		if (err) {
			err = -errno;
			rs_err("bpf: cannot replace the program behind %s: %s",
			       path, strerror(-err));
			close(link_fd);
			return err;
		}
		dp->link_fd = link_fd;
		dp->adopted_link = true;
		drop_stale_pins(dp);
		return 0;
	}

	netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (netns_fd < 0) {
		err = -errno;
		rs_err("netns: cannot open /proc/self/ns/net: %s",
		       strerror(-err));
		return err;
	}
	link_fd = bpf_link_create(prog_fd, netns_fd, BPF_SK_LOOKUP, NULL);
	err = -errno;
	close(netns_fd);
	if (link_fd < 0) {
		rs_err("bpf: cannot attach sk_lookup to this netns: %s",
		       strerror(-err));
		return err;
	}
	if (bpf_obj_pin(link_fd, path)) {
		err = -errno;
		rs_err("bpf: cannot pin link at %s: %s", path, strerror(-err));
		close(link_fd);
		return err;
	}
	dp->link_fd = link_fd;
	return 0;
}

void dp_close(struct rs_dataplane *dp)
{
	dp_load_unmap(dp);
	dp_rings_release(dp);
	dp_tc_close(dp);
	dp_sockops_close(dp);
	if (dp->link_fd >= 0)
		close(dp->link_fd);
	dp->link_fd = -1;
	if (dp->skel)
		steer_lookup_bpf__destroy(dp->skel);
	dp->skel = NULL;
}

uint32_t dp_program_id(struct rs_dataplane *dp)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(
		    bpf_program__fd(dp->skel->progs.steer_lookup), &info, &len))
		return 0;
	return info.id;
}

int dp_detach(const char *root)
{
	char path[PATH_MAX + NAME_MAX + 2];
	struct dirent *de;
	int err = 0, link_fd;
	DIR *dir;

	dir = opendir(root);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	/*
	 * The links first, detached explicitly: a running daemon may still
	 * hold a reference that would otherwise keep them attached.
	 */
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", root,
			 i ? RS_SOCKOPS_LINK_PIN_NAME : RS_LINK_PIN_NAME);
		link_fd = bpf_obj_get(path);
		if (link_fd >= 0) {
			if (bpf_link_detach(link_fd) && !err)
				err = -errno;
			close(link_fd);
		}
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(dir);
	if (rmdir(root) && errno != ENOENT && !err)
		err = -errno;
	return err;
}

/* ---- shared by the dataplane_*.c files (dataplane_internal.h) ---- */

int dp_map_update(struct bpf_map *map, const void *key, const void *val,
		  const char *what)
{
	int fault = dp_fault(what);

	if (fault)
		return fault;
	if (bpf_map_update_elem(bpf_map__fd(map), key, val, BPF_ANY)) {
		int err = -errno;

		rs_err("bpf: update of %s failed: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

void dp_inner_map_btf(struct rs_dataplane *dp, const char *value_type,
		      struct bpf_map_create_opts *opts)
{
	struct btf *btf = bpf_object__btf(dp->skel->obj);
	int key_id, val_id;

	key_id = btf__find_by_name_kind(btf, "__u32", BTF_KIND_TYPEDEF);
	val_id = btf__find_by_name_kind(btf, value_type, BTF_KIND_STRUCT);
	if (key_id > 0 && val_id > 0) {
		opts->btf_fd = btf__fd(btf);
		opts->btf_key_type_id = key_id;
		opts->btf_value_type_id = val_id;
	}
}

int dp_inner_map_fd(struct rs_dataplane *dp, struct bpf_map *outer,
		    uint32_t svc_id)
{
	__u32 id;

	(void)dp;
	if (bpf_map_lookup_elem(bpf_map__fd(outer), &svc_id, &id))
		return -ENOENT;
	return bpf_map_get_fd_by_id(id);
}

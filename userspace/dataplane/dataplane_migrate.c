// SPDX-License-Identifier: MIT
/*
 * Pins of another ABI, read without loading anything of theirs: which ABI
 * they are, and the words an earlier (or later) build left in them, taken
 * field by field through the BTF the kernel keeps with each map. The field
 * names are the contract: a field that kept its name kept its meaning (a
 * change of meaning bumps RS_ABI_VERSION and renames), so a start can carry
 * an operator's drains, downs and weights across any layout change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "dataplane_internal.h"
#include "log.h"
#include "pinned_words.h"

/* The map's info, or a negative errno; *@fd_out keeps it open. */
static int pinned_map(const char *root, const char *name,
		      struct bpf_map_info *info, int *fd_out)
{
	char path[PATH_MAX + 32];
	__u32 len = sizeof(*info);
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	*fd_out = fd;
	return 0;
}

/* A member of @btf's struct @type_id named @name: its offset and size. */
static int find_member(const struct btf *btf, __u32 type_id, const char *name,
		       size_t *off, size_t *size)
{
	const struct btf_type *t = btf__type_by_id(btf, type_id);
	const struct btf_member *m;

	if (!t)
		return -ENOENT;
	type_id = btf__resolve_type(btf, type_id);
	t = btf__type_by_id(btf, type_id);
	if (!t || !btf_is_struct(t))
		return -ENOENT;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		__s64 sz;

		if (strcmp(btf__name_by_offset(btf, m->name_off), name))
			continue;
		if (btf_member_bitfield_size(t, i))
			return -ENOENT;
		sz = btf__resolve_size(btf, m->type);
		if (sz <= 0)
			return -ENOENT;
		*off = btf_member_bit_offset(t, i) / 8;
		*size = (size_t)sz;
		return 0;
	}
	return -ENOENT;
}

/* Where each field of ours sits in the pinned map's value, by name. */
struct field_map {
	size_t n;
	struct {
		size_t ours, theirs, size;
	} f[64];
};

static int map_fields(const struct btf *ours, __u32 our_id,
		      const struct btf *theirs, __u32 their_id,
		      struct field_map *fm)
{
	const struct btf_type *t = btf__type_by_id(ours, our_id);
	const struct btf_member *m;

	fm->n = 0;
	if (!t || !btf_is_struct(t))
		return -ENOENT;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t) && fm->n < 64; i++, m++) {
		const char *name = btf__name_by_offset(ours, m->name_off);
		size_t off, size;
		__s64 ours_size = btf__resolve_size(ours, m->type);

		if (find_member(theirs, their_id, name, &off, &size))
			continue;
		fm->f[fm->n].ours = btf_member_bit_offset(t, i) / 8;
		fm->f[fm->n].theirs = off;
		/* A field that grew keeps its prefix; one that shrank, ours. */
		fm->f[fm->n].size =
			(size_t)ours_size < size ? (size_t)ours_size : size;
		fm->n++;
	}
	return fm->n ? 0 : -ENOENT;
}

/*
 * Where the fields of our struct @type sit in a value of @theirs' type
 * @their_id; *@size: sizeof ours. Our layout is read from our own BTF, so
 * a field added to the ABI header is carried without a list to keep.
 */
static int fields_for(const char *type, const struct btf *theirs,
		      __u32 their_id, struct field_map *fm, size_t *size)
{
	struct steer_lookup_bpf *skel = steer_lookup_bpf__open();
	const struct btf *ours;
	int our_id, err;

	if (!skel)
		return -errno ? -errno : -ENOMEM;
	ours = bpf_object__btf(skel->obj);
	our_id = btf__find_by_name_kind(ours, type, BTF_KIND_STRUCT);
	err = our_id > 0 ? map_fields(ours, our_id, theirs, their_id, fm)
			 : -ENOENT;
	if (!err && size)
		*size = (size_t)btf__resolve_size(ours, our_id);
	steer_lookup_bpf__destroy(skel);
	return err;
}

static void convert(const struct field_map *fm, void *dst, const void *src)
{
	for (size_t i = 0; i < fm->n; i++)
		memcpy((uint8_t *)dst + fm->f[i].ours,
		       (const uint8_t *)src + fm->f[i].theirs, fm->f[i].size);
}

/* The BTF of a map with @info, or NULL (logged) when it has none. */
static struct btf *map_btf(const struct bpf_map_info *info, const char *what)
{
	struct btf *btf = NULL;

	if (info->btf_id && info->btf_value_type_id)
		btf = btf__load_from_kernel_by_id(info->btf_id);
	if (!btf)
		rs_err("bpf: %s has no BTF: its values cannot be read by name",
		       what);
	return btf;
}

int dp_migrate_read(const char *root, const char *map, const char *type,
		    void *out, size_t value_size, uint32_t n)
{
	struct bpf_map_info info;
	struct btf *theirs = NULL;
	struct field_map fm;
	uint8_t *val = NULL;
	int fd, err;

	err = pinned_map(root, map, &info, &fd);
	if (err)
		return err;
	theirs = map_btf(&info, map);
	err = theirs ? fields_for(type, theirs, info.btf_value_type_id, &fm,
				  NULL)
		     : -EPROTO;
	val = calloc(1, info.value_size);
	if (!err && !val)
		err = -ENOMEM;
	for (__u32 id = 0; id < n && id < info.max_entries && !err; id++)
		if (!bpf_map_lookup_elem(fd, &id, val))
			convert(&fm, (uint8_t *)out + (size_t)id * value_size,
				val);
	free(val);
	btf__free(theirs);
	close(fd);
	return err;
}

/* The key types of both sides must be the same layout, field by field. */
static int same_keys(const char *type, const struct btf *theirs, __u32 id,
		     __u32 their_size)
{
	struct field_map fm;
	size_t ours = 0, covered = 0;
	int err = fields_for(type, theirs, id, &fm, &ours);

	if (err)
		return err;
	for (size_t i = 0; i < fm.n; i++) {
		if (fm.f[i].ours != fm.f[i].theirs)
			return -EPROTO;
		covered += fm.f[i].size;
	}
	return covered == ours && ours == their_size ? 0 : -EPROTO;
}

int dp_migrate_inner(const char *root, const char *outer, uint32_t idx,
		     int to_fd, const char *key_type, const char *val_type)
{
	struct bpf_map_info oinfo, info = {0};
	__u32 len = sizeof(info), inner_id;
	uint8_t *key = NULL, *next = NULL, *val = NULL, *ours = NULL;
	struct btf *theirs = NULL;
	struct field_map fm;
	size_t our_size = 0;
	int ofd, fd = -1, err, n = 0;

	err = pinned_map(root, outer, &oinfo, &ofd);
	if (err)
		return err;
	if (bpf_map_lookup_elem(ofd, &idx, &inner_id))
		err = -ENOENT;
	else if ((fd = bpf_map_get_fd_by_id(inner_id)) < 0 ||
		 bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	close(ofd);
	if (err)
		goto out;
	theirs = map_btf(&info, outer);
	err = !theirs ? -EPROTO
		      : same_keys(key_type, theirs, info.btf_key_type_id,
				  info.key_size);
	if (!err)
		err = fields_for(val_type, theirs, info.btf_value_type_id, &fm,
				 &our_size);
	key = calloc(1, info.key_size);
	next = calloc(1, info.key_size);
	val = calloc(1, info.value_size);
	ours = calloc(1, our_size ? our_size : 1);
	if (!err && (!key || !next || !val || !ours))
		err = -ENOMEM;
	for (void *k = NULL; !err && !bpf_map_get_next_key(fd, k, next);
	     k = key) {
		memcpy(key, next, info.key_size);
		if (bpf_map_lookup_elem(fd, key, val))
			continue;
		memset(ours, 0, our_size);
		convert(&fm, ours, val);
		/* An entry the new side wrote meanwhile is the fresher. */
		if (!bpf_map_update_elem(to_fd, key, ours, BPF_NOEXIST))
			n++;
	}
out:
	free(key);
	free(next);
	free(val);
	free(ours);
	btf__free(theirs);
	if (fd >= 0)
		close(fd);
	return err ? err : n;
}

int dp_pins_set_aside(const char *root, uint32_t abi, char *aside, size_t len)
{
	for (int i = 0; i < 100; i++) {
		int n = i ? snprintf(aside, len, "%s-abi%u-retiring-%d", root,
				     abi, i)
			  : snprintf(aside, len, "%s-abi%u-retiring", root,
				     abi);

		if (n < 0 || (size_t)n >= len)
			return -ENAMETOOLONG;
		if (!rename(root, aside))
			return 0;
		if (errno != EEXIST && errno != ENOTEMPTY)
			return -errno;
	}
	return -EEXIST;
}

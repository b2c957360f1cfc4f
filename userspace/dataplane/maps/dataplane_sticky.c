// SPDX-License-Identifier: MIT
/*
 * Sticky tables: one LRU inner map of rs_sticky per service, so that each
 * service has its own sticky_max. A table is never resized in place; a
 * new size is a fresh table that takes over the old one's entries before
 * it replaces it, so a reload that resizes it moves no sticky client.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "dataplane_internal.h"
#include "log.h"

#define STICKY_COPY_BATCH 4096

/*
 * Copy the entries of @from into @to, as many as fit. Best effort: a
 * client whose entry is not copied goes where the ring says.
 */
static void sticky_copy(int from, int to, uint32_t max_entries)
{
	struct rs_affinity_key *keys;
	struct rs_sticky_entry *vals;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 batch, count, copied = 0;
	void *in = NULL;
	int err;

	keys = calloc(STICKY_COPY_BATCH, sizeof(*keys));
	vals = calloc(STICKY_COPY_BATCH, sizeof(*vals));
	if (!keys || !vals)
		goto out;
	do {
		count = STICKY_COPY_BATCH;
		err = bpf_map_lookup_batch(from, in, &batch, keys, vals, &count,
					   &opts);
		if (err && errno != ENOENT)
			break;
		if (count > max_entries - copied)
			count = max_entries - copied;
		if (count && bpf_map_update_batch(to, keys, vals, &count, NULL))
			break;
		copied += count;
		in = &batch;
	} while (!err && copied < max_entries);
	if (copied)
		rs_info("sticky table resized to %u entries: %u carried over",
			max_entries, copied);
out:
	free(keys);
	free(vals);
}

int dp_sticky_create(struct rs_dataplane *dp, uint32_t svc_id,
		     uint32_t max_entries)
{
	struct btf *btf = bpf_object__btf(dp->skel->obj);
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int outer = bpf_map__fd(dp->skel->maps.rs_sticky);
	char name[BPF_OBJ_NAME_LEN];
	int key_id, val_id, fd, old, err = dp_fault("sticky");

	if (err)
		return err;
	key_id =
		btf__find_by_name_kind(btf, "rs_affinity_key", BTF_KIND_STRUCT);
	val_id =
		btf__find_by_name_kind(btf, "rs_sticky_entry", BTF_KIND_STRUCT);
	if (key_id > 0 && val_id > 0) {
		opts.btf_fd = btf__fd(btf);
		opts.btf_key_type_id = key_id;
		opts.btf_value_type_id = val_id;
	}
	snprintf(name, sizeof(name), "rs_sticky_%u", svc_id);
	fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, name,
			    sizeof(struct rs_affinity_key),
			    sizeof(struct rs_sticky_entry), max_entries, &opts);
	if (fd < 0) {
		err = -errno;
		rs_err("bpf: cannot create a sticky table of %u entries: %s",
		       max_entries, strerror(-err));
		return err;
	}
	old = dp_inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
	if (old >= 0) {
		sticky_copy(old, fd, max_entries);
		close(old);
	}
	if (bpf_map_update_elem(outer, &svc_id, &fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: installing the sticky table of service %u failed: "
		       "%s",
		       svc_id, strerror(-err));
	}
	close(fd);
	return err;
}

int dp_sticky_remove(struct rs_dataplane *dp, uint32_t svc_id)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_sticky);

	if (bpf_map_delete_elem(outer, &svc_id) && errno != ENOENT)
		return -errno;
	return 0;
}

uint32_t dp_sticky_size(struct rs_dataplane *dp, uint32_t svc_id)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
	uint32_t size = 0;

	if (fd < 0)
		return 0;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		size = info.max_entries;
	close(fd);
	return size;
}

int dp_sticky_forget_backend(struct rs_dataplane *dp, uint32_t svc_id,
			     uint32_t backend)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
	struct rs_affinity_key cur, next;
	struct rs_sticky_entry e;
	int r;

	if (fd < 0)
		return 0;
	/* Deleting the current key would restart the walk: delete behind. */
	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;) {
		cur = next;
		r = bpf_map_get_next_key(fd, &cur, &next);
		if (!bpf_map_lookup_elem(fd, &cur, &e) && e.backend == backend)
			bpf_map_delete_elem(fd, &cur);
	}
	close(fd);
	return 0;
}

int dp_sticky_lookup(struct rs_dataplane *dp, uint32_t svc_id,
		     const struct rs_affinity_key *key,
		     struct rs_sticky_entry *out)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id), err = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, key, out))
		err = -errno;
	close(fd);
	return err;
}

/* The entries one at a time: kernels without batch ops on LRU hashes. */
static long sticky_each_by_key(int fd,
			       void (*fn)(const struct rs_affinity_key *key,
					  const struct rs_sticky_entry *e,
					  void *arg),
			       void *arg)
{
	struct rs_affinity_key cur, next;
	struct rs_sticky_entry e;
	long n = 0;
	int r;

	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		cur = next;
		if (bpf_map_lookup_elem(fd, &cur, &e))
			continue;
		fn(&cur, &e, arg);
		n++;
	}
	return n;
}

#define STICKY_BATCH 65536

/*
 * In batches of STICKY_BATCH (one syscall each instead of two per
 * entry): the daemon walks a UDP service's table every second.
 */
long dp_sticky_each(struct rs_dataplane *dp, uint32_t svc_id,
		    void (*fn)(const struct rs_affinity_key *key,
			       const struct rs_sticky_entry *e, void *arg),
		    void *arg)
{
	int fd = dp_inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
	struct rs_affinity_key *keys = NULL, in, out;
	struct rs_sticky_entry *vals = NULL;
	bool first = true;
	long n = 0;

	if (fd < 0)
		return 0;
	keys = calloc(STICKY_BATCH, sizeof(*keys));
	vals = calloc(STICKY_BATCH, sizeof(*vals));
	if (!keys || !vals) {
		n = sticky_each_by_key(fd, fn, arg);
		goto out;
	}
	for (;;) {
		__u32 count = STICKY_BATCH;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out,
					       keys, vals, &count, NULL);

		if (err && errno != ENOENT) {
			if (first)
				n = sticky_each_by_key(fd, fn, arg);
			break;
		}
		for (__u32 k = 0; k < count; k++)
			fn(&keys[k], &vals[k], arg);
		n += count;
		if (err)
			break;
		in = out;
		first = false;
	}
out:
	free(keys);
	free(vals);
	close(fd);
	return n;
}

int dp_sticky_fd(struct rs_dataplane *dp, uint32_t svc_id)
{
	return dp_inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
}

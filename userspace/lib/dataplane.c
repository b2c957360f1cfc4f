// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "dataplane.h"
#include "log.h"
#include "steer_lookup.skel.h"
#include "steer_tc.skel.h"

static int inner_map_fd(struct rs_dataplane *dp, struct bpf_map *outer,
			uint32_t svc_id);

static int mkdir_p(const char *path)
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

static int prepare_root(const char *root)
{
	int err = mkdir_p(root);

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

/* Refuse pinned maps of another ABI; stamp ours on fresh ones. */
static int check_abi(struct rs_dataplane *dp)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_meta);
	struct rs_meta meta = {0};
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -errno;
	if (meta.abi_version && meta.abi_version != RS_ABI_VERSION) {
		rs_err("bpf: the maps pinned under %s are of ABI %u, this "
		       "build is ABI %u: refusing to mix them. `ringsteerd "
		       "--detach` removes them (steering stops until the new "
		       "daemon starts)",
		       dp->root, meta.abi_version, RS_ABI_VERSION);
		return -EPROTO;
	}
	meta.abi_version = RS_ABI_VERSION;
	if (bpf_map_update_elem(fd, &zero, &meta, BPF_ANY))
		return -errno;
	return 0;
}

int dp_open(struct rs_dataplane *dp, const char *root)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = root);
	struct bpf_map *map;
	int err;

	memset(dp, 0, sizeof(*dp));
	dp->link_fd = -1;
	if (root) {
		snprintf(dp->root, sizeof(dp->root), "%s", root);
		err = prepare_root(root);
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
	dp_tc_close(dp);
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

static int map_update(struct bpf_map *map, const void *key, const void *val,
		      const char *what)
{
	if (bpf_map_update_elem(bpf_map__fd(map), key, val, BPF_ANY)) {
		int err = -errno;

		rs_err("bpf: update of %s failed: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

int dp_set_service(struct rs_dataplane *dp, uint32_t id,
		   const struct rs_service *svc)
{
	return map_update(dp->skel->maps.rs_services, &id, svc, "rs_services");
}

int dp_set_backend(struct rs_dataplane *dp, uint32_t id,
		   const struct rs_backend *be)
{
	return map_update(dp->skel->maps.rs_backends, &id, be, "rs_backends");
}

static bool bind_is_exact(const struct rs_bind_key *k)
{
	return k->port != 0 &&
	       k->prefixlen == 32 + (k->family == AF_INET ? 32u : 128u);
}

static void exact_key(const struct rs_bind_key *k, struct rs_bind_exact_key *e)
{
	memset(e, 0, sizeof(*e));
	e->protocol = k->protocol;
	e->family = k->family;
	e->port = k->port;
	memcpy(e->addr, k->addr, sizeof(e->addr));
}

/*
 * Keys of @fd (of @key_size bytes) that are not among the @nwant keys in
 * @want: collected before any is deleted, since deleting while iterating
 * restarts an LPM trie's walk.
 */
static void *stale_keys(int fd, size_t key_size, const void *want, size_t nwant,
			size_t *nstale)
{
	char *stale = calloc(RS_MAX_BINDS, key_size);
	char cur[sizeof(struct rs_bind_key)], next[sizeof(struct rs_bind_key)];
	const char *w = want;

	*nstale = 0;
	if (!stale)
		return NULL;
	for (int r = bpf_map_get_next_key(fd, NULL, next); r == 0;
	     r = bpf_map_get_next_key(fd, cur, next)) {
		bool found = false;

		for (size_t i = 0; i < nwant && !found; i++)
			found = !memcmp(next, w + i * key_size, key_size);
		if (!found && *nstale < RS_MAX_BINDS)
			memcpy(stale + (*nstale)++ * key_size, next, key_size);
		memcpy(cur, next, key_size);
	}
	return stale;
}

static int delete_keys(int fd, const char *keys, size_t key_size, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (bpf_map_delete_elem(fd, keys + i * key_size) &&
		    errno != ENOENT) {
			int err = -errno;

			rs_err("bpf: deleting a stale bind failed: %s",
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

static int set_lpm_count(struct rs_dataplane *dp, uint32_t n)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_meta);
	struct rs_meta meta;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -errno;
	meta.lpm_binds = n;
	return map_update(dp->skel->maps.rs_meta, &zero, &meta, "rs_meta");
}

int dp_sync_binds(struct rs_dataplane *dp, const struct rs_bind_key *keys,
		  const struct rs_bind *values, size_t n)
{
	int efd = bpf_map__fd(dp->skel->maps.rs_binds_exact);
	int lfd = bpf_map__fd(dp->skel->maps.rs_binds);
	struct rs_bind_exact_key *ekeys = calloc(n + 1, sizeof(*ekeys));
	struct rs_bind_key *lkeys = calloc(n + 1, sizeof(*lkeys));
	void *estale = NULL, *lstale = NULL;
	size_t ne = 0, nl = 0, nes = 0, nls = 0;
	int err = -ENOMEM;

	if (!ekeys || !lkeys)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct bpf_map *m = dp->skel->maps.rs_binds;
		const void *k = &keys[i];

		if (bind_is_exact(&keys[i])) {
			exact_key(&keys[i], &ekeys[ne]);
			k = &ekeys[ne++];
			m = dp->skel->maps.rs_binds_exact;
		} else {
			lkeys[nl++] = keys[i];
		}
		err = map_update(m, k, &values[i], "rs_binds");
		if (err)
			goto out;
	}
	estale = stale_keys(efd, sizeof(*ekeys), ekeys, ne, &nes);
	lstale = stale_keys(lfd, sizeof(*lkeys), lkeys, nl, &nls);
	err = -ENOMEM;
	if (!estale || !lstale)
		goto out;
	/* The trie is consulted while it holds anything, stale or new. */
	err = set_lpm_count(dp, (uint32_t)(nl + nls));
	if (!err)
		err = delete_keys(efd, estale, sizeof(*ekeys), nes);
	if (!err)
		err = delete_keys(lfd, lstale, sizeof(*lkeys), nls);
	if (!err)
		err = set_lpm_count(dp, (uint32_t)nl);
out:
	free(estale);
	free(lstale);
	free(ekeys);
	free(lkeys);
	return err;
}

static int ring_map_create(struct rs_dataplane *dp, uint32_t svc_id,
			   uint32_t nslots)
{
	struct btf *btf = bpf_object__btf(dp->skel->obj);
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP);
	char name[BPF_OBJ_NAME_LEN];
	int key_id, val_id, fd;

	key_id = btf__find_by_name_kind(btf, "__u32", BTF_KIND_TYPEDEF);
	val_id = btf__find_by_name_kind(btf, "rs_ring_slot", BTF_KIND_STRUCT);
	if (key_id > 0 && val_id > 0) {
		opts.btf_fd = btf__fd(btf);
		opts.btf_key_type_id = key_id;
		opts.btf_value_type_id = val_id;
	}
	snprintf(name, sizeof(name), "rs_ring_%u", svc_id);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(__u32),
			    sizeof(struct rs_ring_slot), nslots, &opts);
	if (fd < 0) {
		fd = -errno;
		rs_err("bpf: cannot create a ring map of %u slots: %s", nslots,
		       strerror(-fd));
	}
	return fd;
}

/* Points, then the bucket index: see struct rs_ring_buckets. */
static uint32_t ring_slots(uint32_t npoints, uint8_t bits)
{
	return npoints + 1 + (bits ? ((1u << bits) + 1 + 3) / 4 : 0);
}

static int ring_map_fill(int fd, const struct rs_ring *ring, uint8_t bits,
			 uint64_t gen)
{
	uint32_t count = ring_slots(ring->npoints, bits), *first = NULL;
	struct rs_ring_slot *slots;
	__u32 *keys;
	int err = 0;

	slots = calloc(count, sizeof(*slots));
	keys = calloc(count, sizeof(*keys));
	if (bits)
		first = calloc((1u << bits) + 1, sizeof(*first));
	if (!slots || !keys || (bits && !first)) {
		err = -ENOMEM;
		goto out;
	}
	slots[0].hdr.generation = gen;
	slots[0].hdr.npoints = ring->npoints;
	slots[0].hdr.magic = RS_RING_MAGIC;
	slots[0].hdr.bucket_bits = bits;
	for (uint32_t i = 0; i < count; i++)
		keys[i] = i;
	for (uint32_t i = 0; i < ring->npoints; i++)
		slots[i + 1].point = ring->points[i];
	if (bits) {
		ring_buckets(ring, bits, first);
		for (uint32_t b = 0; b <= (1u << bits); b++)
			slots[ring->npoints + 1 + b / 4].buckets.first[b % 4] =
				first[b];
	}
	if (bpf_map_update_batch(fd, keys, slots, &count, NULL)) {
		err = -errno;
		rs_err("bpf: filling a ring map failed: %s", strerror(-err));
	}
out:
	free(first);
	free(slots);
	free(keys);
	return err;
}

int dp_read_ring(struct rs_dataplane *dp, uint32_t svc_id, struct rs_ring *ring,
		 uint64_t *generation)
{
	int fd = inner_map_fd(dp, dp->skel->maps.rs_rings, svc_id);
	struct rs_ring_slot slot;
	__u32 zero = 0;
	int err = 0;

	memset(ring, 0, sizeof(*ring));
	*generation = 0;
	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &zero, &slot) ||
	    slot.hdr.magic != RS_RING_MAGIC) {
		close(fd);
		return -EINVAL;
	}
	*generation = slot.hdr.generation;
	ring->points = calloc(slot.hdr.npoints ? slot.hdr.npoints : 1,
			      sizeof(*ring->points));
	if (!ring->points) {
		close(fd);
		return -ENOMEM;
	}
	ring->npoints = slot.hdr.npoints;
	for (__u32 i = 0; i < ring->npoints && !err; i++) {
		__u32 key = i + 1;

		if (bpf_map_lookup_elem(fd, &key, &slot))
			err = -errno;
		else
			ring->points[i] = slot.point;
	}
	close(fd);
	if (err)
		ring_free(ring);
	return err;
}

int dp_delete_ring(struct rs_dataplane *dp, uint32_t svc_id)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_rings);

	if (bpf_map_delete_elem(outer, &svc_id) && errno != ENOENT)
		return -errno;
	return 0;
}

int dp_get_service(struct rs_dataplane *dp, uint32_t id, struct rs_service *svc)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_services), &id,
				svc))
		return -errno;
	return 0;
}

int dp_get_backend(struct rs_dataplane *dp, uint32_t id, struct rs_backend *be)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_backends), &id,
				be))
		return -errno;
	return 0;
}

static int percpu_sum(struct bpf_map *map, uint32_t id, void *out, size_t words)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals, *sum = out;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu * words, sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	memset(out, 0, words * sizeof(__u64));
	if (bpf_map_lookup_elem(bpf_map__fd(map), &id, vals)) {
		int err = -errno;

		free(vals);
		return err;
	}
	for (int c = 0; c < ncpu; c++)
		for (size_t w = 0; w < words; w++)
			sum[w] += vals[(size_t)c * words + w];
	free(vals);
	return 0;
}

int dp_backend_stats(struct rs_dataplane *dp, uint32_t id,
		     struct rs_backend_stats *out)
{
	return percpu_sum(dp->skel->maps.rs_backend_stats, id, out,
			  sizeof(*out) / sizeof(__u64));
}

int dp_service_stats(struct rs_dataplane *dp, uint32_t id,
		     struct rs_service_stats *out)
{
	return percpu_sum(dp->skel->maps.rs_service_stats, id, out,
			  sizeof(*out) / sizeof(__u64));
}

int dp_sticky_lookup(struct rs_dataplane *dp, uint32_t svc_id,
		     const struct rs_affinity_key *key,
		     struct rs_sticky_entry *out)
{
	int fd = inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id), err = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, key, out))
		err = -errno;
	close(fd);
	return err;
}

long dp_sticky_each(struct rs_dataplane *dp, uint32_t svc_id,
		    void (*fn)(const struct rs_affinity_key *key,
			       const struct rs_sticky_entry *e, void *arg),
		    void *arg)
{
	int fd = inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
	struct rs_affinity_key cur, next;
	struct rs_sticky_entry e;
	long n = 0;
	int r;

	if (fd < 0)
		return 0;
	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		cur = next;
		if (bpf_map_lookup_elem(fd, &cur, &e))
			continue;
		fn(&cur, &e, arg);
		n++;
	}
	close(fd);
	return n;
}

uint64_t dp_ring_generation(struct rs_dataplane *dp, uint32_t svc_id)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_rings);
	struct rs_ring_slot hdr;
	__u32 inner_id, zero = 0;
	uint64_t gen = 0;
	int fd;

	if (bpf_map_lookup_elem(outer, &svc_id, &inner_id))
		return 0;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (fd < 0)
		return 0;
	if (!bpf_map_lookup_elem(fd, &zero, &hdr) &&
	    hdr.hdr.magic == RS_RING_MAGIC)
		gen = hdr.hdr.generation;
	close(fd);
	return gen;
}

int64_t dp_swap_ring(struct rs_dataplane *dp, uint32_t svc_id,
		     const struct rs_ring *ring)
{
	int outer = bpf_map__fd(dp->skel->maps.rs_rings);
	uint64_t gen = dp_ring_generation(dp, svc_id) + 1;
	uint8_t bits = ring_bucket_bits(ring->npoints);
	int fd, err;

	fd = ring_map_create(dp, svc_id, ring_slots(ring->npoints, bits));
	if (fd < 0)
		return fd;
	err = ring_map_fill(fd, ring, bits, gen);
	if (!err && bpf_map_update_elem(outer, &svc_id, &fd, BPF_ANY)) {
		err = -errno;
		rs_err("bpf: swapping the ring of service %u failed: %s",
		       svc_id, strerror(-err));
	}
	/* The outer map holds its own reference; ours is no longer needed. */
	close(fd);
	return err ? err : (int64_t)gen;
}

static int inner_map_fd(struct rs_dataplane *dp, struct bpf_map *outer,
			uint32_t svc_id)
{
	__u32 id;

	(void)dp;
	if (bpf_map_lookup_elem(bpf_map__fd(outer), &svc_id, &id))
		return -ENOENT;
	return bpf_map_get_fd_by_id(id);
}

int dp_sticky_create(struct rs_dataplane *dp, uint32_t svc_id,
		     uint32_t max_entries)
{
	struct btf *btf = bpf_object__btf(dp->skel->obj);
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int outer = bpf_map__fd(dp->skel->maps.rs_sticky);
	char name[BPF_OBJ_NAME_LEN];
	int key_id, val_id, fd, err = 0;

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
	int fd = inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
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
	int fd = inner_map_fd(dp, dp->skel->maps.rs_sticky, svc_id);
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

int dp_set_socket(struct rs_dataplane *dp, uint32_t slot, int sock_fd)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_sockets);
	__u64 value = (__u64)sock_fd;

	if (bpf_map_update_elem(fd, &slot, &value, BPF_ANY))
		return -errno;
	return 0;
}

int dp_clear_socket(struct rs_dataplane *dp, uint32_t slot)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_sockets);

	/* SOCKMAP reports an already empty slot as EINVAL, not ENOENT. */
	if (bpf_map_delete_elem(fd, &slot) && errno != ENOENT &&
	    errno != EINVAL) {
		int err = -errno;

		rs_err("bpf: clearing SOCKMAP slot %u failed: %s", slot,
		       strerror(-err));
		return err;
	}
	return 0;
}

int dp_socket_cookie(struct rs_dataplane *dp, uint32_t slot, uint64_t *cookie)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_sockets);
	__u64 value;

	if (bpf_map_lookup_elem(fd, &slot, &value))
		return -errno;
	*cookie = value;
	return 0;
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
	 * The link first, detached explicitly: a running daemon may still hold
	 * a reference that would otherwise keep it attached.
	 */
	snprintf(path, sizeof(path), "%s/%s", root, RS_LINK_PIN_NAME);
	link_fd = bpf_obj_get(path);
	if (link_fd >= 0) {
		if (bpf_link_detach(link_fd))
			err = -errno;
		close(link_fd);
	}
	if (unlink(path) && errno != ENOENT && !err)
		err = -errno;
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

static bool cookie_key_in(const struct rs_cookie_key *k,
			  const struct rs_cookie_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(k, &keys[i], sizeof(*k)))
			return true;
	return false;
}

int dp_sync_cookies(struct rs_dataplane *dp, const struct rs_cookie_key *keys,
		    const struct rs_cookie *values, size_t n, size_t *written,
		    size_t *removed)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_cookies);
	struct rs_cookie_key cur, next, *stale;
	size_t nstale = 0, nwritten = 0, nremoved = 0;
	int err = 0, r;

	for (size_t i = 0; i < n; i++) {
		struct rs_cookie have;

		if (!bpf_map_lookup_elem(fd, &keys[i], &have) &&
		    have.backend == values[i].backend)
			continue;
		err = map_update(dp->skel->maps.rs_cookies, &keys[i],
				 &values[i], "rs_cookies");
		if (err)
			return err;
		nwritten++;
	}
	stale = calloc(RS_MAX_BACKENDS, sizeof(*stale));
	if (!stale)
		return -ENOMEM;
	/* Collect first: deleting the current key would restart the walk. */
	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		if (!cookie_key_in(&next, keys, n) && nstale < RS_MAX_BACKENDS)
			stale[nstale++] = next;
		cur = next;
	}
	for (size_t i = 0; i < nstale; i++) {
		if (bpf_map_delete_elem(fd, &stale[i]) && errno != ENOENT) {
			err = -errno;
			rs_err("bpf: delete from rs_cookies failed: %s",
			       strerror(-err));
			break;
		}
		nremoved++;
	}
	free(stale);
	if (written)
		*written = nwritten;
	if (removed)
		*removed = nremoved;
	return err;
}

int dp_cookie_lookup(struct rs_dataplane *dp, const struct rs_cookie_key *key,
		     struct rs_cookie *out)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_cookies), key,
				out))
		return -errno;
	return 0;
}

long dp_cookies_each(struct rs_dataplane *dp,
		     void (*fn)(const struct rs_cookie_key *key,
				const struct rs_cookie *val, void *arg),
		     void *arg)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_cookies), r;
	struct rs_cookie_key cur, next;
	struct rs_cookie val;
	long n = 0;

	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		cur = next;
		if (bpf_map_lookup_elem(fd, &cur, &val))
			continue;
		fn(&cur, &val, arg);
		n++;
	}
	return n;
}

static uint32_t map_id_of_fd(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

/*
 * Every map of steer_tc must be the very map steer_lookup uses: a map
 * created afresh (a pin missing, a layout refused) would leave the TC
 * program steering by a state nobody writes.
 */
static int tc_maps_shared(struct rs_dataplane *dp)
{
	struct bpf_map *m, *peer;

	bpf_object__for_each_map(m, dp->tc_skel->obj)
	{
		if (bpf_map__is_internal(m))
			continue;
		peer = bpf_object__find_map_by_name(dp->skel->obj,
						    bpf_map__name(m));
		if (!peer || map_id_of_fd(bpf_map__fd(m)) !=
				     map_id_of_fd(bpf_map__fd(peer))) {
			rs_err("bpf: steer_tc's map %s is not steer_lookup's: "
			       "refusing to run it",
			       bpf_map__name(m));
			return -EPROTO;
		}
	}
	return 0;
}

int dp_tc_open(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .pin_root_path = dp->root[0] ? dp->root : NULL);
	struct bpf_map *m, *peer;
	int err;

	if (dp->tc_skel)
		return 0;
	dp->tc_skel = steer_tc_bpf__open_opts(&opts);
	if (!dp->tc_skel) {
		err = -errno;
		rs_err("bpf: cannot open steer_tc: %s", strerror(-err));
		return err;
	}
	if (!dp->root[0]) {
		/* No pins: share steer_lookup's maps by fd. */
		bpf_object__for_each_map(m, dp->tc_skel->obj)
		{
			if (bpf_map__is_internal(m))
				continue;
			bpf_map__set_pin_path(m, NULL);
			peer = bpf_object__find_map_by_name(dp->skel->obj,
							    bpf_map__name(m));
			if (peer)
				bpf_map__reuse_fd(m, bpf_map__fd(peer));
		}
	}
	err = steer_tc_bpf__load(dp->tc_skel);
	if (err) {
		rs_err("bpf: cannot load steer_tc next to the maps under %s: "
		       "%s",
		       dp->root[0] ? dp->root : "(none)", strerror(-err));
		goto fail;
	}
	err = tc_maps_shared(dp);
	if (err)
		goto fail;
	return 0;
fail:
	steer_tc_bpf__destroy(dp->tc_skel);
	dp->tc_skel = NULL;
	return err;
}

void dp_tc_close(struct rs_dataplane *dp)
{
	if (dp->tc_skel)
		steer_tc_bpf__destroy(dp->tc_skel);
	dp->tc_skel = NULL;
}

bool dp_tc_loaded(const struct rs_dataplane *dp)
{
	return dp->tc_skel != NULL;
}

int dp_tc_prog_fd(struct rs_dataplane *dp)
{
	if (!dp->tc_skel)
		return -1;
	return bpf_program__fd(dp->tc_skel->progs.steer_tc);
}

uint32_t dp_tc_program_id(struct rs_dataplane *dp)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (!dp->tc_skel ||
	    bpf_obj_get_info_by_fd(bpf_program__fd(dp->tc_skel->progs.steer_tc),
				   &info, &len))
		return 0;
	return info.id;
}

uint32_t dp_sockets_map_id(struct rs_dataplane *dp)
{
	return map_id_of_fd(bpf_map__fd(dp->skel->maps.rs_sockets));
}

uint32_t dp_pinned_sockets_map_id(const char *root)
{
	char path[PATH_MAX + 16];
	uint32_t id;
	int fd;

	snprintf(path, sizeof(path), "%s/rs_sockets", root);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	id = map_id_of_fd(fd);
	close(fd);
	return id;
}

// SPDX-License-Identifier: MIT
/*
 * Maps sized by the configuration (dataplane.h, "Sizing"). The fleet's
 * tables are most of what a start pins, 34 MiB of flow memory alone, and
 * a host without [fleet] never reads or writes them: there they get one
 * entry each. The size is part of the pinned layout (dp_pins_probe()
 * compares it), so a start whose configuration needs another size meets
 * pins "of another layout" and takes the upgrade path, make-before-break,
 * like an ABI change; a reload cannot resize a map and is refused.
 *
 * The estimate follows the kernel's own accounting (map_mem_usage, the
 * "memlock" of `bpftool map show`), read on 6.18: per map type, the
 * struct the kernel allocates for the map plus its elements.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "dataplane_internal.h"
#include "log.h"

/* Maps that only fleet mode uses; everything else keeps its build size. */
static const char *const fleet_only[] = {
	"rs_fleet_flows",
	"rs_fleet_peers",
	"rs_fleet_sip",
};

/* Maps that only services with generations use (abi_maps.h). */
static const char *const generations_only[] = {
	"rs_gen_sockets",
	"rs_udp_flows",
};

/* Default: a data plane sized for everything (tests, tools without one). */
static bool sized_for_fleet = true;
static uint32_t sized_flows = RS_GEN_FLOWS_DEFAULT;

void dp_size_for(bool fleet)
{
	sized_for_fleet = fleet;
}

bool dp_sized_for_fleet(void)
{
	return sized_for_fleet;
}

void dp_size_flows(uint32_t flow_table)
{
	sized_flows = flow_table;
}

uint32_t dp_sized_flows(void)
{
	return sized_flows;
}

static bool is_in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return true;
	return false;
}

static bool is_fleet_only(const char *name)
{
	return is_in(name, fleet_only,
		     sizeof(fleet_only) / sizeof(fleet_only[0]));
}

static bool is_generations_only(const char *name)
{
	return is_in(name, generations_only,
		     sizeof(generations_only) / sizeof(generations_only[0]));
}

/* The entries @name gets at the sizes set; 0: its build size. */
static uint32_t configured_entries(const char *name)
{
	if (!sized_for_fleet && is_fleet_only(name))
		return 1;
	if (!strcmp(name, "rs_udp_flows"))
		return sized_flows ? sized_flows : 1;
	if (!strcmp(name, "rs_gen_sockets") && !sized_flows)
		return 1;
	return 0;
}

int dp_size_maps(struct bpf_object *obj)
{
	struct bpf_map *m;
	uint32_t n;
	int err;

	bpf_object__for_each_map(m, obj)
	{
		n = configured_entries(bpf_map__name(m));
		if (!n)
			continue;
		err = bpf_map__set_max_entries(m, n);
		if (err) {
			rs_err("bpf: cannot size %s: %s", bpf_map__name(m),
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

int dp_sizing_fits(struct rs_dataplane *dp, bool fleet, uint32_t flow_table,
		   char *why, size_t len)
{
	const struct bpf_map *m = dp->skel->maps.rs_fleet_flows;
	uint32_t flows = bpf_map__max_entries(dp->skel->maps.rs_udp_flows);

	/* A table of one entry: started without generations. */
	if (flow_table && flows != flow_table) {
		snprintf(why, len,
			 "flow_table %u needs the generations' flow table of "
			 "that size, which this data plane was started with "
			 "%u entries (%s): restart ringsteerd to resize it "
			 "(the start resizes it beside the running data "
			 "plane, no client moved)",
			 flow_table, flows,
			 flows == 1 ? "no service had generations"
				    : "another flow_table");
		return -EXFULL;
	}
	if (!fleet || bpf_map__max_entries(m) >= RS_FLEET_FLOWS_MAX)
		return 0;
	snprintf(why, len,
		 "[fleet] needs the fleet's flow tables, which this data plane "
		 "was started without (rs_fleet_flows has %u entry, fleet "
		 "mode %u): restart ringsteerd to switch fleet mode on (the "
		 "start resizes them beside the running data plane, no "
		 "client moved)",
		 bpf_map__max_entries(m), (unsigned int)RS_FLEET_FLOWS_MAX);
	return -EXFULL;
}

/* ---- the estimate ---- */

#define PAGE	       4096
#define ROUND8(n)      (((uint64_t)(n) + 7) & ~(uint64_t)7)
#define PAGE_UP(n)     (((uint64_t)(n) + PAGE - 1) & ~(uint64_t)(PAGE - 1))
#define ARRAY_HEAD     312 /* struct bpf_array */
#define HTAB_HEAD      768 /* struct bpf_htab, rounded up */
#define HTAB_ELEM_HEAD 48  /* struct htab_elem up to its key */
#define HTAB_BUCKET    16
#define HTAB_LOCKS     (8 * sizeof(int)) /* map_locked[], per CPU */
#define SOCKMAP_HEAD   376
#define RINGBUF_HEAD   304
#define RINGBUF_META   3   /* pages before the data */
#define SMALL_MAP      512 /* sk_storage, an empty LPM trie: about this */

static uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static uint64_t htab_memory(const struct bpf_map *m, uint64_t cpus)
{
	enum bpf_map_type t = bpf_map__type(m);
	bool percpu = t == BPF_MAP_TYPE_PERCPU_HASH ||
		      t == BPF_MAP_TYPE_LRU_PERCPU_HASH;
	bool lru =
		t == BPF_MAP_TYPE_LRU_HASH || t == BPF_MAP_TYPE_LRU_PERCPU_HASH;
	uint64_t n = bpf_map__max_entries(m),
		 v = ROUND8(bpf_map__value_size(m));
	uint64_t elem = HTAB_ELEM_HEAD + ROUND8(bpf_map__key_size(m)) +
			(percpu ? 8 : v);
	uint64_t bytes =
		HTAB_HEAD + pow2_at_least(n) * HTAB_BUCKET + cpus * HTAB_LOCKS;

	if (bpf_map__map_flags(m) & BPF_F_NO_PREALLOC)
		return bytes;
	/* Plain hashes keep one spare element per CPU for updates. */
	bytes += elem * (n + (!percpu && !lru ? cpus : 0));
	if (percpu)
		bytes += v * cpus * n;
	else if (!lru)
		bytes += 8 * cpus;
	return bytes;
}

/* Kernel memory of @m as its object defines it now. */
static uint64_t map_memory(const struct bpf_map *m, uint64_t cpus)
{
	uint64_t n = bpf_map__max_entries(m),
		 v = ROUND8(bpf_map__value_size(m));

	switch (bpf_map__type(m)) {
	case BPF_MAP_TYPE_ARRAY:
		if (bpf_map__map_flags(m) & BPF_F_MMAPABLE)
			return PAGE_UP(ARRAY_HEAD) + PAGE_UP(n * v);
		return ARRAY_HEAD + n * v;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		return ARRAY_HEAD + n * 8 + n * v * cpus;
	case BPF_MAP_TYPE_ARRAY_OF_MAPS:
		return ARRAY_HEAD + n * 8;
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
		return htab_memory(m, cpus);
	case BPF_MAP_TYPE_SOCKMAP:
		return SOCKMAP_HEAD + n * 8;
	case BPF_MAP_TYPE_SOCKHASH:
		/* Buckets only: an element is allocated per socket inserted. */
		return SOCKMAP_HEAD + pow2_at_least(n) * HTAB_BUCKET;
	case BPF_MAP_TYPE_RINGBUF:
		return RINGBUF_HEAD + n + RINGBUF_META * PAGE +
		       (RINGBUF_META + 2 * (n / PAGE)) * 8;
	default:
		return SMALL_MAP;
	}
}

int dp_pinned_memory(uint64_t *bytes, uint64_t *fleet_bytes,
		     uint64_t *gen_bytes)
{
	struct steer_lookup_bpf *skel = steer_lookup_bpf__open();
	int cpus = libbpf_num_possible_cpus();
	struct bpf_map *m;
	int err;

	*bytes = *fleet_bytes = *gen_bytes = 0;
	if (!skel)
		return -errno;
	err = dp_size_maps(skel->obj);
	bpf_object__for_each_map(m, skel->obj)
	{
		uint64_t b = map_memory(m, cpus > 0 ? (uint64_t)cpus : 1);

		if (!bpf_map__pin_path(m))
			continue;
		*bytes += b;
		if (is_fleet_only(bpf_map__name(m)))
			*fleet_bytes += b;
		if (is_generations_only(bpf_map__name(m)))
			*gen_bytes += b;
	}
	steer_lookup_bpf__destroy(skel);
	return err;
}

uint64_t dp_fleet_table_memory(void)
{
	return ARRAY_HEAD + (uint64_t)RS_FLEET_MAP_SLOTS *
				    ROUND8(sizeof(struct rs_fleet_slot));
}

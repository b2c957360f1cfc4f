// SPDX-License-Identifier: MIT
/*
 * Kernel memory of the maps a configuration asks for. Rings and sticky
 * tables are sized by the file, allocated in full when their map is
 * created, and charged to the host rather than to ringsteerd: one
 * `sticky_max` with an extra digit takes gigabytes and stalls the daemon
 * while the kernel fills them in. So the file states a budget
 * ([global] memory_max) and a file over it is refused, with the key to
 * blame, before any map is made.
 *
 * The sizes follow the kernel's own accounting (map_mem_usage, shown as
 * "memlock" by `bpftool map show`), checked on 6.18: ours is the kernel's
 * figure plus at most a few hundred bytes of allowance per map.
 * - ring (ARRAY, BPF_F_MMAPABLE): one 16-byte struct rs_ring_slot per
 *   slot (header, points, bucket index, and the room a fresh ring map is
 *   made with: ring_map_capacity()) and struct bpf_array, each rounded up
 *   to whole pages, as a map that can be mapped is allocated. After a
 *   service's first ring change the daemon holds a second one, the map
 *   that change replaced, to write the next ring into
 *   (dataplane_ring_spare.c): not pinned, so not what a start pins, but
 *   stated beside it;
 * - sticky table (LRU_HASH, preallocated): per entry a struct htab_elem
 *   (48 bytes before the key) with the key and value each rounded up to
 *   8 bytes; per bucket (entries rounded up to a power of two) 16 bytes;
 *   plus struct bpf_htab and, per possible CPU, its lock counters and the
 *   LRU's local free lists.
 * The data plane's own maps (backends, binds, stats, SOCKMAP, the fleet's
 * tables) are estimated by the data plane (dataplane_sizing.c), which
 * knows them, and reported here; memory_max budgets only what the
 * services add.
 */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ringsteer/rules.h>

#include "config_checks.h"
#include "ring.h"

#define MAP_OVERHEAD   1024 /* struct bpf_htab, rounded up */
#define HTAB_ELEM_HEAD 48   /* struct htab_elem up to its key */
#define HTAB_BUCKET    16   /* struct bucket */
#define LRU_PERCPU     128  /* map_locked[] + struct bpf_lru_locallist */
#define ROUND8(n)      (((n) + 7) & ~(uint64_t)7)
#define STICKY_ELEM                                                            \
	(HTAB_ELEM_HEAD + ROUND8(sizeof(struct rs_affinity_key)) +             \
	 ROUND8(sizeof(struct rs_sticky_entry)))

uint64_t rs_ring_memory(uint64_t points)
{
	uint32_t n = points > RS_MAX_RING_POINTS ? RS_MAX_RING_POINTS
						 : (uint32_t)points;

	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t bytes = (uint64_t)ring_map_capacity(
				 ring_map_slots(n, ring_bucket_bits(n))) *
			 sizeof(struct rs_ring_slot);

	return (bytes + page - 1) / page * page + page;
}

static uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

uint64_t rs_sticky_memory(uint32_t entries)
{
	int cpus = libbpf_num_possible_cpus();

	if (!entries)
		return 0;
	return (uint64_t)entries * STICKY_ELEM +
	       pow2_at_least(entries) * HTAB_BUCKET + MAP_OVERHEAD +
	       (uint64_t)(cpus > 0 ? cpus : 1) * LRU_PERCPU;
}

static void estimate(uint64_t points, const struct rs_service_conf *s,
		     struct rs_service_memory *out)
{
	out->ring_points = points;
	out->ring_bytes = rs_ring_memory(points);
	out->sticky_entries = s->sticky_ttl ? s->sticky_max : 0;
	out->sticky_bytes = rs_sticky_memory(out->sticky_entries);
}

void rs_config_memory(const struct rs_config *cfg, size_t svc,
		      struct rs_service_memory *out)
{
	const struct rs_service_conf *s = &cfg->services[svc];
	uint64_t points = 0;

	for (size_t i = 0; i < cfg->n_backends; i++)
		if (cfg->backends[i].service == svc)
			points += (uint64_t)cfg->backends[i].weight * s->vnodes;
	estimate(points, s, out);
}

/*
 * "41 KiB", "6.5 MiB", "256 MiB": rounded up, never below what it stands
 * for, and whole numbers as such.
 */
static const char *fmt_bytes(char *buf, size_t len, uint64_t b)
{
	int shift = b < (1u << 20) ? 10 : b < (1ull << 30) ? 20 : 30;
	uint64_t unit = 1ull << shift;
	const char *name = shift == 10 ? "KiB" : shift == 20 ? "MiB" : "GiB";

	if (shift == 10 || b % unit == 0)
		snprintf(buf, len, "%llu %s",
			 (unsigned long long)((b + unit - 1) >> shift), name);
	else
		snprintf(buf, len, "%.1f %s",
			 (double)((b * 10 + unit - 1) / unit) / 10, name);
	return buf;
}

/* "2,560" */
static const char *fmt_count(char *buf, size_t len, uint64_t n)
{
	char digits[24];
	size_t nd, j = 0;

	nd = (size_t)snprintf(digits, sizeof(digits), "%llu",
			      (unsigned long long)n);
	for (size_t i = 0; i < nd && j + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
	return buf;
}

/* "ring 2,560 points (41 KiB), sticky 65,536 entries (~6.5 MiB)" */
static const char *fmt_service(char *buf, size_t len,
			       const struct rs_service_memory *m)
{
	char pts[32], rb[32], ents[32], sb[32];

	if (!m->sticky_entries) {
		snprintf(buf, len, "ring %s points (%s), no sticky table",
			 fmt_count(pts, sizeof(pts), m->ring_points),
			 fmt_bytes(rb, sizeof(rb), m->ring_bytes));
		return buf;
	}
	snprintf(buf, len, "ring %s points (%s), sticky %s entries (~%s)",
		 fmt_count(pts, sizeof(pts), m->ring_points),
		 fmt_bytes(rb, sizeof(rb), m->ring_bytes),
		 fmt_count(ents, sizeof(ents), m->sticky_entries),
		 fmt_bytes(sb, sizeof(sb), m->sticky_bytes));
	return buf;
}

/* "data plane: ~2.5 MiB of maps, ..." and the bytes it adds. */
static uint64_t report_fixed(const struct rs_config *cfg,
			     const struct rs_memory_fixed *x, FILE *f)
{
	char maps[32], fleet[32], table[32];

	fmt_bytes(maps, sizeof(maps), x->maps);
	if (cfg->flow_table)
		fprintf(f,
			"generations: ~%s of the data plane's maps are the "
			"flow table (flow_table %u) and the generations' "
			"sockets\n",
			fmt_bytes(table, sizeof(table), x->gen_maps),
			cfg->flow_table);
	if (!cfg->fleet.enabled) {
		fprintf(f,
			"data plane: ~%s of maps (no [fleet]: the fleet's "
			"tables at 1 entry)\n",
			maps);
		return x->maps;
	}
	fprintf(f,
		"data plane: ~%s of maps (~%s of them the fleet's tables, "
		"for [fleet]), and ~%s for the fleet table once etcd "
		"answers\n",
		maps, fmt_bytes(fleet, sizeof(fleet), x->fleet_maps),
		fmt_bytes(table, sizeof(table), x->fleet_table));
	return x->maps + x->fleet_table;
}

/*
 * "ring changes: ..." the second ring map each service holds once its
 * ring has changed (as large as its ring map, at most twice: a spare is
 * kept only while it could take the ring installed).
 */
static void report_spares(uint64_t rings, uint64_t total, FILE *f)
{
	char spare[32], all[32];

	fprintf(f,
		"ring changes: after its first one, each service keeps the "
		"ring map a change replaced to write the next ring into: "
		"~%s (%llu bytes) more for these rings (at most twice that "
		"after weights fall), ~%s in all\n",
		fmt_bytes(spare, sizeof(spare), rings),
		(unsigned long long)rings,
		fmt_bytes(all, sizeof(all), total + rings));
}

void rs_config_memory_report(const struct rs_config *cfg,
			     const struct rs_memory_fixed *fixed, FILE *f)
{
	char line[160], total_text[32], max_text[32], all_text[32];
	struct rs_service_memory m;
	uint64_t total = 0, rings = 0, all;

	for (size_t i = 0; i < cfg->n_services; i++) {
		rs_config_memory(cfg, i, &m);
		total += m.ring_bytes + m.sticky_bytes;
		rings += m.ring_bytes;
		fprintf(f, "service %s: %s\n", cfg->services[i].name,
			fmt_service(line, sizeof(line), &m));
	}
	fmt_bytes(total_text, sizeof(total_text), total);
	fmt_bytes(max_text, sizeof(max_text), cfg->memory_max);
	if (!fixed) {
		fprintf(f,
			"kernel memory: ~%s for %zu service%s "
			"(memory_max %s)\n",
			total_text, cfg->n_services,
			cfg->n_services == 1 ? "" : "s", max_text);
		report_spares(rings, total, f);
		return;
	}
	all = total + report_fixed(cfg, fixed, f);
	fprintf(f,
		"kernel memory: ~%s (%llu bytes) pinned by a start: the data "
		"plane's maps and ~%s for %zu service%s (memory_max %s)\n",
		fmt_bytes(all_text, sizeof(all_text), all),
		(unsigned long long)all, total_text, cfg->n_services,
		cfg->n_services == 1 ? "" : "s", max_text);
	report_spares(rings, all, f);
}

uint64_t cfg_service_points(const struct cfg_entries *e, size_t svc)
{
	uint64_t points = 0;

	for (size_t j = 0; j < e->n_bes; j++)
		if (e->bes[j].resolved && e->bes[j].conf.service == svc)
			points += rs_backend_points(e->bes[j].conf.weight,
						    e->svcs[svc].conf.vnodes);
	return points;
}

/*
 * The key to blame for a service's memory: the larger of its sticky table
 * (sticky_max, or sticky_ttl when sticky_max is the default) and its ring
 * (vnodes, or the header when the weights are to blame).
 */
static void blame(const struct svc_entry *s, const struct rs_service_memory *m,
		  int *line, const char **key)
{
	*line = s->conf.line;
	*key = NULL;
	if (m->sticky_bytes > m->ring_bytes) {
		if (s->key_line[SVC_STICKY_MAX]) {
			*line = s->key_line[SVC_STICKY_MAX];
			*key = "sticky_max";
		} else {
			*line = s->key_line[SVC_STICKY_TTL];
			*key = "sticky_ttl";
		}
	} else if (s->key_line[SVC_VNODES]) {
		*line = s->key_line[SVC_VNODES];
		*key = "vnodes";
	}
}

static void report_over(const struct cfg_entries *e, struct cfg_report *r,
			const struct svc_entry *s,
			const struct rs_service_memory *m, bool alone,
			uint64_t total, uint64_t max)
{
	char label[LABEL_MAX], what[160], need[32], lim[32], where[64] = "";
	const char *key;
	int line;

	blame(s, m, &line, &key);
	snprintf(label, sizeof(label), "service %s", s->conf.name);
	if (e->global.key_line[GL_MEMORY_MAX])
		snprintf(where, sizeof(where), " (at %s:%d)", r->file,
			 e->global.key_line[GL_MEMORY_MAX]);
	fmt_service(what, sizeof(what), m);
	if (alone)
		cfg_report(r, line, label, key,
			   "needs ~%s of kernel memory (%s), over memory_max "
			   "%s%s: lower sticky_max or vnodes, or raise "
			   "[global] memory_max",
			   fmt_bytes(need, sizeof(need), total), what,
			   fmt_bytes(lim, sizeof(lim), max), where);
	else
		cfg_report(r, line, label, key,
			   "the services up to this one need ~%s of kernel "
			   "memory together (this one: %s), over memory_max "
			   "%s%s: lower sticky_max or vnodes, or raise "
			   "[global] memory_max",
			   fmt_bytes(need, sizeof(need), total), what,
			   fmt_bytes(lim, sizeof(lim), max), where);
}

/*
 * A service alone over the budget is blamed on its own key; otherwise the
 * service at which the running total crosses it is.
 */
void cfg_check_memory(const struct cfg_entries *e, struct cfg_report *r)
{
	uint64_t max = e->global.memory_max, total = 0;
	bool over_alone = false;

	if (e->global.key_bad[GL_MEMORY_MAX])
		return;
	for (size_t i = 0; i < e->n_svcs; i++) {
		const struct svc_entry *s = &e->svcs[i];
		struct rs_service_memory m;

		estimate(cfg_service_points(e, i), &s->conf, &m);
		if (m.ring_bytes + m.sticky_bytes > max) {
			report_over(e, r, s, &m, true,
				    m.ring_bytes + m.sticky_bytes, max);
			over_alone = true;
			continue;
		}
		total += m.ring_bytes + m.sticky_bytes;
		if (!over_alone && total > max) {
			report_over(e, r, s, &m, false, total, max);
			return;
		}
	}
}

// SPDX-License-Identifier: MIT
/*
 * Each service's spare ring map: the map the last swap took out of
 * rs_rings, kept (its fd and its mapping) so that the ring after next is
 * written into pages already touched instead of a fresh map. On this
 * project's VMs the first user access to each 4 KiB page of a new
 * mapping costs 6-15 us (shadow paging): 38 ms to write a 21.6 MB ring
 * map at 200 backends the first time, 1.4 ms into the same mapping again.
 * The mapping itself must be kept, writable: a new mapping of the same
 * map pays the first touches again (35 ms), and mprotect() from read-only
 * back to writable costs 25 of them. A restart or an upgrade leaves the
 * spares behind: they are not pinned.
 *
 * The grace period. A program that looked the old ring up in rs_rings
 * before the swap may still be reading it: nothing may be written into a
 * spare until every such reader is done. Every reader of rs_rings is a
 * non-sleepable program that runs inside one RCU read-side section:
 * steer_lookup (sk_lookup: bpf_sk_lookup_run_v4/v6() in
 * include/linux/filter.h hold rcu_read_lock() around the run), steer_tc
 * (TC ingress: __netif_receive_skb_core() runs under rcu_read_lock() from
 * netif_receive_skb_internal() and the backlog) and steer_sockops
 * (bpf_prog_run_array_cg() takes rcu_read_lock()). A lookup in an
 * array-of-maps hands out the inner map's pointer, read with READ_ONCE()
 * (array_of_map_lookup_elem()), valid only within that section; the
 * update swaps it with xchg() and the kernel frees a replaced inner map
 * after one RCU grace period when no sleepable program uses the outer map
 * (bpf_map_fd_put_ptr(), kernel/bpf/map_in_map.c, since 6.8), the same
 * guarantee this relies on. membarrier(MEMBARRIER_CMD_GLOBAL) is
 * synchronize_rcu() (kernel/sched/membarrier.c), which since 4.20 waits
 * for bh- and preempt-disabled sections too; it refuses (EINVAL) with
 * nohz_full, and on a single online CPU it returns without waiting, which
 * a reader preempted inside its section (preemptible RCU) would not
 * survive: in both cases no spare is reused and a fresh map is made, as
 * before. One call covers every spare that left rs_rings before it, so a
 * reload that changes several services waits once.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"

struct ring_svc {
	struct ring_map spare;
	uint64_t spare_left; /* the swap that took it out of rs_rings */
	/*
	 * The mapping of the installed map, as dp_ring_installed() recorded
	 * it: owned here (a swap without a caller to hand it to) or handed
	 * out, to be given back with the next swap.
	 */
	void *mem;
	size_t len;
	uint32_t id; /* the map's */
	bool owned;
};

struct dp_rings {
	struct ring_svc svc[RS_MAX_SERVICES];
	uint64_t swaps;	   /* successful swaps so far */
	uint64_t gp_done;  /* swaps a grace period has passed since */
	bool no_barrier;   /* membarrier refused once: never again */
	uint64_t reused;   /* rings written into a spare */
	uint64_t barriers; /* membarrier() calls */
};

static void ring_map_close(struct ring_map *m)
{
	if (m->mem)
		munmap(m->mem, m->len);
	if (m->fd >= 0)
		close(m->fd);
	*m = (struct ring_map){.fd = -1};
}

static struct ring_svc *svc_of(struct rs_dataplane *dp, uint32_t svc_id)
{
	if (svc_id >= RS_MAX_SERVICES)
		return NULL;
	if (!dp->rings) {
		dp->rings = calloc(1, sizeof(*dp->rings));
		if (!dp->rings)
			return NULL;
		for (size_t i = 0; i < RS_MAX_SERVICES; i++)
			dp->rings->svc[i].spare.fd = -1;
	}
	return &dp->rings->svc[svc_id];
}

/*
 * Whether a grace period has passed since the swap that took @left out
 * of rs_rings: known when an earlier wait began after it, else waited
 * for now (see the top of this file).
 */
static bool grace_passed(struct dp_rings *r, uint64_t left)
{
	uint64_t upto = r->swaps;

	if (left <= r->gp_done)
		return true;
	if (r->no_barrier)
		return false;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		rs_info("bpf: one CPU online, where membarrier() waits for no "
			"grace period: ring maps are not reused");
		r->no_barrier = true;
		return false;
	}
	r->barriers++;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)) {
		rs_warn("bpf: membarrier(MEMBARRIER_CMD_GLOBAL): %s: ring maps "
			"are not reused, each ring goes into a new one",
			strerror(errno));
		r->no_barrier = true;
		return false;
	}
	r->gp_done = upto;
	return true;
}

int dp_ring_spare_take(struct rs_dataplane *dp, uint32_t svc_id, uint32_t slots,
		       struct ring_map *out)
{
	struct ring_svc *s = svc_of(dp, svc_id);
	int err;

	if (!s || s->spare.fd < 0 || !ring_map_fits(s->spare.slots, slots))
		return -ENOENT;
	if (!grace_passed(dp->rings, s->spare_left))
		return -EAGAIN;
	err = dp_fault("ring_spare");
	if (!err && !s->spare.mem) {
		s->spare.len =
			(size_t)s->spare.slots * sizeof(struct rs_ring_slot);
		s->spare.mem = mmap(NULL, s->spare.len, PROT_READ | PROT_WRITE,
				    MAP_SHARED, s->spare.fd, 0);
		if (s->spare.mem == MAP_FAILED) {
			err = -errno;
			s->spare.mem = NULL;
		}
	}
	if (err) {
		/* Not worth another try: a fresh map, and this one goes. */
		rs_debug("bpf: the spare ring map of service %u cannot be "
			 "written (%s): a new one instead",
			 svc_id, strerror(-err));
		ring_map_close(&s->spare);
		return err;
	}
	*out = s->spare;
	s->spare = (struct ring_map){.fd = -1};
	dp->rings->reused++;
	return 0;
}

void dp_ring_spare_put(struct rs_dataplane *dp, uint32_t svc_id,
		       struct ring_map *m)
{
	struct ring_svc *s = svc_of(dp, svc_id);

	if (!s) {
		ring_map_close(m);
		return;
	}
	/* Unused after all (the swap failed): still out of rs_rings. */
	ring_map_close(&s->spare);
	s->spare = *m;
	*m = (struct ring_map){.fd = -1};
}

/*
 * Whether the map that left rs_rings (@info) is kept as the spare, and
 * with which mapping: the one this data plane made of it, its own or
 * given back by the caller in *@installed (cleared there). A map it
 * mapped that is still held elsewhere (a caller that kept the ring it was
 * given) is never written into; nor one whose mapping is not known to be
 * its own (rs_rings written by someone else meanwhile).
 */
static bool old_mapping(struct ring_svc *s, const struct bpf_map_info *info,
			struct rs_ring *installed, struct ring_map *old)
{
	bool mine = s->mem && info->id == s->id;
	bool given = s->mem && installed && installed->mapping == s->mem &&
		     installed->mapping_len == s->len;

	if (!s->mem)
		return true; /* a ring it did not write (adopted): mapped later
			      */
	if (s->owned && !mine)
		munmap(s->mem, s->len);
	if (!mine || (!s->owned && !given))
		return false;
	old->mem = s->mem;
	old->len = s->len;
	if (given) {
		installed->mapping = NULL;
		installed->points = NULL;
	}
	return true;
}

void dp_ring_swapped(struct rs_dataplane *dp, uint32_t svc_id, int old_fd,
		     struct rs_ring *installed, const struct ring_map *now,
		     uint32_t used, bool handed_out)
{
	struct ring_svc *s = svc_of(dp, svc_id);
	struct ring_map old = {.fd = old_fd};
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);
	bool keep;

	if (!s) {
		if (old_fd >= 0)
			close(old_fd);
		return;
	}
	dp->rings->swaps++;
	/*
	 * Kept only if it could take the ring just installed (@used slots):
	 * the next is likely of its size, and a spare is then never more
	 * than twice the installed ring, the bound `--check` states.
	 */
	keep = old.fd >= 0 && !bpf_obj_get_info_by_fd(old.fd, &info, &len) &&
	       info.map_flags == RS_RING_MAP_FLAGS &&
	       ring_map_fits(info.max_entries, used);
	if (old.fd >= 0 && keep)
		keep = old_mapping(s, &info, installed, &old);
	else if (s->mem && s->owned)
		munmap(s->mem, s->len);
	if (keep) {
		old.slots = info.max_entries;
		old.id = info.id;
		ring_map_close(&s->spare);
		s->spare = old;
		s->spare_left = dp->rings->swaps;
	} else {
		ring_map_close(&old);
	}
	s->mem = now->mem;
	s->len = now->len;
	s->id = now->id;
	s->owned = !handed_out;
}

void dp_ring_spare_drop(struct rs_dataplane *dp, uint32_t svc_id)
{
	struct ring_svc *s;

	if (!dp->rings || svc_id >= RS_MAX_SERVICES)
		return;
	s = &dp->rings->svc[svc_id];
	ring_map_close(&s->spare);
	if (s->mem && s->owned)
		munmap(s->mem, s->len);
	s->mem = NULL;
	s->len = 0;
	s->id = 0;
	s->owned = false;
}

void dp_rings_release(struct rs_dataplane *dp)
{
	if (!dp->rings)
		return;
	for (uint32_t i = 0; i < RS_MAX_SERVICES; i++)
		dp_ring_spare_drop(dp, i);
	free(dp->rings);
	dp->rings = NULL;
}

void dp_ring_stats(const struct rs_dataplane *dp, struct dp_ring_stats *st)
{
	*st = (struct dp_ring_stats){0};
	if (!dp->rings)
		return;
	st->reused = dp->rings->reused;
	st->barriers = dp->rings->barriers;
	for (size_t i = 0; i < RS_MAX_SERVICES; i++)
		if (dp->rings->svc[i].spare.fd >= 0) {
			st->spares++;
			st->spare_bytes +=
				(uint64_t)dp->rings->svc[i].spare.slots *
				sizeof(struct rs_ring_slot);
		}
}

// SPDX-License-Identifier: MIT
/*
 * The installed snapshot into the fleet table's slots and the swap, on
 * the event loop. The owners of each service's buckets come from
 * rs_fleet_buckets() (userspace/core/fleet/fleet_table.c, pure); the map
 * writes from dp_fleet_install() (userspace/dataplane/).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_rt.h"
#include "log.h"

int fleet_self_index(const struct fleet_rt *f)
{
	for (size_t i = 0; i < f->snap.n; i++)
		if (!strcmp(f->snap.m[i].name, f->conf.name))
			return (int)i;
	return -1;
}

/* Slot 0's header and the member slots, from the snapshot. */
static void fill_members(const struct fleet_rt *f, struct rs_fleet_slot *slots)
{
	struct rs_fleet_header *h = &slots[0].hdr;
	int self = fleet_self_index(f);

	h->version = (uint64_t)f->snap.revision;
	h->nmembers = (uint32_t)f->snap.n;
	h->self = self < 0 ? RS_NONE : (uint32_t)self;
	h->self_addr = f->conf.addr;
	h->port = f->conf.port;
	if (f->conf.has_addr6)
		memcpy(&slots[RS_FLEET_SLOT_ADDR6].addr6.addr, f->conf.addr6,
		       sizeof(f->conf.addr6));
	for (size_t i = 0; i < f->snap.n; i++) {
		struct rs_fleet_member *m = &slots[1 + i].member;

		if (f->snap.m[i].has_addr6)
			memcpy(&slots[RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr,
			       f->snap.m[i].addr6, sizeof(f->snap.m[i].addr6));

		m->addr = f->snap.m[i].addr;
		m->flags = f->snap.m[i].drained ? RS_FLEET_MEMBER_DRAINED : 0;
		if (f->snap.m[i].wire >= RS_FLEET_WIRE_MAX)
			m->flags |= RS_FLEET_MEMBER_WIRE3;
		/* Cut to fit: bpftool readers only; the daemon keeps names
		 * whole. */
		memcpy(m->name, f->snap.m[i].name, sizeof(m->name) - 1);
	}
}

/* Each fleet service's seed, owner count and bucket row. 0 or -errno. */
static int fill_services(struct daemon *d, struct fleet_rt *f,
			 struct rs_fleet_slot *slots)
{
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		const struct rs_service_conf *sc = &d->st.cfg.services[s];
		uint32_t id = d->st.svcs[s].id;
		uint64_t seed = rs_fleet_seed(sc->name, sc->seed);
		int owners;

		memset(f->owners[s], RS_FLEET_NO_OWNER, RS_FLEET_BUCKETS);
		if (!sc->fleet || id >= RS_MAX_SERVICES)
			continue;
		owners = rs_fleet_buckets(f->snap.m, f->snap.n, sc->name, seed,
					  f->owners[s]);
		if (owners < 0)
			return owners;
		slots[RS_FLEET_SLOT_SERVICES + id].service.seed = seed;
		slots[RS_FLEET_SLOT_SERVICES + id].service.owners =
			(uint32_t)owners;
		memcpy(&slots[RS_FLEET_SLOT_ROWS + id * RS_FLEET_ROWS],
		       f->owners[s], RS_FLEET_BUCKETS);
	}
	return 0;
}

/* Slots of the table for the current snapshot and configuration. */
static int build_slots(struct daemon *d, struct fleet_rt *f,
		       struct rs_fleet_slot *slots)
{
	int err;

	memset(slots, 0, RS_FLEET_SLOTS * sizeof(*slots));
	fill_members(f, slots);
	/* Under mu: the etcd thread reads the keys too. */
	pthread_mutex_lock(&f->mu);
	for (size_t k = 0; k < f->sh.keys.n; k++)
		slots[RS_FLEET_SLOT_KEYS + k].auth = f->sh.keys.auth[k];
	pthread_mutex_unlock(&f->mu);
	err = fill_services(d, f, slots);
	if (err)
		return err;
	return fleet_quic_fill(d, f->snap.m, f->snap.n, slots, &f->quic);
}

/* f->owners sized for the configured services. False: out of memory. */
static bool owners_sized(struct daemon *d, struct fleet_rt *f)
{
	if (f->n_owners == d->st.cfg.n_services)
		return true;
	free(f->owners);
	f->owners = calloc(d->st.cfg.n_services ? d->st.cfg.n_services : 1,
			   sizeof(*f->owners));
	f->n_owners = f->owners ? d->st.cfg.n_services : 0;
	return f->owners != NULL;
}

/*
 * Same owners and members as the installed table: a new version, not a
 * new table. Server IDs alone changing (a member's configuration) do not
 * make one either: the table before it must stay the previous one for
 * the second chance.
 */
static bool same_table(const struct fleet_rt *f,
		       const struct rs_fleet_slot *slots)
{
	return f->installed &&
	       !memcmp(&slots[1], &f->slots[1],
		       (RS_FLEET_SLOT_CIDS - 1) * sizeof(*slots)) &&
	       !memcmp(&slots[0].hdr.nmembers, &f->slots[0].hdr.nmembers,
		       sizeof(slots[0].hdr) -
			       offsetof(struct rs_fleet_header, nmembers));
}

void fleet_rebuild(struct daemon *d, struct fleet_rt *f)
{
	struct rs_fleet_slot *slots;
	bool same;
	int err;

	if (!f->have_snap || !owners_sized(d, f))
		return;
	slots = malloc(RS_FLEET_SLOTS * sizeof(*slots));
	if (!slots || build_slots(d, f, slots)) {
		free(slots);
		rs_err("fleet: out of memory building the fleet table");
		return;
	}
	same = same_table(f, slots);
	/* Keys alike: a rotation is the same table with other keys. */
	if (same && slots[0].hdr.version == f->slots[0].hdr.version &&
	    !memcmp(&slots[RS_FLEET_SLOT_CIDS], &f->slots[RS_FLEET_SLOT_CIDS],
		    (RS_FLEET_SLOTS - RS_FLEET_SLOT_CIDS) * sizeof(*slots))) {
		free(slots);
		return;
	}
	err = dp_fleet_install(&d->dp, slots, !same);
	if (err) {
		free(slots);
		return;
	}
	if (!same) {
		f->swaps++;
		rs_info("fleet: table version %lld installed: %zu members, "
			"this host %s",
			(long long)f->snap.revision, f->snap.n,
			slots[0].hdr.self == RS_NONE ? "not a member yet"
						     : "a member");
	}
	free(f->slots);
	f->slots = slots;
	f->installed = true;
}

// SPDX-License-Identifier: MIT
/*
 * Questions the control commands ask of the installed fleet table, on the
 * event loop: which member owns a client (`ringsteer lookup`), which one
 * issued a QUIC server ID (`ringsteer cid`).
 */
#include <sys/socket.h>

#include "fleet_rt.h"
#include "hash.h"

bool fleet_owner_of(struct daemon *d, size_t svc, int family,
		    const uint8_t addr[16], uint16_t port, const char **owner)
{
	struct fleet_rt *f = (struct fleet_rt *)d->fleet;
	struct rs_affinity_key key;
	struct rs_service s;
	uint8_t o;

	if (!f || !f->have_snap || svc >= f->n_owners ||
	    !d->st.cfg.services[svc].fleet ||
	    (family != AF_INET && family != AF_INET6))
		return false;
	rs_service_from_conf(&d->st.cfg, svc, d->st.svcs[svc].id, &s);
	rs_fleet_key_build(&key, &s, family, addr, port);
	o = f->owners[svc][rs_fleet_bucket(
		rs_hash_key(&key, rs_fleet_seed(s.name, s.seed)))];
	*owner = o == RS_FLEET_NO_OWNER || o > f->snap.n
			 ? NULL
			 : f->snap.m[o - 1].name;
	return true;
}

const char *fleet_cid_owner(struct daemon *d, size_t svc, const uint8_t *id,
			    uint8_t len, bool *conflict)
{
	struct fleet_rt *f = (struct fleet_rt *)d->fleet;

	*conflict = false;
	if (!f || !f->installed || svc >= d->st.cfg.n_services ||
	    !d->st.cfg.services[svc].fleet)
		return NULL;
	return fleet_quic_owner(f->snap.m, f->snap.n, f->slots,
				d->st.svcs[svc].id, id, len, conflict);
}

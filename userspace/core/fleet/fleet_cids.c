// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "fleet_cids.h"
#include "hash.h"

static int owner_cmp(const void *a, const void *b)
{
	const struct rs_fleet_cid_owner *x = a, *y = b;
	int c = memcmp(x->id, y->id, sizeof(x->id));

	if (c)
		return c;
	return x->member < y->member ? -1 : x->member > y->member;
}

/* The index of service @service among @m's capacities, or -1. */
static int cap_index(const struct rs_fleet_member_info *m, const char *service)
{
	for (size_t c = 0; c < m->n_caps; c++)
		if (!strcmp(m->caps[c].service, service))
			return (int)c;
	return -1;
}

size_t rs_fleet_cid_owners(const struct rs_fleet_member_info *members, size_t n,
			   const char *service, uint8_t sid_len,
			   struct rs_fleet_cid_owner *out, size_t max)
{
	size_t k = 0, w = 0;

	for (size_t i = 0; i < n; i++) {
		int cap = cap_index(&members[i], service);

		for (size_t j = 0; cap >= 0 && j < members[i].n_sids; j++) {
			const struct rs_fleet_sid *s = &members[i].sids[j];

			if (s->cap != cap || s->len != sid_len || !sid_len ||
			    sid_len > RS_QUIC_MAX_SERVER_ID || k == max)
				continue;
			memset(&out[k], 0, sizeof(out[k]));
			out[k].len = sid_len;
			memcpy(out[k].id, s->id, sid_len);
			out[k].member = (uint32_t)i;
			out[k].other = RS_NONE;
			k++;
		}
	}
	qsort(out, k, sizeof(*out), owner_cmp);
	/* One entry per ID; a second member publishing it is a conflict. */
	for (size_t r = 0; r < k; r++) {
		if (w && !memcmp(out[w - 1].id, out[r].id, sizeof(out[r].id))) {
			if (out[w - 1].other == RS_NONE &&
			    out[r].member != out[w - 1].member)
				out[w - 1].other = out[r].member;
			continue;
		}
		out[w++] = out[r];
	}
	return w;
}

uint32_t rs_fleet_cid_home(uint32_t svc, const uint8_t *id, uint8_t len)
{
	struct rs_affinity_key k;

	memset(&k, 0, sizeof(k));
	k.service = svc;
	k.port = len;
	memcpy(k.addr, id,
	       len < RS_QUIC_MAX_SERVER_ID ? len : RS_QUIC_MAX_SERVER_ID);
	return (uint32_t)rs_hash_key(&k, RS_FLEET_CID_SEED) &
	       (RS_FLEET_CID_SLOTS - 1);
}

size_t rs_fleet_cids_place(struct rs_fleet_slot *cids, uint32_t svc,
			   const struct rs_fleet_cid_owner *owners, size_t n)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++) {
		const struct rs_fleet_cid_owner *o = &owners[i];
		uint32_t home = rs_fleet_cid_home(svc, o->id, o->len);
		struct rs_fleet_cid *c = NULL;

		for (uint32_t p = 0; p < RS_FLEET_CID_PROBES && !c; p++) {
			struct rs_fleet_cid *t =
				&cids[(home + p) & (RS_FLEET_CID_SLOTS - 1)]
					 .cid;

			if (!t->len)
				c = t;
		}
		if (!c) {
			left++;
			continue;
		}
		memset(c, 0, sizeof(*c));
		c->len = o->len;
		memcpy(c->server_id, o->id, o->len);
		c->service = svc;
		if (o->other != RS_NONE) {
			c->flags = RS_FLEET_CID_CONFLICT;
			c->member = RS_FLEET_NO_OWNER;
		} else {
			c->member = (uint8_t)(o->member + 1);
		}
	}
	return left;
}

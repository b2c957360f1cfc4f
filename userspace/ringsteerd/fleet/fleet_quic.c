// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_cids.h"
#include "fleet_quic.h"
#include "hex.h"
#include "log.h"

json_t *fleet_quic_published(struct daemon *d, size_t s)
{
	const struct rs_service_conf *sc = &d->st.cfg.services[s];
	char buf[2 * RS_QUIC_MAX_SERVER_ID + 1];
	json_t *ids;

	if (sc->cookie != RS_COOKIE_QUIC)
		return NULL;
	ids = json_array();
	/*
	 * Every configured server ID, whatever its backend's health: the
	 * list then changes with the configuration only, and the owner's
	 * own cookie step deals with a backend that is DOWN.
	 */
	for (size_t b = 0; ids && b < d->st.cfg.n_backends; b++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[b];

		if (bc->service != s || !bc->has_server_id)
			continue;
		rs_hex_bytes(buf, sizeof(buf), bc->server_id,
			     sc->quic_server_id_len, "");
		json_array_append_new(ids, json_string(buf));
	}
	return ids;
}

void fleet_quic_parse(json_t *v, size_t cap, struct rs_fleet_member_info *m)
{
	json_t *ids = json_object_get(v, "server_ids"), *e;
	size_t i;

	json_array_foreach(ids, i, e)
	{
		const char *t = json_string_value(e);
		struct rs_fleet_sid *s;
		size_t len;

		if (m->n_sids == RS_FLEET_MEMBER_SIDS)
			return;
		s = &m->sids[m->n_sids];
		memset(s, 0, sizeof(*s));
		if (!t || rs_hex_parse(t, s->id, sizeof(s->id), &len) || !len)
			continue;
		s->cap = (uint16_t)cap;
		s->len = (uint8_t)len;
		m->n_sids++;
	}
}

static bool conflict_known(const struct fleet_quic_state *q,
			   const struct fleet_quic_conflict *c)
{
	for (size_t i = 0; i < q->n_conflicts; i++)
		if (!memcmp(&q->conflicts[i], c, sizeof(*c)))
			return true;
	return false;
}

/*
 * The conflicts among the @k owners @o of service @sc's server IDs added
 * to *@c (*@nc of them). 0 or -ENOMEM (*@c stays whole, to free).
 */
static int conflicts_add(const struct rs_service_conf *sc,
			 const struct rs_fleet_member_info *m,
			 const struct rs_fleet_cid_owner *o, size_t k,
			 struct fleet_quic_conflict **c, size_t *nc)
{
	for (size_t i = 0; i < k; i++) {
		struct fleet_quic_conflict *x;

		if (o[i].other == RS_NONE)
			continue;
		x = realloc(*c, (*nc + 1) * sizeof(**c));
		if (!x)
			return -ENOMEM;
		*c = x;
		x = &x[(*nc)++];
		memset(x, 0, sizeof(*x));
		snprintf(x->service, sizeof(x->service), "%s", sc->name);
		rs_hex_bytes(x->server_id, sizeof(x->server_id), o[i].id,
			     o[i].len, "");
		snprintf(x->members[0], RS_NAME_MAX, "%s", m[o[i].member].name);
		snprintf(x->members[1], RS_NAME_MAX, "%s", m[o[i].other].name);
	}
	return 0;
}

/* New conflicts @c (@nc) and slotless IDs (@left) logged, kept in @q. */
static void conflicts_keep(struct fleet_quic_state *q,
			   struct fleet_quic_conflict *c, size_t nc,
			   size_t left)
{
	for (size_t i = 0; i < nc; i++)
		if (!conflict_known(q, &c[i]))
			rs_warn("fleet: service %s: server ID %s is published "
				"by %s and %s; its QUIC packets go by the "
				"fleet table until one of them drops it",
				c[i].service, c[i].server_id, c[i].members[0],
				c[i].members[1]);
	if (left && left != q->left_out)
		rs_warn("fleet: %zu QUIC server IDs found no slot in the "
			"fleet table (%u slots); their packets go by the table",
			left, RS_FLEET_CID_SLOTS);
	free(q->conflicts);
	q->conflicts = c;
	q->n_conflicts = nc;
	q->left_out = left;
}

int fleet_quic_fill(struct daemon *d, const struct rs_fleet_member_info *m,
		    size_t n, struct rs_fleet_slot *slots,
		    struct fleet_quic_state *q)
{
	size_t max = n * RS_FLEET_MEMBER_SIDS + 1, nc = 0, left = 0;
	struct rs_fleet_cid_owner *o = calloc(max, sizeof(*o));
	struct fleet_quic_conflict *c = NULL;

	if (!o)
		return -ENOMEM;
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		const struct rs_service_conf *sc = &d->st.cfg.services[s];
		uint32_t id = d->st.svcs[s].id;
		size_t k;

		if (!sc->fleet || sc->cookie != RS_COOKIE_QUIC ||
		    id >= RS_MAX_SERVICES)
			continue;
		k = rs_fleet_cid_owners(m, n, sc->name, sc->quic_server_id_len,
					o, max);
		left += rs_fleet_cids_place(slots + RS_FLEET_SLOT_CIDS, id, o,
					    k);
		if (conflicts_add(sc, m, o, k, &c, &nc)) {
			free(c);
			free(o);
			return -ENOMEM;
		}
	}
	free(o);
	conflicts_keep(q, c, nc, left);
	return 0;
}

const char *fleet_quic_owner(const struct rs_fleet_member_info *m, size_t n,
			     const struct rs_fleet_slot *slots, uint32_t svc,
			     const uint8_t *id, uint8_t len, bool *conflict)
{
	uint32_t home = rs_fleet_cid_home(svc, id, len);

	*conflict = false;
	for (uint32_t p = 0; slots && p < RS_FLEET_CID_PROBES; p++) {
		const struct rs_fleet_cid *c =
			&slots[RS_FLEET_SLOT_CIDS +
			       ((home + p) & (RS_FLEET_CID_SLOTS - 1))]
				 .cid;

		if (!c->len)
			return NULL;
		if (c->service != svc || c->len != len ||
		    memcmp(c->server_id, id, len))
			continue;
		*conflict = c->flags & RS_FLEET_CID_CONFLICT;
		if (*conflict || c->member == RS_FLEET_NO_OWNER ||
		    c->member > n)
			return NULL;
		return m[c->member - 1].name;
	}
	return NULL;
}

json_t *fleet_quic_conflicts_json(const struct fleet_quic_state *q)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < q->n_conflicts; i++)
		json_array_append_new(
			a, json_pack("{s:s, s:s, s:[s, s]}", "service",
				     q->conflicts[i].service, "server_id",
				     q->conflicts[i].server_id, "members",
				     q->conflicts[i].members[0],
				     q->conflicts[i].members[1]));
	return a;
}

void fleet_quic_state_free(struct fleet_quic_state *q)
{
	free(q->conflicts);
	memset(q, 0, sizeof(*q));
}

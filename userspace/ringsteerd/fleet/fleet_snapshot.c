// SPDX-License-Identifier: MIT
/*
 * etcd's keys under the [fleet] prefix into a membership snapshot
 * (docs/fleet.md):
 *   PREFIX/members/NAME  {"address": "...", "address6": "..." (optional),
 *                        "services": {"web": {"capacity": N}},
 *                        "wire": 3 (the newest wire version it takes)},
 *                        attached to NAME's lease
 *   PREFIX/drain/NAME    present while an operator drains NAME
 * A snapshot decides everything: every host builds the same table from
 * the same revision. Runs on the etcd thread, on its own copies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_record.h"
#include "fleet_rt.h"
#include "log.h"

void fleet_snap_free(struct fleet_snap *s)
{
	free(s->m);
	free(s->rejected);
	memset(s, 0, sizeof(*s));
}

static int member_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rs_fleet_member_info *)a)->name,
		      ((const struct rs_fleet_member_info *)b)->name);
}

static void reject(struct fleet_snap *s, const char *key, const char *why)
{
	s->rejected_total++;
	if (s->n_rejected == FLEET_REJECTED_MAX)
		return;
	/* Any bytes etcd holds: logged and shown (fleet_printable()). */
	fleet_printable(s->rejected[s->n_rejected].key,
			sizeof(s->rejected[0].key), key);
	snprintf(s->rejected[s->n_rejected].reason,
		 sizeof(s->rejected[0].reason), "%s", why);
	s->n_rejected++;
}

static const struct rs_fleet_member_info *snap_find(const struct fleet_snap *s,
						    const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->m[i].name, name))
			return &s->m[i];
	return NULL;
}

/* The member of @s other than @name whose address is @addr, or NULL. */
static const struct rs_fleet_member_info *snap_addr_owner(
	const struct fleet_snap *s, uint32_t addr, const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->m[i].addr == addr && strcmp(s->m[i].name, name))
			return &s->m[i];
	return NULL;
}

/* The valid records found so far, and their places in the choice. */
struct candidates {
	struct rs_fleet_member_info *valid;
	struct rs_fleet_candidate *cand;
	size_t n;
};

/* The record in valid[n] (key @kv) a candidate; @was_member: in prev. */
static void candidate_add(struct candidates *c, bool was_member,
			  const struct rs_etcd_kv *kv)
{
	c->cand[c->n] = (struct rs_fleet_candidate){.name = c->valid[c->n].name,
						    .was_member = was_member,
						    .created = kv->created,
						    .index = c->n};
	c->n++;
}

/*
 * Every member record of @kvs checked: the valid ones become candidates,
 * the others are rejected with their reason; a member of @prev whose
 * record went bad stays a candidate with its last valid record while its
 * key exists (its lease lives), so nobody moves meanwhile.
 */
static void check_records(const struct rs_fleet_conf *conf,
			  const struct fleet_local *local,
			  const struct fleet_trust *trust,
			  const struct rs_etcd_kv *kvs, size_t n,
			  const char *members, const struct fleet_snap *prev,
			  struct candidates *c, struct fleet_snap *out)
{
	size_t lm = strlen(members);
	char why[192];

	for (size_t i = 0; i < n; i++) {
		const char *name = kvs[i].key + lm;
		const struct rs_fleet_member_info *last;

		why[0] = 0;
		if (strncmp(kvs[i].key, members, lm))
			continue;
		if (fleet_member_parse(conf, local, trust, name, &kvs[i],
				       &c->valid[c->n], why, sizeof(why)) &&
		    (last = snap_addr_owner(prev, c->valid[c->n].addr, name))) {
			/* An address of the table in force stays its owner's.
			 */
			snprintf(why, sizeof(why), "address is member %s's",
				 last->name);
		} else if (why[0] == 0) {
			candidate_add(c, snap_find(prev, name) != NULL,
				      &kvs[i]);
			continue;
		}
		last = snap_find(prev, name);
		if (last) {
			strncat(why, "; its last valid record is kept",
				sizeof(why) - strlen(why) - 1);
			c->valid[c->n] = *last;
			c->valid[c->n].drained = false;
			candidate_add(c, true, &kvs[i]);
		}
		reject(out, kvs[i].key, why);
	}
}

/*
 * The candidates into @out's members: when more than the table holds, the
 * members of the last snapshot and the oldest keys keep their places
 * (rs_fleet_choose()); one address, one member.
 */
static void take_chosen(struct candidates *c, const char *members,
			struct fleet_snap *out)
{
	char key[FLEET_KEY_MAX];
	size_t chosen = rs_fleet_choose(c->cand, c->n, RS_FLEET_MAX_MEMBERS);

	for (size_t k = 0; k < c->n; k++) {
		const struct rs_fleet_member_info *m =
			&c->valid[c->cand[k].index];
		bool dup = false;

		/* One address, one member: the first chosen keeps it. */
		for (size_t o = 0; o < out->n && !dup; o++)
			dup = out->m[o].addr == m->addr;
		if (dup) {
			snprintf(key, sizeof(key), "%s%s", members, m->name);
			reject(out, key, "address of another member already");
			continue;
		}
		if (k >= chosen || out->n == RS_FLEET_MAX_MEMBERS) {
			out->left_out++;
			continue;
		}
		out->m[out->n++] = *m;
	}
}

/* The members of @out with a key under @drain (PREFIX/drain/). */
static void mark_drains(const struct rs_etcd_kv *kvs, size_t n,
			const char *drain, struct fleet_snap *out)
{
	size_t ld = strlen(drain);

	for (size_t i = 0; i < n; i++) {
		if (strncmp(kvs[i].key, drain, ld))
			continue;
		for (size_t k = 0; k < out->n; k++)
			if (!strcmp(out->m[k].name, kvs[i].key + ld))
				out->m[k].drained = true;
	}
}

/*
 * The range's keys as a snapshot: every member record checked, those
 * that fail listed with their reason; a member of @prev (the last
 * snapshot) whose record went bad keeps its last valid one while its key
 * exists (its lease lives), so nobody moves meanwhile; when more valid
 * members than the table holds, the members of @prev and the oldest keys
 * keep their places (rs_fleet_choose()). False when out of memory.
 */
bool fleet_snap_from_kvs(const struct rs_fleet_conf *c,
			 const struct fleet_local *local,
			 const struct rs_fleet_keys *keys,
			 const struct rs_fleet_pubkeys *ids,
			 const struct rs_etcd_kv *kvs, size_t n, int64_t rev,
			 const struct fleet_snap *prev, struct fleet_snap *out)
{
	const struct fleet_trust trust = {.keys = keys, .ids = ids};
	char members[RS_FLEET_PREFIX_MAX + 16], drain[RS_FLEET_PREFIX_MAX + 16];
	struct candidates cand = {0};

	snprintf(members, sizeof(members), "%s/members/", c->prefix);
	snprintf(drain, sizeof(drain), "%s/drain/", c->prefix);
	memset(out, 0, sizeof(*out));
	out->revision = rev;
	out->m = calloc(RS_FLEET_MAX_MEMBERS, sizeof(*out->m));
	out->rejected = calloc(FLEET_REJECTED_MAX, sizeof(*out->rejected));
	cand.valid = calloc(n ? n : 1, sizeof(*cand.valid));
	cand.cand = calloc(n ? n : 1, sizeof(*cand.cand));
	if (!out->m || !out->rejected || !cand.valid || !cand.cand) {
		free(cand.valid);
		free(cand.cand);
		fleet_snap_free(out);
		return false;
	}
	check_records(c, local, &trust, kvs, n, members, prev, &cand, out);
	take_chosen(&cand, members, out);
	free(cand.valid);
	free(cand.cand);
	qsort(out->m, out->n, sizeof(*out->m), member_cmp);
	mark_drains(kvs, n, drain, out);
	return true;
}

void fleet_snap_keep_members(struct fleet_snap *prev,
			     const struct fleet_snap *s)
{
	struct rs_fleet_member_info *m = malloc((s->n ? s->n : 1) * sizeof(*m));

	if (!m)
		return;
	memcpy(m, s->m, s->n * sizeof(*m));
	fleet_snap_free(prev);
	prev->m = m;
	prev->n = s->n;
}

/*
 * New rejections logged per snapshot: a writer who floods the prefix with
 * fake members gets a few lines and a count, not a line per key.
 */
#define LOG_REJECTED_MAX 16

void fleet_snap_log_rejections(const struct fleet_snap *cur,
			       const struct fleet_snap *next)
{
	size_t logged = 0, more = 0;

	for (size_t i = 0; i < next->n_rejected; i++) {
		const struct fleet_rejected *r = &next->rejected[i];
		bool known = false;

		for (size_t k = 0; k < cur->n_rejected && !known; k++)
			known = !strcmp(cur->rejected[k].key, r->key) &&
				!strcmp(cur->rejected[k].reason, r->reason);
		if (known)
			continue;
		if (logged++ < LOG_REJECTED_MAX)
			rs_warn("fleet: record %s rejected: %s", r->key,
				r->reason);
		else
			more++;
	}
	if (more)
		rs_warn("fleet: %zu more records rejected (%zu in all; "
			"ringsteer fleet status lists them)",
			more, next->rejected_total);
	if (next->left_out && next->left_out != cur->left_out)
		rs_warn("fleet: %zu valid members left out: the table holds "
			"%d (members already in it and the oldest keys first)",
			next->left_out, RS_FLEET_MAX_MEMBERS);
}

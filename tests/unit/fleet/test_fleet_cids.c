// SPDX-License-Identifier: MIT
/*
 * QUIC server IDs across the fleet (userspace/core/fleet/fleet_cids.c): which
 * member issued each server ID, conflicts, drains and expired leases, and
 * the placement in the table's server ID slots that steer_tc searches.
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "fleet_cids.h"

static struct rs_fleet_member_info members[3];
static struct rs_fleet_cid_owner out[64];

/* Member @i publishing 2-byte server IDs @ids (0-terminated) for "q". */
static void member(size_t i, const char *name, const uint16_t *ids)
{
	struct rs_fleet_member_info *m = &members[i];

	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->addr = 0x0a0b12c6u + (uint32_t)i;
	snprintf(m->caps[0].service, RS_NAME_MAX, "web");
	snprintf(m->caps[1].service, RS_NAME_MAX, "q");
	m->caps[1].capacity = 2;
	m->n_caps = 2;
	for (; *ids; ids++) {
		struct rs_fleet_sid *s = &m->sids[m->n_sids++];

		s->cap = 1;
		s->len = 2;
		s->id[0] = (uint8_t)(*ids >> 8);
		s->id[1] = (uint8_t)*ids;
	}
}

static const struct rs_fleet_cid_owner *find(size_t n, uint16_t id)
{
	for (size_t i = 0; i < n; i++)
		if (out[i].id[0] == (id >> 8) && out[i].id[1] == (id & 0xff))
			return &out[i];
	return NULL;
}

static void test_owners(void)
{
	static const uint16_t a[] = {0x0101, 0x0102, 0}, b[] = {0x0201, 0},
			      c[] = {0x0301, 0x0302, 0x0303, 0};
	size_t n;

	member(0, "edge-1", a);
	member(1, "edge-2", b);
	member(2, "edge-3", c);
	n = rs_fleet_cid_owners(members, 3, "q", 2, out, 64);
	CU_ASSERT_EQUAL(n, 6);
	CU_ASSERT_EQUAL(find(n, 0x0102)->member, 0);
	CU_ASSERT_EQUAL(find(n, 0x0201)->member, 1);
	CU_ASSERT_EQUAL(find(n, 0x0303)->member, 2);
	for (size_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(out[i].other, RS_NONE);
	/* Another service, or another ID length: nothing. */
	CU_ASSERT_EQUAL(rs_fleet_cid_owners(members, 3, "web", 2, out, 64), 0);
	CU_ASSERT_EQUAL(rs_fleet_cid_owners(members, 3, "q", 3, out, 64), 0);
	/* A drained member keeps its IDs: drain means no new connections. */
	members[1].drained = true;
	n = rs_fleet_cid_owners(members, 3, "q", 2, out, 64);
	CU_ASSERT_EQUAL(n, 6);
	CU_ASSERT_PTR_NOT_NULL_FATAL(find(n, 0x0201));
	CU_ASSERT_EQUAL(find(n, 0x0201)->member, 1);
	/* An expired lease: the member is gone from the snapshot. */
	members[1] = members[2];
	n = rs_fleet_cid_owners(members, 2, "q", 2, out, 64);
	CU_ASSERT_EQUAL(n, 5);
	CU_ASSERT_PTR_NULL(find(n, 0x0201));
	CU_ASSERT_EQUAL(find(n, 0x0303)->member, 1);
	/* At most @max. */
	CU_ASSERT_EQUAL(rs_fleet_cid_owners(members, 2, "q", 2, out, 2), 2);
}

static void test_conflicts(void)
{
	static const uint16_t a[] = {0x0101, 0x0a0a, 0x0a0a, 0},
			      b[] = {0x0201, 0x0a0a, 0}, c[] = {0x0301, 0};
	const struct rs_fleet_cid_owner *o;
	size_t n;

	member(0, "edge-1", a);
	member(1, "edge-2", b);
	member(2, "edge-3", c);
	n = rs_fleet_cid_owners(members, 3, "q", 2, out, 64);
	CU_ASSERT_EQUAL(n, 4);
	o = find(n, 0x0a0a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->member, 0);
	CU_ASSERT_EQUAL(o->other, 1);
	CU_ASSERT_EQUAL(find(n, 0x0101)->other, RS_NONE);
	/* A member listing one ID twice does not conflict with itself. */
	member(1, "edge-2", c);
	member(2, "edge-3", c + 1);
	n = rs_fleet_cid_owners(members, 3, "q", 2, out, 64);
	CU_ASSERT_EQUAL(find(n, 0x0a0a)->other, RS_NONE);
	CU_ASSERT_EQUAL(find(n, 0x0301)->other, RS_NONE);
}

/* As steer_tc searches (fleet_quic_find()): from home, up to a free slot. */
static const struct rs_fleet_cid *search(const struct rs_fleet_slot *cids,
					 uint32_t svc, const uint8_t *id)
{
	uint32_t home = rs_fleet_cid_home(svc, id, 2);

	for (uint32_t p = 0; p < RS_FLEET_CID_PROBES; p++) {
		const struct rs_fleet_cid *c =
			&cids[(home + p) & (RS_FLEET_CID_SLOTS - 1)].cid;

		if (!c->len)
			return NULL;
		if (c->service == svc && !memcmp(c->server_id, id, 2))
			return c;
	}
	return NULL;
}

static void test_place(void)
{
	static struct rs_fleet_slot cids[RS_FLEET_CID_SLOTS];
	static struct rs_fleet_cid_owner many[1024];
	static const uint16_t a[] = {0x0101, 0x0a0a, 0},
			      b[] = {0x0201, 0x0a0a, 0}, c[] = {0x0301, 0};
	uint8_t id[2] = {0x02, 0x01};
	const struct rs_fleet_cid *e;
	size_t n, left;

	member(0, "edge-1", a);
	member(1, "edge-2", b);
	member(2, "edge-3", c);
	n = rs_fleet_cid_owners(members, 3, "q", 2, out, 64);
	memset(cids, 0, sizeof(cids));
	CU_ASSERT_EQUAL(rs_fleet_cids_place(cids, 5, out, n), 0);
	e = search(cids, 5, id);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->member, 2); /* index 1 + 1 */
	CU_ASSERT_EQUAL(e->flags, 0);
	CU_ASSERT_PTR_NULL(search(cids, 4, id)); /* another local service */
	id[0] = id[1] = 0x0a;
	e = search(cids, 5, id);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->flags, RS_FLEET_CID_CONFLICT);
	CU_ASSERT_EQUAL(e->member, RS_FLEET_NO_OWNER);
	/* Half full: every ID still found where steer_tc looks. */
	memset(cids, 0, sizeof(cids));
	for (size_t i = 0; i < 1024; i++) {
		memset(&many[i], 0, sizeof(many[i]));
		many[i].len = 2;
		many[i].id[0] = (uint8_t)(i >> 8);
		many[i].id[1] = (uint8_t)i;
		many[i].member = (uint32_t)(i % 3);
		many[i].other = RS_NONE;
	}
	left = rs_fleet_cids_place(cids, 1, many, 1024);
	CU_ASSERT(left < 8);
	n = 0;
	for (size_t i = 0; i < 1024; i++) {
		e = search(cids, 1, many[i].id);
		if (!e)
			continue;
		n++;
		CU_ASSERT_EQUAL(e->member, many[i].member + 1);
	}
	CU_ASSERT_EQUAL(n, 1024 - left);
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("fleet_cids", NULL, NULL);
	CU_add_test(s, "owners, drains and expired leases", test_owners);
	CU_add_test(s, "an ID two members publish is a conflict",
		    test_conflicts);
	CU_add_test(s, "placement is where the data plane searches",
		    test_place);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

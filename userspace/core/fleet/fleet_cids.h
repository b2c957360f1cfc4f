/* SPDX-License-Identifier: MIT */
/*
 * QUIC server IDs across the fleet (docs/fleet.md "QUIC"): which member's
 * backend issued each server ID of a fleet service, built from the same
 * membership snapshot as the fleet table, and its place in the table's
 * server ID slots (abi.h RS_FLEET_SLOT_CIDS). Pure, like fleet_table.c.
 */
#ifndef RS_FLEET_CIDS_H
#define RS_FLEET_CIDS_H

#include <stddef.h>
#include <stdint.h>

#include "fleet_table.h"

/* One server ID of a service and who publishes it. */
struct rs_fleet_cid_owner {
	uint8_t len;
	uint8_t id[RS_QUIC_MAX_SERVER_ID];
	uint32_t member; /* index in the snapshot: the first publisher */
	/* Another member publishing it too (a conflict), else RS_NONE. */
	uint32_t other;
};

/*
 * The server IDs of service @service with length @sid_len that @members
 * (@n, sorted by name) publish, sorted by ID, at most @max. Drained
 * members keep theirs (drain means no new connections); a member that is
 * not in the snapshot (its lease expired) has none. An ID two members
 * publish names both (other != RS_NONE): neither may get its packets.
 * IDs of another length are ignored (hosts disagree on the service; the
 * data plane could never match them). Returns the number written.
 */
size_t rs_fleet_cid_owners(const struct rs_fleet_member_info *members, size_t n,
			   const char *service, uint8_t sid_len,
			   struct rs_fleet_cid_owner *out, size_t max);

/* The home slot (0..RS_FLEET_CID_SLOTS-1) of an ID of local service @svc. */
uint32_t rs_fleet_cid_home(uint32_t svc, const uint8_t *id, uint8_t len);

/*
 * Enter @n owners of local service @svc into @cids (RS_FLEET_CID_SLOTS
 * slots, the region at RS_FLEET_SLOT_CIDS), conflicts as
 * RS_FLEET_CID_CONFLICT with no member. Returns how many found no free
 * slot within RS_FLEET_CID_PROBES of their home (left out: by the table).
 */
size_t rs_fleet_cids_place(struct rs_fleet_slot *cids, uint32_t svc,
			   const struct rs_fleet_cid_owner *owners, size_t n);

#endif /* RS_FLEET_CIDS_H */

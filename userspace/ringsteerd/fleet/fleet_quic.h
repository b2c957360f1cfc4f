/* SPDX-License-Identifier: MIT */
/*
 * QUIC server IDs in fleet mode (docs/fleet.md "QUIC"): what this host
 * publishes in its member key (the server IDs of its backends, per fleet
 * service with cookie = quic), reading that back from other members' keys,
 * and the server ID slots of the fleet table built from a snapshot, with
 * the conflicts found on the way (logged once, shown by fleet status).
 */
#ifndef RS_FLEET_QUIC_H
#define RS_FLEET_QUIC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "daemon.h"
#include "fleet_table.h"

/* Two members publishing one server ID of a service. */
struct fleet_quic_conflict {
	char service[RS_NAME_MAX];
	char server_id[2 * RS_QUIC_MAX_SERVER_ID + 1]; /* hex */
	char members[2][RS_NAME_MAX];
};

struct fleet_quic_state {
	struct fleet_quic_conflict *conflicts;
	size_t n_conflicts;
	size_t left_out; /* IDs without a slot in the last table built */
};

/* The "server_ids" of configured service @s, or NULL: not a cookie one. */
json_t *fleet_quic_published(struct daemon *d, size_t s);

/*
 * Read a member's "server_ids" for its service caps[@cap] from the
 * service's object @v into @m. Bad entries are skipped (another host's
 * bug must not stop this one from building its table).
 */
void fleet_quic_parse(json_t *v, size_t cap, struct rs_fleet_member_info *m);

/*
 * Fill the server ID slots of @slots (a whole table from slot 0) for the
 * fleet services with cookie = quic, from @members (@n, sorted by name).
 * New conflicts are logged once. 0 or -ENOMEM.
 */
int fleet_quic_fill(struct daemon *d, const struct rs_fleet_member_info *m,
		    size_t n, struct rs_fleet_slot *slots,
		    struct fleet_quic_state *q);

/* The member named by server ID @id of service @svc, or NULL. */
const char *fleet_quic_owner(const struct rs_fleet_member_info *m, size_t n,
			     const struct rs_fleet_slot *slots, uint32_t svc,
			     const uint8_t *id, uint8_t len, bool *conflict);

/* For fleet status: the conflicts as a JSON array. */
json_t *fleet_quic_conflicts_json(const struct fleet_quic_state *q);

void fleet_quic_state_free(struct fleet_quic_state *q);

#endif /* RS_FLEET_QUIC_H */

/* SPDX-License-Identifier: MIT */
/*
 * Fleet mode (docs/fleet.md): membership in etcd, the fleet table in the
 * data plane. A thread talks to etcd (register with a lease, keep it
 * alive, publish this host's capacity per fleet service, read and watch
 * the members); the event loop turns each new membership snapshot into a
 * fleet table and swaps it in. etcd unreachable: the last table stays.
 */
#ifndef RS_FLEET_H
#define RS_FLEET_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon.h"

/* Start, restart (changed [fleet]) or stop fleet mode; rebuild the table. */
int daemon_fleet_apply(struct daemon *d);
void daemon_fleet_stop(struct daemon *d);

/* `ringsteer fleet status` (-j shape in docs/fleet.md). */
json_t *fleet_status_json(struct daemon *d);
/*
 * How an operator's drain / undrain of member @name ended, called on the
 * event loop with the caller's @ticket: @error NULL when etcd has the key,
 * else why not. The caller (control_fleet.c) turns it into its reply;
 * fleet code never calls up into the control server.
 */
typedef void (*fleet_drain_done)(struct daemon *d, uint64_t ticket,
				 const char *name, bool drain,
				 const char *error);
/*
 * Operator's drain / undrain of member @name: an etcd key, written off the
 * event loop. On 0, @done gets @ticket when etcd has answered; otherwise
 * nothing was started and @err says why.
 */
int fleet_set_drain(struct daemon *d, const char *name, bool drain,
		    fleet_drain_done done, uint64_t ticket, char *err,
		    size_t errlen);
/*
 * The owner host of a client of configured service @svc (index): its
 * name in *@owner, or false when the service is not fleet-steered.
 */
bool fleet_owner_of(struct daemon *d, size_t svc, int family,
		    const uint8_t addr[16], uint16_t port, const char **owner);

/*
 * The member whose backend issued QUIC server ID @id (@len bytes) of
 * configured service @svc (index) by the installed table, or NULL: none,
 * not fleet mode, or a conflict (then *@conflict).
 */
const char *fleet_cid_owner(struct daemon *d, size_t svc, const uint8_t *id,
			    uint8_t len, bool *conflict);

/* For metrics. */
struct fleet_metrics {
	bool enabled;
	bool etcd_up;
	bool agrees;
	int64_t version;
	uint32_t members;
	uint64_t swaps;
	uint32_t cid_conflicts; /* QUIC server IDs two members publish */
	uint64_t rejected;	/* member records not believed */
	uint64_t left_out;	/* valid members the table had no room for */
};
void fleet_metrics_get(struct daemon *d, struct fleet_metrics *out);

#endif /* RS_FLEET_H */

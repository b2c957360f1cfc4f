/* SPDX-License-Identifier: MIT */
/*
 * The fleet table (docs/fleet.md): which host of the fleet owns each
 * bucket of a fleet service's key space. Pure: every host computes the
 * same table from the same membership snapshot, since everything here
 * depends on member and service names only, never on local ids or order.
 */
#ifndef RS_FLEET_TABLE_H
#define RS_FLEET_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>
#include <ringsteer/rules.h>

/* Points per member on the owner ring the buckets are cut from. */
#define RS_FLEET_VNODES 256

struct rs_fleet_capacity {
	char service[RS_NAME_MAX];
	uint32_t capacity; /* sum of the weights of its UP backends */
};

/* QUIC server IDs one member may publish, over all its services. */
#define RS_FLEET_MEMBER_SIDS 256

/* A QUIC server ID a member's backend issues, for service caps[cap]. */
struct rs_fleet_sid {
	uint16_t cap;
	uint8_t len;
	uint8_t id[RS_QUIC_MAX_SERVER_ID];
};

/* One host as etcd shows it. */
struct rs_fleet_member_info {
	char name[RS_NAME_MAX];
	uint32_t addr; /* IPv4 forwarding address, network order */
	bool has_addr6;
	uint8_t addr6[16]; /* IPv6 forwarding address, network order */
	bool drained;	   /* an operator's drain key exists */
	/* The newest wire version its record says it takes (2: none said). */
	uint8_t wire;
	struct rs_fleet_capacity caps[RS_MAX_SERVICES];
	size_t n_caps;
	struct rs_fleet_sid sids[RS_FLEET_MEMBER_SIDS];
	size_t n_sids;
};

/* The fleet-wide seed of service @name with seed @seed. */
uint64_t rs_fleet_seed(const char *name, uint64_t seed);

/*
 * The fleet key of a client: the service's key, service field 0 (local ids
 * differ between hosts). @svc gives key policy and prefixes; @family is
 * AF_INET (@addr's first 4 bytes) or AF_INET6.
 */
void rs_fleet_key_build(struct rs_affinity_key *key,
			const struct rs_service *svc, int family,
			const uint8_t addr[16], uint16_t port);

/* rs_fleet_bucket(): include/ringsteer/rules.h, as the BPF side has it. */

/* Whether member @m may own keys of @service: not drained, capacity > 0. */
bool rs_fleet_eligible(const struct rs_fleet_member_info *m,
		       const char *service);

/*
 * Owners of service @service's buckets among @members (@n, sorted by
 * name): owners[b] = RS_FLEET_NO_OWNER or member index + 1. Members that
 * are not eligible own nothing; a member's share moves only when members
 * come or go. Returns the number of eligible members, or -ENOMEM.
 */
int rs_fleet_buckets(const struct rs_fleet_member_info *members, size_t n,
		     const char *service, uint64_t fleet_seed,
		     uint8_t owners[RS_FLEET_BUCKETS]);

#endif /* RS_FLEET_TABLE_H */

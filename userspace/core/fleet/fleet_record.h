/* SPDX-License-Identifier: MIT */
/*
 * What a fleet member record read from etcd must be before it is believed
 * (docs/fleet.md, "What a host believes"): a forwarding address that is
 * one host's unicast address, capacities in range, and, when the table is
 * full, which members keep their place. Pure functions: the daemon's fleet
 * thread applies them to every record, signed or not.
 */
#ifndef RS_FLEET_RECORD_H
#define RS_FLEET_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A capacity above this is not a real host's. */
#define RS_FLEET_CAPACITY_MAX 1000000u
/* Longest member name (the key's last part) and record value, bytes. */
#define RS_FLEET_RECORD_MAX (16u << 10)

/*
 * Why IPv4 @addr (network order) cannot be a member's forwarding address,
 * NULL when it can: 0.0.0.0/8, loopback, link-local, multicast, reserved
 * and broadcast are refused.
 */
const char *rs_fleet_addr4_problem(uint32_t addr);
/* The same for IPv6: ::, ::1, v4-mapped, link-local, multicast. */
const char *rs_fleet_addr6_problem(const uint8_t addr[16]);

/* Why @name cannot be a member name, NULL when it can. */
const char *rs_fleet_name_problem(const char *name);

/* A valid record competing for a place in the table. */
struct rs_fleet_candidate {
	const char *name;
	bool was_member; /* in the table in force */
	int64_t created; /* etcd create_revision of its key */
	size_t index;	 /* the caller's */
};

/*
 * More valid members than the table holds: reorders @c so that its first
 * min(@n, @max) entries are the ones that get a place, and returns that
 * number. Members of the table in force first, then the oldest keys
 * (lowest create_revision), then by name: names that sort first, or a
 * flood of new keys, cannot push out a host that was already a member.
 */
size_t rs_fleet_choose(struct rs_fleet_candidate *c, size_t n, size_t max);

#endif /* RS_FLEET_RECORD_H */

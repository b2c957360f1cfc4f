/* SPDX-License-Identifier: MIT */
/*
 * SipHash's state after each member pair's outer addresses (abi.h struct
 * rs_fleet_sip, docs/fleet.md "Authenticated forwarding"): what the data
 * plane would otherwise hash again for every forwarded packet. Pure, like
 * fleet_table.c: the daemon writes what this computes.
 */
#ifndef RS_FLEET_SIP_H
#define RS_FLEET_SIP_H

#include <stddef.h>

#include <ringsteer/abi.h>

/*
 * The entries of the table whose RS_FLEET_SLOTS slots are @t into @half
 * (RS_FLEET_SIP_HALF of them, at rs_fleet_sip_index()'s places less the
 * half's base; the rest zero): for every other member and family both
 * ends have an address of, the packets this host signs with key 0 (in
 * wire version 3 to members flagged RS_FLEET_MEMBER_WIRE3) and those it
 * checks under each key. Returns how many were written.
 */
size_t rs_fleet_sip_fill(const struct rs_fleet_slot *t,
			 struct rs_fleet_sip *half);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef RS_SOCKET_SLOTS_H
#define RS_SOCKET_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dataplane.h"
#include "rs_state.h"

/*
 * sockets_sock_addr(): the sock_diag address of backend address @ba.
 * sockets_target_slots(): the SOCKMAP slots a socket found there fills
 * (its family's; a dual-stack IPv6 one the IPv4 slot too when no IPv4
 * address is configured). sockets_slots_hold(): every slot of @slots
 * holds socket @cookie. sockets_slot_mask(): those slots as held_slots
 * bits. sockets_owner_expected(): the user whose sockets are taken on
 * this address, when one is known. sockets_gone(): no socket on the
 * address now (when it went, for restart_grace). sockets_note_refused():
 * a socket of a user but @want's on the address, counted and said once.
 * sockets_user_name(): "uid N (name)" for the log.
 */
struct rs_sock_addr;
struct rs_sock_found;
void sockets_sock_addr(const struct rs_config *cfg,
		       const struct rs_backend_conf *bc,
		       const struct rs_backend_addr *ba,
		       struct rs_sock_addr *sa);
size_t sockets_target_slots(const struct rs_backend_conf *bc, uint32_t id,
			    const struct rs_backend_addr *ba,
			    const struct rs_sock_found *found,
			    uint32_t slots[2]);
bool sockets_slots_hold(struct rs_dataplane *dp, const uint32_t *slots,
			size_t n, uint64_t cookie);
uint32_t sockets_slot_mask(const uint32_t *slots, size_t n);
bool sockets_owner_expected(const struct rs_backend_conf *bc,
			    const struct rs_addr_rt *rt, uint32_t *uid);
void sockets_gone(struct rs_addr_rt *rt, double now);
void sockets_note_refused(const struct rs_backend_conf *bc,
			  const struct rs_backend_addr *ba,
			  const struct rs_sock_found *found, uint32_t want,
			  struct rs_addr_rt *rt);
const char *sockets_user_name(uint32_t uid, char *buf, size_t len);

#endif /* RS_SOCKET_SLOTS_H */

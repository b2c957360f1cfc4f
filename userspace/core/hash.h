/* SPDX-License-Identifier: MIT */
/*
 * Userspace side of the data plane's hashing, through libxxhash. The BPF
 * side (bpf/lib/xxh64.bpf.h) must produce the same values.
 */
#ifndef RS_HASH_H
#define RS_HASH_H

#include <stdint.h>

#include <ringsteer/abi.h>

uint64_t rs_hash_key(const struct rs_affinity_key *key, uint64_t seed);

/* Ring position of point @ordinal of backend @name: XXH64("name#i"). */
uint64_t rs_vnode_pos(const char *name, uint32_t ordinal, uint64_t seed);

/*
 * Build the affinity key the data plane builds for a client: @addr is the
 * client address (network order, IPv4 in the first 4 bytes), masked here to
 * the service's prefix; @port (host order) is kept only for src-ip-port.
 */
void rs_affinity_key_build(struct rs_affinity_key *key,
			   const struct rs_service *svc, uint8_t family,
			   const uint8_t addr[16], uint16_t port);

#endif /* RS_HASH_H */

// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <xxhash.h>

#include <ringsteer/rules.h>

#include "hash.h"

uint64_t rs_hash_key(const struct rs_affinity_key *key, uint64_t seed)
{
	return XXH64(key, sizeof(*key), seed);
}

/*
 * The bytes snprintf("%s#%u") wrote, cut at the same length, without
 * its cost: a ring of 200 backends hashes 819,200 of them at start.
 */
uint64_t rs_vnode_pos(const char *name, uint32_t ordinal, uint64_t seed)
{
	char buf[RS_NAME_MAX + 16], digits[10];
	size_t len = strnlen(name, sizeof(buf) - 1), nd = 0;

	memcpy(buf, name, len);
	do {
		digits[nd++] = (char)('0' + ordinal % 10);
		ordinal /= 10;
	} while (ordinal);
	if (len < sizeof(buf) - 1)
		buf[len++] = '#';
	while (nd && len < sizeof(buf) - 1)
		buf[len++] = digits[--nd];
	return XXH64(buf, len, seed);
}

void rs_affinity_key_build(struct rs_affinity_key *key,
			   const struct rs_service *svc, uint8_t family,
			   const uint8_t addr[16], uint16_t port)
{
	uint32_t w[4];

	memset(key, 0, sizeof(*key));
	key->service = svc->id;
	key->family = family;
	if (svc->key_policy == RS_KEY_SRC_IP_PORT)
		key->port = port;
	memcpy(w, addr, sizeof(w));
	rs_key_mask_addr(w, family, svc->prefix4, svc->prefix6);
	memcpy(key->addr, w, sizeof(w));
}

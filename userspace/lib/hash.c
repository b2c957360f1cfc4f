// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <xxhash.h>

#include "hash.h"

uint64_t rs_hash_key(const struct rs_affinity_key *key, uint64_t seed)
{
	return XXH64(key, sizeof(*key), seed);
}

uint64_t rs_vnode_pos(const char *name, uint32_t ordinal, uint64_t seed)
{
	char buf[RS_NAME_MAX + 16];
	int len;

	len = snprintf(buf, sizeof(buf), "%s#%u", name, ordinal);
	if (len < 0)
		len = 0;
	if ((size_t)len >= sizeof(buf))
		len = sizeof(buf) - 1;
	return XXH64(buf, (size_t)len, seed);
}

static void mask_bits(uint8_t *addr, unsigned int nbytes, unsigned int bits)
{
	for (unsigned int i = 0; i < nbytes; i++) {
		if (bits >= 8) {
			bits -= 8;
			continue;
		}
		addr[i] &= (uint8_t)(0xff00u >> bits);
		bits = 0;
	}
}

void rs_affinity_key_build(struct rs_affinity_key *key,
			   const struct rs_service *svc, uint8_t family,
			   const uint8_t addr[16], uint16_t port)
{
	memset(key, 0, sizeof(*key));
	key->service = svc->id;
	key->family = family;
	if (svc->key_policy == RS_KEY_SRC_IP_PORT)
		key->port = port;
	if (family == AF_INET) {
		memcpy(key->addr, addr, 4);
		mask_bits(key->addr, 4, svc->prefix4);
	} else {
		memcpy(key->addr, addr, 16);
		mask_bits(key->addr, 16, svc->prefix6);
	}
}

// SPDX-License-Identifier: MIT
/*
 * Which service owns a destination. A listen of one address and one port
 * goes to a hash table, so the common case costs the program one lookup;
 * prefixes and port 0 need the LPM trie, which it asks only while rs_meta
 * says the trie holds anything. In front of both, rs_ports turns away
 * every port no listen names. Writes are ordered so that a destination
 * that stays configured is never missing, not even for one lookup.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ringsteer/rules.h>

#include "dataplane_internal.h"
#include "log.h"

static bool bind_is_exact(const struct rs_bind_key *k)
{
	return k->port != 0 &&
	       k->prefixlen == rs_bind_full_prefixlen(k->family);
}

static void exact_key(const struct rs_bind_key *k, struct rs_bind_exact_key *e)
{
	memset(e, 0, sizeof(*e));
	e->protocol = k->protocol;
	e->family = k->family;
	e->port = k->port;
	memcpy(e->addr, k->addr, sizeof(e->addr));
}

/*
 * Keys of @fd (of @key_size bytes) that are not among the @nwant keys in
 * @want: collected before any is deleted, since deleting while iterating
 * restarts an LPM trie's walk.
 */
static void *stale_keys(int fd, size_t key_size, const void *want, size_t nwant,
			size_t *nstale)
{
	char *stale = calloc(RS_MAX_BINDS, key_size);
	char cur[sizeof(struct rs_bind_key)], next[sizeof(struct rs_bind_key)];
	const char *w = want;

	*nstale = 0;
	if (!stale)
		return NULL;
	for (int r = bpf_map_get_next_key(fd, NULL, next); r == 0;
	     r = bpf_map_get_next_key(fd, cur, next)) {
		bool found = false;

		for (size_t i = 0; i < nwant && !found; i++)
			found = !memcmp(next, w + i * key_size, key_size);
		if (!found && *nstale < RS_MAX_BINDS)
			memcpy(stale + (*nstale)++ * key_size, next, key_size);
		memcpy(cur, next, key_size);
	}
	return stale;
}

static int delete_keys(int fd, const char *keys, size_t key_size, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (bpf_map_delete_elem(fd, keys + i * key_size) &&
		    errno != ENOENT) {
			int err = -errno;

			rs_err("bpf: deleting a stale bind failed: %s",
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

/* rs_ports as @keys need it: a bit set for each port no listen covers. */
static void ports_unused(const struct rs_bind_key *keys, size_t n,
			 uint64_t *unused)
{
	for (uint32_t w = 0; w < RS_PORT_WORDS; w++)
		unused[w] = ~0ull;
	for (size_t i = 0; i < n; i++) {
		uint32_t w = rs_port_word(keys[i].protocol, keys[i].port);

		if (keys[i].port == 0) {
			/* Every port of the protocol. */
			uint32_t first = rs_port_word(keys[i].protocol, 0);

			memset(&unused[first], 0, 65536 / 8);
			continue;
		}
		unused[w] &= ~(1ull << (keys[i].port % 64));
	}
}

/*
 * Writes the words of @want (with @keep_used: only clearing bits, so a
 * port in use before or after stays open) where rs_ports differs.
 */
static int ports_write(struct rs_dataplane *dp, const uint64_t *want,
		       bool keep_used)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_ports);

	for (__u32 w = 0; w < RS_PORT_WORDS; w++) {
		__u64 cur = 0, next;

		if (bpf_map_lookup_elem(fd, &w, &cur))
			return -errno;
		next = keep_used ? cur & want[w] : want[w];
		if (next != cur && bpf_map_update_elem(fd, &w, &next, 0)) {
			int err = -errno;

			rs_err("bpf: updating rs_ports failed: %s",
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

int dp_sync_binds(struct rs_dataplane *dp, const struct rs_bind_key *keys,
		  const struct rs_bind *values, size_t n)
{
	if (dp_fault("binds"))
		return -ENOMEM;
	uint64_t *unused = calloc(RS_PORT_WORDS, sizeof(*unused));
	int efd = bpf_map__fd(dp->skel->maps.rs_binds_exact);
	int lfd = bpf_map__fd(dp->skel->maps.rs_binds);
	struct rs_bind_exact_key *ekeys = calloc(n + 1, sizeof(*ekeys));
	struct rs_bind_key *lkeys = calloc(n + 1, sizeof(*lkeys));
	void *estale = NULL, *lstale = NULL;
	size_t ne = 0, nl = 0, nes = 0, nls = 0;
	int err = -ENOMEM;

	if (!ekeys || !lkeys || !unused)
		goto out;
	/* New ports open before their binds appear, old ones close after. */
	ports_unused(keys, n, unused);
	err = ports_write(dp, unused, true);
	if (err)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct bpf_map *m = dp->skel->maps.rs_binds;
		const void *k = &keys[i];

		if (bind_is_exact(&keys[i])) {
			exact_key(&keys[i], &ekeys[ne]);
			k = &ekeys[ne++];
			m = dp->skel->maps.rs_binds_exact;
		} else {
			lkeys[nl++] = keys[i];
		}
		err = dp_map_update(m, k, &values[i], "rs_binds");
		if (err)
			goto out;
	}
	estale = stale_keys(efd, sizeof(*ekeys), ekeys, ne, &nes);
	lstale = stale_keys(lfd, sizeof(*lkeys), lkeys, nl, &nls);
	err = -ENOMEM;
	if (!estale || !lstale)
		goto out;
	/* The trie is consulted while it holds anything, stale or new. */
	err = dp_meta_set(dp, offsetof(struct rs_meta, lpm_binds),
			  (uint32_t)(nl + nls));
	if (!err)
		err = delete_keys(efd, estale, sizeof(*ekeys), nes);
	if (!err)
		err = delete_keys(lfd, lstale, sizeof(*lkeys), nls);
	if (!err)
		err = dp_meta_set(dp, offsetof(struct rs_meta, lpm_binds),
				  (uint32_t)nl);
	if (!err)
		err = ports_write(dp, unused, false);
out:
	free(unused);
	free(estale);
	free(lstale);
	free(ekeys);
	free(lkeys);
	return err;
}

int dp_bind_service(struct rs_dataplane *dp, uint8_t protocol, uint8_t family,
		    uint16_t port, const uint8_t *addr, uint32_t *svc_id)
{
	size_t alen = family == AF_INET ? 4 : 16;
	struct rs_bind_exact_key ekey = {
		.protocol = protocol, .family = family, .port = port};
	struct rs_bind_key key = {.protocol = protocol, .family = family};
	struct rs_bind exact, any;
	const struct rs_bind *won;
	bool has_exact, has_any;

	memcpy(ekey.addr, addr, alen);
	if (!bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_binds_exact),
				 &ekey, &exact)) {
		*svc_id = exact.service;
		return 0;
	}
	/* As rs_match_bind(): the same key, the same pick. */
	key.prefixlen = rs_bind_full_prefixlen(family);
	memcpy(key.addr, addr, alen);
	key.port = port;
	has_exact = !bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_binds),
					 &key, &exact);
	key.port = 0;
	has_any = !bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_binds),
				       &key, &any);
	won = rs_bind_pick(has_exact ? &exact : NULL, has_any ? &any : NULL);
	if (!won)
		return -ENOENT;
	*svc_id = won->service;
	return 0;
}

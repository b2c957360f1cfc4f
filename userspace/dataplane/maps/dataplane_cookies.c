// SPDX-License-Identifier: MIT
/*
 * rs_cookies, QUIC server IDs to backends, read only by steer_tc. It is kept
 * equal to the configuration, new and changed entries before stale ones
 * go, so a server ID that stays configured is never missing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane_internal.h"
#include "log.h"

static bool cookie_key_in(const struct rs_cookie_key *k,
			  const struct rs_cookie_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(k, &keys[i], sizeof(*k)))
			return true;
	return false;
}

int dp_sync_cookies(struct rs_dataplane *dp, const struct rs_cookie_key *keys,
		    const struct rs_cookie *values, size_t n, size_t *written,
		    size_t *removed)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_cookies);
	struct rs_cookie_key cur, next, *stale;
	size_t nstale = 0, nwritten = 0, nremoved = 0;
	int err = dp_fault("cookies"), r;

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		struct rs_cookie have;

		if (!bpf_map_lookup_elem(fd, &keys[i], &have) &&
		    have.backend == values[i].backend)
			continue;
		err = dp_map_update(dp->skel->maps.rs_cookies, &keys[i],
				    &values[i], "rs_cookies");
		if (err)
			return err;
		nwritten++;
	}
	stale = calloc(RS_MAX_BACKENDS, sizeof(*stale));
	if (!stale)
		return -ENOMEM;
	/* Collect first: deleting the current key would restart the walk. */
	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		if (!cookie_key_in(&next, keys, n) && nstale < RS_MAX_BACKENDS)
			stale[nstale++] = next;
		cur = next;
	}
	for (size_t i = 0; i < nstale; i++) {
		if (bpf_map_delete_elem(fd, &stale[i]) && errno != ENOENT) {
			err = -errno;
			rs_err("bpf: delete from rs_cookies failed: %s",
			       strerror(-err));
			break;
		}
		nremoved++;
	}
	free(stale);
	if (written)
		*written = nwritten;
	if (removed)
		*removed = nremoved;
	return err;
}

int dp_cookie_lookup(struct rs_dataplane *dp, const struct rs_cookie_key *key,
		     struct rs_cookie *out)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_cookies), key,
				out))
		return -errno;
	return 0;
}

long dp_cookies_each(struct rs_dataplane *dp,
		     void (*fn)(const struct rs_cookie_key *key,
				const struct rs_cookie *val, void *arg),
		     void *arg)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_cookies), r;
	struct rs_cookie_key cur, next;
	struct rs_cookie val;
	long n = 0;

	for (r = bpf_map_get_next_key(fd, NULL, &next); r == 0;
	     r = bpf_map_get_next_key(fd, &cur, &next)) {
		cur = next;
		if (bpf_map_lookup_elem(fd, &cur, &val))
			continue;
		fn(&cur, &val, arg);
		n++;
	}
	return n;
}

/* SPDX-License-Identifier: MIT */
/*
 * One member record read from etcd, checked and parsed (docs/fleet.md,
 * "What a host believes"). Apart from the etcd thread's files so that a
 * unit test (the fuzz of tests/unit/fleet/test_fleet_member_fuzz.c) runs the
 * very function the fleet thread applies to every record.
 */
#ifndef RS_FLEET_MEMBER_H
#define RS_FLEET_MEMBER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "etcd.h"
#include "fleet_ident.h"
#include "fleet_keys.h"
#include "fleet_table.h"

/* This host's own listens, for the check that no member claims one. */
struct fleet_local {
	struct rs_listen *listens;
	size_t n;
};

/*
 * What a record must be signed with: with members' public keys (ids->n,
 * per-host identities), its own host's "host_sig"; else, with fleet keys
 * (keys->n), the shared key's "sig"; else nothing.
 */
struct fleet_trust {
	const struct rs_fleet_keys *keys;
	const struct rs_fleet_pubkeys *ids; /* NULL: none */
};

/*
 * Record @kv of member @name (its key's last part) into @m, for this
 * host's [fleet] @c, listens @local and keys @trust. Everything in it is
 * checked: false with a reason in
 * @why (@len bytes, never empty) when any of it is wrong, so that no
 * half-believed record gets keys; true leaves @why as it was.
 */
bool fleet_member_parse(const struct rs_fleet_conf *c,
			const struct fleet_local *local,
			const struct fleet_trust *trust, const char *name,
			const struct rs_etcd_kv *kv,
			struct rs_fleet_member_info *m, char *why, size_t len);

/*
 * @src into @dst (@len bytes, NUL-terminated) with every byte that is not
 * printable ASCII, and backslash, as \xNN: text from etcd (keys, bytes
 * of a record) goes into logs, fleet status and its JSON, where control
 * characters would reach an operator's terminal and invalid UTF-8 would
 * make jansson drop the entry. Stops at the last whole byte that fits.
 */
void fleet_printable(char *dst, size_t len, const char *src);

#endif /* RS_FLEET_MEMBER_H */

// SPDX-License-Identifier: MIT
/*
 * Per-host identities (docs/fleet.md): identity_key and member_keys come
 * together, and this host's public key, and its addresses when
 * member_keys binds any, are listed under its own name, or every other
 * host would reject its record (the messages give the line to fix).
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "config_checks.h"
#include "config_keys.h"
#include "fleet_ident.h"

/* This host's address and address6 each its own in member_keys. */
static void check_own_addresses(const struct fleet_entry *f,
				const struct rs_fleet_pubkeys *keys,
				struct cfg_report *r)
{
	const struct rs_fleet_conf *c = &f->conf;
	char why[256];

	if (c->addr && rs_fleet_addr_check(keys, c->name, AF_INET, &c->addr,
					   why, sizeof(why)))
		cfg_report(r, f->key_line[FL_ADDRESS], "fleet", "address",
			   "%s, and every host would reject this host's "
			   "record: fix %s or this address",
			   why, c->member_keys);
	if (c->has_addr6 && rs_fleet_addr_check(keys, c->name, AF_INET6,
						c->addr6, why, sizeof(why)))
		cfg_report(r, f->key_line[FL_ADDRESS6], "fleet", "address6",
			   "%s, and every host would reject this host's "
			   "record: fix %s or this address",
			   why, c->member_keys);
}

void cfg_check_fleet_identity(const struct fleet_entry *f, struct cfg_report *r)
{
	const struct rs_fleet_conf *c = &f->conf;
	uint8_t priv[RS_FLEET_ID_KEY_LEN], pub[RS_FLEET_ID_KEY_LEN];
	char why[PATH_MAX + 160], text[RS_FLEET_ID_PUB_TEXT];
	struct rs_fleet_pubkeys keys;
	bool listed;

	if (!f->key_line[FL_IDENTITY_KEY] != !f->key_line[FL_MEMBER_KEYS]) {
		bool id = f->key_line[FL_IDENTITY_KEY];

		cfg_report(r,
			   f->key_line[id ? FL_IDENTITY_KEY : FL_MEMBER_KEYS],
			   "fleet", id ? "identity_key" : "member_keys",
			   "needs %s too", id ? "member_keys" : "identity_key");
		return;
	}
	if (!c->identity_key[0] || !c->member_keys[0] || !c->name[0])
		return;
	/* Each file that cannot be read was reported with its key. */
	if (rs_fleet_identity_read(c->identity_key, priv, pub, why,
				   sizeof(why)))
		return;
	OPENSSL_cleanse(priv, sizeof(priv));
	if (rs_fleet_pubkeys_read(c->member_keys, &keys, why, sizeof(why)))
		return;
	listed = rs_fleet_pubkeys_has(&keys, c->name, pub);
	check_own_addresses(f, &keys, r);
	rs_fleet_pubkeys_free(&keys);
	if (listed)
		return;
	rs_fleet_pubkey_text(pub, text);
	cfg_report(r, f->key_line[FL_IDENTITY_KEY], "fleet", "identity_key",
		   "its public key is not %s's in %s, and every host would "
		   "reject this host's record: add the line '%s %s' to "
		   "member_keys on every host",
		   c->name, c->member_keys, c->name, text);
}

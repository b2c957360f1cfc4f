// SPDX-License-Identifier: MIT
/*
 * What this host signs with and believes (docs/fleet.md, "Signed member
 * records", "Per-host identities"): the fleet key file, this host's
 * identity key and the members' public keys, read again at every start
 * and reload. They change in place, so a rotation moves nobody; a file
 * that cannot be read now (it was when the configuration was checked)
 * keeps what is in force.
 */
#include <openssl/crypto.h>

#include "fleet_rt.h"
#include "log.h"

static void fleet_key_file_load(struct fleet_rt *f, const char *key_file)
{
	struct rs_fleet_keys k = {0};
	char why[PATH_MAX + 128];

	if (key_file[0] && rs_fleet_keys_read(key_file, &k, why, sizeof(why))) {
		rs_err("fleet: %s; the fleet keys stay as they were", why);
		return;
	}
	pthread_mutex_lock(&f->mu);
	if (k.n != f->sh.keys.n)
		rs_info("fleet: %zu fleet key%s (the first signs)", k.n,
			k.n == 1 ? "" : "s");
	f->sh.keys = k;
	pthread_mutex_unlock(&f->mu);
	OPENSSL_cleanse(&k, sizeof(k));
}

/* identity_key and member_keys into @id; 0 or negative errno, logged. */
static int ident_read(const struct rs_fleet_conf *c, struct fleet_ident *id)
{
	uint8_t pub[RS_FLEET_ID_KEY_LEN];
	char why[PATH_MAX + 160];
	int err;

	if (!c->identity_key[0] || !c->member_keys[0])
		return 0;
	err = rs_fleet_identity_read(c->identity_key, id->priv, pub, why,
				     sizeof(why));
	if (!err)
		err = rs_fleet_pubkeys_read(c->member_keys, &id->members, why,
					    sizeof(why));
	if (err) {
		rs_err("fleet: %s; the identity keys stay as they were", why);
		OPENSSL_cleanse(id->priv, sizeof(id->priv));
		return err;
	}
	if (!rs_fleet_pubkeys_has(&id->members, c->name, pub))
		rs_warn("fleet: this host's identity key is not %s's in %s: "
			"the others reject its record",
			c->name, c->member_keys);
	id->on = true;
	return 0;
}

static void fleet_ident_load(struct fleet_rt *f, const struct rs_fleet_conf *c)
{
	struct fleet_ident id = {0};
	size_t was;

	if (ident_read(c, &id))
		return;
	pthread_mutex_lock(&f->mu);
	was = f->sh.ident.members.n;
	rs_fleet_pubkeys_free(&f->sh.ident.members);
	OPENSSL_cleanse(&f->sh.ident, sizeof(f->sh.ident));
	f->sh.ident = id;
	pthread_mutex_unlock(&f->mu);
	if (id.members.n != was)
		rs_info("fleet: %zu member key%s (identities: %s)",
			id.members.n, id.members.n == 1 ? "" : "s",
			id.on ? "each record signed by its own host"
			      : "off, records believed on the fleet key");
	OPENSSL_cleanse(&id, sizeof(id));
}

void fleet_keys_load(struct fleet_rt *f, const struct rs_fleet_conf *c)
{
	fleet_key_file_load(f, c->key_file);
	fleet_ident_load(f, c);
}

void fleet_ident_free(struct fleet_ident *id)
{
	rs_fleet_pubkeys_free(&id->members);
	OPENSSL_cleanse(id, sizeof(*id));
}

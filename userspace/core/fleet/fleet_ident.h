/* SPDX-License-Identifier: MIT */
/*
 * Per-host fleet identities (docs/fleet.md, "Per-host identities"): each
 * host signs its member record with an Ed25519 key of its own
 * ([fleet] identity_key), and every host believes a record under
 * PREFIX/members/NAME only when one of NAME's public keys, as the
 * operator listed them ([fleet] member_keys), verifies it. A host that
 * holds only its own private key therefore cannot speak for another, nor
 * add a member the operator did not list: what the shared key_file's
 * HMAC cannot give, since every member holds that key.
 */
#ifndef RS_FLEET_IDENT_H
#define RS_FLEET_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>

#define RS_FLEET_ID_KEY_LEN 32
/* The signature as a record carries it: 128 hex digits (64 bytes). */
#define RS_FLEET_ID_SIG_HEX 129
/* Lines of a member_keys file: hosts of a PoP, two keys each in rotation. */
#define RS_FLEET_ID_KEYS_MAX 1024
/* The public key as operators write it: base64 of its SubjectPublicKeyInfo. */
#define RS_FLEET_ID_PUB_TEXT 64

/* One line of member_keys: a member's name and one of its public keys. */
struct rs_fleet_pubkey {
	char name[RS_NAME_MAX];
	uint8_t key[RS_FLEET_ID_KEY_LEN];
};

/* Addresses member_keys binds to members: a few per host of a PoP. */
#define RS_FLEET_ID_ADDRS_MAX 1024

/*
 * An address a member_keys line (`NAME KEY ADDRESS...`) binds to NAME:
 * only NAME's record may claim it, and NAME's only one of its own.
 */
struct rs_fleet_bound_addr {
	char name[RS_NAME_MAX];
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network order, IPv4 in the first 4 bytes */
	int line;	  /* of member_keys, for messages */
};

/* Every member's public keys (member_keys), sorted by name; malloc'd. */
struct rs_fleet_pubkeys {
	struct rs_fleet_pubkey *k;
	size_t n;
	struct rs_fleet_bound_addr *a; /* in file order */
	size_t n_addr;
};

/*
 * This host's private key from PEM file @path (`openssl genpkey -algorithm
 * ed25519`, unencrypted), read with rs_secret_file_read(): only its owner,
 * root or the daemon's user, may read it. The raw key into @priv and its
 * public key into @pub. 0, or a negative errno with "PATH: problem" in
 * @why (never a byte of the key). The file's text is wiped.
 */
int rs_fleet_identity_read(const char *path, uint8_t priv[RS_FLEET_ID_KEY_LEN],
			   uint8_t pub[RS_FLEET_ID_KEY_LEN], char *why,
			   size_t len);

/*
 * The member_keys file @path: one `NAME KEY [ADDRESS...]` per line, KEY
 * being the public key's base64 (the middle line of `openssl pkey
 * -pubout`), ADDRESS an IPv4 or IPv6 address bound to NAME, '#'
 * comments and blank lines skipped, a name on several lines for a
 * rotation (the addresses of all its lines count). A key or an address
 * listed for two names is refused. Read with rs_trusted_file_read(). 0, or a
 * negative errno with "PATH:LINE: problem" in @why. @out is freed by
 * rs_fleet_pubkeys_free().
 */
int rs_fleet_pubkeys_read(const char *path, struct rs_fleet_pubkeys *out,
			  char *why, size_t len);
void rs_fleet_pubkeys_free(struct rs_fleet_pubkeys *p);
/* A deep copy of @src into @dst (0), or -ENOMEM with @dst empty. */
int rs_fleet_pubkeys_copy(struct rs_fleet_pubkeys *dst,
			  const struct rs_fleet_pubkeys *src);
/* Whether @key is one of @name's keys in @p. */
bool rs_fleet_pubkeys_has(const struct rs_fleet_pubkeys *p, const char *name,
			  const uint8_t key[RS_FLEET_ID_KEY_LEN]);

/*
 * Address @text of member @name's line @line (@where: "PATH:LINE") into
 * @p->a: 0, or a negative errno with @why when it is no forwarding
 * address or another name's already (fleet_bind.c).
 */
int rs_fleet_bound_add(struct rs_fleet_pubkeys *p, const char *name,
		       const char *text, int line, const char *where, char *why,
		       size_t len);

/*
 * Whether member @name's record may claim @family/@addr (4 or 16 bytes)
 * as its forwarding address: 0, or -EPERM with "address A is OTHER's in
 * member_keys (line N)" when another name lists it, or "address A is not
 * NAME's in member_keys (...)" when NAME lists addresses and not this
 * one. Without addresses in @p, anything goes (the table's own rule,
 * one address one member, still holds).
 */
int rs_fleet_addr_check(const struct rs_fleet_pubkeys *p, const char *name,
			int family, const void *addr, char *why, size_t len);

/* @pub as member_keys writes it (base64), NUL-terminated. */
void rs_fleet_pubkey_text(const uint8_t pub[RS_FLEET_ID_KEY_LEN],
			  char out[RS_FLEET_ID_PUB_TEXT]);

/*
 * The Ed25519 signature, with @priv, of record @canon (its JSON, compact
 * with sorted keys, without "sig" and "host_sig") stored under etcd key
 * @keyname: 128 hex digits and a NUL into @out. -ENOMEM when OpenSSL
 * fails.
 */
int rs_fleet_record_sign(const uint8_t priv[RS_FLEET_ID_KEY_LEN],
			 const char *keyname, const char *canon,
			 char out[RS_FLEET_ID_SIG_HEX]);

/*
 * Whether @sig is a signature of @canon under @keyname by one of member
 * @name's keys in @p: 0; -ENOKEY when @p lists no key for @name, -EBADMSG
 * when none of its keys verifies (another member's key, altered, or
 * copied under another name), -EINVAL when @sig is not 128 hex digits.
 */
int rs_fleet_record_check(const struct rs_fleet_pubkeys *p, const char *name,
			  const char *keyname, const char *canon,
			  const char *sig);

#endif /* RS_FLEET_IDENT_H */

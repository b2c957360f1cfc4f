/* SPDX-License-Identifier: MIT */
/*
 * The fleet key (docs/fleet.md, "Signed member records"): a file of 128-bit
 * keys, the first of which signs, every one of which verifies, so that a
 * key can be rotated host by host without a moment in which two hosts
 * reject each other. A member record carries an HMAC-SHA256 over its etcd
 * key name and its canonical JSON, so it cannot be forged, altered, nor
 * copied under another member's name.
 */
#ifndef RS_FLEET_KEYS_H
#define RS_FLEET_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>

/* One forwarding key per line: the table holds RS_FLEET_AUTH_KEYS. */
#define RS_FLEET_KEYS_MAX RS_FLEET_AUTH_KEYS
#define RS_FLEET_KEY_LEN  16
/* The MAC as a record carries it: 32 hex digits (128 bits). */
#define RS_FLEET_MAC_HEX 33

struct rs_fleet_keys {
	uint8_t key[RS_FLEET_KEYS_MAX][RS_FLEET_KEY_LEN];
	/* Each key's forwarding key (rs_fleet_auth_derive()), in order. */
	struct rs_fleet_auth auth[RS_FLEET_KEYS_MAX];
	size_t n;
};

/*
 * The forwarding key of fleet key @key: SipHash key words and id from
 * HMAC-SHA256 of @key over a context of their own, so that neither a
 * record's MAC nor a packet's tag tells anything about the other. The id
 * (1..255) lets a member find the key a packet was signed with; the same
 * line gives the same id on every host. -ENOMEM when OpenSSL fails.
 */
int rs_fleet_auth_derive(const uint8_t key[RS_FLEET_KEY_LEN],
			 struct rs_fleet_auth *out);

/*
 * Read @path: one key per line as 32 hex digits (`openssl rand -hex 16`),
 * '#' starts a comment, blank lines are skipped. Two keys whose
 * forwarding ids are the same (1 pair in 255) are refused: a member
 * could not tell which one signed a packet. 0, or a negative errno
 * with "PATH:LINE: problem" (or "PATH: problem") in @why. The file must
 * be a regular file only its owner can read, of at most
 * RS_SECRET_FILE_MAX bytes (rs_secret_file_read()), whatever the
 * configuration's check found earlier.
 */
int rs_fleet_keys_read(const char *path, struct rs_fleet_keys *k, char *why,
		       size_t len);

/*
 * The MAC of record @canon (its JSON, compact with sorted keys, without
 * "sig") stored under etcd key @keyname, with @key: 32 hex digits and a
 * NUL into @out. -ENOMEM when OpenSSL fails.
 */
int rs_fleet_record_mac(const uint8_t key[RS_FLEET_KEY_LEN],
			const char *keyname, const char *canon,
			char out[RS_FLEET_MAC_HEX]);

/* Index of the key of @k whose MAC is @mac, or -1 (constant-time compare). */
int rs_fleet_record_verify(const struct rs_fleet_keys *k, const char *keyname,
			   const char *canon, const char *mac);

#endif /* RS_FLEET_KEYS_H */

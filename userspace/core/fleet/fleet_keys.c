// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fleet_keys.h"
#include "hex.h"
#include "secret_file.h"

/* Domain separation: a MAC made for something else never verifies. */
#define MAC_CONTEXT	"ringsteer fleet record 1\n"
#define FORWARD_CONTEXT "ringsteer fleet forwarding 1\n"

static uint64_t le64(const unsigned char *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

int rs_fleet_auth_derive(const uint8_t key[RS_FLEET_KEY_LEN],
			 struct rs_fleet_auth *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	size_t mdlen = 0;

	memset(out, 0, sizeof(*out));
	if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key,
		       RS_FLEET_KEY_LEN, (const unsigned char *)FORWARD_CONTEXT,
		       strlen(FORWARD_CONTEXT), md, sizeof(md), &mdlen) ||
	    mdlen < 17)
		return -ENOMEM;
	out->k0 = le64(md);
	out->k1 = le64(md + 8);
	out->id = (uint8_t)(md[16] % 255 + 1);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

/* Derive the forwarding keys of @k; refuse two that share an id. */
static int keys_derive(const char *path, struct rs_fleet_keys *k,
		       const int *lines, char *why, size_t len)
{
	for (size_t i = 0; i < k->n; i++) {
		if (rs_fleet_auth_derive(k->key[i], &k->auth[i])) {
			snprintf(why, len,
				 "%s: cannot derive the forwarding "
				 "keys (OpenSSL)",
				 path);
			return -ENOMEM;
		}
		for (size_t j = 0; j < i; j++)
			if (k->auth[j].id == k->auth[i].id) {
				snprintf(why, len,
					 "%s:%d: this key's forwarding id is "
					 "that of the key on line %d; replace "
					 "one of them (openssl rand -hex 16)",
					 path, lines[i], lines[j]);
				return -EINVAL;
			}
	}
	return 0;
}

int rs_fleet_keys_read(const char *path, struct rs_fleet_keys *k, char *why,
		       size_t len)
{
	int err, lines[RS_FLEET_KEYS_MAX];

	_Static_assert(RS_FLEET_KEY_LEN == RS_SECRET_KEY_LEN, "one key size");
	memset(k, 0, sizeof(*k));
	err = rs_secret_keys_read(path, k->key, RS_FLEET_KEYS_MAX, &k->n, lines,
				  why, len);
	if (!err)
		err = keys_derive(path, k, lines, why, len);
	if (err)
		OPENSSL_cleanse(k, sizeof(*k));
	return err;
}

int rs_fleet_record_mac(const uint8_t key[RS_FLEET_KEY_LEN],
			const char *keyname, const char *canon,
			char out[RS_FLEET_MAC_HEX])
{
	size_t lc = strlen(MAC_CONTEXT), lk = strlen(keyname),
	       lr = strlen(canon), mdlen = 0;
	unsigned char md[EVP_MAX_MD_SIZE];
	char *buf = malloc(lc + lk + 1 + lr);

	if (!buf)
		return -ENOMEM;
	memcpy(buf, MAC_CONTEXT, lc);
	memcpy(buf + lc, keyname, lk);
	buf[lc + lk] = '\n';
	memcpy(buf + lc + lk + 1, canon, lr);
	if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key,
		       RS_FLEET_KEY_LEN, (unsigned char *)buf, lc + lk + 1 + lr,
		       md, sizeof(md), &mdlen) ||
	    mdlen < 16) {
		free(buf);
		return -ENOMEM;
	}
	free(buf);
	rs_hex_bytes(out, RS_FLEET_MAC_HEX, md, 16, "");
	return 0;
}

int rs_fleet_record_verify(const struct rs_fleet_keys *k, const char *keyname,
			   const char *canon, const char *mac)
{
	char want[RS_FLEET_MAC_HEX];

	if (strlen(mac) != RS_FLEET_MAC_HEX - 1)
		return -1;
	for (size_t i = 0; i < k->n; i++)
		if (!rs_fleet_record_mac(k->key[i], keyname, canon, want) &&
		    !CRYPTO_memcmp(want, mac, RS_FLEET_MAC_HEX - 1))
			return (int)i;
	return -1;
}

// SPDX-License-Identifier: MIT
/*
 * QUIC-LB CIDs with a key, in userspace: libcrypto supplies AES-128-ECB,
 * include/ringsteer/quic_lb.h the modes, the same code steer_tc runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <ringsteer/quic_lb.h>

#include "hex.h"
#include "quic_lb.h"
#include "secret_file.h"

struct lb_cipher {
	EVP_CIPHER_CTX *enc, *dec;
};

static int lb_aes(struct lb_cipher *c, struct rs_quic_lb_block *blk, int dec)
{
	unsigned char out[32];
	int n = 0;

	if (!EVP_CipherUpdate(dec ? c->dec : c->enc, out, &n, blk->b, 16) ||
	    n != 16)
		return -ENOMEM;
	memcpy(blk->b, out, 16);
	OPENSSL_cleanse(out, sizeof(out));
	return 0;
}

#define RS_QUIC_LB_CTX		      struct lb_cipher *
#define RS_QUIC_LB_AES(ctx, blk, dec) lb_aes(ctx, blk, dec)
#include <ringsteer/quic_lb.h>

static int lb_cipher_init(struct lb_cipher *c,
			  const uint8_t key[RS_QUIC_LB_KEY_LEN])
{
	c->enc = EVP_CIPHER_CTX_new();
	c->dec = EVP_CIPHER_CTX_new();
	if (!c->enc || !c->dec ||
	    !EVP_EncryptInit_ex(c->enc, EVP_aes_128_ecb(), NULL, key, NULL) ||
	    !EVP_DecryptInit_ex(c->dec, EVP_aes_128_ecb(), NULL, key, NULL) ||
	    !EVP_CIPHER_CTX_set_padding(c->enc, 0) ||
	    !EVP_CIPHER_CTX_set_padding(c->dec, 0))
		return -ENOMEM;
	return 0;
}

static void lb_cipher_free(struct lb_cipher *c)
{
	EVP_CIPHER_CTX_free(c->enc);
	EVP_CIPHER_CTX_free(c->dec);
}

int quic_lb_cid_crypt(const uint8_t key[RS_QUIC_LB_KEY_LEN], uint8_t *cid,
		      size_t len, int decrypt)
{
	struct rs_quic_lb_work w = {};
	struct lb_cipher c = {};
	int err;

	if (!key || !cid || len < 1 + RS_QUIC_LB_MIN_PLAIN ||
	    len > 1 + RS_QUIC_LB_MAX_PLAIN)
		return -EINVAL;
	w.io.plen = (uint32_t)(len - 1);
	w.io.want = w.io.plen;
	memcpy(w.io.in, cid + 1, w.io.plen);
	err = lb_cipher_init(&c, key);
	if (!err)
		err = decrypt ? rs_quic_lb_decrypt(&c, &w)
			      : rs_quic_lb_encrypt(&c, &w);
	lb_cipher_free(&c);
	if (!err)
		memcpy(cid + 1, w.io.out, w.io.plen);
	OPENSSL_cleanse(&w, sizeof(w));
	return err;
}

int quic_lb_key_read(const char *path, uint8_t key[RS_QUIC_LB_KEY_LEN],
		     char *why, size_t why_len)
{
	uint8_t keys[2][RS_SECRET_KEY_LEN];
	size_t n = 0;
	int lines[2], err;

	_Static_assert(RS_QUIC_LB_KEY_LEN == RS_SECRET_KEY_LEN, "one key size");
	/* Two read, to name the second: a rotation has a file per key. */
	err = rs_secret_keys_read(path, keys, 2, &n, lines, why, why_len);
	if (!err && n > 1) {
		snprintf(why, why_len,
			 "%s:%d: a second key (a QUIC key file holds one; the "
			 "previous config has its own quic_previous_key_file)",
			 path, lines[1]);
		err = -EINVAL;
	}
	if (!err)
		memcpy(key, keys[0], RS_QUIC_LB_KEY_LEN);
	OPENSSL_cleanse(keys, sizeof(keys));
	return err;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "fleet_ident.h"
#include "hex.h"
#include "name.h"
#include "secret_file.h"

/* Domain separation: no signature made for something else verifies. */
#define SIG_CONTEXT "ringsteer fleet record ed25519 1\n"
/* A member_keys file: 1,024 lines of a name and a key, and notes. */
#define PUBKEYS_FILE_MAX (256 * 1024)
/* An Ed25519 SubjectPublicKeyInfo is this DER prefix and the raw key. */
static const uint8_t spki_prefix[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
					0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

/* An encrypted PEM must not make OpenSSL ask the terminal for a password. */
static int no_password(char *buf, int size, int rw, void *u)
{
	(void)buf;
	(void)size;
	(void)rw;
	(void)u;
	return -1;
}

static int pem_identity(const char *path, const char *text, size_t size,
			uint8_t priv[RS_FLEET_ID_KEY_LEN],
			uint8_t pub[RS_FLEET_ID_KEY_LEN], char *why, size_t len)
{
	BIO *bio = BIO_new_mem_buf(text, (int)size);
	EVP_PKEY *pk =
		bio ? PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL)
		    : NULL;
	size_t lpriv = RS_FLEET_ID_KEY_LEN, lpub = RS_FLEET_ID_KEY_LEN;
	int err = 0;

	ERR_clear_error();
	if (!pk) {
		snprintf(why, len,
			 "%s: not an unencrypted PEM private key (openssl "
			 "genpkey -algorithm ed25519)",
			 path);
		err = -EINVAL;
	} else if (!EVP_PKEY_is_a(pk, "ED25519")) {
		snprintf(why, len,
			 "%s: a %s key, not Ed25519 (openssl genpkey "
			 "-algorithm ed25519)",
			 path, EVP_PKEY_get0_type_name(pk));
		err = -EINVAL;
	} else if (EVP_PKEY_get_raw_private_key(pk, priv, &lpriv) != 1 ||
		   EVP_PKEY_get_raw_public_key(pk, pub, &lpub) != 1 ||
		   lpriv != RS_FLEET_ID_KEY_LEN ||
		   lpub != RS_FLEET_ID_KEY_LEN) {
		snprintf(why, len, "%s: cannot read the Ed25519 key", path);
		err = -EINVAL;
	}
	EVP_PKEY_free(pk);
	BIO_free(bio);
	return err;
}

int rs_fleet_identity_read(const char *path, uint8_t priv[RS_FLEET_ID_KEY_LEN],
			   uint8_t pub[RS_FLEET_ID_KEY_LEN], char *why,
			   size_t len)
{
	char *text;
	size_t size;
	int err;

	err = rs_secret_file_read(path, RS_SECRET_FILE_MAX, &text, &size, why,
				  len);
	if (err)
		return err;
	err = pem_identity(path, text, size, priv, pub, why, len);
	OPENSSL_cleanse(text, size);
	free(text);
	if (err)
		OPENSSL_cleanse(priv, RS_FLEET_ID_KEY_LEN);
	return err;
}

void rs_fleet_pubkey_text(const uint8_t pub[RS_FLEET_ID_KEY_LEN],
			  char out[RS_FLEET_ID_PUB_TEXT])
{
	uint8_t der[sizeof(spki_prefix) + RS_FLEET_ID_KEY_LEN];

	memcpy(der, spki_prefix, sizeof(spki_prefix));
	memcpy(der + sizeof(spki_prefix), pub, RS_FLEET_ID_KEY_LEN);
	EVP_EncodeBlock((unsigned char *)out, der, (int)sizeof(der));
}

/* The base64 SubjectPublicKeyInfo @b64 as a raw Ed25519 key; 0 or -1. */
static int pubkey_parse(const char *b64, uint8_t key[RS_FLEET_ID_KEY_LEN])
{
	size_t n = strlen(b64), lkey = RS_FLEET_ID_KEY_LEN;
	unsigned char der[96];
	const unsigned char *p = der;
	EVP_PKEY *pk;
	int got, ok;

	if (!n || n % 4 || n > 4 * sizeof(der) / 3 ||
	    strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			"0123456789+/=") != n)
		return -1;
	got = EVP_DecodeBlock(der, (const unsigned char *)b64, (int)n);
	/* EVP_DecodeBlock counts the padding's bytes too. */
	got -= (b64[n - 1] == '=') + (n > 1 && b64[n - 2] == '=');
	pk = got > 0 ? d2i_PUBKEY(NULL, &p, got) : NULL;
	ERR_clear_error();
	ok = pk && p == der + got && EVP_PKEY_is_a(pk, "ED25519") &&
	     EVP_PKEY_get_raw_public_key(pk, key, &lkey) == 1 &&
	     lkey == RS_FLEET_ID_KEY_LEN;
	EVP_PKEY_free(pk);
	return ok ? 0 : -1;
}

static int pubkey_cmp(const void *pa, const void *pb)
{
	const struct rs_fleet_pubkey *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	return c ? c : memcmp(a->key, b->key, sizeof(a->key));
}

/* One line's NAME, KEY and addresses into @out; its problem into @why. */
static int line_parse(char *p, struct rs_fleet_pubkeys *out, const int *lines,
		      int lineno, const char *where, char *why, size_t len)
{
	struct rs_fleet_pubkey *k = &out->k[out->n];
	char *save = NULL, *name = strtok_r(p, " \t", &save),
	     *key = strtok_r(NULL, " \t", &save), *addr;
	int err = 0;

	if (!key) {
		snprintf(why, len,
			 "%s: expected NAME KEY [ADDRESS...] (the key: the "
			 "middle line of openssl pkey -pubout)",
			 where);
		return -EINVAL;
	}
	if (!rs_name_ok(name) || strlen(name) >= sizeof(k->name)) {
		snprintf(why, len,
			 "%s: member name is not 1-63 letters, digits, '.', "
			 "'_' or '-' (not beginning with '-')",
			 where);
		return -EINVAL;
	}
	if (pubkey_parse(key, k->key)) {
		snprintf(why, len,
			 "%s: not an Ed25519 public key in base64 (openssl "
			 "pkey -in KEY -pubout | sed -n 2p)",
			 where);
		return -EINVAL;
	}
	snprintf(k->name, sizeof(k->name), "%s", name);
	/* One key, one host: else the key's holder speaks for both. */
	for (size_t i = 0; i < out->n; i++)
		if (!memcmp(out->k[i].key, k->key, sizeof(k->key)) &&
		    strcmp(out->k[i].name, name)) {
			snprintf(why, len,
				 "%s: this key is %s's already (line %d): "
				 "one key, one host",
				 where, out->k[i].name, lines[i]);
			return -EINVAL;
		}
	while (!err && (addr = strtok_r(NULL, " \t", &save)))
		err = rs_fleet_bound_add(out, name, addr, lineno, where, why,
					 len);
	return err;
}

/* The lines of @text into @out; 0 or a negative errno with @why. */
static int pubkeys_parse(const char *path, char *text, size_t size,
			 struct rs_fleet_pubkeys *out, int *lines, char *why,
			 size_t len)
{
	char where[PATH_MAX + 16], *p, *next;
	int lineno = 0, err = 0;

	for (p = text; !err && p < text + size; p = next) {
		next = strchr(p, '\n');
		next = next ? next + 1 : text + size;
		lineno++;
		p[strcspn(p, "#\r\n")] = '\0';
		if (!p[strspn(p, " \t")])
			continue;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		if (out->n == RS_FLEET_ID_KEYS_MAX) {
			snprintf(why, len, "%s: more than %d keys", where,
				 RS_FLEET_ID_KEYS_MAX);
			return -E2BIG;
		}
		err = line_parse(p, out, lines, lineno, where, why, len);
		if (!err)
			lines[out->n++] = lineno;
	}
	if (!err && !out->n) {
		snprintf(why, len, "%s: no member key in it", path);
		err = -EINVAL;
	}
	return err;
}

int rs_fleet_pubkeys_read(const char *path, struct rs_fleet_pubkeys *out,
			  char *why, size_t len)
{
	int *lines = NULL, err;
	char *text;
	size_t size;

	memset(out, 0, sizeof(*out));
	err = rs_trusted_file_read(path, PUBKEYS_FILE_MAX, &text, &size, why,
				   len);
	if (err)
		return err;
	if (memchr(text, '\0', size)) {
		snprintf(why, len, "%s: a NUL byte: not a key list", path);
		err = -EINVAL;
	}
	out->k = calloc(RS_FLEET_ID_KEYS_MAX, sizeof(*out->k));
	out->a = calloc(RS_FLEET_ID_ADDRS_MAX, sizeof(*out->a));
	lines = calloc(RS_FLEET_ID_KEYS_MAX, sizeof(*lines));
	if (!err && (!out->k || !out->a || !lines)) {
		snprintf(why, len, "%s: out of memory", path);
		err = -ENOMEM;
	}
	if (!err)
		err = pubkeys_parse(path, text, size, out, lines, why, len);
	free(text);
	free(lines);
	if (err)
		rs_fleet_pubkeys_free(out);
	else
		qsort(out->k, out->n, sizeof(*out->k), pubkey_cmp);
	return err;
}

void rs_fleet_pubkeys_free(struct rs_fleet_pubkeys *p)
{
	free(p->k);
	free(p->a);
	memset(p, 0, sizeof(*p));
}

int rs_fleet_pubkeys_copy(struct rs_fleet_pubkeys *dst,
			  const struct rs_fleet_pubkeys *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src->n)
		return 0;
	dst->k = malloc(src->n * sizeof(*dst->k));
	dst->a = src->n_addr ? malloc(src->n_addr * sizeof(*dst->a)) : NULL;
	if (!dst->k || (src->n_addr && !dst->a)) {
		rs_fleet_pubkeys_free(dst);
		return -ENOMEM;
	}
	memcpy(dst->k, src->k, src->n * sizeof(*dst->k));
	dst->n = src->n;
	if (src->n_addr)
		memcpy(dst->a, src->a, src->n_addr * sizeof(*dst->a));
	dst->n_addr = src->n_addr;
	return 0;
}

bool rs_fleet_pubkeys_has(const struct rs_fleet_pubkeys *p, const char *name,
			  const uint8_t key[RS_FLEET_ID_KEY_LEN])
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->k[i].name, name) &&
		    !memcmp(p->k[i].key, key, RS_FLEET_ID_KEY_LEN))
			return true;
	return false;
}

/* The signed message: context, etcd key, newline, record. malloc'd. */
static unsigned char *message(const char *keyname, const char *canon, size_t *n)
{
	size_t lc = strlen(SIG_CONTEXT), lk = strlen(keyname),
	       lr = strlen(canon);
	unsigned char *buf = malloc(lc + lk + 1 + lr);

	if (!buf)
		return NULL;
	memcpy(buf, SIG_CONTEXT, lc);
	memcpy(buf + lc, keyname, lk);
	buf[lc + lk] = '\n';
	memcpy(buf + lc + lk + 1, canon, lr);
	*n = lc + lk + 1 + lr;
	return buf;
}

int rs_fleet_record_sign(const uint8_t priv[RS_FLEET_ID_KEY_LEN],
			 const char *keyname, const char *canon,
			 char out[RS_FLEET_ID_SIG_HEX])
{
	EVP_PKEY *pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL,
						    priv, RS_FLEET_ID_KEY_LEN);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char sig[64];
	size_t n = 0, siglen = sizeof(sig);
	unsigned char *msg = message(keyname, canon, &n);
	int err = -ENOMEM;

	if (pk && ctx && msg &&
	    EVP_DigestSignInit(ctx, NULL, NULL, NULL, pk) == 1 &&
	    EVP_DigestSign(ctx, sig, &siglen, msg, n) == 1 &&
	    siglen == sizeof(sig)) {
		rs_hex_bytes(out, RS_FLEET_ID_SIG_HEX, sig, sizeof(sig), "");
		err = 0;
	}
	ERR_clear_error();
	free(msg);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pk);
	return err;
}

/* Whether @key signed @msg (@n bytes) as @sig. */
static bool verifies(const uint8_t key[RS_FLEET_ID_KEY_LEN],
		     const unsigned char *msg, size_t n,
		     const unsigned char sig[64])
{
	EVP_PKEY *pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, key,
						   RS_FLEET_ID_KEY_LEN);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = pk && ctx &&
		  EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pk) == 1 &&
		  EVP_DigestVerify(ctx, sig, 64, msg, n) == 1;

	ERR_clear_error();
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pk);
	return ok;
}

int rs_fleet_record_check(const struct rs_fleet_pubkeys *p, const char *name,
			  const char *keyname, const char *canon,
			  const char *sig)
{
	unsigned char raw[64], *msg = NULL;
	size_t got = 0, n = 0;
	bool known = false, ok = false;

	if (strlen(sig) != RS_FLEET_ID_SIG_HEX - 1 ||
	    strspn(sig, "0123456789abcdefABCDEF") != RS_FLEET_ID_SIG_HEX - 1 ||
	    rs_hex_parse(sig, raw, sizeof(raw), &got) || got != sizeof(raw))
		return -EINVAL;
	for (size_t i = 0; i < p->n && !ok; i++) {
		if (strcmp(p->k[i].name, name))
			continue;
		known = true;
		if (!msg && !(msg = message(keyname, canon, &n)))
			return -ENOMEM;
		ok = verifies(p->k[i].key, msg, n, raw);
	}
	free(msg);
	return ok ? 0 : known ? -EBADMSG : -ENOKEY;
}

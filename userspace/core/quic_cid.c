// SPDX-License-Identifier: MIT
/*
 * QUIC-LB plaintext connection IDs: what a backend's QUIC stack must issue
 * so that bpf/steer_tc.bpf.c steers its connections, and the reverse, for
 * tests and for explaining why a CID was not steered.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "quic_cid.h"
#include "quic_lb.h"

/* Same rules as the config parser and cookie_config() in steer_tc. */
static int check_service(const struct rs_service *svc)
{
	if (!svc || svc->cookie != RS_COOKIE_QUIC)
		return -EINVAL;
	if (svc->quic_server_id_len < 1 ||
	    svc->quic_server_id_len > RS_QUIC_MAX_SERVER_ID)
		return -EINVAL;
	if (svc->quic_cid_len <= svc->quic_server_id_len ||
	    svc->quic_cid_len > QUIC_CID_MAX_LEN)
		return -EINVAL;
	if (svc->quic_config_id >= QUIC_CID_CONFIG_UNROUTABLE)
		return -EINVAL;
	return 0;
}

int quic_cid_nonce_len(const struct rs_service *svc)
{
	int err = check_service(svc);

	if (err)
		return err;
	return svc->quic_cid_len - svc->quic_server_id_len;
}

/* The mode of config @config of @svc under @keys (NULL: plaintext only). */
static int config_mode(const struct rs_service *svc,
		       const struct quic_cid_keys *keys, uint8_t config)
{
	uint8_t mode = keys && config < RS_QUIC_LB_CONFIGS ? keys->mode[config]
							   : RS_QUIC_LB_NONE;

	if (mode == RS_QUIC_LB_NONE && config == svc->quic_config_id)
		return RS_QUIC_LB_PLAINTEXT;
	return mode;
}

int quic_cid_encode(const struct rs_service *svc, const uint8_t *server_id,
		    const uint8_t *nonce, uint8_t *cid_out)
{
	return quic_cid_encode_keyed(svc, NULL, svc ? svc->quic_config_id : 0,
				     server_id, nonce, cid_out);
}

int quic_cid_encode_keyed(const struct rs_service *svc,
			  const struct quic_cid_keys *keys, uint8_t config_id,
			  const uint8_t *server_id, const uint8_t *nonce,
			  uint8_t *cid_out)
{
	uint8_t rnd[QUIC_CID_MAX_LEN];
	size_t sid_len, need;
	int err = check_service(svc), mode;

	if (err)
		return err;
	if (!server_id || !cid_out)
		return -EINVAL;
	mode = config_mode(svc, keys, config_id);
	if (mode == RS_QUIC_LB_NONE)
		return -EINVAL;
	sid_len = svc->quic_server_id_len;
	need = svc->quic_cid_len - sid_len;
	if (!nonce) {
		/* At most 20 bytes: getrandom does not return short here. */
		ssize_t got = getrandom(rnd, need, 0);

		if (got < 0)
			return -errno;
		if ((size_t)got != need)
			return -EIO;
		nonce = rnd;
	}
	cid_out[0] = (uint8_t)(config_id << QUIC_CID_CONFIG_SHIFT) |
		     (nonce[0] & QUIC_CID_LOW_BITS);
	memcpy(cid_out + 1, server_id, sid_len);
	memcpy(cid_out + 1 + sid_len, nonce + 1, need - 1);
	if (mode == RS_QUIC_LB_ENCRYPTED) {
		err = quic_lb_cid_crypt(
			keys->key[config_id], cid_out,
			keys->plen ? 1u + keys->plen : svc->quic_cid_len, 0);
		if (err)
			return err;
	}
	return svc->quic_cid_len;
}

int quic_cid_decode(const struct rs_service *svc, const uint8_t *cid,
		    size_t len, struct quic_cid_info *out)
{
	return quic_cid_decode_keyed(svc, NULL, cid, len, out);
}

int quic_cid_decode_keyed(const struct rs_service *svc,
			  const struct quic_cid_keys *keys, const uint8_t *cid,
			  size_t len, struct quic_cid_info *out)
{
	uint8_t plain[QUIC_CID_MAX_LEN];
	size_t sid_len, n;
	int err = check_service(svc), mode = RS_QUIC_LB_NONE;

	if (err)
		return err;
	if (!out || (!cid && len) || len > QUIC_CID_MAX_LEN)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	sid_len = svc->quic_server_id_len;
	if (len == svc->quic_cid_len) {
		mode = config_mode(svc, keys, cid[0] >> QUIC_CID_CONFIG_SHIFT);
		if (mode == RS_QUIC_LB_ENCRYPTED) {
			memcpy(plain, cid, len);
			err = quic_lb_cid_crypt(
				keys->key[cid[0] >> QUIC_CID_CONFIG_SHIFT],
				plain, keys->plen ? 1u + keys->plen : len, 1);
			if (err)
				return err;
			cid = plain;
			out->encrypted = true;
		}
	}
	if (len >= 1) {
		out->config_id = cid[0] >> QUIC_CID_CONFIG_SHIFT;
		out->low_bits = cid[0] & QUIC_CID_LOW_BITS;
	}
	if (len > 1) {
		n = len - 1 < sid_len ? len - 1 : sid_len;
		memcpy(out->server_id, cid + 1, n);
		out->server_id_len = n;
	}
	if (len > 1 + sid_len) {
		out->nonce_len = len - 1 - sid_len;
		memcpy(out->nonce, cid + 1 + sid_len, out->nonce_len);
	}

	/*
	 * The order of the TC program: a long header's DCID length is
	 * checked before its content; a short header has no length of its
	 * own, so there the CID is always read as quic_cid_len bytes.
	 */
	if (len != svc->quic_cid_len)
		out->reason = QUIC_CID_WRONG_LENGTH;
	else if (out->config_id == QUIC_CID_CONFIG_UNROUTABLE)
		out->reason = QUIC_CID_UNROUTABLE;
	else if (mode == RS_QUIC_LB_NONE)
		out->reason = QUIC_CID_WRONG_CONFIG;
	else
		out->reason = QUIC_CID_ROUTABLE;
	return 0;
}

const char *quic_cid_reason_str(enum quic_cid_reason reason)
{
	switch (reason) {
	case QUIC_CID_ROUTABLE:
		return "routable";
	case QUIC_CID_WRONG_LENGTH:
		return "wrong length";
	case QUIC_CID_WRONG_CONFIG:
		return "wrong config id";
	case QUIC_CID_UNROUTABLE:
		return "unroutable (config 7)";
	}
	return "?";
}

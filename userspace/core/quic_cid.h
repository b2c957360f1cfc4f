/* SPDX-License-Identifier: MIT */
/*
 * QUIC connection IDs in the QUIC-LB draft's unencrypted ("plaintext")
 * layout, as bpf/steer_tc.bpf.c reads them:
 *
 *   octet 0          octets 1 .. sid_len    octets sid_len+1 .. cid_len-1
 *   +-----+-------+  +--------------------+ +---------------------------+
 *   | cfg | rand5 |  | server ID (big end) | | nonce                     |
 *   +-----+-------+  +--------------------+ +---------------------------+
 *    3 bits 5 bits
 *
 * cfg is the service's quic_config_id (0..6; 7 marks a CID its server made
 * unroutable on purpose). The low 5 bits are random: the draft allows
 * them to self-encode the CID length for hardware offloads, but a load
 * balancer that knows the length does not need that, and random bits keep
 * successive CIDs of a connection unlinkable. docs/quic.md has examples.
 */
#ifndef RS_QUIC_CID_H
#define RS_QUIC_CID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>

#define QUIC_CID_MAX_LEN	   20 /* RFC 9000: v1 CIDs are 0..20 bytes */
#define QUIC_CID_CONFIG_SHIFT	   5
#define QUIC_CID_CONFIG_UNROUTABLE 7
#define QUIC_CID_LOW_BITS	   0x1f

/* Why a CID would or would not be steered by the TC program. */
enum quic_cid_reason {
	/*
	 * Carries the service's config and a server ID: steered if the ID
	 * belongs to a backend of the service that is UP or DRAIN and has a
	 * socket (cookie_hits), else counted as cookie_unknown or cookie_down.
	 */
	QUIC_CID_ROUTABLE = 0,
	/* Not quic_cid_len bytes (another config, or client-chosen). */
	QUIC_CID_WRONG_LENGTH,
	/* Config rotation bits of another configuration. */
	QUIC_CID_WRONG_CONFIG,
	/* Config bits 0b111: the server chose not to encode a server ID. */
	QUIC_CID_UNROUTABLE,
};

struct quic_cid_info {
	enum quic_cid_reason reason;
	bool encrypted; /* the config has a key: server ID and nonce decrypted
			 */
	uint8_t config_id; /* top 3 bits of octet 0 */
	uint8_t low_bits;  /* low 5 bits of octet 0 (random) */
	/* Filled as far as the CID reaches, whatever the reason. */
	uint8_t server_id_len;
	uint8_t server_id[RS_QUIC_MAX_SERVER_ID];
	uint8_t nonce_len;
	uint8_t nonce[QUIC_CID_MAX_LEN];
};

/*
 * Bytes of random input quic_cid_encode consumes for @svc: one for the low
 * 5 bits of octet 0, then the nonce (quic_cid_len - 1 - quic_server_id_len).
 * Negative errno if @svc has no valid QUIC cookie configuration.
 */
int quic_cid_nonce_len(const struct rs_service *svc);

/*
 * Build a CID of svc->quic_cid_len bytes for the backend whose server ID is
 * @server_id (svc->quic_server_id_len bytes) into @cid_out (room for
 * QUIC_CID_MAX_LEN bytes is always enough). @nonce supplies
 * quic_cid_nonce_len(svc) random bytes: the low 5 bits of its first byte
 * become the low bits of octet 0, the rest the nonce field. @nonce NULL
 * draws them from getrandom(2).
 *
 * Returns the CID length, or -EINVAL (NULL pointer; service not a QUIC
 * cookie service or with lengths or config id out of range), or the
 * negative errno of getrandom.
 */
int quic_cid_encode(const struct rs_service *svc, const uint8_t *server_id,
		    const uint8_t *nonce, uint8_t *cid_out);

/*
 * Split the @len byte CID @cid as @svc's TC program would and say whether
 * it would be steered (out->reason). Returns 0 (also for a CID that would
 * not be steered), or -EINVAL for a NULL pointer, a service without a
 * valid QUIC cookie configuration, or @len above QUIC_CID_MAX_LEN (not a
 * QUIC v1 CID at all).
 */
int quic_cid_decode(const struct rs_service *svc, const uint8_t *cid,
		    size_t len, struct quic_cid_info *out);

/*
 * A service's QUIC-LB configs by config rotation bits, as rs_quic_lb holds
 * them (abi.h): RS_QUIC_LB_NONE where a config id is not decoded (the
 * service's own quic_config_id then still reads as plaintext), and the
 * key of each RS_QUIC_LB_ENCRYPTED one.
 */
struct quic_cid_keys {
	/* Encrypted bytes after octet 0: ID + nonce; 0: the CID's rest. */
	uint8_t plen;
	uint8_t mode[RS_QUIC_LB_CONFIGS];
	uint8_t key[RS_QUIC_LB_CONFIGS][16];
};

/*
 * quic_cid_encode under config @config_id of @keys (NULL: the plaintext
 * svc->quic_config_id): the plaintext CID, then encrypted when that config
 * has a key. -EINVAL also for a config @keys does not decode, or a CID
 * whose server ID and nonce no encrypted mode takes (5..19 bytes).
 */
int quic_cid_encode_keyed(const struct rs_service *svc,
			  const struct quic_cid_keys *keys, uint8_t config_id,
			  const uint8_t *server_id, const uint8_t *nonce,
			  uint8_t *cid_out);

/*
 * quic_cid_decode with @keys (NULL: plaintext only), as steer_tc reads a
 * CID: its config by the first octet's top bits, decrypted where that
 * config has a key (out->encrypted), server ID and nonce from the result.
 */
int quic_cid_decode_keyed(const struct rs_service *svc,
			  const struct quic_cid_keys *keys, const uint8_t *cid,
			  size_t len, struct quic_cid_info *out);

/* "routable", "wrong length", ...; "?" for values outside the enum. */
const char *quic_cid_reason_str(enum quic_cid_reason reason);

#endif /* RS_QUIC_CID_H */

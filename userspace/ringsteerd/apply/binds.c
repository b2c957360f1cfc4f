// SPDX-License-Identifier: MIT
/*
 * The configuration's services and listens as data-plane entries: the
 * rs_services value of a service, the whole rs_binds table, and the
 * QUIC-LB configs in rs_quic_lb.
 */
#include <errno.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>

#include <openssl/crypto.h>

#include "binds.h"
#include "log.h"

void rs_service_quic_lb(const struct rs_service_conf *sc,
			struct quic_cid_keys *out)
{
	memset(out, 0, sizeof(*out));
	if (sc->cookie != RS_COOKIE_QUIC)
		return;
	if (sc->quic_nonce_len)
		out->plen = sc->quic_server_id_len + sc->quic_nonce_len;
	out->mode[sc->quic_config_id] =
		sc->quic_key_set ? RS_QUIC_LB_ENCRYPTED : RS_QUIC_LB_PLAINTEXT;
	if (sc->quic_key_set)
		memcpy(out->key[sc->quic_config_id], sc->quic_key, 16);
	if (!sc->quic_prev_set)
		return;
	out->mode[sc->quic_prev_config_id] = sc->quic_prev_key_set
						     ? RS_QUIC_LB_ENCRYPTED
						     : RS_QUIC_LB_PLAINTEXT;
	if (sc->quic_prev_key_set)
		memcpy(out->key[sc->quic_prev_config_id], sc->quic_prev_key,
		       16);
}

void rs_service_from_conf(const struct rs_config *cfg, size_t idx, uint32_t id,
			  struct rs_service *out)
{
	const struct rs_service_conf *sc = &cfg->services[idx];

	memset(out, 0, sizeof(*out));
	out->seed = sc->seed;
	out->id = id;
	out->enabled = 1;
	out->protocol = sc->protocol;
	out->key_policy = sc->key_policy;
	out->fallback = sc->fallback;
	out->prefix4 = sc->prefix4;
	out->prefix6 = sc->prefix6;
	out->cookie = sc->cookie;
	out->quic_server_id_len = sc->quic_server_id_len;
	out->quic_cid_len = sc->quic_cid_len;
	out->quic_config_id = sc->quic_config_id;
	out->generations = sc->generations && sc->protocol == IPPROTO_UDP;
	out->sticky_ttl = sc->sticky_ttl;
	out->balance_milli = sc->balance_milli;
	snprintf(out->name, sizeof(out->name), "%s", sc->name);
}

size_t binds_collect(const struct rs_config *cfg, const uint32_t *svc_ids,
		     struct rs_bind_key *keys, struct rs_bind *vals)
{
	size_t n = 0;

	for (size_t s = 0; s < cfg->n_services; s++) {
		const struct rs_service_conf *sc = &cfg->services[s];

		for (size_t l = 0; l < sc->n_listens && n < RS_MAX_BINDS; l++) {
			const struct rs_listen *li = &sc->listens[l];

			memset(&keys[n], 0, sizeof(keys[n]));
			memset(&vals[n], 0, sizeof(vals[n]));
			keys[n].prefixlen = 32 + li->prefixlen;
			keys[n].protocol = sc->protocol;
			keys[n].family = li->family;
			keys[n].port = li->port;
			memcpy(keys[n].addr, li->addr, sizeof(li->addr));
			vals[n].service = svc_ids[s];
			vals[n].addr_prefixlen = li->prefixlen;
			n++;
		}
	}
	return n;
}

/* rs_quic_lb from the configuration (binds.h). */
int quic_lb_apply(struct rs_dataplane *dp, const struct rs_state *st)
{
	struct quic_cid_keys *cfgs = calloc(RS_MAX_SERVICES, sizeof(*cfgs));
	size_t changed = 0;
	int err;

	if (!cfgs)
		return -ENOMEM;
	for (size_t s = 0; s < st->cfg.n_services; s++)
		rs_service_quic_lb(&st->cfg.services[s], &cfgs[st->svcs[s].id]);
	err = dp_tc_sync_quic_lb(dp, cfgs, &changed);
	if (!err && changed)
		rs_info("quic-lb: %zu config entries written (AES: %s)",
			changed, dp_tc_cipher(dp, NULL));
	OPENSSL_cleanse(cfgs, RS_MAX_SERVICES * sizeof(*cfgs));
	free(cfgs);
	return err;
}

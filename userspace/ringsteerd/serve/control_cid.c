// SPDX-License-Identifier: MIT
/*
 * QUIC connection IDs for operators: `cid` mints IDs a backend would issue,
 * to test a client or a server's configuration against, and `cid decode`
 * says what steer_tc does with one, down to the counter it lands in, so a
 * connection that does not stick can be explained from its CID alone.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "binds.h"
#include "control_cmds_internal.h"
#include "fleet.h"
#include "quic_cid.h"

#include <openssl/crypto.h>

static size_t tc_attached_count(const struct daemon *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->tc.n; i++)
		n += d->tc.ifs[i].ifindex != 0;
	return n;
}

/* The cookie service @name, or an error reply in *@err. */
static int cookie_service(struct daemon *d, const char *name,
			  struct rs_service *svc, json_t **err)
{
	int s = daemon_find_service(d, name);

	if (s < 0) {
		*err = err_reply("no service '%s'", name);
		return -1;
	}
	if (d->st.cfg.services[s].cookie != RS_COOKIE_QUIC) {
		*err = err_reply("service %s has cookie = none: its datagrams "
				 "follow IP affinity and carry no server IDs",
				 name);
		return -1;
	}
	rs_service_from_conf(&d->st.cfg, (size_t)s, d->st.svcs[s].id, svc);
	return s;
}

static json_t *cid_new(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *backend = req_str(req, "backend");
	json_t *jcount = json_object_get(req, "count"), *cids, *err = NULL;
	json_t *jconfig = json_object_get(req, "config");
	const struct rs_backend_conf *bc;
	struct quic_cid_keys keys;
	struct rs_service svc;
	bool encrypted;
	long config;
	uint8_t cid[QUIC_CID_MAX_LEN];
	char hex[2 * QUIC_CID_MAX_LEN + 1];
	long count = 1;
	int s, b, n = 0;

	if (!service || !backend)
		return err_reply("cid needs \"service\" and \"backend\"");
	if (json_is_integer(jcount))
		count = (long)json_integer_value(jcount);
	if (count < 1 || count > 1000)
		return err_reply("count must be 1..1000");
	s = cookie_service(d, service, &svc, &err);
	if (s < 0)
		return err;
	b = daemon_find_backend(d, backend);
	if (b < 0 || d->st.cfg.backends[b].service != (size_t)s)
		return err_reply("no backend '%s' in service %s", backend,
				 service);
	bc = &d->st.cfg.backends[b];
	config = svc.quic_config_id;
	if (json_is_integer(jconfig))
		config = (long)json_integer_value(jconfig);
	rs_service_quic_lb(&d->st.cfg.services[s], &keys);
	if (config < 0 || config >= QUIC_CID_CONFIG_UNROUTABLE ||
	    keys.mode[config] == RS_QUIC_LB_NONE) {
		OPENSSL_cleanse(&keys, sizeof(keys));
		return err_reply("service %s decodes no config id %ld (it has "
				 "quic_config_id %u%s)",
				 service, config, svc.quic_config_id,
				 d->st.cfg.services[s].quic_prev_set
					 ? " and quic_previous_config_id"
					 : "");
	}
	cids = json_array();
	for (long i = 0; i < count; i++) {
		n = quic_cid_encode_keyed(&svc, &keys, (uint8_t)config,
					  bc->server_id, NULL, cid);
		if (n < 0) {
			OPENSSL_cleanse(&keys, sizeof(keys));
			json_decref(cids);
			return err_reply("cannot make a connection ID: %s",
					 strerror(-n));
		}
		rs_hex_bytes(hex, sizeof(hex), cid, (size_t)n, "");
		json_array_append_new(cids, json_string(hex));
	}
	encrypted = keys.mode[config] == RS_QUIC_LB_ENCRYPTED;
	OPENSSL_cleanse(&keys, sizeof(keys));
	return json_pack("{s:b, s:s, s:s, s:o, s:O, s:i, s:i, s:i, s:o, s:b}",
			 "ok", 1, "service", service, "backend", backend,
			 "server_id", server_id_json(d, (size_t)b), "cid",
			 json_array_get(cids, 0), "length", n, "config_id",
			 (int)config, "server_id_len", svc.quic_server_id_len,
			 "cids", cids, "encrypted", encrypted);
}

/*
 * What steer_tc would do with a datagram of @family carrying a CID that
 * names backend @id (bpf/steer_tc.bpf.c, after the rs_cookies lookup).
 */
static json_t *cid_family_verdict(struct daemon *d, uint32_t svc_id,
				  uint32_t id, const char *name, int is_ipv6)
{
	struct rs_backend word;
	uint64_t cookie;
	char why[160];

	if (dp_get_backend(&d->dp, id, &word) || word.service != svc_id) {
		snprintf(why, sizeof(why),
			 "rs_cookies names backend id %u, not of this service",
			 id);
		return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter",
				 "cookie_unknown", "why", why);
	}
	if (word.state != RS_BACKEND_UP && word.state != RS_BACKEND_DRAIN) {
		snprintf(why, sizeof(why), "%s is DOWN: left to IP affinity",
			 name);
		return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter",
				 "cookie_down", "why", why);
	}
	if (dp_socket_cookie(&d->dp, rs_socket_slot(id, is_ipv6), &cookie)) {
		snprintf(why, sizeof(why),
			 "%s has no %s socket: left to IP affinity", name,
			 is_ipv6 ? "IPv6" : "IPv4");
		return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter",
				 "cookie_down", "why", why);
	}
	snprintf(why, sizeof(why), "steered to %s (%s)", name,
		 rs_backend_state_name(word.state));
	return json_pack("{s:b, s:s, s:s, s:s}", "steered", 1, "counter",
			 "cookie_hits", "backend", name, "why", why);
}

static json_t *cid_not_steered(const char *counter, const char *why)
{
	return json_pack("{s:b, s:s, s:s}", "steered", 0, "counter", counter,
			 "why", why);
}

/*
 * In fleet mode: which member's backend issued the CID's server ID, and
 * what steer_tc at a host it enters does with it (fleet_quic.bpf.h).
 */
static void fleet_cid_verdict(struct daemon *d, size_t s,
			      const struct quic_cid_info *info,
			      const char **owner, const char **why)
{
	bool conflict;

	*owner = fleet_cid_owner(d, s, info->server_id,
				 (uint8_t)info->server_id_len, &conflict);
	if (conflict)
		*why = "two members publish this server ID: it goes by the "
		       "fleet table";
	else if (!*owner)
		*why = "no member publishes this server ID: it goes by the "
		       "fleet table";
	else if (!strcmp(*owner, d->st.cfg.fleet.name))
		*why = "issued by a backend of this host: steered here";
	else
		*why = "issued by another member's backend: forwarded there "
		       "from any host";
}

static json_t *cid_decode(struct daemon *d, json_t *req)
{
	const char *service = req_str(req, "service");
	const char *text = req_str(req, "cid");
	json_t *err = NULL, *reply, *v4 = NULL, *v6 = NULL;
	char hex[2 * QUIC_CID_MAX_LEN + 1], sid[2 * RS_QUIC_MAX_SERVER_ID + 3];
	char nonce[2 * QUIC_CID_MAX_LEN + 1], why[200];
	const char *backend = NULL, *state = NULL, *fleet_owner = NULL,
		   *fleet_why = NULL;
	struct rs_cookie_key key = {0};
	struct quic_cid_info info;
	struct quic_cid_keys keys;
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct rs_service svc;
	struct rs_cookie val;
	size_t len;
	int s, r;

	if (!service || !text)
		return err_reply("cid decode needs \"service\" and \"cid\"");
	r = rs_hex_parse(text, cid, sizeof(cid), &len);
	if (r == -E2BIG)
		return err_reply("'%s' is longer than %d bytes: not a QUIC "
				 "connection ID",
				 text, QUIC_CID_MAX_LEN);
	if (r || len == 0)
		return err_reply("'%s' is not a hex connection ID", text);
	s = cookie_service(d, service, &svc, &err);
	if (s < 0)
		return err;
	rs_service_quic_lb(&d->st.cfg.services[s], &keys);
	r = quic_cid_decode_keyed(&svc, &keys, cid, len, &info);
	OPENSSL_cleanse(&keys, sizeof(keys));
	if (r)
		return err_reply("cannot decode '%s'", text);
	rs_hex_bytes(hex, sizeof(hex), cid, len, "");
	snprintf(sid, sizeof(sid), "0x");
	rs_hex_bytes(sid + 2, sizeof(sid) - 2, info.server_id,
		     info.server_id_len, "");
	rs_hex_bytes(nonce, sizeof(nonce), info.nonce, info.nonce_len, "");

	switch (info.reason) {
	case QUIC_CID_WRONG_LENGTH:
		snprintf(why, sizeof(why),
			 "%zu bytes, not quic_cid_len %u: no connection ID "
			 "this service's backends issue",
			 len, svc.quic_cid_len);
		v4 = cid_not_steered("cookie_unknown", why);
		break;
	case QUIC_CID_UNROUTABLE:
		v4 = cid_not_steered("cookie_none",
				     "config id 7: the server chose not to be "
				     "routable by its CID");
		break;
	case QUIC_CID_WRONG_CONFIG:
		snprintf(why, sizeof(why),
			 "config id %u, the service decodes %u%s: issued under "
			 "another configuration",
			 info.config_id, svc.quic_config_id,
			 d->st.cfg.services[s].quic_prev_set
				 ? " and its previous"
				 : "");
		v4 = cid_not_steered("cookie_unknown", why);
		break;
	case QUIC_CID_ROUTABLE:
		key.service = svc.id;
		key.len = svc.quic_server_id_len;
		memcpy(key.server_id, info.server_id, info.server_id_len);
		if (dp_cookie_lookup(&d->dp, &key, &val)) {
			snprintf(why, sizeof(why),
				 "server ID %s names no backend of %s", sid,
				 service);
			v4 = cid_not_steered("cookie_unknown", why);
			break;
		}
		backend = backend_name_of(d, val.backend);
		for (size_t i = 0; i < d->st.cfg.n_backends; i++)
			if (d->st.bes[i].id == val.backend) {
				struct rs_backend w;

				daemon_backend_word(d, &d->st.bes[i], &w);
				state = rs_backend_state_name(w.state);
			}
		v4 = cid_family_verdict(d, svc.id, val.backend, backend, 0);
		v6 = cid_family_verdict(d, svc.id, val.backend, backend, 1);
		break;
	}
	if (!v6)
		v6 = json_deep_copy(v4);
	if (info.reason == QUIC_CID_ROUTABLE && d->st.cfg.services[s].fleet)
		fleet_cid_verdict(d, (size_t)s, &info, &fleet_owner,
				  &fleet_why);
	reply = json_pack("{s:b, s:s, s:s, s:i, s:i, s:i, s:i, s:s?, s:s, s:s,"
			  " s:s?, s:s?, s:o, s:o, s:i}",
			  "ok", 1, "service", service, "cid", hex, "length",
			  (int)len, "config_id", info.config_id,
			  "config_expected", svc.quic_config_id, "low_bits",
			  info.low_bits, "server_id",
			  info.server_id_len ? sid : NULL, "nonce", nonce,
			  "reason", quic_cid_reason_str(info.reason), "backend",
			  backend, "backend_state", state, "ipv4", v4, "ipv6",
			  v6, "tc_interfaces", (int)tc_attached_count(d));
	if (reply)
		json_object_set_new(reply, "encrypted",
				    json_boolean(info.encrypted));
	if (reply && fleet_why) {
		json_object_set_new(reply, "owner",
				    fleet_owner ? json_string(fleet_owner)
						: json_null());
		json_object_set_new(
			reply, "owner_is_this_host",
			json_boolean(
				fleet_owner &&
				!strcmp(fleet_owner, d->st.cfg.fleet.name)));
		json_object_set_new(reply, "fleet", json_string(fleet_why));
	}
	return reply;
}

json_t *cmd_cid(struct daemon *d, json_t *req)
{
	const char *action = req_str(req, "action");

	if (!action || !strcmp(action, "new"))
		return cid_new(d, req);
	if (!strcmp(action, "decode"))
		return cid_decode(d, req);
	return err_reply("unknown cid action '%s' (new, decode)", action);
}

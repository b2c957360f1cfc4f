// SPDX-License-Identifier: MIT
/* A member record from etcd, checked and parsed: fleet_member.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "addr.h"
#include "fleet_member.h"
#include "fleet_quic.h"
#include "fleet_record.h"
#include "name.h"

void fleet_printable(char *dst, size_t len, const char *src)
{
	size_t k = 0;

	for (; *src && k + 5 <= len; src++) {
		unsigned char c = (unsigned char)*src;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			dst[k++] = (char)c;
		else
			k += (size_t)snprintf(dst + k, len - k, "\\x%02x", c);
	}
	if (len)
		dst[k < len ? k : len - 1] = '\0';
}

/* Whether @family/@addr is one of this host's service addresses. */
static bool is_local_listen(const struct fleet_local *l, int family,
			    const uint8_t *addr)
{
	uint8_t a[16] = {0};

	memcpy(a, addr, family == AF_INET ? 4 : 16);
	for (size_t i = 0; i < l->n; i++)
		if (l->listens[i].family == family && l->listens[i].prefixlen &&
		    rs_addr_in_prefix(family, a, l->listens[i].addr,
				      l->listens[i].prefixlen))
			return true;
	return false;
}

/*
 * With per-host identities, @j must carry "host_sig", a signature by one
 * of member @name's own keys over its etcd key and its JSON without
 * "sig" and "host_sig" (both taken out of @j): a fleet key every member
 * holds vouches for nothing here.
 */
static bool record_signed_by_host(const struct rs_fleet_pubkeys *ids,
				  const char *name, const char *key, json_t *j,
				  char *why, size_t len)
{
	char sig[RS_FLEET_ID_SIG_HEX], *canon;
	const char *v = json_string_value(json_object_get(j, "host_sig"));
	int err;

	if (!v) {
		snprintf(why, len,
			 "not signed by its host (this fleet's members sign "
			 "with identity_key)");
		return false;
	}
	/* Copied whole, never cut to fit (as "sig" below). */
	if (strlen(v) != RS_FLEET_ID_SIG_HEX - 1) {
		snprintf(why, len, "\"host_sig\" is not %d hex digits",
			 RS_FLEET_ID_SIG_HEX - 1);
		return false;
	}
	memcpy(sig, v, sizeof(sig));
	json_object_del(j, "host_sig");
	json_object_del(j, "sig");
	canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	err = canon ? rs_fleet_record_check(ids, name, key, canon, sig)
		    : -ENOMEM;
	free(canon);
	if (err == -ENOKEY)
		snprintf(why, len,
			 "unknown member: no key for %s in member_keys", name);
	else if (err == -EINVAL)
		snprintf(why, len, "\"host_sig\" is not %d hex digits",
			 RS_FLEET_ID_SIG_HEX - 1);
	else if (err)
		snprintf(why, len,
			 "signature is not %s's own (signed with another "
			 "member's key, altered, or copied under another "
			 "name)",
			 name);
	return !err;
}

/*
 * With fleet keys, @j must carry "sig", the MAC of one of them over its
 * etcd key and its JSON without "sig" (which is taken out of @j).
 */
static bool record_verified(const struct fleet_trust *trust, const char *name,
			    const char *key, json_t *j, char *why, size_t len)
{
	const struct rs_fleet_keys *keys = trust->keys;
	char mac[RS_FLEET_MAC_HEX], *canon;
	const char *sig;
	int k;

	if (trust->ids && trust->ids->n)
		return record_signed_by_host(trust->ids, name, key, j, why,
					     len);
	if (!keys->n)
		return true;
	sig = json_string_value(json_object_get(j, "sig"));
	if (!sig) {
		snprintf(why, len,
			 "unsigned (this fleet signs its records: key_file)");
		return false;
	}
	/*
	 * Exactly the MAC: copied whole, not cut to fit, or any bytes after
	 * a valid one would pass (found by
	 * tests/unit/fleet/test_fleet_member_fuzz).
	 */
	if (strlen(sig) != RS_FLEET_MAC_HEX - 1) {
		snprintf(why, len, "\"sig\" is not %d hex digits",
			 RS_FLEET_MAC_HEX - 1);
		return false;
	}
	memcpy(mac, sig, sizeof(mac));
	json_object_del(j, "sig");
	canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	k = canon ? rs_fleet_record_verify(keys, key, canon, mac) : -1;
	free(canon);
	if (k < 0)
		snprintf(why, len,
			 "signature matches no fleet key (signed with another "
			 "key, altered, or copied under another name)");
	return k >= 0;
}

/*
 * The record's value as a JSON object, with a name, a lease, a size and
 * (with fleet keys) a signature that pass; NULL with @why otherwise.
 */
static json_t *record_load(const struct fleet_trust *trust, const char *name,
			   const struct rs_etcd_kv *kv, char *why, size_t len)
{
	const char *problem;
	json_error_t jerr;
	json_t *j;

	if ((problem = rs_fleet_name_problem(name))) {
		snprintf(why, len, "%s", problem);
		return NULL;
	}
	/*
	 * Every member writes its record with its lease, so that it goes
	 * when the member does: a record without one (written over by
	 * hand, or by anyone but a member) is no member's.
	 */
	if (!kv->lease) {
		snprintf(why, len, "no lease (not written by a live member)");
		return NULL;
	}
	if (!kv->value || kv->size > RS_FLEET_RECORD_MAX) {
		if (kv->size == SIZE_MAX)
			snprintf(why, len, "value over the read cap");
		else
			snprintf(why, len,
				 "value of %zu bytes, over the %u-byte limit",
				 kv->size, RS_FLEET_RECORD_MAX);
		return NULL;
	}
	j = json_loads(kv->value, 0, &jerr);
	if (!json_is_object(j)) {
		char text[4 * sizeof(jerr.text)];

		/* jansson quotes the record's bytes where it stopped. */
		fleet_printable(text, sizeof(text), jerr.text);
		snprintf(why, len, "not a JSON object: %.100s",
			 j ? "another JSON value" : text);
		json_decref(j);
		return NULL;
	}
	if (!record_verified(trust, name, kv->key, j, why, len)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* "address": IPv4, usable, not this host's (but its own record's). */
static bool address_parse(const struct rs_fleet_conf *c,
			  const struct fleet_local *local, const char *name,
			  json_t *j, struct rs_fleet_member_info *m, char *why,
			  size_t len)
{
	const char *addr = json_string_value(json_object_get(j, "address"));
	const char *problem;
	struct in_addr a;

	if (!addr || inet_pton(AF_INET, addr, &a) != 1) {
		snprintf(why, len, "no IPv4 \"address\"");
		return false;
	}
	m->addr = a.s_addr;
	if ((problem = rs_fleet_addr4_problem(a.s_addr))) {
		snprintf(why, len, "address %s: %s", addr, problem);
		return false;
	}
	if (is_local_listen(local, AF_INET, (const uint8_t *)&a.s_addr)) {
		snprintf(why, len,
			 "address %s is one of this host's service addresses",
			 addr);
		return false;
	}
	if (a.s_addr == c->addr && strcmp(name, c->name)) {
		snprintf(why, len, "address %s is this host's (%s)", addr,
			 c->name);
		return false;
	}
	return true;
}

/* "address6", optional (null too): IPv6, usable, not a local listen. */
static bool address6_parse(const struct fleet_local *local, json_t *j,
			   struct rs_fleet_member_info *m, char *why,
			   size_t len)
{
	json_t *v = json_object_get(j, "address6");
	const char *addr6 = json_string_value(v), *problem;
	struct in6_addr a6;

	if (!v || json_is_null(v))
		return true;
	if (!addr6 || inet_pton(AF_INET6, addr6, &a6) != 1) {
		snprintf(why, len, "\"address6\" is not an IPv6 address");
		return false;
	}
	if ((problem = rs_fleet_addr6_problem(a6.s6_addr))) {
		snprintf(why, len, "address6 %.60s: %s", addr6, problem);
		return false;
	}
	if (is_local_listen(local, AF_INET6, a6.s6_addr)) {
		snprintf(why, len,
			 "address6 %.60s is one of this host's service "
			 "addresses",
			 addr6);
		return false;
	}
	memcpy(m->addr6, &a6, sizeof(m->addr6));
	m->has_addr6 = true;
	return true;
}

/*
 * With addresses in member_keys, @m's own only, and none another name
 * lists: whether that member is in the table or away.
 */
static bool addresses_bound(const struct fleet_trust *trust, const char *name,
			    const struct rs_fleet_member_info *m, char *why,
			    size_t len)
{
	const struct rs_fleet_pubkeys *ids = trust->ids;

	if (!ids || !ids->n_addr)
		return true;
	return !rs_fleet_addr_check(ids, name, AF_INET, &m->addr, why, len) &&
	       (!m->has_addr6 ||
		!rs_fleet_addr_check(ids, name, AF_INET6, m->addr6, why, len));
}

/* "wire", optional: hosts from before wire version 3 say nothing. */
static bool wire_parse(json_t *j, struct rs_fleet_member_info *m, char *why,
		       size_t len)
{
	json_t *v = json_object_get(j, "wire");

	if (v && (!json_is_integer(v) ||
		  json_integer_value(v) < RS_FLEET_WIRE_VERSION ||
		  json_integer_value(v) > 255)) {
		snprintf(why, len, "\"wire\" is not a wire version (%d..255)",
			 RS_FLEET_WIRE_VERSION);
		return false;
	}
	m->wire = v ? (uint8_t)json_integer_value(v) : RS_FLEET_WIRE_VERSION;
	return true;
}

/* "services": name -> capacity and server IDs, each checked. */
static bool services_parse(json_t *j, struct rs_fleet_member_info *m, char *why,
			   size_t len)
{
	json_t *svcs = json_object_get(j, "services"), *v;
	const char *svc;

	if (svcs && !json_is_object(svcs)) {
		snprintf(why, len, "\"services\" is not an object");
		return false;
	}
	if (json_object_size(svcs) > RS_MAX_SERVICES) {
		snprintf(why, len, "more than %d services", RS_MAX_SERVICES);
		return false;
	}
	json_object_foreach(svcs, svc, v)
	{
		json_t *cap = json_object_get(v, "capacity");

		if (!rs_name_ok(svc)) {
			snprintf(why, len, "service name is not a name");
			return false;
		}
		if (cap &&
		    (!json_is_integer(cap) || json_integer_value(cap) < 0 ||
		     json_integer_value(cap) > RS_FLEET_CAPACITY_MAX)) {
			snprintf(why, len,
				 "capacity of service %s is not 0..%u", svc,
				 RS_FLEET_CAPACITY_MAX);
			return false;
		}
		snprintf(m->caps[m->n_caps].service, RS_NAME_MAX, "%s", svc);
		fleet_quic_parse(v, m->n_caps, m);
		m->caps[m->n_caps++].capacity =
			cap ? (uint32_t)json_integer_value(cap) : 0;
	}
	return true;
}

/* One PREFIX/members/NAME record into @m: fleet_member.h. */
bool fleet_member_parse(const struct rs_fleet_conf *c,
			const struct fleet_local *local,
			const struct fleet_trust *trust, const char *name,
			const struct rs_etcd_kv *kv,
			struct rs_fleet_member_info *m, char *why, size_t len)
{
	json_t *j;
	bool ok;

	memset(m, 0, sizeof(*m));
	j = record_load(trust, name, kv, why, len);
	if (!j)
		return false;
	snprintf(m->name, sizeof(m->name), "%s", name);
	ok = address_parse(c, local, name, j, m, why, len) &&
	     address6_parse(local, j, m, why, len) &&
	     addresses_bound(trust, name, m, why, len) &&
	     wire_parse(j, m, why, len) && services_parse(j, m, why, len);
	json_decref(j);
	return ok;
}

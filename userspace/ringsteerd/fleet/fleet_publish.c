// SPDX-License-Identifier: MIT
/*
 * What this host publishes (docs/fleet.md): its record, with the capacity
 * of each fleet service (the weights of its UP backends with a socket),
 * their QUIC server IDs and its signatures (identity key, fleet key).
 * Built on the event loop every half second; handed to the etcd thread
 * through fleet_shared.publish when it changed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_record.h"
#include "fleet_rt.h"
#include "log.h"

/* The sum of the weights of the service's UP backends with a socket. */
static uint32_t capacity_of(struct daemon *d, size_t s)
{
	uint32_t cap = 0;

	for (size_t b = 0; b < d->st.cfg.n_backends; b++) {
		struct rs_backend w;

		if (d->st.cfg.backends[b].service != s ||
		    !d->st.bes[b].has_socket)
			continue;
		daemon_backend_word(d, &d->st.bes[b], &w);
		if (w.state == RS_BACKEND_UP)
			cap += d->st.bes[b].weight;
	}
	return cap;
}

/* This host's record's etcd key. */
static void own_key(const struct fleet_rt *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s/members/%s", f->conf.prefix, f->conf.name);
}

/*
 * @j gets, under mu, "host_sig" with this host's identity key (over the
 * record without any signature), then "sig" with the first fleet key
 * (over the record with host_sig): hosts that check identities take the
 * first, hosts that know only the fleet key the second, so a PoP moves
 * to identities one host at a time (docs/fleet.md).
 */
static int sign_locked(struct fleet_rt *f, const char *key, json_t *j)
{
	char mac[RS_FLEET_MAC_HEX], sig[RS_FLEET_ID_SIG_HEX];
	char *canon = NULL;
	int err = 0;

	if (f->sh.ident.on) {
		canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		err = canon ? rs_fleet_record_sign(f->sh.ident.priv, key, canon,
						   sig)
			    : -ENOMEM;
		if (!err &&
		    json_object_set_new(j, "host_sig", json_string(sig)))
			err = -ENOMEM;
		free(canon);
		canon = NULL;
	}
	if (!err && f->sh.keys.n) {
		canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		err = canon ? rs_fleet_record_mac(f->sh.keys.key[0], key, canon,
						  mac)
			    : -ENOMEM;
		if (!err && json_object_set_new(j, "sig", json_string(mac)))
			err = -ENOMEM;
	}
	free(canon);
	return err;
}

/* This host's record @j signed (docs/fleet.md, "Signed member records"). */
static int record_sign(struct fleet_rt *f, json_t *j)
{
	char key[FLEET_KEY_MAX];
	int err;

	own_key(f, key, sizeof(key));
	pthread_mutex_lock(&f->mu);
	err = sign_locked(f, key, j);
	pthread_mutex_unlock(&f->mu);
	if (err)
		rs_err("fleet: cannot sign this host's record: %s",
		       strerror(-err));
	return err;
}

/* The record's "services": capacity and server IDs per fleet service. */
static json_t *services_json(struct daemon *d)
{
	json_t *svcs = json_object();

	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		json_t *v, *ids;

		if (!d->st.cfg.services[s].fleet)
			continue;
		v = json_pack("{s:i}", "capacity",
			      (json_int_t)capacity_of(d, s));
		ids = fleet_quic_published(d, s);
		if (v && ids)
			json_object_set_new(v, "server_ids", ids);
		else
			json_decref(ids);
		json_object_set_new(svcs, d->st.cfg.services[s].name, v);
	}
	return svcs;
}

/* This host's record, signed, as canonical JSON; NULL: none. */
static char *record_text(struct daemon *d, struct fleet_rt *f)
{
	char addr[INET_ADDRSTRLEN], addr6[INET6_ADDRSTRLEN];
	char *text;
	json_t *j;

	inet_ntop(AF_INET, &f->conf.addr, addr, sizeof(addr));
	inet_ntop(AF_INET6, f->conf.addr6, addr6, sizeof(addr6));
	j = json_pack("{s:s, s:o, s:i}", "address", addr, "services",
		      services_json(d), "wire", RS_FLEET_WIRE_MAX);
	if (j && f->conf.has_addr6)
		json_object_set_new(j, "address6", json_string(addr6));
	if (j && record_sign(f, j)) {
		json_decref(j);
		return NULL;
	}
	text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	return text;
}

void fleet_publish_capacity(struct daemon *d, struct fleet_rt *f)
{
	char *text;

	/*
	 * Nothing until this run has installed a table read from etcd. A
	 * host (re)joining then first installs the fleet as the others run
	 * it, without itself, and that table becomes the previous one when
	 * it takes keys: the second chance then finds the connections the
	 * others made for those keys. Published at once, the first table
	 * would already name this host, and its previous one would be
	 * whatever was pinned from an earlier run (a stale table whose
	 * "previous owner" is often this very host: the packet is reset).
	 */
	if (!f->installed)
		return;
	text = record_text(d, f);
	if (!text)
		return;
	if (f->published_local && !strcmp(text, f->published_local)) {
		free(text);
		return;
	}
	rs_info("fleet: publishing %s", text);
	free(f->published_local);
	f->published_local = text;
	pthread_mutex_lock(&f->mu);
	free(f->sh.publish);
	f->sh.publish = strdup(text);
	f->sh.publish_gen++;
	pthread_mutex_unlock(&f->mu);
}

void fleet_on_cap_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct fleet_rt *f = w->data;

	(void)loop;
	(void)revents;
	fleet_publish_capacity(f->d, f);
}

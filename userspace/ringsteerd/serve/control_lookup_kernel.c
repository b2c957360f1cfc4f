// SPDX-License-Identifier: MIT
/*
 * `ringsteer lookup --kernel`: the loaded steer_lookup asked about the
 * same client (dp_lookup_run(), dataplane_run.c), its answer set beside
 * the replica's, and whether the two agree. A client of a cookie service
 * is asked by address only: steer_tc's cookie step, before it, is not
 * run.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/bpf.h>

#include "control_cmds_internal.h"

/* The service's first listen of @family: where the probe goes to. */
static int local_of(const struct rs_service_conf *sc, int family,
		    struct dp_lookup_probe *p)
{
	for (size_t i = 0; i < sc->n_listens; i++) {
		const struct rs_listen *l = &sc->listens[i];

		if (l->family != family)
			continue;
		memcpy(p->local, l->addr, sizeof(p->local));
		/* Every port: any one of them. */
		p->local_port = l->port ? l->port : 1;
		return 0;
	}
	return -ENOENT;
}

/* The backend of service @s whose socket has @cookie, or NULL. */
static const char *backend_of_socket(const struct daemon *d, size_t s,
				     uint64_t cookie)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];

		if (bc->service != s)
			continue;
		for (size_t a = 0; a < bc->n_addrs; a++)
			if (d->st.bes[i].sock.addr[a].has_socket &&
			    d->st.bes[i].sock.addr[a].cookie == cookie)
				return bc->name;
	}
	return NULL;
}

void lookup_kernel(struct daemon *d, size_t s, int family,
		   const uint8_t *client, uint16_t port, json_t *reply)
{
	const struct rs_service_conf *sc = &d->st.cfg.services[s];
	struct dp_lookup_probe p = {
		.family = (uint8_t)family,
		.protocol = sc->protocol,
		.client_port = port,
	};
	const char *name = NULL;
	json_t *k, *replica = json_object_get(reply, "backend");
	uint64_t cookie = 0;
	int verdict = -1, err;

	memcpy(p.client, client, sizeof(p.client));
	err = local_of(sc, family, &p);
	if (err) {
		json_object_set_new(
			reply, "kernel",
			json_pack("{s:s}", "error",
				  "the service listens on no address of "
				  "the client's family"));
		return;
	}
	err = dp_lookup_run(&d->dp, &p, &verdict, &cookie);
	if (err) {
		json_object_set_new(
			reply, "kernel",
			json_pack("{s:s}", "error", strerror(-err)));
		return;
	}
	if (cookie)
		name = backend_of_socket(d, s, cookie);
	k = json_pack("{s:s, s:o, s:I}", "verdict",
		      verdict == SK_DROP ? "drop" : "pass", "backend",
		      name ? json_string(name) : json_null(), "socket_cookie",
		      (json_int_t)cookie);
	json_object_set_new(
		k, "agrees",
		json_boolean(name ? json_is_string(replica) &&
					     !strcmp(name,
						     json_string_value(replica))
				  : !cookie && json_is_null(replica)));
	json_object_set_new(reply, "kernel", k);
}

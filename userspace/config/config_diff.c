// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "config_diff.h"

static int find_backend(const struct rs_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_backends; i++)
		if (!strcmp(cfg->backends[i].name, name))
			return (int)i;
	return -1;
}

bool rs_backend_addrs_equal(const struct rs_backend_conf *a,
			    const struct rs_backend_conf *b)
{
	if (a->n_addrs != b->n_addrs)
		return false;
	for (size_t i = 0; i < a->n_addrs; i++)
		if (a->addrs[i].family != b->addrs[i].family ||
		    a->addrs[i].port != b->addrs[i].port ||
		    memcmp(a->addrs[i].addr, b->addrs[i].addr, 16))
			return false;
	return true;
}

static bool same_health(const struct rs_health_conf *a,
			const struct rs_health_conf *b)
{
	return a->type == b->type && !strcmp(a->path, b->path) &&
	       !strcmp(a->host, b->host) && a->expect_min == b->expect_min &&
	       a->expect_max == b->expect_max &&
	       a->interval_ms == b->interval_ms &&
	       a->timeout_ms == b->timeout_ms && a->rise == b->rise &&
	       a->fall == b->fall && a->slow_start_ms == b->slow_start_ms &&
	       a->port == b->port;
}

/* Line numbers aside. */
static bool same_listens(const struct rs_service_conf *a,
			 const struct rs_service_conf *b)
{
	if (a->n_listens != b->n_listens)
		return false;
	for (size_t i = 0; i < a->n_listens; i++) {
		const struct rs_listen *x = &a->listens[i], *y = &b->listens[i];

		if (x->family != y->family || x->prefixlen != y->prefixlen ||
		    x->port != y->port || memcmp(x->addr, y->addr, 16))
			return false;
	}
	return true;
}

/* Service fields other than membership that the data plane reads. */
static bool service_changed(const struct rs_service_conf *a,
			    const struct rs_service_conf *b)
{
	return a->protocol != b->protocol || !same_listens(a, b) ||
	       a->key_policy != b->key_policy || a->prefix4 != b->prefix4 ||
	       a->prefix6 != b->prefix6 || a->fallback != b->fallback ||
	       a->sticky_ttl != b->sticky_ttl ||
	       a->sticky_max != b->sticky_max || a->cookie != b->cookie ||
	       a->quic_server_id_len != b->quic_server_id_len ||
	       a->quic_cid_len != b->quic_cid_len ||
	       a->quic_config_id != b->quic_config_id ||
	       a->quic_nonce_len != b->quic_nonce_len ||
	       a->quic_key_set != b->quic_key_set ||
	       memcmp(a->quic_key, b->quic_key, sizeof(a->quic_key)) ||
	       a->quic_prev_set != b->quic_prev_set ||
	       a->quic_prev_config_id != b->quic_prev_config_id ||
	       a->quic_prev_key_set != b->quic_prev_key_set ||
	       memcmp(a->quic_prev_key, b->quic_prev_key,
		      sizeof(a->quic_prev_key)) ||
	       a->balance_milli != b->balance_milli ||
	       a->restart_grace_ms != b->restart_grace_ms ||
	       a->generations != b->generations ||
	       a->flow_idle_s != b->flow_idle_s;
}

/* Services already counted in d->rebuilds, one bit each by index. */
static void mark_rebuild(struct rs_config_diff *d, uint64_t *marked, size_t s)
{
	if (!(marked[s / 64] & (1ull << (s % 64))))
		d->rebuilds++;
	marked[s / 64] |= 1ull << (s % 64);
}

static void diff_backends(const struct rs_config *old,
			  const struct rs_config *cur, struct rs_config_diff *d,
			  uint64_t *marked)
{
	for (size_t i = 0; i < cur->n_backends; i++) {
		const struct rs_backend_conf *b = &cur->backends[i];
		const char *svc = cur->services[b->service].name;
		int o = find_backend(old, b->name);
		const struct rs_backend_conf *ob;

		if (o < 0) {
			d->backends_added++;
			mark_rebuild(d, marked, b->service);
			continue;
		}
		ob = &old->backends[o];
		if (strcmp(old->services[ob->service].name, svc)) {
			d->backends_moved++;
			mark_rebuild(d, marked, b->service);
			continue;
		}
		if (b->weight < ob->weight)
			d->weights_lowered++;
		if (b->weight > ob->weight) {
			d->weights_raised++;
			mark_rebuild(d, marked, b->service);
		}
		d->addresses_changed += !rs_backend_addrs_equal(b, ob);
		d->checks_changed += !same_health(&b->health, &ob->health);
	}
	for (size_t i = 0; i < old->n_backends; i++) {
		const struct rs_backend_conf *ob = &old->backends[i];
		int n = find_backend(cur, ob->name);
		int s;

		if (n >= 0 &&
		    !strcmp(cur->services[cur->backends[n].service].name,
			    old->services[ob->service].name))
			continue;
		d->backends_removed += n < 0;
		s = rs_config_find_service(cur,
					   old->services[ob->service].name);
		if (s >= 0)
			mark_rebuild(d, marked, (size_t)s);
	}
}

int rs_config_diff(const struct rs_config *old, const struct rs_config *cur,
		   struct rs_config_diff *d)
{
	uint64_t marked[(RS_MAX_SERVICES + 63) / 64] = {0};

	memset(d, 0, sizeof(*d));
	for (size_t s = 0; s < cur->n_services; s++) {
		const struct rs_service_conf *sc = &cur->services[s];
		int o = rs_config_find_service(old, sc->name);

		if (o < 0) {
			d->services_added++;
			mark_rebuild(d, marked, s);
			continue;
		}
		if (sc->vnodes != old->services[o].vnodes ||
		    sc->seed != old->services[o].seed) {
			d->services_changed++;
			mark_rebuild(d, marked, s);
		} else if (service_changed(sc, &old->services[o])) {
			d->services_changed++;
		}
	}
	for (size_t s = 0; s < old->n_services; s++)
		d->services_removed +=
			rs_config_find_service(cur, old->services[s].name) < 0;
	diff_backends(old, cur, d, marked);
	snprintf(d->summary, sizeof(d->summary),
		 "services +%zu -%zu ~%zu; backends +%zu -%zu, %zu moved, "
		 "weights %zu up %zu down, %zu addresses, %zu checks changed; "
		 "%zu rings to rebuild",
		 d->services_added, d->services_removed, d->services_changed,
		 d->backends_added, d->backends_removed, d->backends_moved,
		 d->weights_raised, d->weights_lowered, d->addresses_changed,
		 d->checks_changed, d->rebuilds);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Each service's installed ring: building the full ring (every backend at
 * its built points), installing what ring_choose() picks from it (the
 * full ring, or the full ring trimmed to the points in use, which maps
 * every key the same way), and the swap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ring_cache.h"
#include "ring_choice.h"
#include "state.h"
#include "view.h"

/* The cache of service @s's id (NULL: out of memory). */
static struct ring_cache *cache_of(struct daemon *d, size_t s)
{
	if (!d->ring_cache)
		d->ring_cache = calloc(RS_MAX_SERVICES, sizeof(*d->ring_cache));
	if (!d->ring_cache || d->st.svcs[s].id >= RS_MAX_SERVICES)
		return NULL;
	return &d->ring_cache[d->st.svcs[s].id];
}

/*
 * Service @s's ring with every backend at its built (maximum) points,
 * held by the service id's cache (*@ring valid until its next build):
 * the same members again (every reload, every refresh after one) find
 * it as built last, a few changed members merge their points into it.
 */
int ring_build_full(struct daemon *d, size_t s, struct rs_ring **ring)
{
	struct ring_cache *c = cache_of(d, s);
	struct rs_ring_member *m;
	struct rs_service svc;
	size_t n = 0;
	int err;

	m = calloc(d->st.cfg.n_backends ? d->st.cfg.n_backends : 1, sizeof(*m));
	if (!m || !c) {
		free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];

		if (d->st.cfg.backends[i].service != s || !be->built_points)
			continue;
		m[n].name = d->st.cfg.backends[i].name;
		m[n].backend = be->id;
		m[n].points = be->built_points;
		n++;
	}
	err = ring_cache_get(c, m, n, d->st.cfg.services[s].seed, ring);
	free(m);
	if (err < 0)
		return err;
	d->rings_made[err]++;
	rs_debug("service %s: full ring of %u points %s",
		 d->st.cfg.services[s].name, (*ring)->npoints,
		 err == RING_CACHE_SAME	    ? "as built before"
		 : err == RING_CACHE_MERGED ? "merged from the last one"
					    : "built");
	rs_service_from_conf(&d->st.cfg, s, d->st.svcs[s].id, &svc);
	ring_set_key(*ring, &svc);
	return 0;
}

/*
 * Whether service @s's installed ring is what apply_config() would make
 * of it again: made from the ring its id's cache holds, which is built
 * from exactly its members now, with the key in force and a flat table,
 * and no word of its backends changes from @before (what the data plane
 * holds). Making it again would copy, trim and compare the whole ring
 * (13 MB at 200 backends) three times to find nothing to do.
 */
bool ring_unchanged(struct daemon *d, size_t s, const struct rs_backend *before)
{
	const struct svc_rt *svc = &d->st.svcs[s];
	const struct ring_cache *c = cache_of(d, s);
	struct rs_service key;
	size_t n = 0;

	if (!c || !c->valid || !svc->generation || svc->needs_table ||
	    svc->full_serial != c->serial)
		return false;
	rs_service_from_conf(&d->st.cfg, s, svc->id, &key);
	if (svc->ring.seed != key.seed || c->ring.seed != key.seed ||
	    svc->ring.key_policy != key.key_policy ||
	    svc->ring.prefix4 != key.prefix4 ||
	    svc->ring.prefix6 != key.prefix6)
		return false;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct be_rt *be = &d->st.bes[i];
		const char *name = d->st.cfg.backends[i].name;
		struct rs_backend w;

		if (d->st.cfg.backends[i].service != s)
			continue;
		daemon_backend_word(d, be, &w);
		if (memcmp(&w, &before[be->id], sizeof(w)))
			return false;
		if (!be->built_points)
			continue;
		if (n == c->n || c->members[n].backend != be->id ||
		    c->members[n].points != be->built_points ||
		    strcmp(c->members[n].name, name))
			return false;
		n++;
	}
	return n == c->n;
}

/* The cached rings go with the daemon's state (daemon_stop()). */
void rings_cache_free(struct daemon *d)
{
	if (!d->ring_cache)
		return;
	for (size_t i = 0; i < RS_MAX_SERVICES; i++)
		ring_cache_free(&d->ring_cache[i]);
	free(d->ring_cache);
	d->ring_cache = NULL;
}

/*
 * @ring goes in; the installed ring kept is the new map's own memory
 * (dp_install_ring()), so @ring is not copied even when the cache holds
 * it. The ring installed until now goes back to the data plane, whose
 * map it was: the ring after next is written there.
 */
static int ring_install(struct daemon *d, size_t s, const struct rs_ring *ring,
			bool compact, const char *why)
{
	struct svc_rt *svc = &d->st.svcs[s];
	int64_t gen = dp_install_ring(&d->dp, svc->id, ring, &svc->ring);

	if (gen < 0)
		return (int)gen;
	svc->generation = (uint64_t)gen;
	svc->compact = compact;
	svc->needs_table = false;
	svc->rebuilds++;
	rs_info("service %s: ring generation %llu, %u points%s (%s)",
		d->st.cfg.services[s].name, (unsigned long long)gen,
		svc->ring.npoints, compact ? ", only the points in use" : "",
		why);
	return 0;
}

/* Install @ring (freed) unless the same ring is in place already. */
static int ring_install_if_changed(struct daemon *d, size_t s,
				   struct rs_ring *ring, bool compact,
				   bool force, const char *why)
{
	struct svc_rt *svc = &d->st.svcs[s];
	int err = 0;

	if (!force && !svc->needs_table && svc->generation &&
	    ring_equal(ring, &svc->ring))
		svc->compact = compact;
	else
		err = ring_install(d, s, ring, compact, why);
	ring_free(ring);
	return err;
}

/*
 * Whether @ring, the ring @s's cache holds, is the ring installed: one
 * made from it (a trim keeps the order and drops points) with as many
 * points is the same ring, found without comparing 13 MB.
 */
static bool cached_is_installed(struct daemon *d, size_t s,
				const struct rs_ring *ring)
{
	const struct svc_rt *svc = &d->st.svcs[s];
	const struct ring_cache *c = cache_of(d, s);

	return c && ring == &c->ring && svc->full_serial == c->serial &&
	       svc->ring.npoints == ring->npoints &&
	       svc->ring.seed == ring->seed &&
	       svc->ring.key_policy == ring->key_policy &&
	       svc->ring.prefix4 == ring->prefix4 &&
	       svc->ring.prefix6 == ring->prefix6;
}

/*
 * Install @ring, which someone else holds (the cache, or the installed
 * ring itself).
 */
static int ring_install_held(struct daemon *d, size_t s,
			     const struct rs_ring *ring, bool compact,
			     bool force, const char *why)
{
	struct svc_rt *svc = &d->st.svcs[s];

	if (!force && !svc->needs_table && svc->generation &&
	    (ring == &svc->ring || cached_is_installed(d, s, ring) ||
	     ring_equal(ring, &svc->ring))) {
		svc->compact = compact;
		return 0;
	}
	return ring_install(d, s, ring, compact, why);
}

/* The ring installed for @s is made from the one its cache holds now. */
static void made_from_cache(struct daemon *d, size_t s)
{
	struct ring_cache *c = cache_of(d, s);

	d->st.svcs[s].full_serial = c ? c->serial : 0;
}

/*
 * Keep the installed ring of service @s right for the words in force, as
 * ring_choose() says: the full ring while walks stay short, else the full
 * ring trimmed to the points in use. The data plane walks the whole ring
 * if it must, so this is about speed, never about whether a client finds
 * its backend.
 */
int ring_refresh(struct daemon *d, size_t s, enum refresh how, const char *why)
{
	struct svc_rt *svc = &d->st.svcs[s];
	struct rs_ring_view view = {0};
	struct rs_ring *full, trimmed = {0};
	struct rs_backend *words;
	bool *has_socket;
	int err, shape;

	err = daemon_ring_view(d, &words, &has_socket, &view.nbackends);
	if (err)
		return err;
	view.backends = words;
	view.has_socket = has_socket;
	/* The full ring in place and still right: nothing to build. */
	if (how == REFRESH_CHECK && !svc->compact && svc->generation &&
	    ring_walks_short(&svc->ring, &view))
		goto out;
	err = ring_build_full(d, s, &full);
	if (err)
		goto out;
	shape = ring_choose(full, &view, &trimmed);
	if (shape < 0)
		err = shape;
	else if (shape == RS_RING_FULL)
		err = ring_install_held(d, s, full, false, how == REFRESH_FORCE,
					why);
	else
		err = ring_install_if_changed(
			d, s, &trimmed, true, how == REFRESH_FORCE,
			how == REFRESH_CHECK
				? "walks past unused points too long"
				: why);
	if (!err)
		made_from_cache(d, s);
out:
	ring_free(&trimmed);
	free(words);
	free(has_socket);
	return err;
}

/* What a previous ringsteerd left installed becomes the ring in place. */
void rings_read_pinned(struct daemon *d)
{
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		struct svc_rt *svc = &d->st.svcs[s];
		struct rs_ring pinned;
		uint64_t gen;

		if (!dp_read_ring(&d->dp, svc->id, &pinned, &gen)) {
			svc->ring = pinned;
			svc->generation = gen;
			/* Unknown shape: let the first refresh decide. */
			svc->compact = true;
			/*
			 * Without the flat table (an older daemon's ring):
			 * the next install writes it even for the same
			 * points, which moves no key.
			 */
			svc->needs_table = !dp_ring_has_table(&d->dp, svc->id);
		}
	}
}

/* A view over @words (RS_MAX_BACKENDS of them, by id), sockets unknown. */
static struct rs_ring_view words_view(const struct rs_backend *words)
{
	return (struct rs_ring_view){.backends = words,
				     .nbackends = RS_MAX_BACKENDS};
}

/*
 * Install @ring of service @s trimmed to the points @words use; when it
 * has none they do not use, @ring itself, made and compared only if it is
 * not what is installed already.
 */
int ring_install_trimmed(struct daemon *d, size_t s, const struct rs_ring *ring,
			 const struct rs_backend *words, const char *why)
{
	struct rs_ring_view view = words_view(words);
	const struct ring_cache *c = cache_of(d, s);
	struct rs_ring trimmed;
	int err;

	if (ring_trim_keeps_all(ring, &view, false)) {
		err = ring_install_held(d, s, ring, true, false, why);
	} else {
		err = ring_trim(ring, &view, false, &trimmed);
		if (!err)
			err = ring_install_if_changed(d, s, &trimmed, true,
						      false, why);
	}
	if (!err && c && ring == &c->ring)
		made_from_cache(d, s);
	return err;
}

int daemon_rebuild(struct daemon *d, const char *service)
{
	int s = view_find_service(&d->st, service);

	if (s < 0)
		return s;
	return ring_refresh(d, (size_t)s, REFRESH_FORCE, "operator request");
}

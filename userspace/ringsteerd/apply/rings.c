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

/*
 * Service @s's ring with every backend at its built (maximum) points,
 * through the service id's cache: the same members again (every reload,
 * every refresh after one) copy the ring built last; a few changed
 * members merge their points into it.
 */
int ring_build_full(struct daemon *d, size_t s, struct rs_ring *ring)
{
	struct rs_ring_member *m;
	struct ring_cache *c = NULL;
	struct rs_service svc;
	size_t n = 0;
	int err;

	if (!d->ring_cache)
		d->ring_cache = calloc(RS_MAX_SERVICES, sizeof(*d->ring_cache));
	if (d->ring_cache && d->st.svcs[s].id < RS_MAX_SERVICES)
		c = &d->ring_cache[d->st.svcs[s].id];
	m = calloc(d->st.cfg.n_backends ? d->st.cfg.n_backends : 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		struct be_rt *be = &d->st.bes[i];

		if (d->st.cfg.backends[i].service != s || !be->built_points)
			continue;
		m[n].name = d->st.cfg.backends[i].name;
		m[n].backend = be->id;
		m[n].points = be->built_points;
		n++;
	}
	err = c ? ring_cache_build(c, m, n, d->st.cfg.services[s].seed, ring)
		: ring_build(m, n, d->st.cfg.services[s].seed, ring);
	free(m);
	if (err < 0)
		return err;
	if (!c)
		err = RING_CACHE_BUILT;
	d->rings_made[err]++;
	rs_debug("service %s: full ring of %u points %s",
		 d->st.cfg.services[s].name, ring->npoints,
		 err == RING_CACHE_SAME	    ? "as built before, copied"
		 : err == RING_CACHE_MERGED ? "merged from the last one"
					    : "built");
	rs_service_from_conf(&d->st.cfg, s, d->st.svcs[s].id, &svc);
	ring_set_key(ring, &svc);
	return 0;
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

static int ring_install(struct daemon *d, size_t s, struct rs_ring *ring,
			bool compact, const char *why)
{
	struct svc_rt *svc = &d->st.svcs[s];
	int64_t gen = dp_swap_ring(&d->dp, svc->id, ring);

	if (gen < 0) {
		ring_free(ring);
		return (int)gen;
	}
	ring_free(&svc->ring);
	svc->ring = *ring;
	memset(ring, 0, sizeof(*ring));
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

/* Install @ring unless the same ring is in place already. */
static int ring_install_if_changed(struct daemon *d, size_t s,
				   struct rs_ring *ring, bool compact,
				   bool force, const char *why)
{
	struct svc_rt *svc = &d->st.svcs[s];

	if (!force && !svc->needs_table && svc->generation &&
	    ring_equal(ring, &svc->ring)) {
		ring_free(ring);
		svc->compact = compact;
		return 0;
	}
	return ring_install(d, s, ring, compact, why);
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
	struct rs_ring full = {0}, trimmed = {0};
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
	shape = ring_choose(&full, &view, &trimmed);
	if (shape < 0)
		err = shape;
	else if (shape == RS_RING_FULL)
		err = ring_install_if_changed(d, s, &full, false,
					      how == REFRESH_FORCE, why);
	else
		err = ring_install_if_changed(
			d, s, &trimmed, true, how == REFRESH_FORCE,
			how == REFRESH_CHECK
				? "walks past unused points too long"
				: why);
out:
	ring_free(&full);
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

/* Install @ring of service @s trimmed to the points @words use. */
int ring_install_trimmed(struct daemon *d, size_t s, const struct rs_ring *ring,
			 const struct rs_backend *words, const char *why)
{
	struct rs_ring_view view = words_view(words);
	struct rs_ring trimmed;
	int err = ring_trim(ring, &view, false, &trimmed);

	if (err)
		return err;
	return ring_install_if_changed(d, s, &trimmed, true, false, why);
}

int daemon_rebuild(struct daemon *d, const char *service)
{
	int s = view_find_service(&d->st, service);

	if (s < 0)
		return s;
	return ring_refresh(d, (size_t)s, REFRESH_FORCE, "operator request");
}

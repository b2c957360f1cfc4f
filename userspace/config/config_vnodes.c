// SPDX-License-Identifier: MIT
/*
 * The vnodes default changed (RS_LEGACY_VNODES -> RS_DEFAULT_VNODES). A
 * file that does not set vnodes gets a different ring under the new
 * default, and every client whose arc changes hands moves: the daemon
 * keeps a running ring built with the old default until a reload, and
 * --check says what that reload will move, as `ringsteer sim` would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringsteer/rules.h>

#include "config.h"
#include "ring.h"
#include "ring_stats.h"

/* Service @s's full ring at @vnodes, backends numbered by file order. */
static int build_at(const struct rs_config *cfg, size_t s, uint32_t vnodes,
		    struct rs_ring *ring, struct rs_backend *words)
{
	struct rs_ring_member *m = calloc(cfg->n_backends, sizeof(*m));
	size_t n = 0;
	int err;

	if (!m)
		return -1;
	for (size_t b = 0; b < cfg->n_backends && b < RS_MAX_BACKENDS; b++) {
		const struct rs_backend_conf *bc = &cfg->backends[b];

		if (bc->service != s || bc->weight == 0)
			continue;
		m[n++] = (struct rs_ring_member){
			bc->name, (uint32_t)b,
			(uint32_t)rs_backend_points(bc->weight, vnodes)};
		words[b].state = RS_BACKEND_UP;
		words[b].active_points =
			(uint32_t)rs_backend_points(bc->weight, vnodes);
	}
	err = n ? ring_build(m, n, cfg->services[s].seed, ring) : -1;
	free(m);
	return err;
}

double rs_config_vnodes_moved(const struct rs_config *cfg, size_t s,
			      uint32_t from)
{
	struct rs_backend *wa = calloc(RS_MAX_BACKENDS, sizeof(*wa));
	struct rs_backend *wb = calloc(RS_MAX_BACKENDS, sizeof(*wb));
	struct rs_ring a = {0}, b = {0};
	double moved = -1;

	if (wa && wb && !build_at(cfg, s, from, &a, wa) &&
	    !build_at(cfg, s, cfg->services[s].vnodes, &b, wb)) {
		struct rs_ring_view va = {.backends = wa,
					  .nbackends = RS_MAX_BACKENDS};
		struct rs_ring_view vb = {.backends = wb,
					  .nbackends = RS_MAX_BACKENDS};

		moved = ring_moved_fraction(&a, &va, &b, &vb);
	}
	ring_free(&a);
	ring_free(&b);
	free(wa);
	free(wb);
	return moved;
}

bool rs_config_legacy_ring(const struct rs_config *cfg, size_t s,
			   const struct rs_backend *words)
{
	const struct rs_service_conf *sc = &cfg->services[s];
	bool legacy = false;

	if (sc->vnodes_set || sc->vnodes == RS_LEGACY_VNODES)
		return false;
	for (size_t b = 0; b < cfg->n_backends; b++) {
		const struct rs_backend_conf *bc = &cfg->backends[b];

		if (bc->service != s || bc->weight == 0)
			continue;
		for (uint32_t id = 0; id < RS_MAX_BACKENDS; id++) {
			const struct rs_backend *w = &words[id];

			if (strncmp(w->name, bc->name, sizeof(w->name)))
				continue;
			if (w->max_points ==
			    rs_backend_points(bc->weight, sc->vnodes))
				return false;
			legacy |=
				w->max_points ==
				rs_backend_points(bc->weight, RS_LEGACY_VNODES);
		}
	}
	return legacy;
}

void rs_config_default_vnodes(const struct rs_config *cfg,
			      const struct rs_backend *words,
			      void (*say)(const char *line))
{
	char line[640];

	for (size_t s = 0; s < cfg->n_services; s++) {
		const struct rs_service_conf *sc = &cfg->services[s];
		double moved;

		if (words ? !rs_config_legacy_ring(cfg, s, words)
			  : sc->vnodes_set || sc->vnodes == RS_LEGACY_VNODES)
			continue;
		moved = rs_config_vnodes_moved(cfg, s, RS_LEGACY_VNODES);
		if (moved < 0)
			continue;
		if (words)
			snprintf(line, sizeof(line),
				 "service %s does not set vnodes, and the "
				 "running ring was built with %u, the default "
				 "of earlier versions (now %u): it is kept "
				 "until a reload, and the reload moves %.1f%% "
				 "of this service's clients to another "
				 "backend. Set vnodes = %u to keep them, or "
				 "vnodes = %u to take the new default",
				 sc->name, RS_LEGACY_VNODES, RS_DEFAULT_VNODES,
				 moved * 100, RS_LEGACY_VNODES,
				 RS_DEFAULT_VNODES);
		else
			snprintf(line, sizeof(line),
				 "service %s does not set vnodes, so it gets "
				 "%u (the default; earlier versions had %u). "
				 "The data plane running here cannot be "
				 "adopted (another ABI: starting needs "
				 "--detach), so the ring is built anew: if it "
				 "ran with %u, %.1f%% of this service's "
				 "clients move to another backend. Set vnodes "
				 "= %u to keep them",
				 sc->name, RS_DEFAULT_VNODES, RS_LEGACY_VNODES,
				 RS_LEGACY_VNODES, moved * 100,
				 RS_LEGACY_VNODES);
		say(line);
	}
}

// SPDX-License-Identifier: MIT
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "health.h"

void health_init(struct rs_health *h, bool up)
{
	memset(h, 0, sizeof(*h));
	h->up = up;
	snprintf(h->last_result, sizeof(h->last_result), "none yet");
}

void health_init_unproven(struct rs_health *h,
			  const struct rs_health_conf *conf)
{
	health_init(h, true);
	if (conf->type != RS_CHECK_NONE && conf->fall > 1)
		h->failures = conf->fall - 1;
}

enum rs_health_event health_on_result(struct rs_health *h,
				      const struct rs_health_conf *conf,
				      bool ok, const char *reason,
				      double latency_ms)
{
	h->checks++;
	h->last_latency_ms = latency_ms;
	snprintf(h->last_result, sizeof(h->last_result), "%s",
		 ok ? "ok" : (reason ? reason : "failed"));
	if (h->up) {
		h->successes = 0;
		h->failures = ok ? 0 : h->failures + 1;
		if (h->failures < conf->fall)
			return RS_HEALTH_NO_CHANGE;
		h->up = false;
		h->failures = 0;
		h->transitions++;
		return RS_HEALTH_WENT_DOWN;
	}
	h->failures = 0;
	h->successes = ok ? h->successes + 1 : 0;
	if (h->successes < conf->rise)
		return RS_HEALTH_NO_CHANGE;
	h->up = true;
	h->successes = 0;
	h->transitions++;
	return RS_HEALTH_WENT_UP;
}

uint32_t slow_start_points(uint32_t full, uint64_t elapsed_ms,
			   uint32_t window_ms)
{
	double frac, pts;

	if (full == 0 || window_ms == 0 || elapsed_ms >= window_ms)
		return full;
	frac = (double)elapsed_ms / window_ms;
	if (frac < RS_SLOW_START_FLOOR)
		frac = RS_SLOW_START_FLOOR;
	pts = ceil(full * frac);
	if (pts < 1)
		pts = 1;
	return pts > full ? full : (uint32_t)pts;
}

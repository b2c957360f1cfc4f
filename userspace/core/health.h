/* SPDX-License-Identifier: MIT */
/*
 * Health state of one backend: rise/fall counting over check results, and
 * the slow-start ramp after it comes back. Pure logic, no I/O, so the
 * transitions are unit-tested exactly.
 */
#ifndef RS_HEALTH_H
#define RS_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#define RS_HEALTH_REASON_MAX 96
#define RS_CHECK_TEXT_MAX    256

/*
 * How a backend is checked. Here rather than in config.h because the
 * rise/fall machine below reads it and core code depends on nothing above.
 */
enum rs_check_type {
	RS_CHECK_TCP = 0, /* connect() succeeds */
	RS_CHECK_HTTP = 1,
	RS_CHECK_NONE = 2,  /* always healthy */
	RS_CHECK_HTTPS = 3, /* HTTP over TLS; the certificate is not verified */
};

struct rs_health_conf {
	uint8_t type;		      /* enum rs_check_type */
	char path[RS_CHECK_TEXT_MAX]; /* starts with '/' [/] */
	char host[RS_CHECK_TEXT_MAX]; /* Host header; empty = the address */
	uint16_t expect_min;	      /* "2xx" -> 200..299, "204" -> 204..204 */
	uint16_t expect_max;
	uint32_t interval_ms;	/* > 0 */
	uint32_t timeout_ms;	/* > 0 and <= interval_ms */
	uint32_t rise;		/* 1..100 */
	uint32_t fall;		/* 1..100 */
	uint32_t slow_start_ms; /* 0 = off */
	uint16_t port;		/* check_port; 0 = the backend's own port */
};

struct rs_health {
	bool up;
	uint32_t successes; /* consecutive, while down */
	uint32_t failures;  /* consecutive, while up */
	uint64_t checks;
	uint64_t transitions;
	double last_latency_ms;
	char last_result[RS_HEALTH_REASON_MAX]; /* "ok", "refused", "status 503"
						 */
};

enum rs_health_event {
	RS_HEALTH_NO_CHANGE = 0,
	RS_HEALTH_WENT_UP,
	RS_HEALTH_WENT_DOWN,
};

void health_init(struct rs_health *h, bool up);

/*
 * A backend nothing is known about yet (first start, added by a reload):
 * up, so it takes clients at once, but its first failed check takes it
 * down rather than the fall-th.
 */
void health_init_unproven(struct rs_health *h,
			  const struct rs_health_conf *conf);

/*
 * Count one check result. DOWN after @conf->fall consecutive failures while
 * up, UP after @conf->rise consecutive successes while down; anything less
 * changes nothing, so a flapping backend below the thresholds moves nobody.
 */
enum rs_health_event health_on_result(struct rs_health *h,
				      const struct rs_health_conf *conf,
				      bool ok, const char *reason,
				      double latency_ms);

/*
 * Slow start: active points of a backend with @full points, @elapsed_ms
 * after it went UP, ramping linearly from RS_SLOW_START_FLOOR of @full
 * (at least one point) to @full over @window_ms. @window_ms 0 = no ramp.
 */
#define RS_SLOW_START_FLOOR 0.05
uint32_t slow_start_points(uint32_t full, uint64_t elapsed_ms,
			   uint32_t window_ms);

#endif /* RS_HEALTH_H */

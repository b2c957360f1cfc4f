/* SPDX-License-Identifier: MIT */
/*
 * Health checks, all non-blocking in the daemon's libev loop: TCP connects
 * on ev_io watchers, HTTP GETs through libcurl's multi interface driven by
 * the same loop. Each check reports one result to a callback.
 */
#ifndef RS_CHECKER_H
#define RS_CHECKER_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>
#include <ev.h>

#include "config.h"

struct rs_checker {
	struct ev_loop *loop;
	CURLM *multi;
	ev_timer curl_timer;
};

typedef void (*rs_check_result_fn)(void *arg, bool ok, const char *reason,
				   double latency_ms);

/* One backend's periodic check. */
struct rs_check {
	struct rs_checker *checker;
	struct rs_health_conf conf;
	uint8_t family;
	uint8_t addr[16]; /* wildcard addresses are checked on loopback */
	uint16_t port;
	char url[512];
	rs_check_result_fn on_result;
	void *arg;
	bool running;  /* scheduled */
	bool inflight; /* a probe is out */
	ev_timer interval;
	ev_timer timeout;
	ev_io io; /* tcp probe */
	int fd;
	ev_tstamp started;
	CURL *easy;
	struct curl_slist *headers;
};

int checker_init(struct rs_checker *c, struct ev_loop *loop);
void checker_fini(struct rs_checker *c);

/*
 * Start checking @family/@addr/@port every conf->interval_ms, the first
 * probe after @first_delay_ms (spreading probes of many backends).
 * A check of type none never reports.
 */
int check_start(struct rs_checker *c, struct rs_check *chk,
		const struct rs_health_conf *conf, uint8_t family,
		const uint8_t addr[16], uint16_t port, uint32_t first_delay_ms,
		rs_check_result_fn on_result, void *arg);
void check_stop(struct rs_check *chk);

#endif /* RS_CHECKER_H */

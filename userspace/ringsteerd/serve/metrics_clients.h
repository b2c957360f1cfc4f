/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint's connections: how long each may take and who goes
 * when there are too many (metrics_clients.c). metrics.c feeds it the
 * library's connection and request events.
 */
#ifndef RS_METRICS_CLIENTS_H
#define RS_METRICS_CLIENTS_H

#include <ev.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

struct mconn;

struct metrics_clients {
	struct daemon *d;
	struct mconn *head, *tail; /* oldest first */
	unsigned int live;	   /* not yet shut down */
	unsigned int cap, per_addr;
	ev_timer sweep; /* at the earliest deadline */
	uint64_t dropped;
	ev_tstamp warned;
};

void mclients_init(struct metrics_clients *mc, struct daemon *d,
		   unsigned int cap, unsigned int per_addr);
void mclients_stop(struct metrics_clients *mc);
/* MHD_OPTION_NOTIFY_CONNECTION: a connection came or went. */
void mclients_notify(void *cls, struct MHD_Connection *conn, void **ctx,
		     enum MHD_ConnectionNotificationCode toe);
/*
 * Its request is in, or its reply is out: the connection gets
 * client_idle_timeout again for what comes next.
 */
void mclients_progress(struct metrics_clients *mc, struct MHD_Connection *conn);

#endif /* RS_METRICS_CLIENTS_H */

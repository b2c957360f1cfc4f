/* SPDX-License-Identifier: MIT */
/*
 * Prometheus text exposition on [global] metrics (off unless set), served
 * by libmicrohttpd from inside the daemon's event loop.
 */
#ifndef RS_METRICS_H
#define RS_METRICS_H

#include "daemon.h"

int metrics_start(struct daemon *d);
void metrics_stop(struct daemon *d);
/* Clients connected now, and the cap the server runs with (0: off). */
unsigned int metrics_clients(const struct daemon *d);
uint32_t metrics_clients_max(const struct daemon *d);

/* The exposition text (caller frees). */
char *metrics_render(struct daemon *d);

#endif /* RS_METRICS_H */

/* SPDX-License-Identifier: MIT */
/* The commands of the control socket, one function each. */
#ifndef RS_CONTROL_CMDS_H
#define RS_CONTROL_CMDS_H

#include <jansson.h>

#include "control_reply.h"
#include "daemon.h"

/* Reply to @cmd; unknown commands get an error reply. */
json_t *control_dispatch(struct daemon *d, const char *cmd, json_t *req);

/* Shared with metrics: a backend's counters and derived numbers. */
struct backend_view {
	struct rs_backend word;
	struct rs_backend_stats stats;
	double share;	/* of its service's hash space, now */
	int64_t active; /* established steered connections now */
	/* Connections it may hold before new ones spill (or unbounded). */
	uint64_t bound;
	/*
	 * The data plane can hand it clients: not DOWN, and a socket in its
	 * SOCKMAP slots (an empty slot counts as DOWN whatever the word says).
	 */
	bool serving;
};

int backend_view_get(struct daemon *d, size_t idx, const double *shares,
		     struct backend_view *out);
/* Shares of every backend id under the current state (RS_MAX_BACKENDS). */
double *service_shares(struct daemon *d, size_t svc, double *lost);

#endif /* RS_CONTROL_CMDS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The writer's pipeline (apply.c), shared by start-up and reload.c: what
 * the data plane holds before a state is applied, ids for a new state,
 * and the one function both go through to write it.
 */
#ifndef RS_APPLY_H
#define RS_APPLY_H

#include "daemon.h"

/* What the data plane holds before a configuration is applied, by id. */
struct snapshot {
	struct rs_service svcs[RS_MAX_SERVICES];
	struct rs_backend bes[RS_MAX_BACKENDS];
};

/* The state being replaced (@old), as @d's data plane holds it. */
void snapshot_of(struct daemon *d, const struct rs_state *old,
		 struct snapshot *p);
/* Service and backend ids for @st from @before (ids_assign()). */
int assign_ids(struct daemon *d, struct rs_state *st,
	       const struct snapshot *before);
/* @st's per-service and per-backend arrays, for its configuration. */
int alloc_runtime(struct rs_state *st);
/* Its rings, arrays and configuration. */
void runtime_free(struct rs_state *x);
/* Write @d's state from what @before says the data plane holds. */
int apply_state(struct daemon *d, const struct snapshot *before);
/* rs_config's warnings, to the log. */
void log_warning(const char *line);

#endif /* RS_APPLY_H */

/* SPDX-License-Identifier: MIT */
/*
 * `ringsteer trace`'s output: the names of reasons and hooks, and one
 * event as a line of text or of JSON (trace_print.c).
 */
#ifndef RINGSTEER_TRACE_PRINT_H
#define RINGSTEER_TRACE_PRINT_H

#include <stdbool.h>
#include <stdint.h>

#include <ringsteer/abi.h>

#include "trace_gen.h"

/* What an event's ids and time are shown with. */
struct trace_view {
	char *const *svc_names; /* RS_MAX_SERVICES, by id; NULL: unknown */
	char *const *be_names;	/* RS_MAX_BACKENDS */
	int64_t mono_to_real;	/* add to CLOCK_MONOTONIC ns for wall time */
	bool json;
	/* A generations service's datagram: the socket it went to. */
	const struct trace_sock *sock;
};

/* enum rs_trace_reason of @name, or -1. */
int trace_reason_of_name(const char *name);
/* enum rs_trace_hook of @name (lookup, tc, sockops), or -1. */
int trace_hook_of_name(const char *name);
/* The reasons' names, comma separated (for messages and usage). */
const char *trace_reason_names(void);

void trace_print(const struct trace_view *v, const struct rs_trace_event *e);

#endif /* RINGSTEER_TRACE_PRINT_H */

/* SPDX-License-Identifier: MIT */
/*
 * `ringsteer trace` on a generations service (issue 38): which of the
 * backend's sockets a datagram went to (trace_gen.c).
 */
#ifndef RINGSTEER_TRACE_GEN_H
#define RINGSTEER_TRACE_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include <ringsteer/abi.h>

/* The generation a datagram went to, as trace_print() shows it. */
struct trace_sock {
	uint64_t cookie;
	uint64_t number; /* the daemon's generation number; 0: not known */
	int pid;	 /* its process; 0: not known */
	bool working;	 /* the backend's working socket, else an old one */
	bool recorded;	 /* its flow is in rs_udp_flows (not a full table) */
};

struct trace_gen;

/*
 * Asks the daemon which services have generations, and opens @bpffs's
 * rs_udp_flows and rs_gen_working. NULL when none has (or the pins are
 * not there: a data plane without generations).
 */
struct trace_gen *trace_gen_open(const char *bpffs);
void trace_gen_close(struct trace_gen *g);

/*
 * @e's generation into @out: true for a datagram of a generations
 * service that sk_lookup passed to a backend. The flow's entry is read
 * when the event is shown, not when it was decided (a flow handed over
 * since shows its new socket); pid and number come from the daemon
 * (`backends`), asked again when a cookie is new to the trace.
 */
bool trace_gen_of(struct trace_gen *g, const struct rs_trace_event *e,
		  struct trace_sock *out);

#endif /* RINGSTEER_TRACE_GEN_H */

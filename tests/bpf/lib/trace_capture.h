/* SPDX-License-Identifier: MIT */
/*
 * trace_capture: a BPF test's view of the trace maps of one loaded
 * object (rs_trace_ctl, rs_trace_events, rs_trace_cpu): set the filters,
 * run the program, collect the events it wrote and the counters.
 */
#ifndef TRACE_CAPTURE_H
#define TRACE_CAPTURE_H

#include <ringsteer/abi.h>

#define TRACE_CAPTURE_MAX 256

struct bpf_object;
struct ring_buffer;

struct trace_capture {
	struct ring_buffer *rb;
	int ctl_fd, cpu_fd;
	int n; /* events collected since the last trace_capture_set() */
	struct rs_trace_event ev[TRACE_CAPTURE_MAX];
};

/* Opens the ring buffer of @obj's maps; 0 or -1. */
int trace_capture_open(struct trace_capture *c, const struct bpf_object *obj);
void trace_capture_close(struct trace_capture *c);
/* Filters @t, counters zeroed, events so far dropped. */
int trace_capture_set(struct trace_capture *c, const struct rs_trace_ctl *t);
/* Everything, no bucket. */
struct rs_trace_ctl trace_capture_all(void);
/* Tracing off (enabled 0). */
int trace_capture_off(struct trace_capture *c);
/* Reads what the ring buffer holds into ev[]; returns n. */
int trace_capture_poll(struct trace_capture *c);
/* The counters summed over CPUs. */
struct rs_trace_cpu trace_capture_counters(const struct trace_capture *c);

#endif /* TRACE_CAPTURE_H */

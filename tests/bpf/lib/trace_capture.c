// SPDX-License-Identifier: MIT
/* See trace_capture.h. */
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_fixture.h"
#include "trace_capture.h"

static int on_event(void *ctx, void *data, size_t len)
{
	struct trace_capture *c = ctx;

	if (len == sizeof(struct rs_trace_event) && c->n < TRACE_CAPTURE_MAX)
		memcpy(&c->ev[c->n++], data, len);
	return 0;
}

static int map_fd(const struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	return m ? bpf_map__fd(m) : -1;
}

int trace_capture_open(struct trace_capture *c, const struct bpf_object *obj)
{
	int ev = map_fd(obj, "rs_trace_events");

	memset(c, 0, sizeof(*c));
	c->ctl_fd = map_fd(obj, "rs_trace_ctl");
	c->cpu_fd = map_fd(obj, "rs_trace_cpu");
	if (ev < 0 || c->ctl_fd < 0 || c->cpu_fd < 0)
		return -1;
	c->rb = ring_buffer__new(ev, on_event, c, NULL);
	return c->rb ? 0 : -1;
}

void trace_capture_close(struct trace_capture *c)
{
	ring_buffer__free(c->rb);
	c->rb = NULL;
}

struct rs_trace_ctl trace_capture_all(void)
{
	return (struct rs_trace_ctl){
		.enabled = 1, .service = RS_NONE, .backend = RS_NONE};
}

int trace_capture_set(struct trace_capture *c, const struct rs_trace_ctl *t)
{
	int ncpu = libbpf_num_possible_cpus();
	struct rs_trace_cpu *zero = calloc(ncpu, sizeof(*zero));
	__u32 k = 0;
	int rc;

	rc = zero ? bpf_map_update_elem(c->ctl_fd, &k, t, BPF_ANY) : -1;
	if (!rc)
		rc = bpf_map_update_elem(c->cpu_fd, &k, zero, BPF_ANY);
	free(zero);
	ring_buffer__consume(c->rb);
	c->n = 0;
	return rc;
}

int trace_capture_off(struct trace_capture *c)
{
	struct rs_trace_ctl off = {.service = RS_NONE, .backend = RS_NONE};

	return trace_capture_set(c, &off);
}

int trace_capture_poll(struct trace_capture *c)
{
	ring_buffer__consume(c->rb);
	return c->n;
}

struct rs_trace_cpu trace_capture_counters(const struct trace_capture *c)
{
	struct rs_trace_cpu sum = {0};

	fixture_percpu_sum(c->cpu_fd, 0, &sum, sizeof(sum));
	return sum;
}

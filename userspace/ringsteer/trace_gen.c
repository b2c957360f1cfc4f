// SPDX-License-Identifier: MIT
/*
 * The generation of a traced datagram, without a field in the event (one
 * more would be a new ABI): the event's 4-tuple is the key of the flow's
 * rs_udp_flows entry, whose cookie names the socket sk_lookup gave it
 * (bpf/lib/generations.bpf.h); an unrecorded flow (a full table) went to
 * the working socket, rs_gen_working's. The daemon's `backends` reply
 * names each cookie's process and generation number.
 */
#include "trace_gen.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cli.h"

/* The daemon asked again at most this often (a new cookie each event). */
#define REFRESH_NS 100000000LL

struct gen_known {
	uint64_t cookie;
	uint64_t number;
	int pid;
};

struct trace_gen {
	bool svc_gen[RS_MAX_SERVICES];
	int flows_fd, working_fd;
	struct gen_known *known;
	size_t n;
	int64_t asked_ns;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int pin_open(const char *bpffs, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", bpffs, name);
	return bpf_obj_get(path);
}

/* Which services have generations (`services`); false if none has. */
static bool ask_services(bool *svc_gen)
{
	json_t *r = call(json_pack("{s:s}", "cmd", "services")), *v;
	bool any = false;
	size_t i;

	if (!r)
		return false;
	json_array_foreach(json_object_get(r, "services"), i, v)
	{
		long long id = jint(v, "id");

		if (id >= 0 && id < RS_MAX_SERVICES &&
		    json_is_true(json_object_get(v, "generations"))) {
			svc_gen[id] = true;
			any = true;
		}
	}
	json_decref(r);
	return any;
}

struct trace_gen *trace_gen_open(const char *bpffs)
{
	struct trace_gen *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->flows_fd = g->working_fd = -1;
	if (!ask_services(g->svc_gen)) {
		trace_gen_close(g);
		return NULL;
	}
	g->flows_fd = pin_open(bpffs, "rs_udp_flows");
	g->working_fd = pin_open(bpffs, "rs_gen_working");
	if (g->flows_fd < 0 || g->working_fd < 0) {
		trace_gen_close(g);
		return NULL;
	}
	return g;
}

void trace_gen_close(struct trace_gen *g)
{
	if (!g)
		return;
	if (g->flows_fd >= 0)
		close(g->flows_fd);
	if (g->working_fd >= 0)
		close(g->working_fd);
	free(g->known);
	free(g);
}

static const struct gen_known *find(const struct trace_gen *g, uint64_t cookie)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->known[i].cookie == cookie)
			return &g->known[i];
	return NULL;
}

/* Every generation the daemon knows now, in place of the last list. */
static void ask_daemon(struct trace_gen *g)
{
	json_t *r = call(json_pack("{s:s}", "cmd", "backends"));
	json_t *be, *s, *v;
	size_t i, j, k;

	g->asked_ns = now_ns();
	if (!r)
		return;
	g->n = 0;
	json_array_foreach(json_object_get(r, "backends"), i, be)
	{
		json_array_foreach(json_object_get(be, "sockets"), j, s)
		{
			json_array_foreach(json_object_get(s, "generations"), k,
					   v)
			{
				struct gen_known *m;

				m = realloc(g->known,
					    (g->n + 1) * sizeof(*g->known));
				if (!m)
					break;
				g->known = m;
				g->known[g->n++] = (struct gen_known){
					.cookie = (uint64_t)jint(v, "cookie"),
					.number =
						(uint64_t)jint(v, "generation"),
					.pid = (int)jint(v, "pid"),
				};
			}
		}
	}
	json_decref(r);
}

static struct rs_udp_flow_key key_of(const struct rs_trace_event *e)
{
	struct rs_udp_flow_key k = {.sport = e->client_port,
				    .dport = e->local_port,
				    .family = e->family};

	/* IPv4 in word 0, the rest zero: as the event carries it. */
	memcpy(k.saddr, e->client, sizeof(k.saddr));
	memcpy(k.daddr, e->local, sizeof(k.daddr));
	return k;
}

bool trace_gen_of(struct trace_gen *g, const struct rs_trace_event *e,
		  struct trace_sock *out)
{
	struct rs_udp_flow_key k;
	struct rs_udp_flow flow;
	const struct gen_known *m;
	__u32 slot;
	__u64 working = 0;

	if (!g || e->hook != RS_TRACE_HOOK_LOOKUP ||
	    e->protocol != IPPROTO_UDP || e->service >= RS_MAX_SERVICES ||
	    !g->svc_gen[e->service] || e->backend >= RS_MAX_BACKENDS ||
	    e->verdict == 0 /* SK_DROP */)
		return false;
	memset(out, 0, sizeof(*out));
	slot = rs_socket_slot(e->backend, e->family == AF_INET6);
	bpf_map_lookup_elem(g->working_fd, &slot, &working);
	k = key_of(e);
	if (!bpf_map_lookup_elem(g->flows_fd, &k, &flow) &&
	    flow.backend == e->backend && flow.cookie) {
		out->cookie = flow.cookie;
		out->recorded = true;
	} else {
		out->cookie = working;
	}
	if (!out->cookie)
		return false;
	out->working = out->cookie == working;
	m = find(g, out->cookie);
	if (!m && now_ns() - g->asked_ns >= REFRESH_NS) {
		ask_daemon(g);
		m = find(g, out->cookie);
	}
	if (m) {
		out->number = m->number;
		out->pid = m->pid;
	}
	return true;
}

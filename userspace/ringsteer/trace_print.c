// SPDX-License-Identifier: MIT
/*
 * One trace event on stdout: a line of text, or a JSON object on a line
 * (-j). Every event has the same leading columns (time, CPU, hook,
 * protocol, client -> address dialled, service, backend, reason); what
 * follows depends on the hook: steer_lookup's ring walk (owner, sticky
 * entry, point, hash, generation), steer_tc's fleet member or cookie
 * assignment, steer_sockops's counting and sticky entry.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "trace_print.h"

static const char *const reason_names[RS_TRACE_REASONS] = {
	[RS_TRACE_STICKY] = "sticky",
	[RS_TRACE_PRIMARY] = "primary",
	[RS_TRACE_SPILL] = "spill",
	[RS_TRACE_SPILL_LOAD] = "spill-load",
	[RS_TRACE_LEAST_LOADED] = "least-loaded",
	[RS_TRACE_NO_BACKEND] = "no-backend",
	[RS_TRACE_COOKIE_HIT] = "cookie-hit",
	[RS_TRACE_COOKIE_UNKNOWN] = "cookie-unknown",
	[RS_TRACE_COOKIE_DOWN] = "cookie-down",
	[RS_TRACE_FLEET_FORWARD] = "fleet-forward",
	[RS_TRACE_FLEET_RECEIVED] = "fleet-received",
	[RS_TRACE_FLEET_SECOND_CHANCE] = "fleet-second-chance",
	[RS_TRACE_FLEET_FORGED] = "fleet-forged",
	[RS_TRACE_FLEET_UNAUTH] = "fleet-unauthenticated",
	[RS_TRACE_FLEET_HOP_LIMIT] = "fleet-hop-limit",
	[RS_TRACE_ESTABLISHED] = "established",
	[RS_TRACE_CLOSED] = "closed",
	[RS_TRACE_HELD] = "held",
};

static const char *const skip_names[] = {
	[RS_TRACE_SKIP_NONE] = NULL,
	[RS_TRACE_SKIP_DOWN] = "down",
	[RS_TRACE_SKIP_DRAIN] = "drained",
	[RS_TRACE_SKIP_NO_SOCKET] = "no-socket",
	[RS_TRACE_SKIP_BOUND] = "at-bound",
};

static const char *const hook_names[] = {
	[RS_TRACE_HOOK_LOOKUP] = "lookup",
	[RS_TRACE_HOOK_TC] = "tc",
	[RS_TRACE_HOOK_SOCKOPS] = "sockops",
};

#define N_HOOKS (sizeof(hook_names) / sizeof(hook_names[0]))

int trace_reason_of_name(const char *name)
{
	for (int r = 1; r < RS_TRACE_REASONS; r++)
		if (reason_names[r] && !strcmp(name, reason_names[r]))
			return r;
	return -1;
}

int trace_hook_of_name(const char *name)
{
	for (size_t h = 1; h < N_HOOKS; h++)
		if (!strcmp(name, hook_names[h]))
			return (int)h;
	return -1;
}

const char *trace_reason_names(void)
{
	static char list[512];

	if (!list[0])
		for (int r = 1; r < RS_TRACE_REASONS; r++)
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list), "%s%s",
				 r > 1 ? ", " : "", reason_names[r]);
	return list;
}

static const char *reason_of(__u8 r)
{
	return r < RS_TRACE_REASONS && reason_names[r] ? reason_names[r] : "?";
}

static const char *skip_of(__u8 s)
{
	return s < sizeof(skip_names) / sizeof(skip_names[0]) ? skip_names[s]
							      : "?";
}

static const char *hook_of(__u8 h)
{
	return h < N_HOOKS && hook_names[h] ? hook_names[h] : "?";
}

static const char *name_of(char *const *names, size_t n, __u32 id)
{
	if (id == RS_NONE)
		return NULL;
	return id < n && names[id] ? names[id] : "?";
}

static bool is_fleet(__u8 r)
{
	return r >= RS_TRACE_FLEET_FORWARD && r <= RS_TRACE_FLEET_HOP_LIMIT;
}

static void addr_str(__u8 family, const __u8 *a, char *buf, size_t len)
{
	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, a, buf,
		       (socklen_t)len))
		snprintf(buf, len, "?");
}

static void wall_time(const struct trace_view *v, __u64 ts, char *buf,
		      size_t len)
{
	int64_t real = (int64_t)ts + v->mono_to_real;
	time_t secs = (time_t)(real / 1000000000);
	struct tm tm;

	localtime_r(&secs, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%06d", tm.tm_hour, tm.tm_min,
		 tm.tm_sec, (int)(real % 1000000000 / 1000));
}

static const char *proto_of(__u8 p)
{
	return p == IPPROTO_UDP ? "udp" : p == IPPROTO_TCP ? "tcp" : "ip";
}

/* The socket generation of a generations service's datagram. */
static json_t *sock_json(const struct trace_sock *s)
{
	json_t *o = json_pack(
		"{s:I, s:s, s:b}", "cookie", (json_int_t)s->cookie, "state",
		s->working ? "working" : "old", "recorded", s->recorded);

	if (o && s->number)
		json_object_set_new(o, "generation",
				    json_integer((json_int_t)s->number));
	if (o && s->pid)
		json_object_set_new(o, "pid", json_integer(s->pid));
	return o;
}

static void text_sock(const struct trace_sock *s)
{
	if (s->number)
		printf(" socket-gen %" PRIu64, s->number);
	else
		printf(" socket-gen ?");
	if (s->pid)
		printf(" pid %d", s->pid);
	printf(" cookie %" PRIu64 " %s%s", s->cookie,
	       s->working ? "working" : "old",
	       s->recorded ? "" : " unrecorded");
}

/* What only some hooks' events carry, added to @o. */
static void json_extras(json_t *o, const struct rs_trace_event *e)
{
	if (e->skip == RS_TRACE_SKIP_BOUND) {
		json_object_set_new(o, "load", json_integer(e->load));
		json_object_set_new(o, "bound", json_integer(e->bound));
	}
	if (is_fleet(e->reason) && e->member != RS_NONE)
		json_object_set_new(o, "member", json_integer(e->member));
	if (e->reason == RS_TRACE_COOKIE_HIT)
		json_object_set_new(
			o, "assigned",
			json_boolean(e->flags & RS_TRACE_F_ASSIGNED));
	if (e->reason == RS_TRACE_ESTABLISHED) {
		json_object_set_new(
			o, "counted",
			json_boolean(e->flags & RS_TRACE_F_COUNTED));
		json_object_set_new(
			o, "sticky_written",
			json_boolean(e->flags & RS_TRACE_F_STICKY_SET));
	}
}

static void print_json(const struct trace_view *v,
		       const struct rs_trace_event *e, const char *when,
		       const char *client, const char *local)
{
	json_t *o = json_pack(
		"{s:I, s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:s?, "
		"s:s?, s:s, s:s?, s:s?, s:s?, s:i, s:s, s:I, s:s}",
		"ts_ns", (json_int_t)e->ts_ns, "time", when, "cpu", (int)e->cpu,
		"hook", hook_of(e->hook), "family",
		e->family == AF_INET6 ? "ipv6" : "ipv4", "protocol",
		proto_of(e->protocol), "client", client, "client_port",
		e->client_port, "local", local, "local_port", e->local_port,
		"service", name_of(v->svc_names, RS_MAX_SERVICES, e->service),
		"backend", name_of(v->be_names, RS_MAX_BACKENDS, e->backend),
		"reason", reason_of(e->reason), "primary",
		name_of(v->be_names, RS_MAX_BACKENDS, e->primary), "sticky",
		name_of(v->be_names, RS_MAX_BACKENDS, e->sticky), "skip",
		skip_of(e->skip), "point", (int)e->point, "hash", "",
		"generation", (json_int_t)e->generation, "verdict",
		e->verdict == 0 /* SK_DROP */ ? "drop" : "pass");
	char hash[24];

	if (!o)
		return;
	snprintf(hash, sizeof(hash), "0x%016" PRIx64, (uint64_t)e->hash);
	json_object_set_new(o, "hash", json_string(hash));
	json_extras(o, e);
	if (v->sock)
		json_object_set_new(o, "socket", sock_json(v->sock));
	json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(o);
}

/* steer_lookup's: owner, sticky entry, load, point, hash, generation. */
static void text_lookup(const struct trace_view *v,
			const struct rs_trace_event *e)
{
	const char *owner = name_of(v->be_names, RS_MAX_BACKENDS, e->primary);
	const char *sticky = name_of(v->be_names, RS_MAX_BACKENDS, e->sticky);
	const char *skip = skip_of(e->skip);

	if (sticky && e->reason != RS_TRACE_STICKY)
		printf(" (sticky %s %s)", sticky, skip ?: "");
	else if (owner && e->backend != e->primary && skip)
		printf(" (owner %s %s)", owner, skip);
	else if (owner && e->backend != e->primary)
		printf(" (owner %s)", owner);
	if (e->skip == RS_TRACE_SKIP_BOUND)
		printf(" load %u bound %u", e->load, e->bound);
	if (e->reason == RS_TRACE_NO_BACKEND)
		printf(" fallback %s", e->verdict == 0 ? "drop" : "pass");
	printf(" point %u hash 0x%016" PRIx64 " gen %" PRIu64, e->point,
	       (uint64_t)e->hash, (uint64_t)e->generation);
}

/*
 * 10:04:05.123456 cpu1 lookup tcp 198.18.1.7:40001 -> 198.18.0.10:80 web
 *   cache-b spill (owner cache-a drained) point 812 hash 0x.. gen 3
 * 10:04:05.123601 cpu1 sockops tcp ... web cache-b established counted
 * 10:04:05.150000 cpu0 lookup udp ... dns d-1 primary point 3 hash 0x..
 *   gen 1 socket-gen 2 pid 5265 cookie 162961 working
 * 10:04:05.200000 cpu0 tc tcp ... web - fleet-forward member 2
 */
static void print_text(const struct trace_view *v,
		       const struct rs_trace_event *e, const char *when,
		       const char *client, const char *local)
{
	bool v6 = e->family == AF_INET6;

	printf("%s cpu%u %s %s %s%s%s:%u -> %s%s%s:%u %s %s %s", when, e->cpu,
	       hook_of(e->hook), proto_of(e->protocol), v6 ? "[" : "", client,
	       v6 ? "]" : "", e->client_port, v6 ? "[" : "", local,
	       v6 ? "]" : "", e->local_port,
	       name_of(v->svc_names, RS_MAX_SERVICES, e->service) ?: "?",
	       name_of(v->be_names, RS_MAX_BACKENDS, e->backend) ?: "-",
	       reason_of(e->reason));
	if (e->hook == RS_TRACE_HOOK_LOOKUP)
		text_lookup(v, e);
	if (v->sock)
		text_sock(v->sock);
	if (is_fleet(e->reason) && e->member != RS_NONE)
		printf(" member %u", e->member);
	if (e->reason == RS_TRACE_COOKIE_HIT)
		printf(e->flags & RS_TRACE_F_ASSIGNED ? " assigned"
						      : " not-assigned");
	if (e->flags & RS_TRACE_F_COUNTED)
		printf(" counted");
	if (e->flags & RS_TRACE_F_STICKY_SET)
		printf(" sticky-written");
	putchar('\n');
}

void trace_print(const struct trace_view *v, const struct rs_trace_event *e)
{
	char when[32], client[INET6_ADDRSTRLEN], local[INET6_ADDRSTRLEN];

	wall_time(v, e->ts_ns, when, sizeof(when));
	addr_str(e->family, e->client, client, sizeof(client));
	addr_str(e->family, e->local, local, sizeof(local));
	if (v->json)
		print_json(v, e, when, client, local);
	else
		print_text(v, e, when, client, local);
}

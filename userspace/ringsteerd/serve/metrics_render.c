// SPDX-License-Identifier: MIT
/*
 * The Prometheus exposition text (metrics.h: metrics_render()): the
 * daemon's counters, then one renderer per subject (services, backends,
 * TC, fleet, trace). It reads the daemon's state and views and writes
 * nothing; metrics.c serves what it returns.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringsteer/version.h>

#include "generations.h"
#include "addr.h"
#include "all_out.h"
#include "backend_socket.h"
#include "control_cmds.h"
#include "fleet.h"
#include "generations.h"
#include "log.h"
#include "metrics.h"
#include "state.h"
#include "view.h"

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL,
			      b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 16384) + (size_t)n;
		char *q = realloc(b->p, cap);

		if (!q)
			return;
		b->p = q;
		b->cap = cap;
	}
}

static void help(struct buf *b, const char *name, const char *type,
		 const char *text)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* Sockets refused on @be's addresses, or (@taken) taken there. */
static double addr_count(const struct be_rt *be, bool taken)
{
	double n = 0;

	for (size_t a = 0; a < RS_MAX_BACKEND_ADDRS; a++)
		n += (double)(taken ? be->sock.addr[a].taken
				    : be->sock.addr[a].refused);
	return n;
}

/*
 * generations = on: each backend's sockets, and the flows recorded on each
 * (as of the last sweep, every 5 s), by its cookie and whether it is the
 * working one.
 */
static void generation_metrics(struct daemon *d, struct buf *b)
{
	help(b, "ringsteer_backend_generations", "gauge",
	     "Sockets of different processes on the backend's addresses "
	     "(generations = on): the working one and those draining.");
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];
		size_t n = 0;

		if (!generations_on(&d->st.cfg, bc))
			continue;
		for (size_t a = 0; a < bc->n_addrs; a++)
			n += d->st.bes[i].sock.addr[a].n_gen;
		put(b,
		    "ringsteer_backend_generations{service=\"%s\",backend="
		    "\"%s\"} %zu\n",
		    d->st.cfg.services[bc->service].name, bc->name, n);
	}
	help(b, "ringsteer_udp_flows", "gauge",
	     "UDP flows recorded on a generation of the backend (its socket "
	     "cookie), as of the last sweep.");
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct rs_backend_conf *bc = &d->st.cfg.backends[i];

		if (!generations_on(&d->st.cfg, bc))
			continue;
		for (size_t a = 0; a < bc->n_addrs; a++) {
			const struct rs_addr_rt *r = &d->st.bes[i].sock.addr[a];

			for (size_t g = 0; g < r->n_gen; g++)
				put(b,
				    "ringsteer_udp_flows{service=\"%s\","
				    "backend=\"%s\",cookie=\"%llu\","
				    "generation=\"%s\"} %llu\n",
				    d->st.cfg.services[bc->service].name,
				    bc->name,
				    (unsigned long long)r->gen_cookies[g],
				    g + 1 == r->n_gen ? "working" : "draining",
				    (unsigned long long)generations_flows(
					    d->st.bes[i].id,
					    r->gen_cookies[g]));
		}
	}
}

static void backend_metrics(struct daemon *d, struct buf *b)
{
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{"ringsteer_backend_assigned_total", "counter",
		 "Connections and datagrams handed to the backend."},
		{"ringsteer_backend_sticky_hits_total", "counter",
		 "Assignments made by the sticky table."},
		{"ringsteer_backend_spills_total", "counter",
		 "Assignments where the backend was not the primary owner."},
		{"ringsteer_backend_cookie_hits_total", "counter",
		 "Assignments made by a QUIC connection-ID cookie."},
		{"ringsteer_backend_up", "gauge",
		 "1 when the backend takes new clients (state UP, with a "
		 "socket)."},
		{"ringsteer_backend_state", "gauge",
		 "Data-plane state, one series per state, 1 for the current."},
		{"ringsteer_backend_health", "gauge",
		 "1 when the backend passes its health checks."},
		{"ringsteer_backend_weight", "gauge", "Weight in force."},
		{"ringsteer_backend_active_points", "gauge",
		 "Ring points taking new clients (slow start ramps this)."},
		{"ringsteer_backend_share", "gauge",
		 "Fraction of the service's hash space it owns now."},
		{"ringsteer_backend_check_latency_seconds", "gauge",
		 "Duration of the last health check."},
		{"ringsteer_backend_checks_total", "counter",
		 "Health checks run."},
		{"ringsteer_backend_active_connections", "gauge",
		 "Established steered TCP connections it holds now."},
		{"ringsteer_backend_load_bound", "gauge",
		 "Connections it may hold before new ones spill "
		 "(balance_factor; "
		 "absent when off)."},
		{"ringsteer_backend_load_spills_total", "counter",
		 "New connections it owned and passed on at its bound."},
		{"ringsteer_backend_uncounted_connections", "gauge",
		 "Of its active connections, those that predate the kernel's "
		 "counting, found by the daemon with sock_diag."},
		{"ringsteer_backend_sockets_refused_total", "counter",
		 "Sockets of another user than its owner found on its "
		 "addresses and not taken."},
		{"ringsteer_backend_sockets_taken_total", "counter",
		 "Sockets taken on its addresses since the daemon started (a "
		 "restart or handover of the backend takes one more)."},
		{"ringsteer_backend_restarting", "gauge",
		 "1 while its socket is gone and its UDP flows wait for it "
		 "(restart_grace)."},
	};
	static const char *const states[] = {"DOWN", "UP", "DRAIN"};

	struct backend_view *views;

	/*
	 * Counters, words and shares once per scrape, not once per metric
	 * name: shares walk the whole ring.
	 */
	views = calloc(d->st.cfg.n_backends ? d->st.cfg.n_backends : 1,
		       sizeof(*views));
	if (!views)
		return;
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		double lost, *shares = service_shares(d, s, &lost);

		for (size_t i = 0; i < d->st.cfg.n_backends; i++)
			if (d->st.cfg.backends[i].service == s)
				backend_view_get(d, i, shares, &views[i]);
		free(shares);
	}
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		help(b, m[k].name, m[k].type, m[k].help);
		for (size_t s = 0; s < d->st.cfg.n_services; s++) {
			for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
				const struct be_rt *be = &d->st.bes[i];
				const struct backend_view *vp = &views[i];
				char lbl[256];
				double val = 0;

				if (d->st.cfg.backends[i].service != s)
					continue;
				snprintf(lbl, sizeof(lbl),
					 "service=\"%s\",backend=\"%s\"",
					 d->st.cfg.services[s].name,
					 d->st.cfg.backends[i].name);
				switch (k) {
				case 0:
					val = vp->stats.assigned;
					break;
				case 1:
					val = vp->stats.sticky_hits;
					break;
				case 2:
					val = vp->stats.spills;
					break;
				case 3:
					val = vp->stats.cookie_hits;
					break;
				case 4:
					val = vp->word.state == RS_BACKEND_UP &&
					      vp->serving;
					break;
				case 5:
					for (int st = 0; st < 3; st++)
						put(b,
						    "%s{%s,state=\"%s\"} %d\n",
						    m[k].name, lbl, states[st],
						    (int)vp->word.state == st);
					continue;
				case 6:
					val = be->health.up;
					break;
				case 7:
					val = be->weight;
					break;
				case 8:
					val = vp->word.active_points;
					break;
				case 9:
					val = vp->share;
					break;
				case 10:
					val = be->health.last_latency_ms /
					      1000.0;
					break;
				case 11:
					val = (double)be->health.checks;
					break;
				case 12:
					val = (double)vp->active;
					break;
				case 13:
					if (vp->bound == RS_LOAD_UNBOUNDED)
						continue;
					val = (double)vp->bound;
					break;
				case 14:
					val = (double)vp->stats.load_spills;
					break;
				case 15:
					val = be->uncounted;
					break;
				case 16:
				case 17:
					val = addr_count(be, k == 17);
					break;
				default:
					val = view_restarting(&d->st, be,
							      ev_now(d->loop));
					break;
				}
				put(b, "%s{%s} %.17g\n", m[k].name, lbl, val);
			}
		}
	}
	free(views);
}

/*
 * The figures cache operators watch: connections held now, and how often
 * affinity held (sticky hits over lookups since the counters began; over
 * a window it is rate(sticky_hits) / rate(lookups)).
 */
static void service_affinity_metrics(struct daemon *d, struct buf *b,
				     const struct rs_service_stats *st)
{
	help(b, "ringsteer_service_active_connections", "gauge",
	     "Established steered TCP connections of the service now.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		int64_t active = 0;

		dp_service_load(&d->dp, d->st.svcs[s].id, &active);
		put(b,
		    "ringsteer_service_active_connections{service=\"%s\"} "
		    "%lld\n",
		    d->st.cfg.services[s].name, (long long)active);
	}
	help(b, "ringsteer_load_unattributed_connections", "gauge",
	     "Connections to service addresses that predate the counting "
	     "and belong to no backend's process (in no gauge).");
	put(b, "ringsteer_load_unattributed_connections %u\n",
	    d->load.unattributed);
	help(b, "ringsteer_service_affinity_hit_ratio", "gauge",
	     "Sticky-table hits over lookups since the counters began.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		__u64 hits = 0;

		for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
			struct rs_backend_stats bs;

			if (d->st.cfg.backends[i].service != s ||
			    dp_backend_stats(&d->dp, d->st.bes[i].id, &bs))
				continue;
			hits += bs.sticky_hits;
		}
		put(b,
		    "ringsteer_service_affinity_hit_ratio{service=\"%s\"} "
		    "%.17g\n",
		    d->st.cfg.services[s].name,
		    st[s].lookups ? (double)hits / (double)st[s].lookups : 0.0);
	}
}

static void service_metrics(struct daemon *d, struct buf *b)
{
	static const char *const names[] = {
		"lookups",     "no_backend",	   "errors",
		"walk_limit",  "cookie_none",	   "cookie_unknown",
		"cookie_down", "cookie_malformed", "reassigned",
		"held",	       "gen_draining",	   "gen_handovers",
		"flows_full",
	};
	static const char *const helps[] = {
		"sk_lookup runs that matched the service.",
		"Lookups with no backend available (fallback applied).",
		"Sockets the kernel refused to assign.",
		"Walks that gave up after the walk bound.",
		"QUIC packets without a usable cookie (Initial, 0-RTT, not "
		"QUIC).",
		"QUIC cookies naming no known server ID or config.",
		"QUIC cookies of a backend that is down or without a socket.",
		"Malformed or truncated packets on a cookie service.",
		"Connections not sent where the client's affinity named (live "
		"sticky entry, else ring owner): the reassignment rate is "
		"rate(this) / rate(lookups).",
		"Datagrams dropped while their backend's socket was gone, "
		"within restart_grace (held for it, not sent elsewhere).",
		"Datagrams of flows recorded on a draining generation (an "
		"older socket of their backend), delivered to it.",
		"Recorded flows whose generation closed, moved to their "
		"backend's working socket.",
		"New flows of a generations service not recorded: the flow "
		"table (flow_table) was full. They go to the working socket.",
	};

	struct rs_service_stats *st;

	_Static_assert(sizeof(names) / sizeof(names[0]) ==
			       sizeof(struct rs_service_stats) / sizeof(__u64),
		       "one name per counter of struct rs_service_stats");
	st = calloc(d->st.cfg.n_services ? d->st.cfg.n_services : 1,
		    sizeof(*st));
	if (!st)
		return;
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		dp_service_stats(&d->dp, d->st.svcs[s].id, &st[s]);
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		char name[96];

		snprintf(name, sizeof(name), "ringsteer_service_%s_total",
			 names[k]);
		help(b, name, "counter", helps[k]);
		for (size_t s = 0; s < d->st.cfg.n_services; s++)
			put(b, "%s{service=\"%s\"} %llu\n", name,
			    d->st.cfg.services[s].name,
			    (unsigned long long)((__u64 *)&st[s])[k]);
	}
	service_affinity_metrics(d, b, st);
	free(st);
	help(b, "ringsteer_ring_generation", "gauge",
	     "Generation of the installed ring.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		put(b, "ringsteer_ring_generation{service=\"%s\"} %llu\n",
		    d->st.cfg.services[s].name,
		    (unsigned long long)d->st.svcs[s].generation);
	help(b, "ringsteer_ring_rebuilds_total", "counter",
	     "Ring rebuilds and swaps by this daemon.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		put(b, "ringsteer_ring_rebuilds_total{service=\"%s\"} %llu\n",
		    d->st.cfg.services[s].name,
		    (unsigned long long)d->st.svcs[s].rebuilds);
	help(b, "ringsteer_ring_points", "gauge", "Points in the ring.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		put(b, "ringsteer_ring_points{service=\"%s\"} %u\n",
		    d->st.cfg.services[s].name, d->st.svcs[s].ring.npoints);
}

/* steer_tc on each configured interface (cookie services only). */
static void tc_metrics(struct daemon *d, struct buf *b)
{
	if (!d->tc.active)
		return;
	help(b, "ringsteer_tc_attached", "gauge",
	     "1 while steer_tc is attached at TC ingress of the interface.");
	for (size_t i = 0; i < d->tc.n; i++)
		put(b, "ringsteer_tc_attached{interface=\"%s\"} %d\n",
		    d->tc.ifs[i].name, d->tc.ifs[i].ifindex != 0);
	help(b, "ringsteer_tc_attaches_total", "counter",
	     "Attachments of steer_tc by this daemon (re-attachments after "
	     "the interface came back count).");
	for (size_t i = 0; i < d->tc.n; i++)
		put(b, "ringsteer_tc_attaches_total{interface=\"%s\"} %llu\n",
		    d->tc.ifs[i].name,
		    (unsigned long long)d->tc.ifs[i].attaches);
}

/* Fleet mode (docs/fleet.md): membership and steer_tc's fleet counters. */
static void fleet_metrics(struct daemon *d, struct buf *b)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{"forwarded", "Packets encapsulated to their owner host.",
		 offsetof(struct rs_fleet_stats, forwarded)},
		{"flow_hits",
		 "Of forwarded: sent to the owner the connection's SYN went "
		 "to.",
		 offsetof(struct rs_fleet_stats, flow_hits)},
		{"received", "Encapsulated packets taken in as the owner.",
		 offsetof(struct rs_fleet_stats, received)},
		{"second_chance",
		 "Packets without a connection here sent on to the previous "
		 "owner.",
		 offsetof(struct rs_fleet_stats, second_chance)},
		{"hop_limit",
		 "Encapsulated packets dropped: hop count out of "
		 "range.",
		 offsetof(struct rs_fleet_stats, hop_limit)},
		{"forged",
		 "Encapsulated packets dropped: not from a member or "
		 "malformed.",
		 offsetof(struct rs_fleet_stats, forged)},
		{"unauthenticated",
		 "Encapsulated packets dropped: from a member's address "
		 "without a valid tag under any fleet key of this host.",
		 offsetof(struct rs_fleet_stats, unauthenticated)},
		{"local_socket",
		 "Packets owned elsewhere kept here for a connection of this "
		 "host.",
		 offsetof(struct rs_fleet_stats, local_socket)},
		{"errors",
		 "Packets that could not be forwarded (steered here).",
		 offsetof(struct rs_fleet_stats, errors)},
		{"no_address6",
		 "IPv6 packets steered here: their owner or this host has "
		 "no address6.",
		 offsetof(struct rs_fleet_stats, no_address6)},
		{"stray",
		 "TCP packets without a connection here and nowhere left to "
		 "send them (the kernel resets them).",
		 offsetof(struct rs_fleet_stats, stray)},
		{"cookie_forwarded",
		 "Of forwarded: QUIC datagrams sent to the member whose "
		 "backend issued their connection ID.",
		 offsetof(struct rs_fleet_stats, cookie_forwarded)},
	};
	struct fleet_metrics fm;
	struct rs_fleet_stats st;
	char name[96];

	fleet_metrics_get(d, &fm);
	if (!fm.enabled)
		return;
	help(b, "ringsteer_fleet_etcd_up", "gauge",
	     "1 while etcd answers the fleet thread.");
	put(b, "ringsteer_fleet_etcd_up %d\n", fm.etcd_up);
	help(b, "ringsteer_fleet_table_version", "gauge",
	     "etcd revision of the installed fleet table.");
	put(b, "ringsteer_fleet_table_version %lld\n", (long long)fm.version);
	help(b, "ringsteer_fleet_agrees", "gauge",
	     "1 while the installed table is etcd's latest revision.");
	put(b, "ringsteer_fleet_agrees %d\n", fm.agrees);
	help(b, "ringsteer_fleet_members", "gauge", "Members in the table.");
	put(b, "ringsteer_fleet_members %u\n", fm.members);
	help(b, "ringsteer_fleet_table_swaps_total", "counter",
	     "Fleet tables installed by this daemon.");
	put(b, "ringsteer_fleet_table_swaps_total %llu\n",
	    (unsigned long long)fm.swaps);
	help(b, "ringsteer_fleet_cid_conflicts", "gauge",
	     "QUIC server IDs published by two members (neither gets their "
	     "packets by cookie).");
	put(b, "ringsteer_fleet_cid_conflicts %u\n", fm.cid_conflicts);
	help(b, "ringsteer_fleet_rejected_records", "gauge",
	     "Member records under the fleet prefix that were not believed "
	     "(ringsteer fleet status lists them with the reason).");
	put(b, "ringsteer_fleet_rejected_records %llu\n",
	    (unsigned long long)fm.rejected);
	help(b, "ringsteer_fleet_members_left_out", "gauge",
	     "Valid members the fleet table had no room for.");
	put(b, "ringsteer_fleet_members_left_out %llu\n",
	    (unsigned long long)fm.left_out);
	if (dp_fleet_stats(&d->dp, &st))
		return;
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		snprintf(name, sizeof(name), "ringsteer_fleet_%s_packets_total",
			 counters[i].name);
		help(b, name, "counter", counters[i].help);
		put(b, "%s %llu\n", name,
		    (unsigned long long)*(const __u64 *)((const char *)&st +
							 counters[i].off));
	}
}

/* `ringsteer trace`: events sent and lost (issue 24). */
static void trace_metrics(struct daemon *d, struct buf *b)
{
	struct rs_trace_cpu st = {0};

	if (dp_trace_stats(&d->dp, &st))
		return;
	help(b, "ringsteer_trace_events_total", "counter",
	     "Trace events the data plane wrote for ringsteer trace.");
	put(b, "ringsteer_trace_events_total %llu\n",
	    (unsigned long long)st.emitted);
	help(b, "ringsteer_trace_lost_events_total", "counter",
	     "Trace events lost: the ring buffer full (reason=full) or the "
	     "per-CPU rate limit (reason=rate).");
	put(b, "ringsteer_trace_lost_events_total{reason=\"full\"} %llu\n",
	    (unsigned long long)st.lost_full);
	put(b, "ringsteer_trace_lost_events_total{reason=\"rate\"} %llu\n",
	    (unsigned long long)st.lost_rate);
}

char *metrics_render(struct daemon *d)
{
	struct buf b = {0};

	help(&b, "ringsteer_build_info", "gauge",
	     "Version, commit and data-plane ABI of ringsteerd.");
	put(&b,
	    "ringsteer_build_info{version=\"%s\",commit=\"%s\",abi=\"%d\"} "
	    "1\n",
	    RS_VERSION, RS_COMMIT, RS_ABI_VERSION);
	help(&b, "ringsteer_reloads_total", "counter",
	     "Configuration reloads applied.");
	put(&b, "ringsteer_reloads_total %llu\n",
	    (unsigned long long)d->reloads);
	help(&b, "ringsteer_reload_failures_total", "counter",
	     "Configuration reloads refused.");
	put(&b, "ringsteer_reload_failures_total %llu\n",
	    (unsigned long long)d->reload_failures);
	help(&b, "ringsteer_forced_all_out_total", "counter",
	     "Operator actions and reloads forced through although they left "
	     "a service with no backend taking new connections.");
	put(&b, "ringsteer_forced_all_out_total %llu\n",
	    (unsigned long long)d->forced_all_out);
	help(&b, "ringsteer_socket_reconcile_passes_total", "counter",
	     "Passes that look for every backend's listening socket (one a "
	     "second, and after each reload).");
	put(&b, "ringsteer_socket_reconcile_passes_total %llu\n",
	    (unsigned long long)sockets_reconcile_passes());
	help(&b, "ringsteer_socket_diag_dumps_total", "counter",
	     "sock_diag dumps made to find backends' sockets: at most one per "
	     "family and protocol a pass, however many backends.");
	put(&b, "ringsteer_socket_diag_dumps_total %llu\n",
	    (unsigned long long)sock_diag_dumps());
	help(&b, "ringsteer_service_taking_backends", "gauge",
	     "Backends of the service that take new connections (UP, weight "
	     "above 0, with a socket); 0 is an all-out.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		put(&b,
		    "ringsteer_service_taking_backends{service=\"%s\"} %u\n",
		    d->st.cfg.services[s].name, service_takers(d, s));
	help(&b, "ringsteer_service_all_out", "gauge",
	     "1 while the service has backends but none takes new "
	     "connections.");
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		put(&b, "ringsteer_service_all_out{service=\"%s\"} %d\n",
		    d->st.cfg.services[s].name, service_all_out(d, s) ? 1 : 0);
	service_metrics(d, &b);
	backend_metrics(d, &b);
	generation_metrics(d, &b);
	tc_metrics(d, &b);
	fleet_metrics(d, &b);
	trace_metrics(d, &b);
	return b.p;
}

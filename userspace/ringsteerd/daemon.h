/* SPDX-License-Identifier: MIT */
/*
 * ringsteerd's runtime state: the configuration in force, what it knows of
 * every backend (socket, operator state, health, weight) and every service
 * (the ring installed), and the event loop that keeps them in line.
 */
#ifndef RS_DAEMON_H
#define RS_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

#include "checker.h"
#include "config.h"
#include "binds.h"
#include "sockets.h"
#include "rs_state.h"
#include "dataplane.h"
#include "health.h"
#include "ring.h"

struct daemon;
struct nl_sock;
struct control_server; /* control.c */
struct metrics_server; /* metrics.c */
struct fleet_rt;       /* fleet.c */
struct ring_cache;     /* ring_cache.h */
struct lookups_memo;   /* apply.c */

/* One `[global] interfaces` name and steer_tc's filter on it. */
struct tc_iface {
	char name[RS_IFNAME_MAX];
	int ifindex;  /* where our filter is; 0 = not attached (yet) */
	int last_err; /* last attach failure, logged once per value */
	bool reported_missing;
	uint64_t attaches; /* attachments by this daemon (re-attach counts) */
	/* The program an upgrade replaced here, until it retires; or -1. */
	int retiring_prog_fd;
};

/* The TC side: loaded and attached while any service has cookie = quic. */
struct tc_state {
	bool active;
	struct tc_iface ifs[RS_MAX_INTERFACES];
	size_t n;
	struct nl_sock *nl; /* NETLINK_ROUTE, RTNLGRP_LINK: links come and go */
	ev_io io;
	/*
	 * The sockets map of the data plane an upgrade retires (upgrade.c):
	 * its filters are replaced in place, not refused as foreign. 0: none.
	 */
	uint32_t retiring_map_id;
};

struct daemon {
	const char *config_path;
	struct rs_state st;
	struct rs_dataplane dp;
	struct rs_checker checker;
	struct ev_loop *loop;
	ev_timer reconcile;
	ev_timer ramp;
	ev_timer load_check;	   /* load_reconcile.c */
	ev_timer load_flows;	   /* load_flows.c */
	ev_timer restart_watch;	   /* restart_watch.c */
	size_t restart_watch_next; /* where its next pass starts */
	struct load_report {
		uint64_t passes;
		uint32_t uncounted;    /* predating connections attributed */
		uint32_t unattributed; /* predating, owner not a backend */
		/*
		 * sockops_cgroup = auto: counted connections in cgroups no
		 * listener is in hold steer_sockops wider than the listeners
		 * need; passes come faster until they are gone.
		 */
		bool held_wide;
		int last_err;
	} load;
	ev_signal sig_term, sig_int, sig_hup;
	ev_tstamp started;
	uint64_t reloads, reload_failures;
	uint64_t forced_all_out; /* all-outs forced by the operator */
	bool detach_requested;
	struct control_server *control;
	struct metrics_server *metrics;
	struct fleet_rt *fleet; /* NULL: fleet mode off */
	/* Client caps in force, from fd_budget.c (0: not computed yet). */
	uint32_t control_clients_max, metrics_clients_max;
	/*
	 * Control clients connected now, kept by control.c: fd_budget.c
	 * reads it (the control commands call the budget, so it must not
	 * call back into the server).
	 */
	unsigned int control_open;
	struct tc_state tc;
	struct rs_pins_lock pins_lock; /* guard.c: one daemon per bpffs */
	/* apply/rings.c: the last full ring of each service id (ring_cache.h).
	 */
	struct ring_cache *ring_cache;
	/* Full rings made so far, by how (enum ring_cache_how). */
	uint64_t rings_made[3];
	/* Services a reload left as they were (apply_config()). */
	uint64_t rings_untouched;
	/* apply.c: what rs_binds and rs_cookies were last written with. */
	struct lookups_memo *lookups;
	uint64_t lookups_written; /* tables written, rs_binds or rs_cookies */
};

/*
 * apply.c (start-up and reload), sockets.c, apply/rings.c. @up: what an upgrade
 * from another ABI carries over (upgrade.h), or NULL.
 */
struct upgrade;
int daemon_start(struct daemon *d, const struct upgrade *up);
/* @force: even if it leaves a service all-out (all_out.c). */
int daemon_reload(struct daemon *d, bool force, char *err, size_t errlen);
void daemon_stop(struct daemon *d);
void daemon_reconcile_sockets(struct daemon *d);
/* guard.c, once a second: pin again what was unpinned under us. */
void daemon_check_pins(struct daemon *d);
/* A trace left on by a tracer that died: off (trace_reaper.c). */
void daemon_trace_reap(struct daemon *d);

/*
 * Operator actions. Return 0, -ENOENT (no such backend), -EINVAL (bad
 * weight), -E2BIG (a ring over the maximum) or -EBUSY (the service would
 * be left with no backend that takes new connections, without @force),
 * the last two with @why. Effective at once: a state-word update, or a
 * rebuild and swap when a weight rises above the built one.
 */
int daemon_set_op(struct daemon *d, const char *backend, enum rs_op_state op,
		  bool force, char *why, size_t whylen);
int daemon_set_weight(struct daemon *d, const char *backend, uint32_t weight,
		      bool force, char *why, size_t whylen);
/* Rebuild and swap @service's ring even if nothing changed. */
int daemon_rebuild(struct daemon *d, const char *service);

int daemon_find_backend(const struct daemon *d, const char *name);
int daemon_find_service(const struct daemon *d, const char *name);

/* The backend's data-plane word as the daemon computes it now. */
void daemon_backend_word(const struct daemon *d, const struct be_rt *be,
			 struct rs_backend *out);
/* The walk's view of @svc: backends by id, socket presence. */
int daemon_ring_view(const struct daemon *d, struct rs_backend **backends,
		     bool **has_socket, uint32_t *n);

/*
 * tc.c: load steer_tc and keep it attached at TC ingress of every
 * configured interface while daemon_tc_wanted() (links that come and go
 * are followed through rtnetlink); remove our filters where they are no
 * longer wanted. Called at start and after each reload.
 */
int daemon_tc_apply(struct daemon *d);
/* Whether @cfg needs steer_tc: a cookie = quic or a fleet service. */
bool daemon_tc_wanted(const struct rs_config *cfg);
/* Once a second: re-attach where our filter went missing. */
void daemon_tc_check(struct daemon *d);
/* Stop watching links; the filters stay attached. */
void daemon_tc_stop(struct daemon *d);
/*
 * --detach: remove our filters from the configured interfaces (missing
 * ones are fine) and from any other interface of the namespace where a
 * filter uses the maps pinned under cfg->bpffs. Before the pins go.
 */
int daemon_tc_detach(const struct rs_config *cfg);
/*
 * Our filter removed from every interface @cfg does not configure where
 * its program uses the sockets map @map_id (0: nothing is done).
 */
void daemon_tc_detach_elsewhere(const struct rs_config *cfg, uint32_t map_id);

const char *rs_op_state_name(enum rs_op_state op);
const char *rs_backend_state_name(uint32_t state);

#endif /* RS_DAEMON_H */

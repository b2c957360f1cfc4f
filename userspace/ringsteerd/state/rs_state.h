/* SPDX-License-Identifier: MIT */
/*
 * The daemon's desired state (struct rs_state) and what it holds per
 * service, backend and backend address: the types the pure view
 * (view.c), the writer and the event sources share. No behaviour here.
 */
#ifndef RS_STATE_TYPES_H
#define RS_STATE_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ev.h>

#include "checker.h"
#include "config.h"
#include "dataplane.h"
#include "health.h"
#include "ring.h"

struct daemon;

/* What ringsteerd knows about the socket on one backend address. */
/* Sockets of one address a generations service steers to at once. */
#define RS_ADDR_GENERATIONS 8

struct rs_addr_rt {
	bool has_socket;
	bool reported_missing; /* "not listening" logged once, not per retry */
	uint64_t cookie;
	pid_t owner;
	bool reuseport;	    /* the socket has SO_REUSEPORT (kernel.c cares) */
	uint64_t cgroup_id; /* its cgroup2 id, where its children run */
	/* The SOCKMAP slots that hold this socket, to check without a dump. */
	uint32_t slots[2];
	size_t nslots;
	/*
	 * Who serves on this address: the user of the socket in the slots,
	 * and, once a socket was taken (trust on first use), the only user
	 * whose socket is taken here unless the backend names its owner.
	 */
	bool uid_known;
	uint32_t uid;
	/* Sockets of another user found here and refused; the last one's. */
	uint64_t refused;
	uint64_t refused_cookie;
	uint32_t refused_uid;
	/*
	 * restart_grace (view_held_slots()): the slots, as held_slots
	 * (bit 0 IPv4, bit 1 IPv6), that this address's last socket filled,
	 * and since when (the loop's clock) it has been gone; 0 while it is
	 * there or before any was taken.
	 */
	uint32_t held_mask;
	double gone_since;
	/* Sockets taken here since the start (a restart takes one more). */
	uint64_t taken;
	double taken_at; /* the last one, on the loop's clock */
	/*
	 * generations = on (generations.c): the sockets in rs_gen_sockets,
	 * oldest first, the last the working one (also in cookie), and
	 * their holders.
	 */
	uint64_t gen_cookies[RS_ADDR_GENERATIONS];
	pid_t gen_pids[RS_ADDR_GENERATIONS];
	/*
	 * Each one's number: the order this daemon first saw the address's
	 * sockets in, from 1, so that a generation keeps its number while
	 * older ones go (`ringsteer backends`, `ringsteer trace`).
	 */
	uint64_t gen_numbers[RS_ADDR_GENERATIONS];
	uint64_t gen_seen;
	size_t n_gen;
};

struct rs_backend_rt {
	struct rs_addr_rt addr[RS_MAX_BACKEND_ADDRS];
};

struct be_rt {
	struct daemon *d;
	size_t idx;  /* in d->st.cfg.backends */
	uint32_t id; /* data-plane backend id */
	struct rs_backend_rt sock;
	bool has_socket;
	enum rs_op_state op;
	struct rs_health health;
	struct rs_check check;
	/* reload.c: the next check of a carried schedule, in ms from start. */
	bool check_carried;
	uint32_t check_due_ms;
	ev_tstamp up_since; /* slow start reference; 0 = not ramping */
	uint32_t weight;    /* in force: config, or operator's override */
	bool weight_override;
	uint32_t built_points; /* this backend's points in the installed ring */
	/* Gauge share for connections no program counted (load_reconcile.c). */
	uint32_t uncounted;
	/* Its listener is outside [global] sockops_cgroup (load_reconcile.c).
	 */
	bool outside_sockops;
	struct rs_backend pushed; /* last written to rs_backends */
	bool pushed_valid;
	/* A reload changed its addresses: its old sockets leave at apply. */
	bool addrs_changed;
	/*
	 * has_socket says nothing yet: no lookup since the backend was made
	 * (new in a reload, or its addresses changed); sockets_reconcile_all()
	 * makes one when the state is applied.
	 */
	bool socket_unknown;
};

struct svc_rt {
	uint32_t id;
	struct rs_ring ring; /* as installed */
	uint64_t generation;
	bool compact; /* built without unusable backends (walk bound) */
	/* Installed without the flat table (older daemon): reinstall it. */
	bool needs_table;
	uint64_t rebuilds;
	/* The serial of the cached full ring it was made from (0: none). */
	uint64_t full_serial;
	/* The operator forced it all-out (all_out.c); shown while it lasts. */
	bool all_out_forced;
};

/*
 * What the daemon wants in force: the configuration, and per service and
 * backend what it knows at run time (operator state, health, weight,
 * sockets, the ring installed). The only thing a reload copies: the
 * new state is built beside the one in force, applied, and then either
 * replaces it or is thrown away (rollback).
 */
struct rs_state {
	struct rs_config cfg;
	struct svc_rt *svcs; /* parallel to cfg.services */
	struct be_rt *bes;   /* parallel to cfg.backends */
	/*
	 * The daemon is stopping: nothing will end a restart_grace, so no
	 * slot is held (view_held_slots()); the writer's last words clear
	 * the held bits. Never set in a state a reload builds.
	 */
	bool stopping;
};

#endif /* RS_STATE_TYPES_H */

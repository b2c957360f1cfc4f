/* SPDX-License-Identifier: MIT */
/*
 * The loaded data plane: the sk_lookup program, its pinned maps and its
 * pinned netns link. Everything lives under one bpffs directory so a daemon
 * restart, the CLI and bpftool all see the same state.
 */
#ifndef RS_DATAPLANE_H
#define RS_DATAPLANE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ringsteer/abi.h>

#include "quic_cid.h"
#include "ring.h"

#define RS_LINK_PIN_NAME	 "steer_lookup_link"
#define RS_SOCKOPS_LINK_PIN_NAME "steer_sockops_link"

struct steer_lookup_bpf;
struct steer_tc_bpf;
struct steer_tc_kfunc_bpf;
struct steer_sockops_bpf;

struct rs_dataplane {
	struct steer_lookup_bpf *skel;
	/* Loaded only for cookie services: one of the two (dataplane_tc.c). */
	struct steer_tc_bpf *tc_skel;	     /* software AES for QUIC-LB */
	struct steer_tc_kfunc_bpf *tc_kskel; /* the kernel's crypto kfuncs */
	char tc_cipher_note[160];	     /* why the software AES, if so */
	/* The keys behind tc_kskel's crypto contexts (to write only changes).
	 */
	uint8_t (*tc_keys)[16];
	char root[PATH_MAX];
	int link_fd;
	bool adopted_link; /* an existing pinned link was updated, not created
			    */
	struct steer_sockops_bpf *sockops_skel;
	int sockops_link_fd; /* cgroup link of steer_sockops, or -1 */
	bool adopted_sockops_link;
	/* Where it is attached ([global] sockops_cgroup), and that id. */
	char sockops_cgroup[PATH_MAX];
	/* sockops_cgroup = auto: it follows the backends' listeners. */
	bool sockops_auto;
	/* Where a cgroup2 mount of our own may go for a moment. */
	char sockops_run_dir[PATH_MAX];
	uint64_t sockops_cgroup_id; /* 0: not attached */
	/* rs_backend_load, rs_service_load mapped (dataplane_load.c). */
	void *load_mem[2];
	size_t load_len[2];
	/* Each service's spare ring map (dataplane_ring_spare.c). */
	struct dp_rings *rings;
};

/*
 * ---- injected failures (dataplane_faults.c), for tests ----
 * @spec: "SITE:N[,SITE:N]...": the Nth write at SITE from now fails with
 * -ENOMEM. Sites: rs_backends, rs_services (word and entry writes), ring
 * (a ring swap), ring_spare (taking a spare ring map: a fresh one is
 * made instead), sticky (a sticky table's creation), binds, cookies.
 */
int dp_faults_arm(const char *spec);
/*
 * The test hook of docs/architecture.md ("Reloads"): with
 * $RINGSTEER_TEST_FAULTS naming a file, the faults it lists are armed;
 * without the variable this reads nothing. The daemon arms them for the
 * writes of a reload and of an operator action, never for their undoing.
 */
void dp_faults_arm_from_env(void);
void dp_faults_disarm(void);
/* 0, or -ENOMEM when an armed failure for @site is due now. */
int dp_fault(const char *site);

/* ---- sizing (dataplane_sizing.c) ---- */

/*
 * The maps whose size depends on the configuration: without [fleet],
 * the fleet's tables (rs_fleet_flows, rs_fleet_peers, rs_fleet_sip) get
 * one entry each instead of the 34 MiB fleet mode needs. @fleet: the
 * configuration has a [fleet] section. Set once,
 * before the first dp_open() or dp_pins_probe(), which then create, and
 * expect pinned, maps of those sizes; the default is fleet mode's.
 */
void dp_size_for(bool fleet);
bool dp_sized_for_fleet(void);
/*
 * The generations' flow table (rs_udp_flows): @flow_table entries, 0 when
 * no service has generations (then it and rs_gen_sockets get one entry).
 * Set like dp_size_for(); the default is RS_GEN_FLOWS_DEFAULT.
 */
void dp_size_flows(uint32_t flow_table);
uint32_t dp_sized_flows(void);
/* Before loading @obj: its configured sizes. 0 or a negative errno. */
struct bpf_object;
int dp_size_maps(struct bpf_object *obj);
/*
 * 0 when the maps of the running @dp fit a configuration (@fleet: it has
 * [fleet]; @flow_table: its generations' flow table, 0 = none); else -EXFULL
 * and, in
 * @why, which map and that a restart resizes it (a reload cannot).
 */
int dp_sizing_fits(struct rs_dataplane *dp, bool fleet, uint32_t flow_table,
		   char *why, size_t len);
/*
 * Kernel memory of the maps a start pins at the sizes set (every pinned
 * map of steer_lookup, not the rings and sticky tables that the services
 * add, nor the fleet table): *@bytes, of it *@fleet_bytes the fleet's
 * and *@gen_bytes the generations' (rs_udp_flows, rs_gen_sockets).
 */
int dp_pinned_memory(uint64_t *bytes, uint64_t *fleet_bytes,
		     uint64_t *gen_bytes);
/* The inner map of rs_fleet that fleet mode makes for its table. */
uint64_t dp_fleet_table_memory(void);

/* ---- life cycle (dataplane.c) ---- */

/*
 * Load the program, creating or reusing the maps pinned under @root (which
 * must be on a bpffs; created if missing). A pinned map whose layout differs
 * from this build is refused (-EINVAL from libbpf), never mixed.
 * @root NULL loads with private, unpinned maps (tests).
 */
int dp_open(struct rs_dataplane *dp, const char *root);

/*
 * Attach to the caller's network namespace through a link pinned under the
 * root, or, if one is pinned already, swap the program behind it in place.
 */
int dp_attach(struct rs_dataplane *dp);

void dp_close(struct rs_dataplane *dp);

/* Kernel id of the loaded sk_lookup program. */
uint32_t dp_program_id(struct rs_dataplane *dp);

/* Unpin the link and every map under @root and remove the directory. */
int dp_detach(const char *root);

/*
 * The backend words a running data plane has pinned under @root, without
 * loading anything (for --check): @words gets RS_MAX_BACKENDS entries by
 * id. Returns 0, -ENOENT (nothing pinned), -EPROTO (words of another
 * ABI) or another negative errno.
 */
int dp_read_pinned_backends(const char *root, struct rs_backend *words);

/* ---- pins of another ABI (dataplane_migrate.c) ---- */

/*
 * @n values of the map @map pinned under @root, whatever its build, read
 * into @out (an array of this build's struct @type, @value_size each, by
 * key 0..@n-1) field by field through the map's BTF: every field of ours
 * whose name the pinned value has; the others are left as they are.
 */
int dp_migrate_read(const char *root, const char *map, const char *type,
		    void *out, size_t value_size, uint32_t n);

/*
 * The entries of the inner map at @idx of the map-of-maps @outer pinned
 * under @root, written into the map @to_fd (keys of type @key_type, which
 * must be laid out alike; values converted to @val_type by field name),
 * without replacing an entry @to_fd has. Returns how many were written.
 */
int dp_migrate_inner(const char *root, const char *outer, uint32_t idx,
		     int to_fd, const char *key_type, const char *val_type);
/* The installed sticky table of service @svc_id (a new fd), or -ENOENT. */
int dp_sticky_fd(struct rs_dataplane *dp, uint32_t svc_id);

/*
 * Rename the pin directory @root aside (to @aside), with everything in it
 * still attached and deciding: the place for a data plane being retired.
 */
int dp_pins_set_aside(const char *root, uint32_t abi, char *aside, size_t len);

/* ---- one daemon per pinned state (dataplane_pins.c) ---- */

/*
 * An exclusive flock() on the pin directory itself (it works on bpffs), so
 * the lock dies with its holder and cannot go stale. The directory's
 * identity is kept: one removed and made again is a different lock.
 */
struct rs_pins_lock {
	int fd; /* O_DIRECTORY, holding the lock; -1 when not held */
	dev_t dev;
	ino_t ino;
	bool failing; /* taking a re-made directory failed; logged once */
};

/*
 * Lock the pin directory @root, made first when @create. -EBUSY when
 * another process holds it, *@holder then being its pid (0 when it cannot
 * be told); -ENOENT when @root is missing and !@create. Only failures other
 * than these two are logged: refusing is the caller's decision.
 */
int dp_pins_lock(struct rs_pins_lock *lk, const char *root, bool create,
		 pid_t *holder);
void dp_pins_unlock(struct rs_pins_lock *lk);

/*
 * The running daemon's periodic repair of what was unpinned under it: the
 * directory (made again and locked), each map's pin, the link's pin, and a
 * link detached behind its back (attached again). The daemon still holds
 * every fd, so nothing is lost but the names that let a restarted daemon,
 * the CLI and bpftool find them. Each repair is logged. Returns the number
 * of repairs or a negative errno.
 */
int dp_pins_check(struct rs_dataplane *dp, struct rs_pins_lock *lk);

/* ---- steer_tc next to steer_lookup (dataplane_tc.c) ---- */

/*
 * Load the TC program (steer_tc) next to steer_lookup, sharing every map
 * with it: through the pins under the root (pin_root_path), or, for a
 * data plane opened without a root, by reusing steer_lookup's map fds.
 * Loading twice is a no-op. Attaching is tc_attach.h's business.
 */
int dp_tc_open(struct rs_dataplane *dp);
void dp_tc_close(struct rs_dataplane *dp);
bool dp_tc_loaded(const struct rs_dataplane *dp);
/* fd and kernel id of the loaded steer_tc, -1 / 0 when not loaded. */
int dp_tc_prog_fd(struct rs_dataplane *dp);
/*
 * How the loaded steer_tc decrypts QUIC-LB CIDs: "kfunc" (the kernel's
 * crypto kfuncs), "software" (AES in BPF), or NULL when it is not loaded.
 * @why, when not NULL, gets why the kfuncs are not used ("" when they are).
 */
const char *dp_tc_cipher(const struct rs_dataplane *dp, const char **why);
/*
 * rs_quic_lb as @cfgs says: @cfgs[service id] (RS_MAX_SERVICES of them)
 * the configs of that service, as rs_service_quic_lb() gives them. With
 * the kfunc object the keys become crypto contexts and the map's round
 * keys stay zero; with the software one the round keys are written. Each
 * entry that changes is written in one update, after its new context, so
 * a packet sees the old config or the new one. 0 or a negative errno
 * (logged); *@changed: the entries and contexts written.
 */
int dp_tc_sync_quic_lb(struct rs_dataplane *dp,
		       const struct quic_cid_keys *cfgs, size_t *changed);
uint32_t dp_tc_program_id(struct rs_dataplane *dp);
/* Kernel id of the rs_sockets map: tells our TC filters from others. */
uint32_t dp_sockets_map_id(struct rs_dataplane *dp);
/* The same for the rs_sockets map pinned under @root; 0 if none. */
uint32_t dp_pinned_sockets_map_id(const char *root);

/* ---- steer_sockops on a cgroup2 subtree (dataplane_sockops.c) ---- */

/*
 * Load steer_sockops on steer_lookup's maps and attach it at the cgroup
 * @cgroup (a path in the cgroup2 hierarchy as /proc/PID/cgroup shows it;
 * "/" or NULL: the root, which covers every socket of the host) through a
 * link pinned under the root (or swap it in behind the pinned link, which
 * moves when @cgroup changed). @cgroup "auto": the deepest cgroup that
 * holds the cgroups @ids (of the backends' listeners) and the one the
 * pinned link is at, if any; the root when neither. The hierarchy is
 * reached through an existing cgroup2 mount, else mounted for the moment
 * in a fresh directory next to @near (the control socket: the daemon's run
 * directory). Then rs_meta.handoff = 1: steer_lookup writes nothing for a
 * TCP decision, and steer_sockops writes the sticky entry when the
 * handshake completes (from the listener's rs_listen storage). On failure
 * (logged here) rs_meta.handoff = 0 and TCP sticky entries are written at
 * the SYN, as before.
 */
int dp_sockops_attach(struct rs_dataplane *dp, const char *near,
		      const char *cgroup, const uint64_t *ids, size_t n);
/*
 * sockops_cgroup = auto only: move the link so that it sees the sockets
 * of the cgroups @ids. @exact: to the deepest cgroup holding them all
 * (narrower or wider); else only wider, to hold them and where it is. A
 * move is logged here; 0 when none was needed.
 */
int dp_sockops_cover(struct rs_dataplane *dp, const uint64_t *ids, size_t n,
		     bool exact);
/*
 * The ids of the cgroups steer_sockops sees sockets of: the one it is
 * attached at and every one below it, into @ids (malloc'ed, @n of them).
 * @n = 0 when it is attached at the root (it sees every socket) or not
 * at all. -ESTALE when the cgroup found by its path is no longer the one
 * the link holds (removed and made again).
 */
int dp_sockops_scope(struct rs_dataplane *dp, uint64_t **ids, size_t *n);
/* Close our fds; the pinned link keeps the program attached. */
void dp_sockops_close(struct rs_dataplane *dp);
/* Kernel id of the attached steer_sockops, 0 when it is not attached. */
uint32_t dp_sockops_program_id(struct rs_dataplane *dp);

/* ---- services and backends (dataplane_services.c) ---- */

int dp_set_service(struct rs_dataplane *dp, uint32_t id,
		   const struct rs_service *svc);
int dp_set_backend(struct rs_dataplane *dp, uint32_t id,
		   const struct rs_backend *be);

int dp_get_service(struct rs_dataplane *dp, uint32_t id,
		   struct rs_service *svc);
int dp_get_backend(struct rs_dataplane *dp, uint32_t id, struct rs_backend *be);

/* ---- binds (dataplane_binds.c) ---- */

/*
 * Make @keys (with their values) the whole set of binds: one address with
 * one port goes to rs_binds_exact, prefixes and port 0 to the rs_binds
 * trie. New and changed entries are written first, stale ones deleted
 * after, so no destination that stays configured is ever missing; rs_meta
 * tells the data plane whether the trie holds anything.
 */
int dp_sync_binds(struct rs_dataplane *dp, const struct rs_bind_key *keys,
		  const struct rs_bind *values, size_t n);

/*
 * The service rs_match_bind() gives destination @addr:@port (host order
 * port, network order address), as the data plane's maps hold it now.
 * -ENOENT when none.
 */
int dp_bind_service(struct rs_dataplane *dp, uint8_t protocol, uint8_t family,
		    uint16_t port, const uint8_t *addr, uint32_t *svc_id);

/* ---- rings (dataplane_rings.c) ---- */

/*
 * Write @ring into an inner map no program can see (the one the swap
 * before replaced, once a grace period has passed, or a fresh one) and
 * swap it into the service's slot in one update. Returns the new
 * generation (> 0) or a negative errno; on an error the installed ring
 * is as it was.
 */
int64_t dp_swap_ring(struct rs_dataplane *dp, uint32_t svc_id,
		     const struct rs_ring *ring);
/*
 * The same, and *@installed, which holds the ring installed until now
 * (as the previous call gave it, or any ring: it is freed), becomes @ring
 * as the new map holds it: its points read in place through the mapping
 * the ring was written through, so the daemon keeps the installed ring
 * without a copy of its own (13 MB at 200 backends). That mapping goes
 * back to the data plane with the next swap, for the map it writes the
 * ring after next into; a ring kept from an earlier call instead makes
 * the data plane let that map go rather than write into it.
 * @ring may be *@installed.
 */
int64_t dp_install_ring(struct rs_dataplane *dp, uint32_t svc_id,
			const struct rs_ring *ring, struct rs_ring *installed);

/*
 * What the spare ring maps did (tests, logs): rings written into the map
 * a swap replaced before, grace periods waited for, spares held now and
 * their slots' bytes.
 */
struct dp_ring_stats {
	uint64_t reused, barriers, spares, spare_bytes;
};
void dp_ring_stats(const struct rs_dataplane *dp, struct dp_ring_stats *st);

/* Read the installed ring of @svc_id (caller frees with ring_free). */
int dp_read_ring(struct rs_dataplane *dp, uint32_t svc_id, struct rs_ring *ring,
		 uint64_t *generation);
int dp_delete_ring(struct rs_dataplane *dp, uint32_t svc_id);

/* Generation of the ring currently installed for @svc_id, 0 if none. */
uint64_t dp_ring_generation(struct rs_dataplane *dp, uint32_t svc_id);

/*
 * Whether the installed ring of @svc_id has the flat table (a ring left by
 * a daemon that predates it has not: it works, searched in full).
 */
bool dp_ring_has_table(struct rs_dataplane *dp, uint32_t svc_id);

/* ---- sticky tables (dataplane_sticky.c) ---- */

/*
 * The service's sticky table: a fresh LRU map of @max_entries, filled with
 * the entries of the table it replaces (as many as fit), swapped into
 * rs_sticky.
 */
int dp_sticky_create(struct rs_dataplane *dp, uint32_t svc_id,
		     uint32_t max_entries);
int dp_sticky_remove(struct rs_dataplane *dp, uint32_t svc_id);
/* max_entries of the installed sticky map, 0 when there is none. */
uint32_t dp_sticky_size(struct rs_dataplane *dp, uint32_t svc_id);
/* Forget every sticky client of @backend (before its id is reused). */
int dp_sticky_forget_backend(struct rs_dataplane *dp, uint32_t svc_id,
			     uint32_t backend);

/* The sticky entry of @key in @svc_id's table, -ENOENT if none. */
int dp_sticky_lookup(struct rs_dataplane *dp, uint32_t svc_id,
		     const struct rs_affinity_key *key,
		     struct rs_sticky_entry *out);
/* Calls @fn for each sticky entry of @svc_id; returns entries seen. */
long dp_sticky_each(struct rs_dataplane *dp, uint32_t svc_id,
		    void (*fn)(const struct rs_affinity_key *key,
			       const struct rs_sticky_entry *e, void *arg),
		    void *arg);

/* ---- backend sockets (dataplane_sockets.c) ---- */

/*
 * SOCKMAP slots are per backend and client family (rs_socket_slot). The
 * caller closes its own @sock_fd after the insert.
 */
int dp_set_socket(struct rs_dataplane *dp, uint32_t slot, int sock_fd);
int dp_clear_socket(struct rs_dataplane *dp, uint32_t slot);

/*
 * Generations (dataplane_generations.c): socket @sock_fd (the map keeps
 * its own reference) in rs_gen_sockets under its @cookie; @cookie as the
 * working socket of SOCKMAP slot @slot (0: none).
 */
int dp_set_gen_socket(struct rs_dataplane *dp, uint64_t cookie, int sock_fd);
int dp_set_gen_working(struct rs_dataplane *dp, uint32_t slot, uint64_t cookie);

/* Flows recorded per (backend, generation cookie), as a sweep counts them. */
struct dp_flow_gen {
	uint32_t backend;
	uint64_t cookie;
	uint64_t flows;
};

struct dp_flow_count {
	struct dp_flow_gen *c;
	size_t n, max;
};

/*
 * Delete the rs_udp_flows entries idle for their backend's @idle_s[b]
 * seconds (0: 125) at CLOCK_MONOTONIC second @now_s, and count the rest
 * into @count (may be NULL). Returns how many were deleted, or a
 * negative errno.
 */
int dp_sweep_flows(struct rs_dataplane *dp, uint32_t now_s,
		   const uint32_t *idle_s, struct dp_flow_count *count);

/* Cookie of the socket in @slot, or -ENOENT when empty. */
int dp_socket_cookie(struct rs_dataplane *dp, uint32_t slot, uint64_t *cookie);

/*
 * One client's connection or datagram (@family, @protocol; addresses in
 * network order, ports in host order) to @local: dp_lookup_run() runs the
 * loaded steer_lookup on it and says its verdict (SK_PASS, SK_DROP) and
 * the cookie of the socket it chose (0: none). dataplane_run.c says what
 * such a run changes.
 */
struct dp_lookup_probe {
	uint8_t family, protocol;
	uint8_t client[16], local[16];
	uint16_t client_port, local_port;
};
int dp_lookup_run(struct rs_dataplane *dp, const struct dp_lookup_probe *p,
		  int *verdict, uint64_t *cookie);

/*
 * Name backend @backend of service @service on TCP listener @sock_fd
 * (its rs_listen storage, which every child it accepts inherits).
 */
int dp_set_listener(struct rs_dataplane *dp, int sock_fd, uint32_t backend,
		    uint32_t service);

/* ---- QUIC server IDs (dataplane_cookies.c) ---- */

/*
 * rs_cookies: make @keys (QUIC server IDs of cookie services) with their
 * backends the whole content of the map, new and changed entries first,
 * stale ones deleted after. *@written / *@removed (may be NULL) count the
 * entries that were new or changed, and those deleted.
 */
int dp_sync_cookies(struct rs_dataplane *dp, const struct rs_cookie_key *keys,
		    const struct rs_cookie *values, size_t n, size_t *written,
		    size_t *removed);
/* The backend rs_cookies maps @key to, -ENOENT if none. */
int dp_cookie_lookup(struct rs_dataplane *dp, const struct rs_cookie_key *key,
		     struct rs_cookie *out);
/* Calls @fn for each rs_cookies entry; returns entries seen. */
long dp_cookies_each(struct rs_dataplane *dp,
		     void (*fn)(const struct rs_cookie_key *key,
				const struct rs_cookie *val, void *arg),
		     void *arg);

/* ---- counters (dataplane_stats.c) ---- */

/* Per-CPU counters summed over CPUs. */
int dp_backend_stats(struct rs_dataplane *dp, uint32_t id,
		     struct rs_backend_stats *out);
int dp_service_stats(struct rs_dataplane *dp, uint32_t id,
		     struct rs_service_stats *out);
/* Established steered TCP connections now (the load gauge). */
int dp_backend_load(struct rs_dataplane *dp, uint32_t id, int64_t *active);
int dp_service_load(struct rs_dataplane *dp, uint32_t id, int64_t *active);

/*
 * Add @delta to backend @backend's gauge and to service @service's, with
 * atomic adds that compose with steer_sockops's own (dataplane_load.c).
 * RS_NONE for either leaves that gauge alone.
 */
int dp_load_add(struct rs_dataplane *dp, uint32_t backend, uint32_t service,
		int64_t delta);
void dp_load_unmap(struct rs_dataplane *dp);
/*
 * The socket storages that say whether a connection is in the gauge (for
 * sock_diag): rs_listen, whose copy in each accepted child steer_sockops
 * marks RS_CONN_COUNTED, and rs_conn, the record of builds before that
 * mark on connections they counted that are still open. Each map's fd
 * and id (the id is what sock_diag names it by); -ENOENT when missing.
 */
int dp_counted_storage(struct rs_dataplane *dp, int fd[2], uint32_t id[2]);

/* ---- fleet tables (dataplane_fleet.c) ---- */

/*
 * Install @slots (RS_FLEET_SLOTS of them) as the current fleet table in
 * one swap; with @rotate the table it replaces becomes the previous one
 * (for the second chance) in that same swap, else the previous one stays.
 * rs_fleet_peers follows the members of both.
 */
int dp_fleet_install(struct rs_dataplane *dp, const struct rs_fleet_slot *slots,
		     bool rotate);
/* No fleet tables: steer_tc's fleet step does nothing. */
int dp_fleet_clear(struct rs_dataplane *dp);
/* Header of the table at @which (RS_FLEET_CURRENT/PREVIOUS). */
int dp_fleet_header(struct rs_dataplane *dp, uint32_t which,
		    struct rs_fleet_header *out);
/* rs_fleet_stats summed over CPUs. */
int dp_fleet_stats(struct rs_dataplane *dp, struct rs_fleet_stats *out);

/*
 * Tracing (`ringsteer trace`): rs_trace_cpu summed over CPUs (the bucket
 * state words summed too, meaningless; the counters are what to read),
 * and the control word as a tracer left it.
 */
int dp_trace_stats(struct rs_dataplane *dp, struct rs_trace_cpu *out);
int dp_trace_ctl(struct rs_dataplane *dp, struct rs_trace_ctl *out);
/*
 * Turn off the trace of tracer @owner if it is still the one set: a
 * tracer killed before it could put the control word back. -ESTALE when
 * another tracer owns the word now.
 */
int dp_trace_off(struct rs_dataplane *dp, __u32 owner);

#endif /* RS_DATAPLANE_H */

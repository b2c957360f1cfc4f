/* SPDX-License-Identifier: MIT */
/*
 * Fleet mode's run-time state, shared by the files of this folder (not
 * included from outside it; fleet.h is the daemon's view). One job a file:
 *
 *   fleet_etcd_thread.c  the etcd client thread: lease, publish, keepalive,
 *                        read and watch; hands each snapshot to the loop
 *   fleet_snapshot.c     etcd's keys into a snapshot: every member record
 *                        checked, the members chosen, drains marked
 *   fleet_install.c      a snapshot into fleet table slots (the pure build
 *                        is userspace/core/fleet/fleet_table.c) and the swap
 *   fleet_publish.c      this host's record: capacity, server IDs, its
 *                        signatures
 *   fleet_trust.c        the keys it signs with and believes: key_file,
 *                        identity_key, member_keys
 *   fleet_lifecycle.c    start, restart, stop; the loop's end of the
 *                        handoff (on_async)
 *   fleet_drain.c        operator drains, each on a short-lived thread
 *   fleet_view.c         `fleet status` JSON and the metrics
 *   fleet_query.c        owner of a client or of a QUIC server ID
 *   fleet_member.c       one member record checked and parsed
 *   fleet_quic.c         QUIC server IDs published, read back, in the table
 *
 * Threads: the etcd thread and the drain threads share with the event
 * loop exactly what struct fleet_shared holds, under fleet_rt.mu, and
 * wake the loop with ev_async_send() (libev's one thread-safe call).
 * What they read besides is set before they start and never written while
 * they run (fleet_rt.conf, .loop). Everything else is the loop's alone;
 * the threads never touch struct daemon. `make tsan` checks this.
 */
#ifndef RS_FLEET_RT_H
#define RS_FLEET_RT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

#include "daemon.h"
#include "etcd.h"
#include "fleet.h"
#include "fleet_ident.h"
#include "fleet_keys.h"
#include "fleet_member.h"
#include "fleet_quic.h"
#include "fleet_table.h"

#define FLEET_KEY_MAX (RS_FLEET_PREFIX_MAX + RS_NAME_MAX + 16)

/*
 * An operator's drain or undrain: one etcd call on a thread of its own,
 * so the event loop (health checks, steering updates, other clients)
 * never waits for etcd; the caller's @done hears when it is done. The
 * thread owns the job until it puts it on fleet_shared.jobs_done.
 */
struct drain_job {
	struct fleet_rt *f;
	struct drain_job *next;
	fleet_drain_done done;
	uint64_t ticket;
	bool drain;
	int err;
	char name[RS_NAME_MAX];
	char key[FLEET_KEY_MAX];
	char error[600];
};

/* A record under the prefix that was not believed, and why. */
struct fleet_rejected {
	char key[FLEET_KEY_MAX];
	char reason[192];
};

#define FLEET_REJECTED_MAX 64

struct fleet_snap {
	int64_t revision;
	struct rs_fleet_member_info *m;
	size_t n;
	/* Records not believed (the first FLEET_REJECTED_MAX), and all. */
	struct fleet_rejected *rejected;
	size_t n_rejected, rejected_total;
	size_t left_out; /* valid members the table had no room for */
};

/*
 * Per-host identities ([fleet] identity_key, member_keys): this host's
 * private key, and every member's public keys; members.n = 0: none, and
 * records are believed on the fleet key as before.
 */
struct fleet_ident {
	bool on;
	uint8_t priv[RS_FLEET_ID_KEY_LEN];
	struct rs_fleet_pubkeys members;
};

/*
 * Everything the loop and the threads share, and nothing else: each
 * member is read and written only with fleet_rt.mu held.
 */
struct fleet_shared {
	bool stop; /* loop -> etcd thread: leave */
	/* etcd thread -> loop */
	struct fleet_snap incoming; /* the newest snapshot, not yet taken */
	bool incoming_new;
	bool etcd_ok;
	/* The last read was over the key cap: no snapshot came of it. */
	bool over_cap;
	char error[512];
	int64_t latest_rev, lease;
	/*
	 * Monotonic time until which etcd cannot have expired our lease:
	 * lease_ttl after the last grant or keepalive was sent (etcd starts
	 * counting when it takes the call, later). 0: no lease.
	 */
	double lease_until;
	uint64_t etcd_tokens; /* etcd auth tokens obtained */
	/* loop -> etcd thread */
	char *publish; /* this host's record to put, NULL: none yet */
	uint64_t publish_gen;
	struct fleet_local local;  /* this host's listens */
	struct rs_fleet_keys keys; /* n = 0: no key_file (the loop too) */
	struct fleet_ident ident;  /* per-host identities (the loop too) */
	/* drain threads -> loop */
	struct drain_job *jobs_done; /* finished, for the loop to answer */
	unsigned int jobs_running;
};

struct fleet_rt {
	/*
	 * Set before any thread starts, read-only while one runs. conf's
	 * key_file, identity_key and member_keys are the ones at start and
	 * unused: keys come from the configuration's (fleet_keys_load()).
	 */
	struct rs_fleet_conf conf;
	size_t keys_max; /* keys read per range (fleet_keys_max()) */
	struct ev_loop *loop;
	ev_async async; /* threads: ev_async_send() only */
	pthread_mutex_t mu;
	pthread_cond_t jobs_cond; /* signalled as each drain job finishes */
	struct fleet_shared sh;	  /* under mu */
	/* the loop's own */
	struct daemon *d;
	pthread_t th;
	bool thread_started;
	ev_timer cap_timer;
	struct fleet_snap snap; /* what the installed table was built from */
	bool have_snap;
	/* etcd holds more members or drains than are read: table kept. */
	bool over_cap;
	uint8_t (*owners)[RS_FLEET_BUCKETS]; /* per configured service */
	size_t n_owners;
	struct rs_fleet_slot *slots; /* as installed */
	bool installed;
	uint64_t swaps;
	char *published_local;
	struct fleet_quic_state quic; /* server ID conflicts of the table */
};

/* fleet_snapshot.c */
void fleet_snap_free(struct fleet_snap *s);
/*
 * The range's keys as a snapshot for [fleet] @c, this host's listens
 * @local, fleet keys @keys and members' public keys @ids (see the
 * function). False: out of memory.
 */
bool fleet_snap_from_kvs(const struct rs_fleet_conf *c,
			 const struct fleet_local *local,
			 const struct rs_fleet_keys *keys,
			 const struct rs_fleet_pubkeys *ids,
			 const struct rs_etcd_kv *kvs, size_t n, int64_t rev,
			 const struct fleet_snap *prev, struct fleet_snap *out);
/* The members of @s, copied into @prev (the thread's last snapshot). */
void fleet_snap_keep_members(struct fleet_snap *prev,
			     const struct fleet_snap *s);
/* Records rejected in @next and not in @cur, logged once each. */
void fleet_snap_log_rejections(const struct fleet_snap *cur,
			       const struct fleet_snap *next);

/* fleet_lifecycle.c */
size_t fleet_keys_max(void);

/* fleet_etcd_thread.c */
void *fleet_etcd_thread(void *arg);
double fleet_mono_now(void);

/* fleet_install.c: this host's index in the installed snapshot, or -1. */
int fleet_self_index(const struct fleet_rt *f);
void fleet_rebuild(struct daemon *d, struct fleet_rt *f);

/* fleet_publish.c */
void fleet_publish_capacity(struct daemon *d, struct fleet_rt *f);
void fleet_on_cap_timer(struct ev_loop *loop, ev_timer *w, int revents);

/* fleet_trust.c: key_file, identity_key and member_keys, in place. */
void fleet_keys_load(struct fleet_rt *f, const struct rs_fleet_conf *c);
void fleet_ident_free(struct fleet_ident *id);

/* fleet_drain.c: answer the finished jobs @j (a list), freeing them. */
void fleet_jobs_answer(struct fleet_rt *f, struct drain_job *j);

#endif /* RS_FLEET_RT_H */

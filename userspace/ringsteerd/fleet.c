// SPDX-License-Identifier: MIT
/*
 * Fleet membership (docs/fleet.md). etcd keys under [fleet] prefix:
 *   PREFIX/members/NAME  {"address": "...", "address6": "..." (optional),
 *                        "services": {"web": {"capacity": N}},
 *                        "wire": 3 (the newest wire version it takes)},
 *                        attached to NAME's lease
 *   PREFIX/drain/NAME    present while an operator drains NAME
 * The etcd thread owns every etcd call but the operator's drain commands;
 * it hands each new snapshot (members, drains, revision) to the loop
 * through an ev_async, and the loop hands it the value to publish. Only
 * the loop touches the data plane. A snapshot decides everything: every
 * host builds the same table from the same revision.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "binds.h"
#include "control.h"
#include "etcd.h"
#include "fleet.h"
#include "fleet_quic.h"
#include "fleet_keys.h"
#include "fleet_member.h"
#include "fleet_record.h"
#include "fleet_table.h"
#include "hash.h"
#include "log.h"

/*
 * An operator's drain or undrain: one etcd call on a thread of its own,
 * so the event loop (health checks, steering updates, other clients)
 * never waits for etcd; the reply goes to the client when it is done.
 */
struct drain_job {
	struct fleet_rt *f;
	struct drain_job *next;
	uint64_t ticket;
	bool drain;
	int err;
	char name[RS_NAME_MAX];
	char key[RS_FLEET_PREFIX_MAX + RS_NAME_MAX + 16];
	char error[600];
};

/* A record under the prefix that was not believed, and why. */
struct fleet_rejected {
	char key[RS_FLEET_PREFIX_MAX + RS_NAME_MAX + 16];
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
	bool truncated;	 /* the prefix held more keys than are read */
};

struct fleet_rt {
	struct daemon *d;
	struct rs_fleet_conf conf;
	pthread_t th;
	bool thread_started;
	pthread_mutex_t mu;
	/* shared with the thread, under mu */
	bool stop;
	struct fleet_snap incoming;
	bool incoming_new;
	bool etcd_ok;
	char error[512];
	int64_t latest_rev, lease;
	/*
	 * Monotonic time until which etcd cannot have expired our lease:
	 * lease_ttl after the last grant or keepalive was sent (etcd starts
	 * counting when it takes the call, later). 0: no lease.
	 */
	double lease_until;
	char *publish;
	uint64_t publish_gen;
	struct drain_job *jobs_done; /* finished, for the loop to answer */
	unsigned int jobs_running;
	pthread_cond_t jobs_cond; /* signalled as each job finishes */
	/* the loop's own */
	ev_async async;
	ev_timer cap_timer;
	struct fleet_snap snap; /* what the installed table was built from */
	bool have_snap;
	uint8_t (*owners)[RS_FLEET_BUCKETS]; /* per configured service */
	size_t n_owners;
	struct rs_fleet_slot *slots; /* as installed */
	bool installed;
	uint64_t swaps;
	char *published_local;
	struct fleet_quic_state quic; /* server ID conflicts of the table */
	struct fleet_local local;     /* under mu: read by the thread */
	uint64_t rejected_logged;     /* records logged as rejected */
	uint64_t etcd_tokens;	      /* under mu: etcd auth tokens obtained */
	struct rs_fleet_keys keys;    /* under mu; n = 0: no key_file */
};

static void snap_free(struct fleet_snap *s)
{
	free(s->m);
	free(s->rejected);
	memset(s, 0, sizeof(*s));
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool stopping(struct fleet_rt *f)
{
	bool s;

	pthread_mutex_lock(&f->mu);
	s = f->stop;
	pthread_mutex_unlock(&f->mu);
	return s;
}

static int member_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rs_fleet_member_info *)a)->name,
		      ((const struct rs_fleet_member_info *)b)->name);
}

static void reject(struct fleet_snap *s, const char *key, const char *why)
{
	s->rejected_total++;
	if (s->n_rejected == FLEET_REJECTED_MAX)
		return;
	/* Any bytes etcd holds: logged and shown (fleet_printable()). */
	fleet_printable(s->rejected[s->n_rejected].key,
			sizeof(s->rejected[0].key), key);
	snprintf(s->rejected[s->n_rejected].reason,
		 sizeof(s->rejected[0].reason), "%s", why);
	s->n_rejected++;
}

static const struct rs_fleet_member_info *snap_find(const struct fleet_snap *s,
						    const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->m[i].name, name))
			return &s->m[i];
	return NULL;
}

/* The member of @s other than @name whose address is @addr, or NULL. */
static const struct rs_fleet_member_info *snap_addr_owner(
	const struct fleet_snap *s, uint32_t addr, const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->m[i].addr == addr && strcmp(s->m[i].name, name))
			return &s->m[i];
	return NULL;
}

/*
 * The range's keys as a snapshot: every member record checked, those
 * that fail listed with their reason; a member of @prev (the last
 * snapshot) whose record went bad keeps its last valid one while its key
 * exists (its lease lives), so nobody moves meanwhile; when more valid
 * members than the table holds, the members of @prev and the oldest keys
 * keep their places (rs_fleet_choose()). False when out of memory.
 */
static bool snap_from_kvs(const struct rs_fleet_conf *c,
			  const struct fleet_local *local,
			  const struct rs_fleet_keys *keys,
			  const struct rs_etcd_kv *kvs, size_t n, int64_t rev,
			  const struct fleet_snap *prev, struct fleet_snap *out)
{
	char members[RS_FLEET_PREFIX_MAX + 16], drain[RS_FLEET_PREFIX_MAX + 16],
		why[192], key[RS_FLEET_PREFIX_MAX + RS_NAME_MAX + 16];
	struct rs_fleet_member_info *valid = NULL;
	struct rs_fleet_candidate *cand = NULL;
	size_t lm, ld, nvalid = 0, chosen;

	snprintf(members, sizeof(members), "%s/members/", c->prefix);
	snprintf(drain, sizeof(drain), "%s/drain/", c->prefix);
	lm = strlen(members);
	ld = strlen(drain);
	memset(out, 0, sizeof(*out));
	out->revision = rev;
	out->m = calloc(RS_FLEET_MAX_MEMBERS, sizeof(*out->m));
	out->rejected = calloc(FLEET_REJECTED_MAX, sizeof(*out->rejected));
	valid = calloc(n ? n : 1, sizeof(*valid));
	cand = calloc(n ? n : 1, sizeof(*cand));
	if (!out->m || !out->rejected || !valid || !cand) {
		free(valid);
		free(cand);
		snap_free(out);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = kvs[i].key + lm;
		const struct rs_fleet_member_info *last;

		why[0] = 0;
		if (strncmp(kvs[i].key, members, lm))
			continue;
		if (fleet_member_parse(c, local, keys, name, &kvs[i],
				       &valid[nvalid], why, sizeof(why)) &&
		    (last = snap_addr_owner(prev, valid[nvalid].addr, name))) {
			/* An address of the table in force stays its owner's.
			 */
			snprintf(why, sizeof(why), "address is member %s's",
				 last->name);
		} else if (why[0] == 0) {
			cand[nvalid] = (struct rs_fleet_candidate){
				.name = valid[nvalid].name,
				.was_member = snap_find(prev, name) != NULL,
				.created = kvs[i].created,
				.index = nvalid};
			nvalid++;
			continue;
		}
		last = snap_find(prev, name);
		if (last) {
			strncat(why, "; its last valid record is kept",
				sizeof(why) - strlen(why) - 1);
			valid[nvalid] = *last;
			valid[nvalid].drained = false;
			cand[nvalid] = (struct rs_fleet_candidate){
				.name = valid[nvalid].name,
				.was_member = true,
				.created = kvs[i].created,
				.index = nvalid};
			nvalid++;
		}
		reject(out, kvs[i].key, why);
	}
	chosen = rs_fleet_choose(cand, nvalid, RS_FLEET_MAX_MEMBERS);
	for (size_t k = 0; k < nvalid; k++) {
		const struct rs_fleet_member_info *m = &valid[cand[k].index];
		bool dup = false;

		/* One address, one member: the first chosen keeps it. */
		for (size_t o = 0; o < out->n && !dup; o++)
			dup = out->m[o].addr == m->addr;
		if (dup) {
			snprintf(key, sizeof(key), "%s%s", members, m->name);
			reject(out, key, "address of another member already");
			continue;
		}
		if (k >= chosen || out->n == RS_FLEET_MAX_MEMBERS) {
			out->left_out++;
			continue;
		}
		out->m[out->n++] = *m;
	}
	free(valid);
	free(cand);
	qsort(out->m, out->n, sizeof(*out->m), member_cmp);
	for (size_t i = 0; i < n; i++) {
		if (strncmp(kvs[i].key, drain, ld))
			continue;
		for (size_t k = 0; k < out->n; k++)
			if (!strcmp(out->m[k].name, kvs[i].key + ld))
				out->m[k].drained = true;
	}
	return true;
}

static void thread_failed(struct fleet_rt *f, struct rs_etcd *e)
{
	bool was;

	pthread_mutex_lock(&f->mu);
	was = f->etcd_ok;
	f->etcd_ok = false;
	snprintf(f->error, sizeof(f->error), "%s", e->error);
	pthread_mutex_unlock(&f->mu);
	if (was)
		rs_warn("fleet: etcd unreachable (%s); keeping the last fleet "
			"table",
			e->error);
	ev_async_send(f->d->loop, &f->async);
	for (int i = 0; i < 10 && !stopping(f); i++)
		nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
}

/* The members of @s, copied into @prev (the thread's last snapshot). */
static void prev_keep(struct fleet_snap *prev, const struct fleet_snap *s)
{
	struct rs_fleet_member_info *m = malloc((s->n ? s->n : 1) * sizeof(*m));

	if (!m)
		return;
	memcpy(m, s->m, s->n * sizeof(*m));
	snap_free(prev);
	prev->m = m;
	prev->n = s->n;
}

/*
 * This host's record as etcd has it now: changed or deleted by someone
 * else, it is put back (with our lease) in the next round, which the
 * watch starts at once.
 */
static void guard_own(const struct rs_etcd_kv *kvs, size_t n, const char *key,
		      const char *mine, uint64_t *published)
{
	const char *now = NULL;

	if (!*published || !mine)
		return;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kvs[i].key, key))
			now = kvs[i].value ? kvs[i].value : "";
	if (now && !strcmp(now, mine))
		return;
	rs_warn("fleet: this host's record %s was %s in etcd; putting it "
		"back",
		key, now ? "changed" : "deleted");
	*published = 0;
}

/*
 * etcd took a grant or keepalive of our lease sent at @sent (0: the lease
 * is gone): it lives at least lease_ttl from then, whatever happens to
 * etcd meanwhile (a stopped etcd counts nothing down, and gives every
 * lease its whole TTL again when it is back).
 */
static void lease_alive(struct fleet_rt *f, double sent)
{
	pthread_mutex_lock(&f->mu);
	f->lease_until = sent ? sent + f->conf.lease_ttl : 0;
	pthread_mutex_unlock(&f->mu);
}

/* One round: lease, publish, keepalive, read. 0 or negative errno. */
static int thread_round(struct fleet_rt *f, struct rs_etcd *e, const char *key,
			const char *prefix, int64_t *lease, uint64_t *published,
			double *next_ka, int64_t *rev, struct fleet_snap *prev,
			char **mine)
{
	struct rs_etcd_kv *kvs = NULL;
	struct fleet_snap s;
	struct fleet_local local = {0};
	struct rs_fleet_keys keys;
	bool truncated, ok;
	uint64_t gen;
	size_t n = 0;
	char *val = NULL;
	double sent;
	int err;

	if (!*lease) {
		sent = mono_now();
		err = etcd_lease_grant(e, f->conf.lease_ttl, lease);
		if (err)
			return err;
		lease_alive(f, sent);
		*published = 0;
		*next_ka = mono_now() + f->conf.lease_ttl / 3.0;
		rs_info("fleet: joined as %s with lease %llx (ttl %us)",
			f->conf.name, (unsigned long long)*lease,
			f->conf.lease_ttl);
	}
	pthread_mutex_lock(&f->mu);
	gen = f->publish_gen;
	if (f->publish && gen != *published)
		val = strdup(f->publish);
	pthread_mutex_unlock(&f->mu);
	if (val) {
		err = etcd_put(e, key, val, *lease);
		if (err == -ENOENT) {
			/*
			 * Revoked (any member's etcd user may) or expired while
			 * etcd was away, with a record to publish: the put
			 * comes before the keepalive that would have noticed,
			 * so it is noticed here, or never.
			 */
			rs_warn("fleet: lease %llx is gone; joining again",
				(unsigned long long)*lease);
			free(val);
			*lease = 0;
			lease_alive(f, 0);
			return 0;
		}
		if (err) {
			free(val);
			return err;
		}
		free(*mine);
		*mine = val;
		*published = gen;
	}
	if (mono_now() >= *next_ka) {
		sent = mono_now();
		err = etcd_lease_keepalive(e, *lease);
		if (err == -ENOENT) {
			rs_warn("fleet: lease %llx expired; joining again",
				(unsigned long long)*lease);
			*lease = 0;
			lease_alive(f, 0);
			return 0;
		}
		if (err)
			return err;
		lease_alive(f, sent);
		*next_ka = mono_now() + f->conf.lease_ttl / 3.0;
	}
	err = etcd_range(e, prefix, &kvs, &n, rev, &truncated);
	if (err)
		return err;
	guard_own(kvs, n, key, *mine, published);
	pthread_mutex_lock(&f->mu);
	keys = f->keys;
	if (f->local.n) {
		local.listens = malloc(f->local.n * sizeof(*local.listens));
		if (local.listens) {
			memcpy(local.listens, f->local.listens,
			       f->local.n * sizeof(*local.listens));
			local.n = f->local.n;
		}
	}
	pthread_mutex_unlock(&f->mu);
	ok = snap_from_kvs(&f->conf, &local, &keys, kvs, n, *rev, prev, &s);
	OPENSSL_cleanse(&keys, sizeof(keys));
	free(local.listens);
	etcd_kvs_free(kvs, n);
	if (!ok)
		return -ENOMEM;
	s.truncated = truncated;
	prev_keep(prev, &s);
	pthread_mutex_lock(&f->mu);
	if (!f->etcd_ok)
		rs_info("fleet: etcd reachable at revision %lld",
			(long long)*rev);
	f->etcd_ok = true;
	f->error[0] = '\0';
	f->etcd_tokens = e->authentications;
	f->latest_rev = *rev;
	f->lease = *lease;
	snap_free(&f->incoming);
	f->incoming = s;
	f->incoming_new = true;
	pthread_mutex_unlock(&f->mu);
	ev_async_send(f->d->loop, &f->async);
	return 0;
}

static void *fleet_thread(void *arg)
{
	struct fleet_rt *f = arg;
	char key[RS_FLEET_PREFIX_MAX + RS_NAME_MAX + 16],
		prefix[RS_FLEET_PREFIX_MAX + 2];
	int64_t lease = 0, rev = 0, seen = 0;
	struct fleet_snap prev = {0};
	uint64_t published = 0;
	double next_ka = 0;
	char *mine = NULL;
	struct rs_etcd e;

	/* 2 s: a busy etcd was seen to need more than 1 s (make test). */
	if (etcd_open(&e, &f->conf, 2000)) {
		/* Said once; status shows it until a reload fixes the file. */
		rs_err("fleet: cannot use etcd: %s",
		       e.error[0] ? e.error : "out of memory");
		pthread_mutex_lock(&f->mu);
		f->etcd_ok = false;
		snprintf(f->error, sizeof(f->error), "%s",
			 e.error[0] ? e.error : "out of memory");
		pthread_mutex_unlock(&f->mu);
		etcd_close(&e);
		return NULL;
	}
	snprintf(key, sizeof(key), "%s/members/%s", f->conf.prefix,
		 f->conf.name);
	snprintf(prefix, sizeof(prefix), "%s/", f->conf.prefix);
	while (!stopping(f)) {
		long wait;

		if (thread_round(f, &e, key, prefix, &lease, &published,
				 &next_ka, &rev, &prev, &mine)) {
			thread_failed(f, &e);
			continue;
		}
		if (!lease)
			continue;
		/* Wait for a change, but keep the lease alive meanwhile. */
		wait = (long)((next_ka - mono_now()) * 1000);
		wait = wait < 50 ? 50 : wait > 1000 ? 1000 : wait;
		if (rev == seen || wait > 0)
			etcd_watch(&e, prefix, rev + 1, wait);
		seen = rev;
	}
	etcd_close(&e);
	snap_free(&prev);
	free(mine);
	return NULL;
}

/* ---- the table ---- */

static int self_index(const struct fleet_rt *f)
{
	for (size_t i = 0; i < f->snap.n; i++)
		if (!strcmp(f->snap.m[i].name, f->conf.name))
			return (int)i;
	return -1;
}

/* Slots of the table for the current snapshot and configuration. */
static int build_slots(struct daemon *d, struct fleet_rt *f,
		       struct rs_fleet_slot *slots)
{
	struct rs_fleet_header *h = &slots[0].hdr;
	int self = self_index(f);

	memset(slots, 0, RS_FLEET_SLOTS * sizeof(*slots));
	h->version = (uint64_t)f->snap.revision;
	h->nmembers = (uint32_t)f->snap.n;
	h->self = self < 0 ? RS_NONE : (uint32_t)self;
	h->self_addr = f->conf.addr;
	h->port = f->conf.port;
	if (f->conf.has_addr6)
		memcpy(&slots[RS_FLEET_SLOT_ADDR6].addr6.addr, f->conf.addr6,
		       sizeof(f->conf.addr6));
	for (size_t i = 0; i < f->snap.n; i++) {
		struct rs_fleet_member *m = &slots[1 + i].member;

		if (f->snap.m[i].has_addr6)
			memcpy(&slots[RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr,
			       f->snap.m[i].addr6, sizeof(f->snap.m[i].addr6));

		m->addr = f->snap.m[i].addr;
		m->flags = f->snap.m[i].drained ? RS_FLEET_MEMBER_DRAINED : 0;
		if (f->snap.m[i].wire >= RS_FLEET_WIRE_MAX)
			m->flags |= RS_FLEET_MEMBER_WIRE3;
		/* Cut to fit: bpftool readers only; the daemon keeps names
		 * whole. */
		memcpy(m->name, f->snap.m[i].name, sizeof(m->name) - 1);
	}
	/* Under mu: the etcd thread reads the keys too. */
	pthread_mutex_lock(&f->mu);
	for (size_t k = 0; k < f->keys.n; k++)
		slots[RS_FLEET_SLOT_KEYS + k].auth = f->keys.auth[k];
	pthread_mutex_unlock(&f->mu);
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		const struct rs_service_conf *sc = &d->st.cfg.services[s];
		uint32_t id = d->st.svcs[s].id;
		uint64_t seed = rs_fleet_seed(sc->name, sc->seed);
		int owners;

		memset(f->owners[s], RS_FLEET_NO_OWNER, RS_FLEET_BUCKETS);
		if (!sc->fleet || id >= RS_MAX_SERVICES)
			continue;
		owners = rs_fleet_buckets(f->snap.m, f->snap.n, sc->name, seed,
					  f->owners[s]);
		if (owners < 0)
			return owners;
		slots[RS_FLEET_SLOT_SERVICES + id].service.seed = seed;
		slots[RS_FLEET_SLOT_SERVICES + id].service.owners =
			(uint32_t)owners;
		memcpy(&slots[RS_FLEET_SLOT_ROWS + id * RS_FLEET_ROWS],
		       f->owners[s], RS_FLEET_BUCKETS);
	}
	return fleet_quic_fill(d, f->snap.m, f->snap.n, slots, &f->quic);
}

static void fleet_rebuild(struct daemon *d, struct fleet_rt *f)
{
	struct rs_fleet_slot *slots;
	bool same;
	int err;

	if (!f->have_snap)
		return;
	if (f->n_owners != d->st.cfg.n_services) {
		free(f->owners);
		f->owners =
			calloc(d->st.cfg.n_services ? d->st.cfg.n_services : 1,
			       sizeof(*f->owners));
		f->n_owners = f->owners ? d->st.cfg.n_services : 0;
		if (!f->owners)
			return;
	}
	slots = malloc(RS_FLEET_SLOTS * sizeof(*slots));
	if (!slots || build_slots(d, f, slots)) {
		free(slots);
		rs_err("fleet: out of memory building the fleet table");
		return;
	}
	/*
	 * Same owners and members: a new version, not a new table. Server
	 * IDs alone changing (a member's configuration) do not make one
	 * either: the table before it must stay the previous one for the
	 * second chance.
	 */
	same = f->installed &&
	       !memcmp(&slots[1], &f->slots[1],
		       (RS_FLEET_SLOT_CIDS - 1) * sizeof(*slots)) &&
	       !memcmp(&slots[0].hdr.nmembers, &f->slots[0].hdr.nmembers,
		       sizeof(slots[0].hdr) -
			       offsetof(struct rs_fleet_header, nmembers));
	/* Keys alike: a rotation is the same table with other keys. */
	if (same && slots[0].hdr.version == f->slots[0].hdr.version &&
	    !memcmp(&slots[RS_FLEET_SLOT_CIDS], &f->slots[RS_FLEET_SLOT_CIDS],
		    (RS_FLEET_SLOTS - RS_FLEET_SLOT_CIDS) * sizeof(*slots))) {
		free(slots);
		return;
	}
	err = dp_fleet_install(&d->dp, slots, !same);
	if (err) {
		free(slots);
		return;
	}
	if (!same) {
		f->swaps++;
		rs_info("fleet: table version %lld installed: %zu members, "
			"this host %s",
			(long long)f->snap.revision, f->snap.n,
			slots[0].hdr.self == RS_NONE ? "not a member yet"
						     : "a member");
	}
	free(f->slots);
	f->slots = slots;
	f->installed = true;
}

static void publish_capacity(struct daemon *d, struct fleet_rt *f);

static void jobs_answer(struct fleet_rt *f, struct drain_job *j)
{
	while (j) {
		struct drain_job *next = j->next;
		const char *action = j->drain ? "drain" : "undrain";

		control_reply_later(f->d, j->ticket,
				    j->err ? json_pack("{s:b, s:s}", "ok", 0,
						       "error", j->error)
					   : json_pack("{s:b, s:s, s:s}", "ok",
						       1, "action", action,
						       "name", j->name));
		free(j);
		j = next;
	}
}

/* Records rejected in @next and not in @cur, logged once each. */
static void log_rejections(const struct fleet_snap *cur,
			   const struct fleet_snap *next)
{
	for (size_t i = 0; i < next->n_rejected; i++) {
		const struct fleet_rejected *r = &next->rejected[i];
		bool known = false;

		for (size_t k = 0; k < cur->n_rejected && !known; k++)
			known = !strcmp(cur->rejected[k].key, r->key) &&
				!strcmp(cur->rejected[k].reason, r->reason);
		if (!known)
			rs_warn("fleet: record %s rejected: %s", r->key,
				r->reason);
	}
	if (next->left_out && next->left_out != cur->left_out)
		rs_warn("fleet: %zu valid members left out: the table holds "
			"%d (members already in it and the oldest keys first)",
			next->left_out, RS_FLEET_MAX_MEMBERS);
	if (next->truncated && !cur->truncated)
		rs_warn("fleet: more than %d keys under the prefix; the rest "
			"are not read",
			RS_ETCD_RANGE_KEYS_MAX);
}

static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
	struct fleet_rt *f = w->data;
	struct drain_job *done;
	bool fresh;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&f->mu);
	done = f->jobs_done;
	f->jobs_done = NULL;
	fresh = f->incoming_new;
	if (fresh) {
		log_rejections(&f->snap, &f->incoming);
		snap_free(&f->snap);
		f->snap = f->incoming;
		memset(&f->incoming, 0, sizeof(f->incoming));
		f->incoming_new = false;
	}
	pthread_mutex_unlock(&f->mu);
	jobs_answer(f, done);
	if (fresh) {
		bool first = !f->installed;

		f->have_snap = true;
		fleet_rebuild(f->d, f);
		if (first && f->installed) {
			rs_info("fleet: first table from etcd installed; "
				"publishing this host's capacity");
			publish_capacity(f->d, f);
		}
	}
}

/* ---- what this host publishes ---- */

/* The sum of the weights of the service's UP backends with a socket. */
static uint32_t capacity_of(struct daemon *d, size_t s)
{
	uint32_t cap = 0;

	for (size_t b = 0; b < d->st.cfg.n_backends; b++) {
		struct rs_backend w;

		if (d->st.cfg.backends[b].service != s ||
		    !d->st.bes[b].has_socket)
			continue;
		daemon_backend_word(d, &d->st.bes[b], &w);
		if (w.state == RS_BACKEND_UP)
			cap += d->st.bes[b].weight;
	}
	return cap;
}

/* This host's record's etcd key. */
static void own_key(const struct fleet_rt *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s/members/%s", f->conf.prefix, f->conf.name);
}

/*
 * With a fleet key, the record @j gets "sig": the MAC of the first key
 * over the record's etcd key and its canonical JSON (docs/fleet.md).
 */
static int record_sign(struct fleet_rt *f, json_t *j)
{
	char key[RS_FLEET_PREFIX_MAX + RS_NAME_MAX + 16], mac[RS_FLEET_MAC_HEX];
	char *canon;
	int err;

	pthread_mutex_lock(&f->mu);
	if (!f->keys.n) {
		pthread_mutex_unlock(&f->mu);
		return 0;
	}
	own_key(f, key, sizeof(key));
	canon = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	err = canon ? rs_fleet_record_mac(f->keys.key[0], key, canon, mac)
		    : -ENOMEM;
	pthread_mutex_unlock(&f->mu);
	free(canon);
	if (!err)
		err = json_object_set_new(j, "sig", json_string(mac)) ? -ENOMEM
								      : 0;
	if (err)
		rs_err("fleet: cannot sign this host's record: %s",
		       strerror(-err));
	return err;
}

/*
 * The fleet key file, read again at every start and reload: the keys
 * change in place, so a rotation moves nobody. A file that cannot be read
 * now (it was when the configuration was checked) keeps the keys in force.
 */
static void keys_load(struct fleet_rt *f)
{
	struct rs_fleet_keys k = {0};
	char why[PATH_MAX + 128];

	if (f->conf.key_file[0] &&
	    rs_fleet_keys_read(f->conf.key_file, &k, why, sizeof(why))) {
		rs_err("fleet: %s; the fleet keys stay as they were", why);
		return;
	}
	pthread_mutex_lock(&f->mu);
	if (k.n != f->keys.n)
		rs_info("fleet: %zu fleet key%s (the first signs)", k.n,
			k.n == 1 ? "" : "s");
	f->keys = k;
	pthread_mutex_unlock(&f->mu);
	OPENSSL_cleanse(&k, sizeof(k));
}

static void publish_capacity(struct daemon *d, struct fleet_rt *f)
{
	char addr[INET_ADDRSTRLEN], addr6[INET6_ADDRSTRLEN];
	json_t *j, *svcs;
	char *text;

	/*
	 * Nothing until this run has installed a table read from etcd. A
	 * host (re)joining then first installs the fleet as the others run
	 * it, without itself, and that table becomes the previous one when
	 * it takes keys: the second chance then finds the connections the
	 * others made for those keys. Published at once, the first table
	 * would already name this host, and its previous one would be
	 * whatever was pinned from an earlier run (a stale table whose
	 * "previous owner" is often this very host: the packet is reset).
	 */
	if (!f->installed)
		return;
	svcs = json_object();
	inet_ntop(AF_INET, &f->conf.addr, addr, sizeof(addr));
	inet_ntop(AF_INET6, f->conf.addr6, addr6, sizeof(addr6));
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		json_t *v, *ids;

		if (!d->st.cfg.services[s].fleet)
			continue;
		v = json_pack("{s:i}", "capacity",
			      (json_int_t)capacity_of(d, s));
		ids = fleet_quic_published(d, s);
		if (v && ids)
			json_object_set_new(v, "server_ids", ids);
		else
			json_decref(ids);
		json_object_set_new(svcs, d->st.cfg.services[s].name, v);
	}
	j = json_pack("{s:s, s:o, s:i}", "address", addr, "services", svcs,
		      "wire", RS_FLEET_WIRE_MAX);
	if (j && f->conf.has_addr6)
		json_object_set_new(j, "address6", json_string(addr6));
	if (j && record_sign(f, j)) {
		json_decref(j);
		return;
	}
	text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	if (!text)
		return;
	if (f->published_local && !strcmp(text, f->published_local)) {
		free(text);
		return;
	}
	rs_info("fleet: publishing %s", text);
	free(f->published_local);
	f->published_local = text;
	pthread_mutex_lock(&f->mu);
	free(f->publish);
	f->publish = strdup(text);
	f->publish_gen++;
	pthread_mutex_unlock(&f->mu);
}

static void on_cap_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct fleet_rt *f = w->data;

	(void)loop;
	(void)revents;
	publish_capacity(f->d, f);
}

/* ---- life cycle ---- */

static void fleet_free(struct daemon *d, struct fleet_rt *f)
{
	struct drain_job *done;

	if (f->thread_started) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
	}
	/* Drain jobs use f: let them end (each is one bounded etcd call). */
	pthread_mutex_lock(&f->mu);
	while (f->jobs_running)
		pthread_cond_wait(&f->jobs_cond, &f->mu);
	done = f->jobs_done;
	f->jobs_done = NULL;
	pthread_mutex_unlock(&f->mu);
	jobs_answer(f, done);
	pthread_cond_destroy(&f->jobs_cond);
	ev_async_stop(d->loop, &f->async);
	ev_timer_stop(d->loop, &f->cap_timer);
	pthread_mutex_destroy(&f->mu);
	snap_free(&f->snap);
	snap_free(&f->incoming);
	free(f->owners);
	free(f->slots);
	free(f->publish);
	free(f->published_local);
	free(f->local.listens);
	OPENSSL_cleanse(&f->keys, sizeof(f->keys));
	fleet_quic_state_free(&f->quic);
	free(f);
}

/* This host's listens, for the fleet thread's checks of member records. */
static void local_listens_set(struct daemon *d, struct fleet_rt *f)
{
	struct rs_listen *l;
	size_t n = 0;

	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		n += d->st.cfg.services[s].n_listens;
	l = calloc(n ? n : 1, sizeof(*l));
	if (!l)
		return;
	n = 0;
	for (size_t s = 0; s < d->st.cfg.n_services; s++)
		for (size_t k = 0; k < d->st.cfg.services[s].n_listens; k++)
			l[n++] = d->st.cfg.services[s].listens[k];
	pthread_mutex_lock(&f->mu);
	free(f->local.listens);
	f->local.listens = l;
	f->local.n = n;
	pthread_mutex_unlock(&f->mu);
}

static bool any_fleet_service(const struct rs_config *cfg)
{
	for (size_t s = 0; s < cfg->n_services; s++)
		if (cfg->services[s].fleet)
			return true;
	return false;
}

void daemon_fleet_stop(struct daemon *d)
{
	if (!d->fleet)
		return;
	fleet_free(d, d->fleet);
	d->fleet = NULL;
}

/* [fleet] as it was but for the key file, whose keys change in place. */
static bool fleet_conf_same(const struct rs_fleet_conf *a,
			    const struct rs_fleet_conf *b)
{
	struct rs_fleet_conf x = *a;

	memcpy(x.key_file, b->key_file, sizeof(x.key_file));
	return !memcmp(&x, b, sizeof(x));
}

int daemon_fleet_apply(struct daemon *d)
{
	struct fleet_rt *f = d->fleet;
	bool want = d->st.cfg.fleet.enabled && any_fleet_service(&d->st.cfg);

	if (f && (!want || !fleet_conf_same(&f->conf, &d->st.cfg.fleet))) {
		rs_info("fleet: [fleet] changed; leaving with the old "
			"settings");
		daemon_fleet_stop(d);
		f = NULL;
	}
	if (!want) {
		/* Nothing forwarded, nothing accepted from other hosts. */
		dp_fleet_clear(&d->dp);
		return 0;
	}
	if (f) {
		memcpy(f->conf.key_file, d->st.cfg.fleet.key_file,
		       sizeof(f->conf.key_file));
		local_listens_set(d, f);
		keys_load(f);
		publish_capacity(d, f);
		fleet_rebuild(d, f);
		return 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->d = d;
	f->conf = d->st.cfg.fleet;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->jobs_cond, NULL);
	ev_async_init(&f->async, on_async);
	f->async.data = f;
	ev_async_start(d->loop, &f->async);
	ev_timer_init(&f->cap_timer, on_cap_timer, 0.5, 0.5);
	f->cap_timer.data = f;
	ev_timer_start(d->loop, &f->cap_timer);
	d->fleet = f;
	local_listens_set(d, f);
	keys_load(f);
	publish_capacity(d, f);
	if (pthread_create(&f->th, NULL, fleet_thread, f)) {
		rs_err("fleet: cannot start the etcd thread");
		daemon_fleet_stop(d);
		return -EAGAIN;
	}
	f->thread_started = true;
	rs_info("fleet: %s (forwarding address %s port %u), etcd %s%s; the "
		"pinned fleet table stays until etcd answers",
		f->conf.name, inet_ntoa((struct in_addr){f->conf.addr}),
		f->conf.port, f->conf.etcd[0],
		f->conf.n_etcd > 1 ? ", ..." : "");
	return 0;
}

/* ---- views ---- */

static uint32_t owned_buckets(const struct fleet_rt *f,
			      const struct rs_config *cfg, size_t member,
			      uint32_t *total)
{
	uint32_t n = 0;

	*total = 0;
	for (size_t s = 0; s < cfg->n_services && s < f->n_owners; s++) {
		if (!cfg->services[s].fleet)
			continue;
		*total += RS_FLEET_BUCKETS;
		for (uint32_t b = 0; b < RS_FLEET_BUCKETS; b++)
			n += f->owners[s][b] == member + 1;
	}
	return n;
}

/*
 * Whether the router may send this host traffic: it runs a table read
 * from etcd in this run, that table is etcd's latest, and it names this
 * host as an owner of keys. Before that, packets entering here would be
 * judged by a table from an earlier run, or by none (docs/fleet.md,
 * "Adding a host"). NULL when ready, else why not.
 *
 * While etcd is unreachable, "etcd's latest" is the latest this host
 * read, for as long as its lease surely lives (@lease_left > 0): nobody
 * can change the table without etcd, and the others keep this host in
 * theirs. Otherwise a routing daemon whose health check asks `fleet
 * ready` would take every host of the PoP out of the router as soon as
 * etcd restarts. Past that, the others may have dropped this host (etcd
 * up but out of its reach): it is not ready.
 */
static const char *not_ready(const struct fleet_rt *f,
			     const struct rs_config *cfg, bool etcd_ok,
			     bool current, double lease_left)
{
	int self = self_index(f);
	uint32_t total;

	if (!f->installed)
		return "no fleet table read from etcd yet";
	if (!current)
		return "the table in force is not etcd's latest";
	if (!etcd_ok && lease_left <= 0)
		return "etcd unreachable for longer than this host's lease "
		       "surely lives (lease_ttl after its last keepalive): "
		       "the others may have dropped it";
	if (self < 0)
		return "not a member in etcd yet";
	if (f->snap.m[self].drained)
		return "drained";
	if (!owned_buckets(f, cfg, (size_t)self, &total))
		return "owns no keys (no capacity published yet, or none)";
	return NULL;
}

json_t *fleet_status_json(struct daemon *d)
{
	struct fleet_rt *f = d->fleet;
	struct rs_fleet_header h = {0};
	json_t *members, *out, *mj;
	char addr[INET_ADDRSTRLEN], addr6[INET6_ADDRSTRLEN];
	size_t with6 = 0;
	bool etcd_ok, installed, current;
	int64_t latest, lease;
	double lease_left;
	uint64_t tokens;
	char error[512];

	if (!f)
		return NULL;
	pthread_mutex_lock(&f->mu);
	tokens = f->etcd_tokens;
	etcd_ok = f->etcd_ok;
	latest = f->latest_rev;
	lease = f->lease;
	lease_left = f->lease_until ? f->lease_until - mono_now() : 0;
	snprintf(error, sizeof(error), "%s", f->error);
	pthread_mutex_unlock(&f->mu);
	installed = !dp_fleet_header(&d->dp, RS_FLEET_CURRENT, &h);
	/* The table in force is the latest this host read from etcd. */
	current = installed && (int64_t)h.version == latest;
	members = json_array();
	for (size_t i = 0; i < f->snap.n; i++) {
		const struct rs_fleet_member_info *m = &f->snap.m[i];
		uint32_t cap = 0, total, owned;

		for (size_t c = 0; c < m->n_caps; c++)
			cap += m->caps[c].capacity;
		owned = owned_buckets(f, &d->st.cfg, i, &total);
		inet_ntop(AF_INET, &m->addr, addr, sizeof(addr));
		inet_ntop(AF_INET6, m->addr6, addr6, sizeof(addr6));
		with6 += m->has_addr6;
		mj = json_pack("{s:s, s:s, s:o, s:i, s:f, s:b, s:b, s:i}",
			       "name", m->name, "address", addr, "address6",
			       m->has_addr6 ? json_string(addr6) : json_null(),
			       "capacity", (json_int_t)cap, "keys_share",
			       total ? (double)owned / total : 0.0, "drained",
			       m->drained, "self",
			       !strcmp(m->name, f->conf.name), "wire",
			       (json_int_t)m->wire);
		json_array_append_new(members, mj);
	}
	out = json_pack("{s:o, s:I, s:I, s:b, s:s, s:s, s:b}", "members",
			members, "version",
			(json_int_t)(installed ? (int64_t)h.version : 0),
			"latest_revision", (json_int_t)latest, "agrees",
			etcd_ok && current, "name", f->conf.name, "etcd",
			etcd_ok ? "up" : "down", "member", self_index(f) >= 0);
	if (out && error[0])
		json_object_set_new(out, "error", json_string(error));
	/* How this host reaches etcd: TLS files and its RBAC user. */
	if (out)
		json_object_set_new(
			out, "etcd_auth",
			json_pack("{s:b, s:b, s:s?, s:I}", "tls",
				  !strncmp(f->conf.etcd[0], "https://", 8),
				  "client_certificate",
				  f->conf.etcd_cert[0] != 0, "user",
				  f->conf.etcd_user[0] ? f->conf.etcd_user
						       : NULL,
				  "tokens", (json_int_t)tokens));
	/* IPv6 keys of members without address6 stay where they enter. */
	if (out && with6 && with6 < f->snap.n)
		json_object_set_new(
			out, "ipv6_warning",
			json_string("members without address6 own IPv6 keys "
				    "that are not forwarded to them: other "
				    "hosts steer those clients where they "
				    "enter (no_address6)"));
	if (out) {
		const char *why =
			not_ready(f, &d->st.cfg, etcd_ok, current, lease_left);

		json_object_set_new(out, "ready", json_boolean(!why));
		if (why)
			json_object_set_new(out, "not_ready", json_string(why));
	}
	if (out) {
		struct rs_fleet_stats st;

		if (!dp_fleet_stats(&d->dp, &st))
			json_object_set_new(
				out, "packets",
				json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
					  "s:I, s:I, s:I, s:I, s:I}",
					  "stray", (json_int_t)st.stray,
					  "forwarded", (json_int_t)st.forwarded,
					  "flow_hits", (json_int_t)st.flow_hits,
					  "received", (json_int_t)st.received,
					  "second_chance",
					  (json_int_t)st.second_chance,
					  "hop_limit", (json_int_t)st.hop_limit,
					  "forged", (json_int_t)st.forged,
					  "local_socket",
					  (json_int_t)st.local_socket, "errors",
					  (json_int_t)st.errors, "no_address6",
					  (json_int_t)st.no_address6,
					  "cookie_forwarded",
					  (json_int_t)st.cookie_forwarded,
					  "unauthenticated",
					  (json_int_t)st.unauthenticated));
	}
	if (out)
		json_object_set_new(out, "cid_conflicts",
				    fleet_quic_conflicts_json(&f->quic));
	if (out) {
		json_t *rej = json_array();

		for (size_t i = 0; i < f->snap.n_rejected; i++)
			json_array_append_new(
				rej,
				json_pack("{s:s, s:s}", "key",
					  f->snap.rejected[i].key, "reason",
					  f->snap.rejected[i].reason));
		json_object_set_new(out, "rejected", rej);
		json_object_set_new(
			out, "rejected_total",
			json_integer((json_int_t)f->snap.rejected_total));
		json_object_set_new(out, "left_out",
				    json_integer((json_int_t)f->snap.left_out));
		json_object_set_new(out, "truncated",
				    json_boolean(f->snap.truncated));
	}
	if (out && lease) {
		char buf[24];

		snprintf(buf, sizeof(buf), "%llx", (unsigned long long)lease);
		json_object_set_new(out, "lease", json_string(buf));
		/*
		 * How long etcd may stay out of reach before it could expire
		 * the lease (and the others drop this host), in tenths.
		 */
		lease_left =
			lease_left > 0 ? (double)(long)(lease_left * 10) : 0;
		json_object_set_new(out, "lease_left",
				    json_real(lease_left / 10));
	}
	return out;
}

static void *drain_thread(void *arg)
{
	struct drain_job *j = arg;
	struct fleet_rt *f = j->f;
	struct rs_etcd e;

	j->err = etcd_open(&e, &f->conf, 2000);
	if (j->err) {
		snprintf(j->error, sizeof(j->error), "%s",
			 j->err == -ENOMEM ? "out of memory" : e.error);
	} else {
		j->err = j->drain ? etcd_put(&e, j->key, "1", 0)
				  : etcd_delete(&e, j->key);
		if (j->err)
			snprintf(j->error, sizeof(j->error), "etcd: %s",
				 e.error);
		else
			rs_info("fleet: %s %s (etcd key %s)",
				j->drain ? "drained" : "undrained", j->name,
				j->key);
		etcd_close(&e);
	}
	pthread_mutex_lock(&f->mu);
	j->next = f->jobs_done;
	f->jobs_done = j;
	f->jobs_running--;
	pthread_cond_broadcast(&f->jobs_cond);
	ev_async_send(f->d->loop, &f->async);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

int fleet_set_drain(struct daemon *d, const char *name, bool drain,
		    uint64_t ticket, char *err, size_t errlen)
{
	struct fleet_rt *f = d->fleet;
	struct drain_job *j;
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	if (!f) {
		snprintf(err, errlen, "fleet mode is off");
		return -ENOENT;
	}
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		      *p == '-') ||
		    p - name >= RS_NAME_MAX - 1) {
			snprintf(err, errlen, "bad host name '%s'", name);
			return -EINVAL;
		}
	if (!*name) {
		snprintf(err, errlen, "no host name");
		return -EINVAL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	j->f = f;
	j->ticket = ticket;
	j->drain = drain;
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->key, sizeof(j->key), "%s/drain/%s", f->conf.prefix, name);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&f->mu);
	ret = pthread_create(&th, &attr, drain_thread, j);
	if (!ret)
		f->jobs_running++;
	pthread_mutex_unlock(&f->mu);
	pthread_attr_destroy(&attr);
	if (ret) {
		free(j);
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(ret));
		return -ret;
	}
	return 0;
}

bool fleet_owner_of(struct daemon *d, size_t svc, int family,
		    const uint8_t addr[16], uint16_t port, const char **owner)
{
	struct fleet_rt *f = d->fleet;
	struct rs_affinity_key key;
	struct rs_service s;
	uint8_t o;

	if (!f || !f->have_snap || svc >= f->n_owners ||
	    !d->st.cfg.services[svc].fleet ||
	    (family != AF_INET && family != AF_INET6))
		return false;
	rs_service_from_conf(&d->st.cfg, svc, d->st.svcs[svc].id, &s);
	rs_fleet_key_build(&key, &s, family, addr, port);
	o = f->owners[svc][rs_fleet_bucket(
		rs_hash_key(&key, rs_fleet_seed(s.name, s.seed)))];
	*owner = o == RS_FLEET_NO_OWNER || o > f->snap.n
			 ? NULL
			 : f->snap.m[o - 1].name;
	return true;
}

void fleet_metrics_get(struct daemon *d, struct fleet_metrics *out)
{
	struct fleet_rt *f = d->fleet;
	struct rs_fleet_header h = {0};

	memset(out, 0, sizeof(*out));
	if (!f)
		return;
	out->enabled = true;
	pthread_mutex_lock(&f->mu);
	out->etcd_up = f->etcd_ok;
	out->agrees = f->etcd_ok;
	pthread_mutex_unlock(&f->mu);
	if (!dp_fleet_header(&d->dp, RS_FLEET_CURRENT, &h))
		out->version = (int64_t)h.version;
	out->agrees = out->agrees && out->version == f->latest_rev;
	out->members = (uint32_t)f->snap.n;
	out->swaps = f->swaps;
	out->cid_conflicts = (uint32_t)f->quic.n_conflicts;
	out->rejected = f->snap.rejected_total;
	out->left_out = f->snap.left_out;
}

const char *fleet_cid_owner(struct daemon *d, size_t svc, const uint8_t *id,
			    uint8_t len, bool *conflict)
{
	struct fleet_rt *f = d->fleet;

	*conflict = false;
	if (!f || !f->installed || svc >= d->st.cfg.n_services ||
	    !d->st.cfg.services[svc].fleet)
		return NULL;
	return fleet_quic_owner(f->snap.m, f->snap.n, f->slots,
				d->st.svcs[svc].id, id, len, conflict);
}

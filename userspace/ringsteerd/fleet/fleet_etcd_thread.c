// SPDX-License-Identifier: MIT
/*
 * The etcd client thread (docs/fleet.md). It owns every etcd call but the
 * operator's drain commands: it registers this host with a lease, keeps
 * it alive, puts the record the loop hands it (fleet_shared.publish),
 * reads and watches the prefix, and hands each new snapshot (members,
 * drains, revision) to the loop through fleet_shared.incoming and an
 * ev_async. It touches nothing of the loop's but struct fleet_shared,
 * under fleet_rt.mu (fleet_rt.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "fleet_rt.h"
#include "log.h"

double fleet_mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The thread's own state from round to round. */
struct etcd_round {
	struct rs_etcd e;
	char key[FLEET_KEY_MAX];	      /* this host's record */
	char prefix[RS_FLEET_PREFIX_MAX + 2]; /* PREFIX/ */
	int64_t lease, rev;
	uint64_t published; /* publish_gen in etcd now, 0: none */
	double next_ka;	    /* when the next keepalive is due */
	struct fleet_snap prev;
	char *mine; /* the record put last */
};

static bool stopping(struct fleet_rt *f)
{
	bool s;

	pthread_mutex_lock(&f->mu);
	s = f->sh.stop;
	pthread_mutex_unlock(&f->mu);
	return s;
}

static void thread_failed(struct fleet_rt *f, struct rs_etcd *e)
{
	bool was;

	pthread_mutex_lock(&f->mu);
	was = f->sh.etcd_ok;
	f->sh.etcd_ok = false;
	snprintf(f->sh.error, sizeof(f->sh.error), "%s", e->error);
	pthread_mutex_unlock(&f->mu);
	if (was)
		rs_warn("fleet: etcd unreachable (%s); keeping the last fleet "
			"table",
			e->error);
	ev_async_send(f->loop, &f->async);
	for (int i = 0; i < 10 && !stopping(f); i++)
		nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
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
	f->sh.lease_until = sent ? sent + f->conf.lease_ttl : 0;
	pthread_mutex_unlock(&f->mu);
}

/* A lease for this host if it has none. 0 or negative errno. */
static int lease_ensure(struct fleet_rt *f, struct etcd_round *r)
{
	double sent;
	int err;

	if (r->lease)
		return 0;
	sent = fleet_mono_now();
	err = etcd_lease_grant(&r->e, f->conf.lease_ttl, &r->lease);
	if (err)
		return err;
	lease_alive(f, sent);
	r->published = 0;
	r->next_ka = fleet_mono_now() + f->conf.lease_ttl / 3.0;
	rs_info("fleet: joined as %s with lease %llx (ttl %us)", f->conf.name,
		(unsigned long long)r->lease, f->conf.lease_ttl);
	return 0;
}

/*
 * The loop's record, put when it is new to etcd. 0 or negative errno;
 * 0 with no lease left when etcd no longer has it.
 */
static int publish_pending(struct fleet_rt *f, struct etcd_round *r)
{
	char *val = NULL;
	uint64_t gen;
	int err;

	pthread_mutex_lock(&f->mu);
	gen = f->sh.publish_gen;
	if (f->sh.publish && gen != r->published)
		val = strdup(f->sh.publish);
	pthread_mutex_unlock(&f->mu);
	if (!val)
		return 0;
	err = etcd_put(&r->e, r->key, val, r->lease);
	if (err == -ENOENT) {
		/*
		 * Revoked (any member's etcd user may) or expired while etcd
		 * was away, with a record to publish: the put comes before
		 * the keepalive that would have noticed, so it is noticed
		 * here, or never.
		 */
		rs_warn("fleet: lease %llx is gone; joining again",
			(unsigned long long)r->lease);
		free(val);
		r->lease = 0;
		lease_alive(f, 0);
		return 0;
	}
	if (err) {
		free(val);
		return err;
	}
	free(r->mine);
	r->mine = val;
	r->published = gen;
	return 0;
}

/* The keepalive, when due. As publish_pending(). */
static int keepalive_due(struct fleet_rt *f, struct etcd_round *r)
{
	double sent;
	int err;

	if (fleet_mono_now() < r->next_ka)
		return 0;
	sent = fleet_mono_now();
	err = etcd_lease_keepalive(&r->e, r->lease);
	if (err == -ENOENT) {
		rs_warn("fleet: lease %llx expired; joining again",
			(unsigned long long)r->lease);
		r->lease = 0;
		lease_alive(f, 0);
		return 0;
	}
	if (err)
		return err;
	lease_alive(f, sent);
	r->next_ka = fleet_mono_now() + f->conf.lease_ttl / 3.0;
	return 0;
}

/* The loop's inputs to the record checks, copied out from under mu. */
static int checks_inputs(struct fleet_rt *f, struct fleet_local *local,
			 struct rs_fleet_keys *keys,
			 struct rs_fleet_pubkeys *ids)
{
	int err;

	pthread_mutex_lock(&f->mu);
	*keys = f->sh.keys;
	err = rs_fleet_pubkeys_copy(ids, &f->sh.ident.members);
	if (f->sh.local.n) {
		local->listens =
			malloc(f->sh.local.n * sizeof(*local->listens));
		if (local->listens) {
			memcpy(local->listens, f->sh.local.listens,
			       f->sh.local.n * sizeof(*local->listens));
			local->n = f->sh.local.n;
		}
	}
	pthread_mutex_unlock(&f->mu);
	/* Without the members' keys every record would be believed. */
	return err;
}

/*
 * Snapshot @s (of revision r->rev) to the loop; NULL: a read over the key
 * cap, nothing to build a table from (the loop keeps the one in force).
 */
static void hand_over(struct fleet_rt *f, struct etcd_round *r,
		      struct fleet_snap *s)
{
	pthread_mutex_lock(&f->mu);
	if (!f->sh.etcd_ok)
		rs_info("fleet: etcd reachable at revision %lld",
			(long long)r->rev);
	f->sh.etcd_ok = true;
	f->sh.error[0] = '\0';
	f->sh.etcd_tokens = r->e.authentications;
	/*
	 * Over the cap, the latest revision the table could be built from
	 * stays the last one read whole: the kept table is not behind it.
	 */
	if (s)
		f->sh.latest_rev = r->rev;
	f->sh.lease = r->lease;
	f->sh.over_cap = !s;
	if (s) {
		fleet_snap_free(&f->sh.incoming);
		f->sh.incoming = *s;
	}
	f->sh.incoming_new |= s != NULL;
	pthread_mutex_unlock(&f->mu);
	ev_async_send(f->loop, &f->async);
}

/*
 * PREFIX/members/ and PREFIX/drain/, read at one revision, into one list:
 * keys elsewhere under the prefix are nobody's business here, so however
 * many a writer puts there, they neither count against the key cap nor
 * push a member out of the read. *@over_cap: either range held more keys
 * than are read.
 */
static int read_ranges(struct etcd_round *r, size_t keys_max,
		       struct rs_etcd_kv **kvs, size_t *n, bool *over_cap)
{
	char members[sizeof(r->prefix) + 8], drain[sizeof(r->prefix) + 8];
	struct rs_etcd_kv *dk = NULL, *all;
	size_t dn = 0;
	bool t1 = false, t2 = false;
	int64_t rev;
	int err;

	snprintf(members, sizeof(members), "%smembers/", r->prefix);
	snprintf(drain, sizeof(drain), "%sdrain/", r->prefix);
	r->rev = 0;
	err = etcd_range_at(&r->e, members, keys_max, kvs, n, &r->rev, &t1);
	if (err)
		return err;
	rev = r->rev;
	err = etcd_range_at(&r->e, drain, keys_max, &dk, &dn, &rev, &t2);
	all = err ? NULL : realloc(*kvs, (*n + dn + 1) * sizeof(**kvs));
	if (!all) {
		etcd_kvs_free(dk, dn);
		etcd_kvs_free(*kvs, *n);
		*kvs = NULL;
		return err ? err : -ENOMEM;
	}
	/* The entries move: their strings now belong to *kvs. */
	memcpy(all + *n, dk, dn * sizeof(*dk));
	free(dk);
	*kvs = all;
	*n += dn;
	*over_cap = t1 || t2;
	return 0;
}

/*
 * The members read and made a snapshot for the loop. A read over the key
 * cap builds nothing: a table from part of the members would drop the
 * others (keys that sort first could leave one fake member), so the loop
 * keeps the table in force until the keys are back under the cap.
 * 0 or negative errno.
 */
static int read_members(struct fleet_rt *f, struct etcd_round *r)
{
	struct rs_etcd_kv *kvs = NULL;
	struct fleet_local local = {0};
	struct rs_fleet_keys keys;
	struct rs_fleet_pubkeys ids;
	struct fleet_snap s;
	bool over_cap = false, ok;
	size_t n = 0;
	int err;

	err = read_ranges(r, f->keys_max, &kvs, &n, &over_cap);
	if (err)
		return err;
	guard_own(kvs, n, r->key, r->mine, &r->published);
	if (over_cap) {
		etcd_kvs_free(kvs, n);
		hand_over(f, r, NULL);
		return 0;
	}
	ok = !checks_inputs(f, &local, &keys, &ids) &&
	     fleet_snap_from_kvs(&f->conf, &local, &keys, &ids, kvs, n, r->rev,
				 &r->prev, &s);
	OPENSSL_cleanse(&keys, sizeof(keys));
	rs_fleet_pubkeys_free(&ids);
	free(local.listens);
	etcd_kvs_free(kvs, n);
	if (!ok)
		return -ENOMEM;
	fleet_snap_keep_members(&r->prev, &s);
	hand_over(f, r, &s);
	return 0;
}

/* One round: lease, publish, keepalive, read. 0 or negative errno. */
static int thread_round(struct fleet_rt *f, struct etcd_round *r)
{
	int err = lease_ensure(f, r);

	if (!err)
		err = publish_pending(f, r);
	if (err || !r->lease)
		return err;
	err = keepalive_due(f, r);
	if (err || !r->lease)
		return err;
	return read_members(f, r);
}

void *fleet_etcd_thread(void *arg)
{
	struct fleet_rt *f = arg;
	struct etcd_round r = {0};
	int64_t seen = 0;

	/* 2 s: a busy etcd was seen to need more than 1 s (make test). */
	if (etcd_open(&r.e, &f->conf, 2000)) {
		const char *why = r.e.error[0] ? r.e.error : "out of memory";

		/* Said once; status shows it until a reload fixes the file. */
		rs_err("fleet: cannot use etcd: %s", why);
		pthread_mutex_lock(&f->mu);
		f->sh.etcd_ok = false;
		snprintf(f->sh.error, sizeof(f->sh.error), "%s", why);
		pthread_mutex_unlock(&f->mu);
		etcd_close(&r.e);
		return NULL;
	}
	snprintf(r.key, sizeof(r.key), "%s/members/%s", f->conf.prefix,
		 f->conf.name);
	snprintf(r.prefix, sizeof(r.prefix), "%s/", f->conf.prefix);
	while (!stopping(f)) {
		long wait;

		if (thread_round(f, &r)) {
			thread_failed(f, &r.e);
			continue;
		}
		if (!r.lease)
			continue;
		/* Wait for a change, but keep the lease alive meanwhile. */
		wait = (long)((r.next_ka - fleet_mono_now()) * 1000);
		wait = wait < 50 ? 50 : wait > 1000 ? 1000 : wait;
		if (r.rev == seen || wait > 0)
			etcd_watch(&r.e, r.prefix, r.rev + 1, wait);
		seen = r.rev;
	}
	etcd_close(&r.e);
	fleet_snap_free(&r.prev);
	free(r.mine);
	return NULL;
}

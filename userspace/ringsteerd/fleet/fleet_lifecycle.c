// SPDX-License-Identifier: MIT
/*
 * Fleet mode's life cycle on the event loop: start (with the etcd
 * thread), a reload's changes, stop; and the loop's end of the handoff:
 * on_async takes what the threads left in struct fleet_shared (a new
 * snapshot, finished drain jobs) and installs the table.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "fleet_rt.h"
#include "log.h"

/*
 * Keys read per range: RS_ETCD_RANGE_KEYS_MAX, or lower for a test that
 * floods past the cap without writing 8,000 keys
 * (RINGSTEERD_TEST_FLEET_KEYS_MAX, tests/e2e/test_fleet_records.sh).
 */
size_t fleet_keys_max(void)
{
	const char *v = getenv("RINGSTEERD_TEST_FLEET_KEYS_MAX");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;

	return n >= RS_ETCD_PAGE && n < RS_ETCD_RANGE_KEYS_MAX
		       ? (size_t)n
		       : RS_ETCD_RANGE_KEYS_MAX;
}

/*
 * Said once each way: keys past the cap are keys nobody checked, and a
 * table built without them could leave out every real member.
 */
static void note_over_cap(struct fleet_rt *f, bool over_cap)
{
	if (over_cap == f->over_cap)
		return;
	f->over_cap = over_cap;
	if (over_cap)
		rs_warn("fleet: more than %zu keys under %s/members/ or "
			"%s/drain/: not read, the table in force is kept "
			"(%s) until they are back under the cap",
			f->keys_max, f->conf.prefix, f->conf.prefix,
			f->installed ? "installed" : "none yet: not ready");
	else
		rs_info("fleet: the members are under the key cap again");
}

static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
	struct fleet_rt *f = w->data;
	struct drain_job *done;
	bool fresh, over_cap;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&f->mu);
	done = f->sh.jobs_done;
	f->sh.jobs_done = NULL;
	over_cap = f->sh.over_cap;
	fresh = f->sh.incoming_new;
	if (fresh) {
		fleet_snap_log_rejections(&f->snap, &f->sh.incoming);
		fleet_snap_free(&f->snap);
		f->snap = f->sh.incoming;
		memset(&f->sh.incoming, 0, sizeof(f->sh.incoming));
		f->sh.incoming_new = false;
	}
	pthread_mutex_unlock(&f->mu);
	fleet_jobs_answer(f, done);
	note_over_cap(f, over_cap);
	if (fresh) {
		bool first = !f->installed;

		f->have_snap = true;
		fleet_rebuild(f->d, f);
		if (first && f->installed) {
			rs_info("fleet: first table from etcd installed; "
				"publishing this host's capacity");
			fleet_publish_capacity(f->d, f);
		}
	}
}

/* The etcd thread stopped, the drain jobs ended and answered. */
static void threads_end(struct fleet_rt *f)
{
	struct drain_job *done;

	if (f->thread_started) {
		pthread_mutex_lock(&f->mu);
		f->sh.stop = true;
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
	}
	/* Drain jobs use f: let them end (each is one bounded etcd call). */
	pthread_mutex_lock(&f->mu);
	while (f->sh.jobs_running)
		pthread_cond_wait(&f->jobs_cond, &f->mu);
	done = f->sh.jobs_done;
	f->sh.jobs_done = NULL;
	pthread_mutex_unlock(&f->mu);
	fleet_jobs_answer(f, done);
}

static void fleet_free(struct daemon *d, struct fleet_rt *f)
{
	threads_end(f);
	pthread_cond_destroy(&f->jobs_cond);
	ev_async_stop(d->loop, &f->async);
	ev_timer_stop(d->loop, &f->cap_timer);
	pthread_mutex_destroy(&f->mu);
	fleet_snap_free(&f->snap);
	fleet_snap_free(&f->sh.incoming);
	free(f->owners);
	free(f->slots);
	free(f->sh.publish);
	free(f->published_local);
	free(f->sh.local.listens);
	OPENSSL_cleanse(&f->sh.keys, sizeof(f->sh.keys));
	fleet_ident_free(&f->sh.ident);
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
	free(f->sh.local.listens);
	f->sh.local.listens = l;
	f->sh.local.n = n;
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
	fleet_free(d, (struct fleet_rt *)d->fleet);
	d->fleet = NULL;
}

/* [fleet] as it was but for the key files, whose keys change in place. */
static bool fleet_conf_same(const struct rs_fleet_conf *a,
			    const struct rs_fleet_conf *b)
{
	struct rs_fleet_conf x = *a;

	memcpy(x.key_file, b->key_file, sizeof(x.key_file));
	memcpy(x.identity_key, b->identity_key, sizeof(x.identity_key));
	memcpy(x.member_keys, b->member_keys, sizeof(x.member_keys));
	return !memcmp(&x, b, sizeof(x));
}

/* What start and reload both do: inputs to the thread, keys, record. */
static void fleet_refresh(struct daemon *d, struct fleet_rt *f)
{
	local_listens_set(d, f);
	fleet_keys_load(f, &d->st.cfg.fleet);
	fleet_publish_capacity(d, f);
}

/* A new fleet_rt with its watchers started, in d->fleet; NULL: memory. */
static struct fleet_rt *fleet_new(struct daemon *d)
{
	struct fleet_rt *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->d = d;
	f->loop = d->loop;
	f->conf = d->st.cfg.fleet;
	f->keys_max = fleet_keys_max();
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->jobs_cond, NULL);
	ev_async_init(&f->async, on_async);
	f->async.data = f;
	ev_async_start(d->loop, &f->async);
	ev_timer_init(&f->cap_timer, fleet_on_cap_timer, 0.5, 0.5);
	f->cap_timer.data = f;
	ev_timer_start(d->loop, &f->cap_timer);
	d->fleet = f;
	return f;
}

int daemon_fleet_apply(struct daemon *d)
{
	struct fleet_rt *f = (struct fleet_rt *)d->fleet;
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
		fleet_refresh(d, f);
		fleet_rebuild(d, f);
		return 0;
	}
	f = fleet_new(d);
	if (!f)
		return -ENOMEM;
	fleet_refresh(d, f);
	if (pthread_create(&f->th, NULL, fleet_etcd_thread, f)) {
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

// SPDX-License-Identifier: MIT
/*
 * An operator's `fleet drain NAME` / `undrain NAME`: the etcd key
 * PREFIX/drain/NAME, put or deleted on a short-lived thread of its own so
 * that the event loop never waits for etcd. The finished job comes back
 * through fleet_shared.jobs_done and the ev_async; the loop calls the
 * caller's callback with the result (fleet code never calls up).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_rt.h"
#include "log.h"

void fleet_jobs_answer(struct fleet_rt *f, struct drain_job *j)
{
	while (j) {
		struct drain_job *next = j->next;

		j->done(f->d, j->ticket, j->name, j->drain,
			j->err ? j->error : NULL);
		free(j);
		j = next;
	}
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
	j->next = f->sh.jobs_done;
	f->sh.jobs_done = j;
	f->sh.jobs_running--;
	pthread_cond_broadcast(&f->jobs_cond);
	ev_async_send(f->loop, &f->async);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Whether @name may be a member's name; else why not in @err. */
static bool name_ok(const char *name, char *err, size_t errlen)
{
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		      *p == '-') ||
		    p - name >= RS_NAME_MAX - 1) {
			snprintf(err, errlen, "bad host name '%s'", name);
			return false;
		}
	if (!*name) {
		snprintf(err, errlen, "no host name");
		return false;
	}
	return true;
}

/* Job @j on a detached thread of its own. 0 or a positive errno. */
static int job_start(struct fleet_rt *f, struct drain_job *j)
{
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&f->mu);
	ret = pthread_create(&th, &attr, drain_thread, j);
	if (!ret)
		f->sh.jobs_running++;
	pthread_mutex_unlock(&f->mu);
	pthread_attr_destroy(&attr);
	return ret;
}

int fleet_set_drain(struct daemon *d, const char *name, bool drain,
		    fleet_drain_done done, uint64_t ticket, char *err,
		    size_t errlen)
{
	struct fleet_rt *f = (struct fleet_rt *)d->fleet;
	struct drain_job *j;
	int ret;

	if (!f) {
		snprintf(err, errlen, "fleet mode is off");
		return -ENOENT;
	}
	if (!name_ok(name, err, errlen))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	j->f = f;
	j->done = done;
	j->ticket = ticket;
	j->drain = drain;
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->key, sizeof(j->key), "%s/drain/%s", f->conf.prefix, name);
	ret = job_start(f, j);
	if (ret) {
		free(j);
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(ret));
		return -ret;
	}
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * The descriptor budget. Health checks, socket acquisition and the control
 * and metrics clients all draw on one RLIMIT_NOFILE; without a budget,
 * idle clients can take every descriptor and the health checks then fail
 * as if every backend were dead. So the daemon raises its soft limit to
 * the hard one, keeps descriptors for what it must be able to do (one
 * check per backend, socket acquisition, reloads) and gives clients only
 * what is left: the caps of the control socket and the metrics endpoint
 * are lowered, with a warning, when they would not fit.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "daemon.h"
#include "fd_budget.h"
#include "log.h"
#include "metrics.h"

/*
 * A check holds one socket while it runs (libcurl: one connection, fresh
 * and not reused); the second covers a check that outlives its interval
 * by a little and libcurl's own short-lived descriptors.
 */
#define FDS_PER_CHECK 2
/*
 * Short-lived descriptors outside any client: pidfd and socket copy while
 * acquiring a backend socket, the sock_diag socket, /proc scans, new ring
 * and sticky maps, the file read by a reload, libcurl's wakeup pair.
 */
#define FDS_SLACK 48
/* Listening sockets and libmicrohttpd's epoll descriptor. */
#define FDS_LISTENERS 4

static unsigned long fds_in_use(void)
{
	DIR *dir = opendir("/proc/self/fd");
	unsigned long n = 0;
	struct dirent *e;

	if (!dir)
		return 0;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n ? n - 1 : 0; /* not the directory's own descriptor */
}

/* Soft to hard: systemd's default soft limit of 1024 is far too low. */
static unsigned long raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl)) {
			rs_warn("descriptors: cannot raise RLIMIT_NOFILE from "
				"%lu to %lu: %s",
				(unsigned long)was, (unsigned long)rl.rlim_max,
				strerror(errno));
			rl.rlim_cur = was;
		} else {
			rs_info("descriptors: raised RLIMIT_NOFILE from %lu "
				"to %lu",
				(unsigned long)was, (unsigned long)rl.rlim_cur);
		}
	}
	return rl.rlim_cur == RLIM_INFINITY ? (unsigned long)-1
					    : (unsigned long)rl.rlim_cur;
}

static unsigned long checks_reserve(const struct rs_config *cfg)
{
	unsigned long n = 0;

	for (size_t i = 0; i < cfg->n_backends; i++)
		n += cfg->backends[i].health.type != RS_CHECK_NONE;
	return n * FDS_PER_CHECK;
}

static uint32_t min_u32(unsigned long a, uint32_t b)
{
	return a < b ? (uint32_t)a : b;
}

int daemon_fd_budget(struct daemon *d)
{
	const struct rs_config *cfg = &d->st.cfg;
	unsigned long limit = raise_nofile(), reserve, used, room, need;
	/* Clients open now are counted by fds_in_use(): take them back. */
	unsigned long clients = d->control_open + metrics_clients(d);
	uint32_t want_c = cfg->control_clients_max;
	uint32_t want_m = cfg->has_metrics ? cfg->metrics_clients_max : 0;
	uint32_t fixed_m = metrics_clients_max(d);
	bool running = d->control || d->metrics;

	used = fds_in_use();
	used = used > clients ? used - clients : 0;
	if (!running)
		used += FDS_LISTENERS;
	/* The metrics server keeps the cap it was started with. */
	if (fixed_m)
		want_m = fixed_m;
	/* Each service's spare ring map is held by a descriptor. */
	reserve = checks_reserve(cfg) + cfg->n_services + FDS_SLACK;
	room = limit > used + reserve ? limit - used - reserve : 0;
	d->control_clients_max = want_c;
	d->metrics_clients_max = want_m;
	if (room >= (unsigned long)want_c + want_m)
		goto done;
	need = 1ul + (fixed_m ? fixed_m : want_m ? 1 : 0);
	if (room < need) {
		rs_err("descriptors: RLIMIT_NOFILE %lu leaves no room for "
		       "clients: %lu in use, %lu kept for health checks and "
		       "socket acquisition; raise LimitNOFILE",
		       limit, used, reserve);
		/* A reload is not refused for this: serve one CLI at a time. */
		d->control_clients_max = 1;
		return running ? 0 : -EMFILE;
	}
	if (fixed_m) {
		d->control_clients_max = min_u32(room - fixed_m, want_c);
	} else {
		/* Shared in proportion to what was asked, at least 1 each. */
		d->control_clients_max = min_u32(
			room * want_c / ((unsigned long)want_c + want_m),
			want_c);
		if (!d->control_clients_max)
			d->control_clients_max = 1;
		d->metrics_clients_max =
			want_m ? min_u32(room - d->control_clients_max, want_m)
			       : 0;
	}
	rs_warn("descriptors: RLIMIT_NOFILE %lu too low for the client caps: "
		"control clients lowered from %u to %u, metrics clients from "
		"%u to %u, so that %lu stay for health checks and socket "
		"acquisition; raise LimitNOFILE",
		limit, want_c, d->control_clients_max, want_m,
		d->metrics_clients_max, reserve);
	return 0;
done:
	rs_info("descriptors: limit %lu, %lu in use, %lu kept for health "
		"checks and socket acquisition, up to %u control and %u "
		"metrics clients",
		limit, used, reserve, d->control_clients_max,
		d->metrics_clients_max);
	return 0;
}

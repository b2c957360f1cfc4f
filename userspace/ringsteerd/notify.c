// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ev.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "listen_check.h"
#include "log.h"
#include "notify.h"
#include "notify_socket.h"

/* One service manager per process: the watchdog's timer is the process's. */
static ev_timer watchdog;

/*
 * sd_notifyf()'s formatting, sent through notify_socket.c: libsystemd's
 * own send blocks while the manager does not read (notify_socket.h).
 */
__attribute__((format(printf, 1, 2))) static void notifyf(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	notify_socket_send(msg);
}

static void steering_status(const struct daemon *d, char *buf, size_t len)
{
	size_t have = 0;

	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		have += d->st.bes[i].has_socket;
	snprintf(buf, len,
		 "steering %zu services, %zu/%zu backends with a "
		 "socket",
		 d->st.cfg.n_services, have, d->st.cfg.n_backends);
}

void notify_ready(const struct daemon *d)
{
	char status[128];

	steering_status(d, status, sizeof(status));
	notifyf("READY=1\nSTATUS=%s", status);
}

int notify_reload(struct daemon *d, bool force, char *errs, size_t errlen)
{
	char status[128];
	struct timespec ts;
	int err;

	/*
	 * systemd 253 (Type=notify-reload) wants MONOTONIC_USEC with
	 * RELOADING=1 to match the READY=1 that ends it; Debian 12's 252
	 * takes RELOADING=1 alone and ignores the field.
	 */
	/* A whole watchdog period for building the new rings. */
	if (ev_is_active(&watchdog))
		notify_socket_send("WATCHDOG=1");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	notifyf("RELOADING=1\nSTATUS=reloading %s\nMONOTONIC_USEC=%llu",
		d->config_path,
		(unsigned long long)ts.tv_sec * 1000000ULL +
			(unsigned long long)ts.tv_nsec / 1000ULL);
	err = daemon_reload(d, force, errs, errlen);
	if (err) {
		/* The first line names the first problem's FILE:LINE. */
		notifyf("READY=1\nSTATUS=reload refused, running the "
			"previous configuration: %.*s",
			(int)strcspn(errs, "\n"), errs);
		return err;
	}
	listen_check(d, true, NULL);
	steering_status(d, status, sizeof(status));
	notifyf("READY=1\nSTATUS=%s", status);
	return 0;
}

void notify_failed(int err)
{
	notifyf("STATUS=failed to start: %s\nERRNO=%d", strerror(-err), -err);
	notify_socket_flush(1.0);
}

void notify_stopping(void)
{
	notify_socket_send("STOPPING=1\nSTATUS=stopped; the data plane stays "
			   "attached");
	notify_socket_flush(1.0);
}

/*
 * From the event loop rather than a thread: a loop stuck in a callback is
 * exactly what the watchdog is there to catch.
 */
static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	notify_socket_send("WATCHDOG=1");
}

void notify_watchdog_start(struct daemon *d)
{
	uint64_t usec = 0;
	int r = sd_watchdog_enabled(0, &usec);

	if (r < 0)
		rs_warn("watchdog: WATCHDOG_USEC unusable: %s", strerror(-r));
	if (r <= 0 || !usec)
		return;
	/* Twice per period, as sd_watchdog_enabled(3) advises. */
	ev_timer_init(&watchdog, on_watchdog, 0., (double)usec / 2e6);
	ev_timer_again(d->loop, &watchdog);
	rs_info("watchdog: pinging systemd every %.3fs", (double)usec / 2e6);
}

void notify_watchdog_stop(struct daemon *d)
{
	ev_timer_stop(d->loop, &watchdog);
}

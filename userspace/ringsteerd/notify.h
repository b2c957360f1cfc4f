/* SPDX-License-Identifier: MIT */
/*
 * Telling systemd (Type=notify) where the daemon stands: ready, reloading,
 * stopping, a STATUS= line, and the watchdog's pings. Without
 * NOTIFY_SOCKET every call does nothing.
 */
#ifndef RS_NOTIFY_H
#define RS_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

struct daemon;

/* Programs attached, maps pinned, control socket up: READY=1 and STATUS=. */
void notify_ready(const struct daemon *d);
/*
 * daemon_reload() between RELOADING=1 and READY=1, so that systemctl
 * reload waits for the new state; STATUS= says how it went.
 */
int notify_reload(struct daemon *d, bool force, char *errs, size_t errlen);
/* Start failed with @err (negative errno): STATUS= and ERRNO=. */
void notify_failed(int err);
void notify_stopping(void);
/* WATCHDOG=1 from the event loop, at half of WatchdogSec, when set. */
void notify_watchdog_start(struct daemon *d);
void notify_watchdog_stop(struct daemon *d);

#endif /* RS_NOTIFY_H */

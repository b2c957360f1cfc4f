/* SPDX-License-Identifier: MIT */
/*
 * One trace per pin directory (trace_lock.c): the filters are one word of
 * the data plane.
 */
#ifndef RS_TRACE_LOCK_H
#define RS_TRACE_LOCK_H

#include <limits.h>

/* Where the locks live: root's only, like the control socket's default. */
#define RS_TRACE_LOCK_DIR "/run/ringsteer"

struct trace_lock {
	int fd;
	char path[PATH_MAX];
};

/*
 * Take the lock of the pin directory @bpffs: 0, -EWOULDBLOCK when another
 * trace holds it, or another negative errno (said why).
 */
int trace_lock_take(struct trace_lock *lk, const char *bpffs);
/* Let go, and remove the file: locks do not pile up. */
void trace_lock_release(struct trace_lock *lk);

#endif /* RS_TRACE_LOCK_H */

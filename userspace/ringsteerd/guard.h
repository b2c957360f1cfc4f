/* SPDX-License-Identifier: MIT */
/*
 * guard.c: the pin-directory lock (one daemon per pinned state) and the
 * control socket's path, which a daemon removes only if it made it.
 */
#ifndef RS_GUARD_H
#define RS_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

struct daemon;

/*
 * Lock d->st.cfg.bpffs before anything else is touched; held until the
 * process exits. A daemon (!@detach) makes the directory; --detach (@detach)
 * of a missing directory goes on unlocked. -EBUSY, logged with the holder's
 * pid, when another process holds it.
 */
int guard_lock(struct daemon *d, bool detach);

/*
 * Before bind(): remove a socket file nobody answers on (a previous run's),
 * -EADDRINUSE when someone does.
 */
int control_path_claim(const char *path);
/* The inode of the socket file we bound, to know it again at exit. */
ino_t control_path_ino(const char *path);
/* Unlink @path only if it is still the file we bound (@ino). */
void control_path_release(const char *path, ino_t ino);

#endif /* RS_GUARD_H */

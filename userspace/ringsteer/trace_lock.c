// SPDX-License-Identifier: MIT
/*
 * The trace lock: an flock on a file named after the pin directory's
 * identity (bpffs holds no regular files, and the daemon holds the
 * directory's own lock), dying with its holder.
 *
 * It lives in a directory only root can write to: in a world-writable one
 * (/run/lock) any user could take it first and block root's traces, or
 * plant a symlink for root to create a file through. The file is opened
 * without following links all the same, and removed when the trace ends.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trace_lock.h"

/* The lock directory, made if missing; refused unless only we can write. */
static int lock_dir(void)
{
	struct stat st;
	int dfd;

	if (mkdir(RS_TRACE_LOCK_DIR, 0700) && errno != EEXIST) {
		fail("%s: %s", RS_TRACE_LOCK_DIR, strerror(errno));
		return -errno;
	}
	dfd = open(RS_TRACE_LOCK_DIR,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		fail("%s: %s", RS_TRACE_LOCK_DIR, strerror(errno));
		return -errno;
	}
	if (fstat(dfd, &st) || st.st_uid != geteuid() || st.st_mode & 022) {
		fail("%s: owned by uid %u, mode %03o: only its owner may "
		     "write there, and that must be us; not locking a trace "
		     "in it",
		     RS_TRACE_LOCK_DIR, (unsigned int)st.st_uid,
		     (unsigned int)st.st_mode & 0777);
		close(dfd);
		return -EPERM;
	}
	return dfd;
}

/* The file at @name is still the one @fd has locked. */
static bool still_there(int dfd, const char *name, int fd)
{
	struct stat a, b;

	return !fstat(fd, &a) && !fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * A holder removes its file before letting go, so a lock won on a file
 * that is no longer at its name locks nothing: open the name again.
 */
static int lock_at(int dfd, const char *name)
{
	int fd;

	for (;;) {
		fd = openat(dfd, name,
			    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			fail("%s/%s: %s", RS_TRACE_LOCK_DIR, name,
			     strerror(errno));
			return -errno;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			int err = errno;

			close(fd);
			if (err != EWOULDBLOCK)
				fail("flock %s/%s: %s", RS_TRACE_LOCK_DIR, name,
				     strerror(err));
			return -err;
		}
		if (still_there(dfd, name, fd))
			return fd;
		close(fd);
	}
}

int trace_lock_take(struct trace_lock *lk, const char *bpffs)
{
	char name[64];
	struct stat st;
	int dfd;

	lk->fd = -1;
	if (stat(bpffs, &st)) {
		fail("%s: %s", bpffs, strerror(errno));
		return -errno;
	}
	snprintf(name, sizeof(name), "trace-%llx-%llx.lock",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	snprintf(lk->path, sizeof(lk->path), "%s/%s", RS_TRACE_LOCK_DIR, name);
	dfd = lock_dir();
	if (dfd < 0)
		return dfd;
	lk->fd = lock_at(dfd, name);
	close(dfd);
	return lk->fd < 0 ? lk->fd : 0;
}

void trace_lock_release(struct trace_lock *lk)
{
	if (lk->fd < 0)
		return;
	/* The directory is root's: the name cannot have been swapped. */
	unlink(lk->path);
	close(lk->fd);
	lk->fd = -1;
}

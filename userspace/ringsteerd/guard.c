// SPDX-License-Identifier: MIT
/*
 * One daemon per pinned state. Two daemons on one pin directory would fight
 * over the link, the maps and the control socket, and `--detach` under a
 * running daemon would take steering away from it without its knowing; so
 * the pin directory is locked before anything else is touched, and whoever
 * cannot take the lock refuses, naming the daemon that holds it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "guard.h"
#include "log.h"

int guard_lock(struct daemon *d, bool detach)
{
	const char *root = d->st.cfg.bpffs;
	pid_t holder;
	int err;

	/* --detach of a directory that is not there has nothing to guard. */
	err = dp_pins_lock(&d->pins_lock, root, !detach, &holder);
	if (err == -ENOENT && detach)
		return 0;
	if (err != -EBUSY)
		return err;
	if (detach)
		rs_err("ringsteerd (pid %d) is running on %s: refusing to "
		       "detach under it; `ringsteer detach` stops it and "
		       "removes everything",
		       (int)holder, root);
	else
		rs_err("another ringsteerd (pid %d) holds %s: one daemon per "
		       "pinned state, not starting",
		       (int)holder, root);
	return err;
}

void daemon_check_pins(struct daemon *d)
{
	dp_pins_check(&d->dp, &d->pins_lock);
}

int control_path_claim(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, err;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	err = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	close(fd);
	/* Someone answers there: it is theirs, not a leftover of ours. */
	if (!err)
		return -EADDRINUSE;
	if (err == -ECONNREFUSED && unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}

ino_t control_path_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

void control_path_release(const char *path, ino_t ino)
{
	if (ino && control_path_ino(path) == ino)
		unlink(path);
}

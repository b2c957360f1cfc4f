/* SPDX-License-Identifier: MIT */
/*
 * Reading a key or password file (fleet key_file, etcd_password_file):
 * whatever the path turns out to be when it is read, not when the
 * configuration was checked. A FIFO or a device would block or never end
 * (the daemon's event loop with it), a huge or sparse file would take as
 * long, and a file made readable by others since the check is no secret
 * any more. So the checks are made on the opened descriptor, and at most
 * @max bytes are ever read.
 */
#ifndef RS_SECRET_FILE_H
#define RS_SECRET_FILE_H

#include <stddef.h>

/* The largest key or password file read (a key file of 8 keys and notes). */
#define RS_SECRET_FILE_MAX (64 * 1024)

/*
 * @path's contents, NUL-terminated, into *@out (malloc'd; the caller
 * wipes and frees it) and their length into *@len. 0, or a negative errno
 * with "PATH: problem" in @why: not a regular file, readable or writable
 * by group or others, larger than @max bytes, or unreadable.
 */
int rs_secret_file_read(const char *path, size_t max, char **out, size_t *len,
			char *why, size_t why_len);

#endif /* RS_SECRET_FILE_H */

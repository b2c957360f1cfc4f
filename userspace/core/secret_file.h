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
#include <stdint.h>

/* The largest key or password file read (a key file of 8 keys and notes). */
#define RS_SECRET_FILE_MAX (64 * 1024)

/*
 * @path's contents, NUL-terminated, into *@out (malloc'd; the caller
 * wipes and frees it) and their length into *@len. 0, or a negative errno
 * with "PATH: problem" in @why: not a regular file, readable or writable
 * by group or others, owned by another user than root or this process's,
 * larger than @max bytes, or unreadable.
 */
int rs_secret_file_read(const char *path, size_t max, char **out, size_t *len,
			char *why, size_t why_len);

/*
 * As rs_secret_file_read(), for a file that is no secret but decides whom
 * the daemon trusts (the fleet's member_keys): group and others may read
 * it, not write it, and root or this process's user owns it.
 */
int rs_trusted_file_read(const char *path, size_t max, char **out, size_t *len,
			 char *why, size_t why_len);

/* One key of a key file: 128 bits, written as 32 hex digits. */
#define RS_SECRET_KEY_LEN 16

/*
 * A key file (fleet key_file, quic_key_file): one key per line as 32 hex
 * digits (`openssl rand -hex 16`), '#' starts a comment, blank lines are
 * skipped; read with rs_secret_file_read(). At most @max keys into
 * @keys, their count into *@n and, with @lines, their line numbers. 0,
 * or a negative errno with "PATH:LINE: problem" (or "PATH: problem") in
 * @why: a NUL byte, a line that is not a key, more than @max keys, no key
 * at all. The file's text is wiped before it is freed; on an error so are
 * @keys. Never a key in @why.
 */
int rs_secret_keys_read(const char *path, uint8_t (*keys)[RS_SECRET_KEY_LEN],
			size_t max, size_t *n, int *lines, char *why,
			size_t len);

#endif /* RS_SECRET_FILE_H */

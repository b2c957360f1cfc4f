// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secret_file.h"

int rs_secret_file_read(const char *path, size_t max, char **out, size_t *len,
			char *why, size_t why_len)
{
	/* O_NONBLOCK: opening a FIFO with no writer must not wait. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t got = 0;
	char *buf;
	int err = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_len, "%s: %s", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		snprintf(why, why_len, "%s: %s", path, strerror(-err));
	} else if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(why, why_len, "%s: not a regular file", path);
	} else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		err = -EACCES;
		snprintf(why, why_len,
			 "%s can be read or written by group or others (mode "
			 "%04o): a secret is refused unless only its owner can",
			 path, (unsigned)(st.st_mode & 07777));
	} else if ((unsigned long long)st.st_size > max) {
		err = -EFBIG;
		snprintf(why, why_len,
			 "%s: %lld bytes, more than a key or "
			 "password file holds (%zu)",
			 path, (long long)st.st_size, max);
	}
	if (err) {
		close(fd);
		return err;
	}
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		snprintf(why, why_len, "%s: out of memory", path);
		return -ENOMEM;
	}
	/* The size may have changed since fstat: never read past @max. */
	while (got <= max) {
		ssize_t n = read(fd, buf + got, max + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			snprintf(why, why_len, "%s: %s", path, strerror(-err));
			break;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!err && got > max) {
		err = -EFBIG;
		snprintf(why, why_len,
			 "%s: more than a key or password file holds (%zu "
			 "bytes)",
			 path, max);
	}
	if (err) {
		explicit_bzero(buf, max + 1);
		free(buf);
		return err;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

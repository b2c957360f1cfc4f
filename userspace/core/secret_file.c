// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "hex.h"
#include "secret_file.h"

/*
 * @secret: group and others may neither read nor write it; otherwise
 * (a list of public keys) they may read it, never write it.
 */
static int file_read(const char *path, size_t max, bool secret, char **out,
		     size_t *len, char *why, size_t why_len)
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
	} else if (secret && (st.st_mode & (S_IRWXG | S_IRWXO))) {
		err = -EACCES;
		snprintf(why, why_len,
			 "%s can be read or written by group or others (mode "
			 "%04o): a secret is refused unless only its owner can",
			 path, (unsigned)(st.st_mode & 07777));
	} else if (!secret && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		err = -EACCES;
		snprintf(why, why_len,
			 "%s can be written by group or others (mode %04o): "
			 "a list of trusted keys is refused unless only its "
			 "owner can write it",
			 path, (unsigned)(st.st_mode & 07777));
	} else if (st.st_uid != 0 && st.st_uid != geteuid()) {
		/*
		 * Its owner can rewrite it at will: a key that user chose is
		 * no secret of the daemon's.
		 */
		err = -EACCES;
		snprintf(why, why_len,
			 "%s is owned by uid %u: a %s is refused unless "
			 "root or the daemon's own user owns it",
			 path, (unsigned)st.st_uid,
			 secret ? "secret" : "list of trusted keys");
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

int rs_secret_file_read(const char *path, size_t max, char **out, size_t *len,
			char *why, size_t why_len)
{
	return file_read(path, max, true, out, len, why, why_len);
}

int rs_trusted_file_read(const char *path, size_t max, char **out, size_t *len,
			 char *why, size_t why_len)
{
	return file_read(path, max, false, out, len, why, why_len);
}

int rs_secret_keys_read(const char *path, uint8_t (*keys)[RS_SECRET_KEY_LEN],
			size_t max, size_t *n, int *lines, char *why,
			size_t len)
{
	int lineno = 0, err;
	char *text, *p, *next;
	size_t size;

	*n = 0;
	err = rs_secret_file_read(path, RS_SECRET_FILE_MAX, &text, &size, why,
				  len);
	if (err)
		return err;
	if (memchr(text, '\0', size)) {
		snprintf(why, len, "%s: a NUL byte: not a key file", path);
		err = -EINVAL;
	}
	for (p = text; !err && p < text + size; p = next) {
		char *end;
		size_t got = 0;

		next = strchr(p, '\n');
		next = next ? next + 1 : text + size;
		lineno++;
		p[strcspn(p, "#\r\n")] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!*p)
			continue;
		if (*n == max) {
			snprintf(why, len, "%s:%d: more than %zu key%s", path,
				 lineno, max, max == 1 ? "" : "s");
			err = -E2BIG;
		} else if (strlen(p) != 2 * RS_SECRET_KEY_LEN ||
			   strspn(p, "0123456789abcdefABCDEF") !=
				   2 * RS_SECRET_KEY_LEN ||
			   rs_hex_parse(p, keys[*n], RS_SECRET_KEY_LEN, &got) ||
			   got != RS_SECRET_KEY_LEN) {
			snprintf(why, len,
				 "%s:%d: expected 32 hex digits (openssl rand "
				 "-hex 16)",
				 path, lineno);
			err = -EINVAL;
		} else {
			if (lines)
				lines[*n] = lineno;
			(*n)++;
		}
	}
	OPENSSL_cleanse(text, size);
	free(text);
	if (!err && !*n) {
		snprintf(why, len, "%s: no key in it", path);
		err = -EINVAL;
	}
	if (err) {
		OPENSSL_cleanse(keys, max * RS_SECRET_KEY_LEN);
		*n = 0;
	}
	return err;
}

// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"

static enum rs_log_level current_level = RS_LOG_INFO;
/* -1: not looked at yet; then whether stderr is the journal's stream. */
static int to_journal = -1;

static const char *const level_names[] = {
	[RS_LOG_ERROR] = "error",
	[RS_LOG_WARN] = "warn",
	[RS_LOG_INFO] = "info",
	[RS_LOG_DEBUG] = "debug",
};

/* syslog(3) priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
static const char syslog_prio[] = {
	[RS_LOG_ERROR] = '3',
	[RS_LOG_WARN] = '4',
	[RS_LOG_INFO] = '6',
	[RS_LOG_DEBUG] = '7',
};

void rs_log_set_level(enum rs_log_level level)
{
	current_level = level;
}

enum rs_log_level rs_log_get_level(void)
{
	return current_level;
}

/*
 * sd-daemon(3): systemd sets JOURNAL_STREAM to the device and inode of the
 * stream it connected; only when stderr is still that stream (not
 * redirected by a wrapper or a test) does a "<N>" prefix mean a priority
 * rather than three stray characters in a file.
 */
bool rs_log_fd_is_journal(int fd)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!env || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fd < 0 || fstat(fd, &st))
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

bool rs_log_stderr_is_journal(void)
{
	return rs_log_fd_is_journal(2);
}

void rs_log_print(FILE *f, enum rs_log_level level, const char *prefix,
		  const char *text)
{
	bool journal = rs_log_fd_is_journal(fileno(f));
	const char *p = text, *nl;

	/* journald reads the priority line by line. */
	for (;;) {
		nl = strchr(p, '\n');
		if (journal)
			fprintf(f, "<%c>", syslog_prio[level]);
		fprintf(f, "%s%.*s\n", p == text ? prefix : "",
			nl ? (int)(nl - p) : (int)strlen(p), p);
		if (!nl || !nl[1])
			break;
		p = nl + 1;
	}
	fflush(f);
}

static void log_line(enum rs_log_level level, const char *stamp,
		     const char *text, int len)
{
	/*
	 * The journal stamps each line itself; a second time would only
	 * widen it. Each line gets its own prefix: journald reads the
	 * priority line by line.
	 */
	if (to_journal)
		fprintf(stderr, "<%c>%s: %.*s\n", syslog_prio[level],
			level_names[level], len, text);
	else
		fprintf(stderr, "%s %s: %.*s\n", stamp, level_names[level], len,
			text);
}

void rs_vlog(enum rs_log_level level, const char *fmt, va_list ap)
{
	char stamp[48], small[1024], *msg = small, *big = NULL;
	struct timespec ts;
	const char *p, *nl;
	struct tm tm;
	va_list copy;
	int n;

	if (level > current_level)
		return;
	if (to_journal < 0)
		to_journal = rs_log_stderr_is_journal();
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = (int)strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + n, sizeof(stamp) - (size_t)n, ".%03ldZ",
		 ts.tv_nsec / 1000000);
	va_copy(copy, ap);
	n = vsnprintf(small, sizeof(small), fmt, copy);
	va_end(copy);
	if (n >= (int)sizeof(small) && vasprintf(&big, fmt, ap) >= 0)
		msg = big;
	if (n < 0)
		msg = "(unprintable log message)";
	/* A multi-line message (a refused file's errors): one line each. */
	for (p = msg;; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl) {
			if (*p || p == msg)
				log_line(level, stamp, p, (int)strlen(p));
			break;
		}
		log_line(level, stamp, p, (int)(nl - p));
	}
	free(big);
}

void rs_log(enum rs_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rs_vlog(level, fmt, ap);
	va_end(ap);
}

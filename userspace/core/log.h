/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr, one line per event: a UTC timestamp and the
 * level, or, when stderr is the journal's stream, a "<N>" syslog priority
 * that journald turns into the entry's priority (journalctl -p err).
 */
#ifndef RS_LOG_H
#define RS_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

enum rs_log_level {
	RS_LOG_ERROR = 0,
	RS_LOG_WARN = 1,
	RS_LOG_INFO = 2,
	RS_LOG_DEBUG = 3,
};

void rs_log_set_level(enum rs_log_level level);
enum rs_log_level rs_log_get_level(void);
void rs_log(enum rs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rs_vlog(enum rs_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Whether JOURNAL_STREAM names stderr (sd-daemon's convention). */
bool rs_log_stderr_is_journal(void);
/* Whether JOURNAL_STREAM names the stream open as @fd. */
bool rs_log_fd_is_journal(int fd);
/*
 * @text on @f line by line, @prefix before the first: a program's own
 * output rather than a log line (the CLI's errors, --check's), with the
 * "<N>" priority of @level before each line only when @f is the journal's
 * stream, as under ExecReload= or ExecStartPre=.
 */
void rs_log_print(FILE *f, enum rs_log_level level, const char *prefix,
		  const char *text);

#define rs_err(...)   rs_log(RS_LOG_ERROR, __VA_ARGS__)
#define rs_warn(...)  rs_log(RS_LOG_WARN, __VA_ARGS__)
#define rs_info(...)  rs_log(RS_LOG_INFO, __VA_ARGS__)
#define rs_debug(...) rs_log(RS_LOG_DEBUG, __VA_ARGS__)

#endif /* RS_LOG_H */

// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

static enum rs_log_level current_level = RS_LOG_INFO;

static const char *const level_names[] = {
	[RS_LOG_ERROR] = "error",
	[RS_LOG_WARN] = "warn",
	[RS_LOG_INFO] = "info",
	[RS_LOG_DEBUG] = "debug",
};

void rs_log_set_level(enum rs_log_level level)
{
	current_level = level;
}

enum rs_log_level rs_log_get_level(void)
{
	return current_level;
}

void rs_log(enum rs_log_level level, const char *fmt, ...)
{
	char stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (level > current_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %s: ", stamp, ts.tv_nsec / 1000000,
		level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

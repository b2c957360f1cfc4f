/* SPDX-License-Identifier: MIT */
/*
 * What the CLI's command files share with main.c: the control socket
 * call, the error line and the JSON switch.
 */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* -j: JSON output. */
extern bool json_out;
/* Set while polling: a daemon that is gone is not an error to print. */
extern bool call_quiet_unreachable;
/* Seconds each wait of a call may take (-T, RINGSTEER_TIMEOUT). */
#define RS_CLI_TIMEOUT_DEFAULT 10.0
extern double call_timeout;

/* "ringsteer: <message>" on stderr; returns 1 (the exit status). */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One request to ringsteerd, one reply; NULL (said why) on failure. */
json_t *call(json_t *req);
/* Member @k of @o as a string ("-" if none) or an integer (0). */
const char *jstr(json_t *o, const char *k);
long long jint(json_t *o, const char *k);

/* trace.c */
int cmd_trace(int argc, char **argv);
void trace_usage(FILE *f);

#endif /* RS_CLI_H */

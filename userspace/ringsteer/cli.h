/* SPDX-License-Identifier: MIT */
/*
 * What the CLI's files share. The CLI is laid out as bpftool is: main.c
 * reads the options and dispatches; cli_call.c is the one road to the
 * daemon (the control socket, the request, the reply and its errors);
 * each subject's commands have a file of their own and know nothing of
 * the socket beyond call() and print_reply().
 */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* ---- main.c: the options, and helpers to read a command's words ---- */

/* -j: JSON output. */
extern bool json_out;
/* -c FILE, or NULL: the configuration the operator named. */
extern const char *cli_config_file;

/* @s as a decimal in 0..@max into *@out; -1 if it is not one. */
int parse_uint(const char *s, long max, long *out);
/*
 * Takes --force (or -f) out of @argv wherever it is; true if it was there.
 * Actions that would leave a service with no backend taking new
 * connections are refused without it.
 */
bool take_force(int *argc, char **argv);

/* ---- cli_call.c: the control socket, one call, its reply ---- */

/* Set while polling: a daemon that is gone is not an error to print. */
extern bool call_quiet_unreachable;
/* The last call() found no daemon on the socket (not a failed request). */
extern bool call_unreachable;
/* Seconds each wait of a call may take (-T, RINGSTEER_TIMEOUT). */
#define RS_CLI_TIMEOUT_DEFAULT 10.0
extern double call_timeout;

/* "ringsteer: <message>" on stderr; returns 1 (the exit status). */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "warning: <message>" on stdout, beside the table it is about. */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Seconds, more than 0 and at most a day; -1 if @s is not that. */
double parse_timeout(const char *s);
/*
 * Chooses the control socket from -s, RINGSTEER_SOCKET and the
 * configuration; 1 (said why) if -c FILE cannot be read.
 */
int find_socket(const char *opt_socket, const char *opt_config);
/* One request to ringsteerd, one reply; NULL (said why) on failure. */
json_t *call(json_t *req);
/*
 * Prints @reply as JSON with -j, else as @table, or its error; returns
 * the exit status. Takes @reply; NULL (call() failed) is exit 1.
 */
int print_reply(json_t *reply, void (*table)(json_t *reply));

/* Member @k of @o as a string ("-" if none), an integer (0), a number. */
const char *jstr(json_t *o, const char *k);
long long jint(json_t *o, const char *k);
double jnum(json_t *o, const char *k);

/* ---- the commands, one file a subject ---- */

/* status.c: the daemon, its programs, the services */
int cmd_status(int argc, char **argv);
int cmd_services(int argc, char **argv);
/* backends.c: the backends and the operator's actions on them */
int cmd_backends(int argc, char **argv);
int cmd_backend(int argc, char **argv);
/* ring.c: the ring, one client's lookup, a change simulated */
int cmd_ring(int argc, char **argv);
int cmd_lookup(int argc, char **argv);
int cmd_sim(int argc, char **argv);
/* fleet.c */
int cmd_fleet(int argc, char **argv);
/* cid.c: QUIC connection IDs */
int cmd_cid(int argc, char **argv);
/* daemon.c: reload, detach, version */
int cmd_reload(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_version(int argc, char **argv);
/* trace.c */
int cmd_trace(int argc, char **argv);
void trace_usage(FILE *f);

#endif /* RS_CLI_H */

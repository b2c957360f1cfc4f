/* SPDX-License-Identifier: MIT */
/* No silent all-out (all_out.c). */
#ifndef RS_ALL_OUT_H
#define RS_ALL_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct daemon;
struct rs_state;

/* Whether backend @i (index in cfg) can take a new connection. */
bool backend_takes_new(const struct daemon *d, size_t i);
/* Backends of service @svc (index in cfg) that take new connections. */
uint32_t service_takers(const struct daemon *d, size_t svc);
/*
 * A service no backend of which takes new connections now (none in the
 * file included: its clients find nothing listening either).
 */
bool service_all_out(const struct daemon *d, size_t svc);
/*
 * After an operator's @action on service @svc, which had @before takers:
 * 0 when some backend still takes new connections (or none did before),
 * or when @force (then logged and counted); else -EBUSY with @why.
 */
int all_out_check(struct daemon *d, size_t svc, uint32_t before, bool force,
		  const char *action, char *why, size_t whylen);
/*
 * A reload of @d to @next (runtime state carried): -EBUSY with @why
 * naming each service that takes new connections now and that the file
 * would leave all-out (its backends unable, or none left), unless @force.
 * Backends of @next whose socket is not known yet are resolved first: one
 * on whose addresses nothing listens now is marked as having no socket.
 */
int reload_all_out(struct daemon *d, struct rs_state *next, bool force,
		   char *why, size_t whylen);

#endif /* RS_ALL_OUT_H */

/* SPDX-License-Identifier: MIT */
/*
 * The running kernel's features as ringsteerd found them at start
 * (userspace/dataplane/dataplane_probe.c), what the daemon refuses
 * because of them, and what it tells the operator.
 */
#ifndef RS_KERNEL_H
#define RS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "dataplane_probe.h"

struct daemon;
struct rs_config;

/*
 * Probe once, log one line of what was found; refuse (-EOPNOTSUPP, with a
 * message naming the feature and the first kernel that has it) when
 * steer_lookup cannot run, or when a service has cookie = quic and
 * steer_tc cannot. Also checks a reloaded configuration (probes cached).
 */
int daemon_kernel_check(const struct rs_config *cfg);

/* The features found by the last daemon_kernel_check(); NULL before. */
const struct rs_kernel_features *daemon_kernel(void);

/* True when backend @idx's cookies cannot be honoured on this kernel. */
bool daemon_kernel_cookie_refused(const struct daemon *d, size_t idx);

/* `status`: {"release", "features": {...}, "warnings": [...]}. */
json_t *daemon_kernel_json(const struct daemon *d);

#endif /* RS_KERNEL_H */

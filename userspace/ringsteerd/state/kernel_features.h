/* SPDX-License-Identifier: MIT */
/*
 * The running kernel's features, probed once (kernel.c asks at start),
 * and the one rule the event sources need of them: whether a backend's
 * socket is refused by bpf_sk_assign at TC. Kept in the state room so a
 * source noting a socket calls down, not up into the life cycle.
 */
#ifndef RS_KERNEL_FEATURES_H
#define RS_KERNEL_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

#include "dataplane_probe.h"

struct rs_config;

/* Probe once (later calls return the same); @first: this call probed. */
const struct rs_kernel_features *kernel_features_probe(bool *first);

/* The features probed; NULL before kernel_features_probe(). */
const struct rs_kernel_features *kernel_features(void);

/*
 * True when backend @idx's socket (SO_REUSEPORT when @reuseport) cannot
 * take its service's QUIC cookies on this kernel: bpf_sk_assign at TC
 * refuses SO_REUSEPORT sockets before 6.6.
 */
bool kernel_cookie_refused(const struct rs_config *cfg, size_t idx,
			   bool reuseport);

/*
 * Backend @idx of @cfg got a socket: warn (once per socket taken) when
 * kernel_cookie_refused(): that backend's QUIC cookies fall back to IP
 * affinity.
 */
void kernel_note_socket(const struct rs_config *cfg, size_t idx,
			bool reuseport);

#endif /* RS_KERNEL_FEATURES_H */

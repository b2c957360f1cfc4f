/* SPDX-License-Identifier: MIT */
/*
 * The daemon's descriptor budget: RLIMIT_NOFILE raised to the hard limit,
 * descriptors kept for health checks and socket acquisition, the rest for
 * control and metrics clients.
 */
#ifndef RS_FD_BUDGET_H
#define RS_FD_BUDGET_H

#include "daemon.h"

/*
 * Raise the soft RLIMIT_NOFILE to the hard limit and set
 * d->control_clients_max and d->metrics_clients_max from the configuration,
 * lowered (with a warning) so that they fit next to the descriptors the
 * daemon keeps for itself. Before the servers start: -EMFILE when not even
 * one client fits. After a reload: never fails; the metrics server keeps
 * the cap it was started with, the control socket takes the new one.
 */
int daemon_fd_budget(struct daemon *d);

#endif /* RS_FD_BUDGET_H */

/* SPDX-License-Identifier: MIT */
/*
 * Keeping each backend's listening socket in its SOCKMAP slots: acquire
 * missing ones, replace ones from a restarted backend, empty removed ones.
 */
#ifndef RS_SOCKETS_H
#define RS_SOCKETS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "dataplane.h"
#include "rs_state.h"

/*
 * Which addresses of a backend sockets_reconcile_backend() looks at, and
 * when: @now, the loop's clock (when a socket is found gone). @window 0:
 * every address; else those whose socket went less than @window seconds
 * ago, and with @present also those whose socket is there
 * (restart_watch.c).
 */
struct sock_scope {
	double now;
	double window;
	bool present;
};

/*
 * Make backend @idx's SOCKMAP slots (backend id @id) hold the sockets
 * listening on its addresses now: acquire missing ones, replace ones from a
 * restarted backend. A TCP backend's listeners (every socket of a
 * SO_REUSEPORT group) are named in rs_listen as backend @id of service
 * @svc_id. Returns true when at least one address has a socket.
 */
bool sockets_reconcile_backend(struct rs_dataplane *dp,
			       const struct rs_config *cfg, size_t idx,
			       uint32_t id, uint32_t svc_id,
			       struct rs_backend_rt *rt,
			       const struct sock_scope *scope);

/*
 * Whether something listens on any address of backend @idx now, its
 * owner when the file names one (a sock_diag lookup; nothing is taken).
 */
bool sockets_listening(const struct rs_config *cfg, size_t idx);

/* Empty both SOCKMAP slots of backend @id. */
int sockets_clear_backend(struct rs_dataplane *dp, uint32_t id);

#endif /* RS_SOCKETS_H */

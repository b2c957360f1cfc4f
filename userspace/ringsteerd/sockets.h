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

/* What ringsteerd knows about the socket on one backend address. */
struct rs_addr_rt {
	bool has_socket;
	bool reported_missing; /* "not listening" logged once, not per retry */
	uint64_t cookie;
	pid_t owner;
	bool reuseport;	    /* the socket has SO_REUSEPORT (kernel.c cares) */
	uint64_t cgroup_id; /* its cgroup2 id, where its children run */
	/* The SOCKMAP slots that hold this socket, to check without a dump. */
	uint32_t slots[2];
	size_t nslots;
	/*
	 * Who serves on this address: the user of the socket in the slots,
	 * and, once a socket was taken (trust on first use), the only user
	 * whose socket is taken here unless the backend names its owner.
	 */
	bool uid_known;
	uint32_t uid;
	/* Sockets of another user found here and refused; the last one's. */
	uint64_t refused;
	uint64_t refused_cookie;
	uint32_t refused_uid;
};

struct rs_backend_rt {
	struct rs_addr_rt addr[RS_MAX_BACKEND_ADDRS];
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
			       struct rs_backend_rt *rt);

/*
 * Whether something listens on any address of backend @idx now (a
 * sock_diag lookup; nothing is taken).
 */
bool sockets_listening(const struct rs_config *cfg, size_t idx);

/* Empty both SOCKMAP slots of backend @id. */
int sockets_clear_backend(struct rs_dataplane *dp, uint32_t id);

#endif /* RS_SOCKETS_H */

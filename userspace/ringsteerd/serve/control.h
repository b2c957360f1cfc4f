/* SPDX-License-Identifier: MIT */
/*
 * The control socket: a unix stream socket, root only (mode 0600 and
 * SO_PEERCRED), one JSON request and one JSON reply per connection.
 */
#ifndef RS_CONTROL_H
#define RS_CONTROL_H

#include <jansson.h>

#include "daemon.h"

/* Largest request accepted; anything longer gets an error reply. */
#define RS_CONTROL_MAX_REQUEST 65536

int control_start(struct daemon *d);
void control_stop(struct daemon *d);

/*
 * Answer one request. Never fails: errors are replies of the form
 * {"ok": false, "error": "..."}. The caller owns the result.
 */
json_t *control_handle(struct daemon *d, json_t *request);

/*
 * For a command whose answer needs work off the event loop (an etcd call):
 * its handler takes a ticket for the client that asked and returns NULL;
 * control_reply_later() sends the reply when the work is done (and drops
 * it if the client went away meanwhile). 0 when no client is asking.
 */
uint64_t control_defer(struct daemon *d);
void control_reply_later(struct daemon *d, uint64_t ticket, json_t *reply);

#endif /* RS_CONTROL_H */

/* SPDX-License-Identifier: MIT */
/*
 * The notify protocol's transport (sd_notify(3)'s datagrams to
 * NOTIFY_SOCKET), never blocking the event loop. libsystemd's sd_notify()
 * sends on a blocking socket: when the manager does not read (its queue
 * holds net.unix.max_dgram_qlen datagrams, 10 by default), the next call
 * waits until it does, and the daemon stops answering, checking health
 * and reloading meanwhile. Here a message that cannot go now waits in a
 * bounded queue, in order, and leaves when the socket can take it.
 */
#ifndef RS_NOTIFY_SOCKET_H
#define RS_NOTIFY_SOCKET_H

/*
 * Send @msg ("KEY=VALUE" lines) now, or queue it behind the ones waiting.
 * Without NOTIFY_SOCKET nothing happens; a NOTIFY_SOCKET that cannot be
 * reached is logged once and the message dropped.
 */
void notify_socket_send(const char *msg);
/* Messages waiting for the manager to read (status shows it). */
unsigned int notify_socket_queued(void);
/* At exit: what is queued, waiting at most @timeout_s for the manager. */
void notify_socket_flush(double timeout_s);

#endif /* RS_NOTIFY_SOCKET_H */

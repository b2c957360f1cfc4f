/* SPDX-License-Identifier: MIT */
/*
 * Whether an address is this host's, as the kernel decides it for an
 * incoming packet: the route it picks is of type local (an assigned
 * address, or a `local` route such as `ip route add local
 * 198.18.0.0/24 dev lo`). sk_lookup only sees packets delivered locally, so
 * a listen address that is not is one whose clients time out.
 */
#ifndef RS_LOCAL_ROUTE_H
#define RS_LOCAL_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* 1 local, 0 not, or a negative errno (the question could not be asked). */
int rs_route_is_local(int family, const uint8_t addr[16]);

/*
 * One line per listen of @cfg whose address is not local in the calling
 * network namespace, with the commands that fix it, handed to @fn:
 * "FILE:LINE: [service web] listen 198.18.0.99:80: ...". Returns how
 * many; a lookup that fails is passed over (nothing to say for sure).
 */
size_t rs_listen_not_local(const struct rs_config *cfg,
			   void (*fn)(const char *line, void *arg), void *arg);

#endif /* RS_LOCAL_ROUTE_H */

// SPDX-License-Identifier: MIT
/*
 * The SOCKMAP slots of a backend address, for the two that keep them:
 * sockets.c (one socket an address) and generations.c (the sockets of
 * several processes an address), here so that generations.c, which
 * sockets.c calls, never calls back into it (make shape: no circles).
 */
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "backend_socket.h"
#include "log.h"
#include "socket_slots.h"

void sockets_sock_addr(const struct rs_config *cfg,
		       const struct rs_backend_conf *bc,
		       const struct rs_backend_addr *ba,
		       struct rs_sock_addr *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->protocol = cfg->services[bc->service].protocol;
	sa->family = ba->family;
	sa->port = ba->port;
	memcpy(sa->addr, ba->addr, sizeof(sa->addr));
}

static bool backend_has_family(const struct rs_backend_conf *bc, int family)
{
	for (size_t i = 0; i < bc->n_addrs; i++)
		if (bc->addrs[i].family == family)
			return true;
	return false;
}

/*
 * SOCKMAP slots a socket fills: its own family's, and the IPv4 one too for
 * a dual-stack IPv6 socket when no IPv4 address is configured.
 */
size_t sockets_target_slots(const struct rs_backend_conf *bc, uint32_t id,
			    const struct rs_backend_addr *ba,
			    const struct rs_sock_found *found,
			    uint32_t slots[2])
{
	if (ba->family == AF_INET) {
		slots[0] = rs_socket_slot(id, 0);
		return 1;
	}
	slots[0] = rs_socket_slot(id, 1);
	if (found->v6only || backend_has_family(bc, AF_INET))
		return 1;
	slots[1] = rs_socket_slot(id, 0);
	return 2;
}

bool sockets_slots_hold(struct rs_dataplane *dp, const uint32_t *slots,
			size_t n, uint64_t cookie)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t have;

		if (dp_socket_cookie(dp, slots[i], &have) || have != cookie)
			return false;
	}
	return true;
}

/* The slots @slots fill, as held_slots: bit 0 IPv4, bit 1 IPv6. */
uint32_t sockets_slot_mask(const uint32_t *slots, size_t n)
{
	uint32_t mask = 0;

	for (size_t i = 0; i < n; i++)
		mask |= 1u << (slots[i] & 1);
	return mask;
}

/*
 * The user whose socket this address takes: the backend's owner, else
 * the user of the first socket taken here. False when nobody is known yet
 * (the next socket found is taken, and its user kept).
 */
bool sockets_owner_expected(const struct rs_backend_conf *bc,
			    const struct rs_addr_rt *rt, uint32_t *uid)
{
	if (bc->has_owner) {
		*uid = bc->owner_uid;
		return true;
	}
	*uid = rt->uid;
	return rt->uid_known;
}

/* No socket on this address now: when it went, for restart_grace. */
void sockets_gone(struct rs_addr_rt *rt, double now)
{
	if (rt->held_mask && rt->gone_since == 0)
		rt->gone_since = now;
	rt->has_socket = false;
}

const char *sockets_user_name(uint32_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char pwbuf[1024];

	if (!getpwuid_r((uid_t)uid, &pw, pwbuf, sizeof(pwbuf), &found) && found)
		snprintf(buf, len, "uid %u (%s)", uid, found->pw_name);
	else
		snprintf(buf, len, "uid %u", uid);
	return buf;
}

/*
 * A socket of another user on a backend's address, not taken: counted
 * once per socket, said once per socket (the watch sees it every pass).
 */
void sockets_note_refused(const struct rs_backend_conf *bc,
			  const struct rs_backend_addr *ba,
			  const struct rs_sock_found *found, uint32_t want,
			  struct rs_addr_rt *rt)
{
	char where[80], who[96], whom[96];

	if (rt->refused && rt->refused_cookie == found->cookie)
		return;
	rt->refused++;
	rt->refused_cookie = found->cookie;
	rt->refused_uid = found->uid;
	rs_addr_format(ba->family, ba->addr, ba->port, where, sizeof(where));
	rs_warn("backend %s: the socket on %s belongs to %s, not to %s%s: "
		"refused, its clients go to the other backends",
		bc->name, where,
		sockets_user_name(found->uid, who, sizeof(who)),
		sockets_user_name(want, whom, sizeof(whom)),
		bc->has_owner ? " (owner)"
			      : " (the user it was first taken from)");
}

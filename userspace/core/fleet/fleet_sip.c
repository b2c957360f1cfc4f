// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include <ringsteer/rules.h>

#include "fleet_sip.h"

static bool addr6_none(const struct rs_fleet_addr *a)
{
	return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]);
}

static const struct rs_fleet_auth *key(const struct rs_fleet_slot *t, __u32 j)
{
	return &t[RS_FLEET_SLOT_KEYS + j].auth;
}

/* The message head of a packet from @src to @dst, as fleet_tag_head(). */
static void head_of(struct rs_fleet_tag_msg *m, int ipv6,
		    const struct rs_fleet_addr *src,
		    const struct rs_fleet_addr *dst)
{
	memset(m, 0, sizeof(*m));
	if (ipv6) {
		m->v6.src = *src;
		m->v6.dst = *dst;
	} else {
		m->v4.src = src->w[3];
		m->v4.dst = dst->w[3];
	}
}

size_t rs_fleet_sip_fill(const struct rs_fleet_slot *t,
			 struct rs_fleet_sip *half)
{
	const struct rs_fleet_header *h = &t[0].hdr;
	struct rs_fleet_addr self[2], peer[2];
	struct rs_fleet_tag_msg m;
	size_t n = 0;

	memset(half, 0, RS_FLEET_SIP_HALF * sizeof(*half));
	memset(self, 0, sizeof(self));
	self[0].w[2] = htonl(0xffff);
	self[0].w[3] = h->self_addr;
	self[1] = t[RS_FLEET_SLOT_ADDR6].addr6.addr;
	for (__u32 i = 0; i < h->nmembers && i < RS_FLEET_MAX_MEMBERS; i++) {
		if (i == h->self)
			continue;
		memset(peer, 0, sizeof(peer));
		peer[0].w[2] = htonl(0xffff);
		peer[0].w[3] = t[1 + i].member.addr;
		peer[1] = t[RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr;
		for (int v6 = 0; v6 < 2; v6++) {
			if (v6 ? addr6_none(&self[1]) || addr6_none(&peer[1])
			       : !self[0].w[3] || !peer[0].w[3])
				continue;
			if (key(t, 0)->id) {
				struct rs_fleet_sip *e =
					&half[rs_fleet_sip_index(0, i, v6, 0)];

				head_of(&m, v6, &self[v6], &peer[v6]);
				rs_fleet_sip_make(e, key(t, 0), &m, v6);
				e->wire = t[1 + i].member.flags &
							  RS_FLEET_MEMBER_WIRE3
						  ? RS_FLEET_WIRE_MAX
						  : RS_FLEET_WIRE_VERSION;
				n++;
			}
			head_of(&m, v6, &peer[v6], &self[v6]);
			for (__u32 j = 0; j < RS_FLEET_AUTH_KEYS; j++) {
				if (!key(t, j)->id)
					continue;
				rs_fleet_sip_make(&half[rs_fleet_sip_index(
							  0, i, v6, 1 + j)],
						  key(t, j), &m, v6);
				n++;
			}
		}
	}
	return n;
}

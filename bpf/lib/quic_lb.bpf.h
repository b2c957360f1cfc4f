/* SPDX-License-Identifier: MIT */
/*
 * The server ID of a QUIC-LB connection ID, plaintext or encrypted
 * (include/ringsteer/quic_lb.h, docs/quic.md "Encrypted CIDs"), for
 * steer_tc's cookie step and the fleet's QUIC step alike.
 *
 * The block cipher is AES-128 in software (quic_lb_cipher.bpf.h), or,
 * where the kernel has them (6.10+), the crypto kfuncs (the object built
 * with RS_QUIC_LB_KFUNC); ringsteerd's probe picks the object.
 * quic_lb_server_id() is a global function, checked once by the verifier
 * whichever path of steer_tc calls it, with the cipher inline in it: a
 * second frame would not fit, steer_tc's own leaving 64 bytes of the 512
 * to everything it calls (6.1 rounds each frame up to 32). Its work lives
 * in a per-CPU map (rs_quic_lb_scratch) and the cipher's loops stay
 * rolled, for the same reason. The server ID's 15 masked bytes are
 * unrolled: byte operations that need no more registers, one frame of
 * 104 bytes (120 with the kfuncs) as before, and fewer verified
 * instructions than the rolled loop (issue 39).
 */
#ifndef RS_BPF_QUIC_LB_H
#define RS_BPF_QUIC_LB_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"
#include "quic.bpf.h"
#include "quic_lb_cipher.bpf.h"

#define RS_QUIC_LB_CTX		      __u32
#define RS_QUIC_LB_AES(ctx, blk, dec) rs_quic_lb_aes(ctx, blk, dec)
#include <ringsteer/quic_lb.h>

/* A server ID as rs_cookie_key (from len on) and rs_fleet_cid hold it. */
struct quic_lb_sid {
	__u8 len;
	__u8 server_id[RS_QUIC_MAX_SERVER_ID];
};

/*
 * A server ID decoded by the fleet's QUIC step (fleet_quic.bpf.h), for
 * the cookie step of the same packet: decrypting an encrypted CID costs
 * hundreds of ns, so a datagram of an ID of this host's is decoded once,
 * not once per step. The ID waits in a per-CPU map (steer_tc's own, not
 * pinned; one packet's run is never interleaved with another's on a CPU)
 * and the packet's skb->cb[4] says whose it is: rs_quic_sid_memo_word() of
 * the service and DCID offset it was decoded for, i.e. the bytes the
 * cookie step would decode itself. steer_tc clears the word first, and
 * the verifier does not track the context, so the memo splits no paths
 * (trace_note.bpf.h says why that matters; the note has cb[0..3]).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct quic_lb_sid);
} rs_quic_sid_memo SEC(".maps");

/* Keep @sid as the one decoded for @svc_id at @dcid_off of @skb. */
static __always_inline void quic_sid_memo_put(struct __sk_buff *skb,
					      __u32 svc_id, __u32 dcid_off,
					      const struct quic_lb_sid *sid)
{
	struct quic_lb_sid *m;
	__u32 zero = 0;

	m = bpf_map_lookup_elem(&rs_quic_sid_memo, &zero);
	if (!m)
		return;
	*m = *sid;
	skb->cb[RS_QUIC_SID_MEMO_CB] = rs_quic_sid_memo_word(svc_id, dcid_off);
}

/* The ID kept for @svc_id at @dcid_off of @skb into @sid: 0, else -1. */
static __always_inline int quic_sid_memo_get(struct __sk_buff *skb,
					     __u32 svc_id, __u32 dcid_off,
					     struct quic_lb_sid *sid)
{
	struct quic_lb_sid *m;
	__u32 zero = 0;

	if (skb->cb[RS_QUIC_SID_MEMO_CB] !=
	    rs_quic_sid_memo_word(svc_id, dcid_off))
		return -1;
	m = bpf_map_lookup_elem(&rs_quic_sid_memo, &zero);
	if (!m)
		return -1;
	*sid = *m;
	return 0;
}

enum quic_sid_result {
	QUIC_SID_FOUND = 0, /* *out holds the server ID */
	QUIC_SID_NONE,	    /* config 0b111: unroutable on purpose */
	QUIC_SID_UNKNOWN,   /* a config rotation this service does not have */
	QUIC_SID_MALFORMED, /* could not be read */
	QUIC_SID_ERROR,	    /* bad parameters, or the cipher failed */
};

/* The service parameters quic_lb_server_id() needs, in one argument. */
#define QUIC_LB_LENS(sid_len, cid_len, config)                                 \
	((sid_len) | ((cid_len) << 8) | ((__u32)(config) << 16))

/*
 * The server ID of the DCID at @dcid_off (inside the skb: quic_find_dcid()
 * said so) of service @svc_id into @out (len and ID, the rest zeroed).
 * @lens: QUIC_LB_LENS(quic_server_id_len, quic_cid_len, quic_config_id).
 * Returns an enum quic_sid_result. Global (see above).
 */
__noinline int quic_lb_server_id(struct __sk_buff *skb, __u32 dcid_off,
				 __u32 svc_id, __u32 lens,
				 struct quic_lb_sid *out)
{
	__u32 sid_len = lens & 0xff, plen = ((lens >> 8) & 0xff) - 1;
	__u32 config, index, zero = 0;
	struct rs_quic_lb_work *w;
	struct rs_quic_lb *lb;
	__u8 first, *cid = NULL;

	if (!out || !skb)
		return QUIC_SID_ERROR;
	/*
	 * The CID in place (quic_find_dcid() left it in the linear part),
	 * with the 16 bytes a plaintext ID may span: a 1-RTT packet's
	 * number and AEAD tag follow it. Else copied out, as before.
	 */
	if (dcid_off <= QUIC_MAX_DCID_OFF)
		cid = rs_pkt_at(skb, dcid_off, 1 + RS_QUIC_MAX_SERVER_ID);
	if (cid)
		first = cid[0];
	else if (bpf_skb_load_bytes(skb, dcid_off, &first, 1))
		return QUIC_SID_MALFORMED;
	config = first >> QUIC_LB_CONFIG_SHIFT;
	if (config == QUIC_LB_CONFIG_UNROUTABLE)
		return QUIC_SID_NONE;
	if (sid_len < 1 || sid_len > RS_QUIC_MAX_SERVER_ID || plen < sid_len ||
	    plen > RS_QUIC_LB_MAX_PLAIN || svc_id >= RS_MAX_SERVICES)
		return QUIC_SID_ERROR;
	index = svc_id * RS_QUIC_LB_CONFIGS + config;
	lb = bpf_map_lookup_elem(&rs_quic_lb, &index);
	if (!lb)
		return QUIC_SID_ERROR;

	if (lb->mode == RS_QUIC_LB_ENCRYPTED) {
		/* The encrypted part may end before the CID does. */
		if (lb->plen) {
			if (lb->plen > plen || lb->plen < sid_len)
				return QUIC_SID_ERROR;
			plen = lb->plen;
		}
		out->len = sid_len;
		w = bpf_map_lookup_elem(&rs_quic_lb_scratch, &zero);
		if (!w)
			return QUIC_SID_ERROR;
		__builtin_memset(w->io.in, 0, sizeof(w->io.in));
		/*
		 * Bounds checked above, again where 6.1's verifier sees them
		 * (it loses them across the spills); the empty asm keeps the
		 * compiler from dropping the repeat.
		 */
		asm volatile("" : "+r"(plen));
		plen = ((plen - 1) & (RS_QUIC_LB_BUF - 1)) + 1; /* 1..32 */
		if (bpf_skb_load_bytes(skb, dcid_off + 1, w->io.in, plen))
			return QUIC_SID_MALFORMED;
		w->io.plen = plen;
		w->io.want = sid_len;
		if (rs_quic_lb_decrypt(index, w))
			return QUIC_SID_ERROR;
#pragma unroll
		for (__u32 i = 0; i < RS_QUIC_MAX_SERVER_ID; i++)
			out->server_id[i] =
				w->io.out[i] & rs_quic_lb_below(i, sid_len);
		return QUIC_SID_FOUND;
	}
	/* No entry: the service's own config id is its plaintext config. */
	if (lb->mode != RS_QUIC_LB_PLAINTEXT && config != (lens >> 16))
		return QUIC_SID_UNKNOWN;
	if (cid) {
#pragma unroll
		for (__u32 i = 0; i < RS_QUIC_MAX_SERVER_ID; i++)
			out->server_id[i] =
				cid[1 + i] & rs_quic_lb_below(i, sid_len);
		out->len = sid_len;
		return QUIC_SID_FOUND;
	}
	__builtin_memset(out->server_id, 0, sizeof(out->server_id));
	/* With the first octet: a size of 2..16, a range 6.1 keeps. */
	asm volatile("" : "+r"(sid_len));
	sid_len &= RS_QUIC_MAX_SERVER_ID;
	if (!sid_len || bpf_skb_load_bytes(skb, dcid_off, out, 1 + sid_len))
		return QUIC_SID_MALFORMED;
	out->len = sid_len;
	return QUIC_SID_FOUND;
}

#endif /* RS_BPF_QUIC_LB_H */

/* SPDX-License-Identifier: MIT */
/*
 * QUIC-LB encrypted connection IDs (draft-ietf-quic-load-balancers-21,
 * "Server ID Encoding in Connection IDs"), the one implementation that
 * both steer_tc (bpf/lib/quic_lb.bpf.h) and the daemon and CLI
 * (userspace/core/quic_lb.c) compile, so that what `ringsteer cid decode`
 * says is what the kernel does.
 *
 * A CID is the first octet (config rotation bits, 5 free bits) and a
 * plaintext block of plen = server ID + nonce bytes (5..19). With a key:
 *
 *  - plen == 16: the block is one AES-128-ECB block (single pass);
 *  - otherwise: a four-round Feistel network whose round function is
 *    AES-128-ECB of expand(half, pass). The block is split into halves of
 *    half = ceil(plen / 2) bytes; when plen is odd the middle octet is
 *    shared, its high nibble in the left half, its low one in the right.
 *
 * The halves are kept in 16-byte buffers whose bytes past the half are
 * zero, and every step is "xor, then and with the half's mask": the mask
 * does the draft's truncation and its nibble clearing at once, and needs
 * no branch on the length, which keeps the verifier's work linear.
 *
 * The includer supplies the block cipher before including this file:
 *   RS_QUIC_LB_CTX                 the type of its key handle
 *   RS_QUIC_LB_AES(ctx, blk, dec)  AES-128-ECB in place on the 16-byte
 *                                  struct rs_quic_lb_block *blk, decrypt
 *                                  when dec; 0 or a negative errno
 * (the software AES of aes128.h or the kernel's crypto kfuncs in BPF,
 * libcrypto in userspace).
 */
#ifndef RS_QUIC_LB_H
#define RS_QUIC_LB_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#ifdef __bpf__
#define RS_QUIC_LB_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define RS_QUIC_LB_UNROLL
#endif

#define RS_QUIC_LB_SINGLE_PASS 16 /* plen of the single-pass mode */
#define RS_QUIC_LB_MIN_PLAIN   5  /* 1-byte server ID + 4-byte nonce */
#define RS_QUIC_LB_MAX_PLAIN   19 /* a 20-byte CID less the first octet */
#define RS_QUIC_LB_MIN_NONCE   4
#define RS_QUIC_LB_KEY_LEN     16

/* Big enough for any index the halves are read at (see rs_quic_lb_*). */
#define RS_QUIC_LB_BUF 32

/* 16 bytes, also as two words: the Feistel rounds xor and mask by word. */
struct rs_quic_lb_block {
	union {
		__u8 b[16];
		__u64 w[2];
	};
};

/* One decode: the plaintext block in, the server ID and nonce out. */
struct rs_quic_lb_io {
	__u8 in[RS_QUIC_LB_BUF];  /* ciphertext (or plaintext to encode) */
	__u8 out[RS_QUIC_LB_BUF]; /* result; bytes past plen are zero */
	__u32 plen;		  /* server ID + nonce, 5..19 */
	__u32 want;		  /* bytes of out needed (decode) */
};

struct rs_quic_lb_halves {
	struct rs_quic_lb_block l, r;	/* the current halves, zero past half */
	struct rs_quic_lb_block lm, rm; /* their masks */
	__u32 plen, half, off;		/* off: where the right half starts */
	__u32 pad;
};

/*
 * All a decode or an encode works on. steer_tc keeps it in a per-CPU map
 * (rs_quic_lb_scratch), off its 512-byte stack.
 */
struct rs_quic_lb_work {
	struct rs_quic_lb_io io;
	struct rs_quic_lb_halves h;
	struct rs_quic_lb_block blk;
	__u8 rr[RS_QUIC_LB_BUF];
};

/*
 * steer_tc decodes a datagram's server ID once when both its fleet step
 * and its cookie step need it (bpf/lib/quic_lb.bpf.h, the memo): the
 * packet's skb->cb[RS_QUIC_SID_MEMO_CB] then holds this word for the
 * service and the DCID offset it was decoded for. Here so that the BPF
 * tests can forge one, as the stack could leave it.
 */
#define RS_QUIC_SID_MEMO_CB 4

static __always_inline __u32 rs_quic_sid_memo_word(__u32 svc_id, __u32 dcid_off)
{
	return 1u << 31 | (svc_id & 0x7fff) << 16 | (dcid_off & 0xffff);
}

#endif /* RS_QUIC_LB_H */

/*
 * The modes, once the includer has defined its cipher (and again, if this
 * file was included before that only for the types above).
 */
#if defined(RS_QUIC_LB_CTX) && defined(RS_QUIC_LB_AES) &&                      \
	!defined(RS_QUIC_LB_MODES)
#define RS_QUIC_LB_MODES

/* 0xff when i < n, else 0; i and n small. */
static __always_inline __u8 rs_quic_lb_below(__u32 i, __u32 n)
{
	return (__u8)(0u - ((i - n) >> 31));
}

/* 0xff when i == n, else 0; i and n small. */
static __always_inline __u8 rs_quic_lb_is(__u32 i, __u32 n)
{
	return (__u8)(0u - (((i ^ n) - 1) >> 31));
}

static __always_inline void rs_quic_lb_split(struct rs_quic_lb_work *w)
{
	struct rs_quic_lb_halves *h = &w->h;
	__u32 plen = w->io.plen, half = (plen + 1) / 2, off = plen - half;
	__u8 odd = (__u8)(0u - (plen & 1));

	h->plen = plen;
	h->half = half;
	h->off = off;
	RS_QUIC_LB_UNROLL
	for (__u32 i = 0; i < 16; i++) {
		__u8 in_half = rs_quic_lb_below(i, half);

		h->lm.b[i] =
			in_half & ~(odd & rs_quic_lb_is(i, half - 1) & 0x0f);
		h->rm.b[i] = in_half & ~(odd & rs_quic_lb_is(i, 0) & 0xf0);
		h->l.b[i] = w->io.in[i] & h->lm.b[i];
		h->r.b[i] =
			w->io.in[(off + i) & (RS_QUIC_LB_BUF - 1)] & h->rm.b[i];
	}
}

/* dst = (dst ^ AES(expand(src, pass))) & mask: one Feistel round. */
static __always_inline int rs_quic_lb_round(RS_QUIC_LB_CTX ctx,
					    struct rs_quic_lb_work *w,
					    const struct rs_quic_lb_block *src,
					    struct rs_quic_lb_block *dst,
					    const struct rs_quic_lb_block *mask,
					    __u8 pass)
{
	int err;

	/* src's bytes 10..15 are zero: half is at most 10. */
	w->blk.w[0] = src->w[0];
	w->blk.w[1] = src->w[1];
	w->blk.b[14] = (__u8)w->h.plen;
	w->blk.b[15] = pass;
	err = RS_QUIC_LB_AES(ctx, &w->blk, 0);
	if (err)
		return err;
	dst->w[0] = (dst->w[0] ^ w->blk.w[0]) & mask->w[0];
	dst->w[1] = (dst->w[1] ^ w->blk.w[1]) & mask->w[1];
	return 0;
}

/* The two halves laid back into one block at io.out. */
static __always_inline void rs_quic_lb_join(struct rs_quic_lb_work *w)
{
	/* rr holds r at 16, zeros before: out[i] takes r[i - off] or 0. */
	RS_QUIC_LB_UNROLL
	for (__u32 i = 0; i < 16; i++) {
		w->rr[i] = 0;
		w->rr[16 + i] = w->h.r.b[i];
	}
	RS_QUIC_LB_UNROLL
	for (__u32 i = 0; i < RS_QUIC_LB_BUF; i++)
		w->io.out[i] =
			(i < 16 ? w->h.l.b[i] : 0) |
			(i < RS_QUIC_LB_MAX_PLAIN ? w->rr[(16 + i - w->h.off) &
							  (RS_QUIC_LB_BUF - 1)]
						  : 0);
}

/* The single-pass mode: io.in's 16 bytes are one AES block. */
static __always_inline int rs_quic_lb_single(RS_QUIC_LB_CTX ctx,
					     struct rs_quic_lb_work *w, int dec)
{
	int err;

	__builtin_memcpy(w->blk.b, w->io.in, 16);
	err = RS_QUIC_LB_AES(ctx, &w->blk, dec);
	if (err)
		return err;
	__builtin_memcpy(w->io.out, w->blk.b, 16);
	__builtin_memset(w->io.out + 16, 0, RS_QUIC_LB_BUF - 16);
	return 0;
}

/*
 * Decrypt w->io.in (io.plen bytes) into w->io.out. Only the first io.want
 * bytes of out are sure to be right (the rest zero or right): the
 * four-pass mode stops after three passes when they lie in the left half,
 * as the draft lets a load balancer do. 0, -EINVAL (-22) for a plen no
 * mode has, or the cipher's error.
 */
static __always_inline int rs_quic_lb_decrypt(RS_QUIC_LB_CTX ctx,
					      struct rs_quic_lb_work *w)
{
	struct rs_quic_lb_halves *h = &w->h;
	__u32 plen = w->io.plen;
	int err;

	if (plen == RS_QUIC_LB_SINGLE_PASS)
		return rs_quic_lb_single(ctx, w, 1);
	if (plen < RS_QUIC_LB_MIN_PLAIN || plen > RS_QUIC_LB_MAX_PLAIN)
		return -22;
	rs_quic_lb_split(w);
	err = rs_quic_lb_round(ctx, w, &h->r, &h->l, &h->lm, 4);
	if (!err)
		err = rs_quic_lb_round(ctx, w, &h->l, &h->r, &h->rm, 3);
	if (!err)
		err = rs_quic_lb_round(ctx, w, &h->r, &h->l, &h->lm, 2);
	if (err)
		return err;
	/*
	 * Whole bytes of the left half: when the wanted bytes are there, the
	 * left half is the answer as it stands, and neither the fourth pass
	 * nor the join (most of the work besides AES) is needed.
	 */
	if (w->io.want <= plen / 2) {
		__builtin_memcpy(w->io.out, h->l.b, 16);
		__builtin_memset(w->io.out + 16, 0, RS_QUIC_LB_BUF - 16);
		return 0;
	}
	err = rs_quic_lb_round(ctx, w, &h->l, &h->r, &h->rm, 1);
	if (err)
		return err;
	rs_quic_lb_join(w);
	return 0;
}

/* The reverse: w->io.in the plaintext block, w->io.out the CID's. */
static __always_inline int rs_quic_lb_encrypt(RS_QUIC_LB_CTX ctx,
					      struct rs_quic_lb_work *w)
{
	struct rs_quic_lb_halves *h = &w->h;
	__u32 plen = w->io.plen;
	int err;

	if (plen == RS_QUIC_LB_SINGLE_PASS)
		return rs_quic_lb_single(ctx, w, 0);
	if (plen < RS_QUIC_LB_MIN_PLAIN || plen > RS_QUIC_LB_MAX_PLAIN)
		return -22;
	rs_quic_lb_split(w);
	err = rs_quic_lb_round(ctx, w, &h->l, &h->r, &h->rm, 1);
	if (!err)
		err = rs_quic_lb_round(ctx, w, &h->r, &h->l, &h->lm, 2);
	if (!err)
		err = rs_quic_lb_round(ctx, w, &h->l, &h->r, &h->rm, 3);
	if (!err)
		err = rs_quic_lb_round(ctx, w, &h->r, &h->l, &h->lm, 4);
	if (err)
		return err;
	rs_quic_lb_join(w);
	return 0;
}

#endif /* RS_QUIC_LB_MODES */

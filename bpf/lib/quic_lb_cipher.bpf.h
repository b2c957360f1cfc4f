/* SPDX-License-Identifier: MIT */
/*
 * AES-128-ECB on one block for quic_lb.bpf.h, two ways:
 *
 *  - software (include/ringsteer/aes128.h) from the round keys in
 *    rs_quic_lb: any kernel, Debian 12's 6.1 included;
 *  - RS_QUIC_LB_KFUNC (steer_tc_kfunc.bpf.o): the kernel's crypto kfuncs
 *    (6.10+) with a context ringsteerd made for the config through
 *    rs_quic_lb_set_key, so the key never sits in a map.
 *
 * The block is in rs_quic_lb_scratch: bpf_dynptr_from_mem takes a map
 * value, not the stack.
 */
#ifndef RS_BPF_QUIC_LB_CIPHER_H
#define RS_BPF_QUIC_LB_CIPHER_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringsteer/abi.h>
#include <ringsteer/aes128.h>
#include <ringsteer/quic_lb.h>

#include "maps.bpf.h"

#ifdef RS_QUIC_LB_KFUNC

/*
 * Only the names matter: the kernel matches kptr and kfunc types by name.
 * An empty struct, not a declaration: libbpf checks the kfunc prototypes
 * against the kernel's, and a forward declaration is another kind.
 */
struct bpf_crypto_ctx {
};

struct bpf_crypto_params {
	char type[14];
	__u8 reserved[2];
	char algo[128];
	__u8 key[256];
	__u32 key_len;
	__u32 authsize;
};
_Static_assert(sizeof(struct bpf_crypto_params) == 408,
	       "bpf_crypto_params as kernel/bpf/crypto.c has it");

extern struct bpf_crypto_ctx *bpf_crypto_ctx_create(
	const struct bpf_crypto_params *params, __u32 params__sz,
	int *err) __ksym;
extern void bpf_crypto_ctx_release(struct bpf_crypto_ctx *ctx) __ksym;
extern int bpf_crypto_encrypt(struct bpf_crypto_ctx *ctx,
			      const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst,
			      const struct bpf_dynptr *siv__nullable) __ksym;
extern int bpf_crypto_decrypt(struct bpf_crypto_ctx *ctx,
			      const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst,
			      const struct bpf_dynptr *siv__nullable) __ksym;

/* clang 14 keeps the kptr tag through a typedef only. */
typedef struct bpf_crypto_ctx rs_crypto_ctx_t;

struct rs_quic_lb_crypto {
	rs_crypto_ctx_t __attribute__((btf_type_tag("kptr"))) * ctx;
};

/*
 * One context per config, as rs_quic_lb. Not pinned: contexts cannot be
 * written from userspace, and a restarted daemon makes them again for
 * the program it loads.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_SERVICES *RS_QUIC_LB_CONFIGS);
	__type(key, __u32);
	__type(value, struct rs_quic_lb_crypto);
} rs_quic_lb_crypto SEC(".maps");

/* The parameters of a context: 408 bytes, too many for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_crypto_params);
} rs_quic_lb_params SEC(".maps");

/*
 * Install (key non-zero) or drop (key all zero) the context of config
 * @index; run by ringsteerd with BPF_PROG_TEST_RUN, the key in ctx_in.
 * The key is wiped from every place it was copied to here.
 */
SEC("syscall")
int rs_quic_lb_set_key(struct rs_quic_lb_key_args *args)
{
	struct bpf_crypto_ctx *ctx = NULL, *old;
	struct bpf_crypto_params *params;
	struct rs_quic_lb_crypto *slot;
	struct rs_quic_lb_key_args a;
	__u32 zero = 0;
	__u8 any = 0;
	int err = 0;

	/* Whole: the verifier refuses reads through a moved ctx pointer. */
	__builtin_memcpy(&a, args, sizeof(a));
	__builtin_memset(args, 0, sizeof(*args));
	for (int i = 0; i < RS_QUIC_LB_KEY_LEN; i++)
		any |= a.key[i];
	slot = bpf_map_lookup_elem(&rs_quic_lb_crypto, &a.index);
	params = bpf_map_lookup_elem(&rs_quic_lb_params, &zero);
	if (!slot || !params) {
		args->err = -2; /* ENOENT */
		goto out;
	}
	if (any) {
		__builtin_memset(params, 0, sizeof(*params));
		__builtin_memcpy(params->type, "skcipher", sizeof("skcipher"));
		__builtin_memcpy(params->algo, "ecb(aes)", sizeof("ecb(aes)"));
		params->key_len = RS_QUIC_LB_KEY_LEN;
		__builtin_memcpy(params->key, a.key, RS_QUIC_LB_KEY_LEN);
		ctx = bpf_crypto_ctx_create(params, sizeof(*params), &err);
		__builtin_memset(params->key, 0, RS_QUIC_LB_KEY_LEN);
		if (!ctx) {
			args->err = err ? err : -12; /* ENOMEM */
			goto out;
		}
	}
	old = bpf_kptr_xchg(&slot->ctx, ctx);
	if (old)
		bpf_crypto_ctx_release(old);
	args->err = 0;
out:
	__builtin_memset(a.key, 0, sizeof(a.key));
	asm volatile("" : : "r"(&a) : "memory");
	return 0;
}

static __always_inline int rs_quic_lb_aes(__u32 index,
					  struct rs_quic_lb_block *blk,
					  int decrypt)
{
	struct rs_quic_lb_crypto *slot;
	struct bpf_dynptr src, dst;
	struct bpf_crypto_ctx *ctx;

	slot = bpf_map_lookup_elem(&rs_quic_lb_crypto, &index);
	if (!slot)
		return -1;
	ctx = slot->ctx;
	if (!ctx)
		return -1;
	bpf_dynptr_from_mem(blk, sizeof(*blk), 0, &src);
	bpf_dynptr_from_mem(blk, sizeof(*blk), 0, &dst);
	if (decrypt)
		return bpf_crypto_decrypt(ctx, &src, &dst, NULL) ? -1 : 0;
	return bpf_crypto_encrypt(ctx, &src, &dst, NULL) ? -1 : 0;
}

#else /* software */

/* AES-128-ECB in place on @blk with the key of config @index; 0 or -1. */
static __always_inline int rs_quic_lb_aes(__u32 index,
					  struct rs_quic_lb_block *blk,
					  int decrypt)
{
	struct rs_quic_lb *lb = bpf_map_lookup_elem(&rs_quic_lb, &index);

	if (!lb || lb->mode != RS_QUIC_LB_ENCRYPTED)
		return -1;
	if (decrypt)
		rs_aes128_decrypt(&lb->key, blk->b);
	else
		rs_aes128_encrypt(&lb->key, blk->b);
	return 0;
}

#endif /* RS_QUIC_LB_KFUNC */

#endif /* RS_BPF_QUIC_LB_CIPHER_H */

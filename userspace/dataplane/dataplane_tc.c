// SPDX-License-Identifier: MIT
/*
 * steer_tc, loaded only while a service has cookie = quic, on the very
 * maps steer_lookup uses (dataplane_share.c). Its filters on the
 * interfaces are tc_attach.c's business.
 *
 * Two builds of it differ in how they decrypt QUIC-LB CIDs: with the
 * kernel's crypto kfuncs (6.10+, steer_tc_kfunc) or with AES in BPF
 * (steer_tc). The kfunc one is tried first where the kernel's BTF has the
 * kfuncs, and kept only if it loads and can make a crypto context for
 * AES-128-ECB; otherwise the software one is loaded, and why is kept for
 * `ringsteer status`. RINGSTEER_QUIC_LB_CIPHER=software forces the
 * software AES (for comparisons).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <ringsteer/aes128.h>

#include "dataplane_internal.h"
#include "dataplane_probe.h"
#include "log.h"
#include "steer_tc.skel.h"
#include "steer_tc_kfunc.skel.h"

#define N_CONFIGS (RS_MAX_SERVICES * RS_QUIC_LB_CONFIGS)

/* Config 7 is never routable: its slot of service 0 is free for a probe. */
#define PROBE_INDEX		QUIC_LB_UNROUTABLE_SLOT
#define QUIC_LB_UNROUTABLE_SLOT 7

static struct bpf_object *tc_obj(const struct rs_dataplane *dp)
{
	if (dp->tc_kskel)
		return dp->tc_kskel->obj;
	return dp->tc_skel ? dp->tc_skel->obj : NULL;
}

static struct bpf_program *tc_prog(const struct rs_dataplane *dp)
{
	if (dp->tc_kskel)
		return dp->tc_kskel->progs.steer_tc;
	return dp->tc_skel ? dp->tc_skel->progs.steer_tc : NULL;
}

/* Make (non-zero @key) or drop the crypto context of config @index. */
static int set_key(struct rs_dataplane *dp, __u32 index, const uint8_t *key)
{
	struct rs_quic_lb_key_args a = {.index = index};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a,
		    .ctx_size_in = sizeof(a));
	int err;

	if (key)
		memcpy(a.key, key, sizeof(a.key));
	err = bpf_prog_test_run_opts(
		bpf_program__fd(dp->tc_kskel->progs.rs_quic_lb_set_key), &opts);
	if (!err)
		err = a.err;
	OPENSSL_cleanse(&a, sizeof(a));
	return err < 0 ? err : (err ? -EIO : 0);
}

static int load_kfunc(struct rs_dataplane *dp,
		      const struct bpf_object_open_opts *opts)
{
	/* FIPS-197's key: only to see that the kernel makes a context. */
	static const uint8_t probe[16] = {0, 1, 2,  3,	4,  5,	6,  7,
					  8, 9, 10, 11, 12, 13, 14, 15};
	int err;

	dp->tc_kskel = steer_tc_kfunc_bpf__open_opts(opts);
	if (!dp->tc_kskel) {
		err = -errno;
		snprintf(dp->tc_cipher_note, sizeof(dp->tc_cipher_note),
			 "steer_tc_kfunc does not open: %s", strerror(-err));
		return err;
	}
	dp_share_unpinned(dp, dp->tc_kskel->obj);
	err = steer_tc_kfunc_bpf__load(dp->tc_kskel);
	if (err) {
		snprintf(dp->tc_cipher_note, sizeof(dp->tc_cipher_note),
			 "steer_tc_kfunc does not load: %s", strerror(-err));
		goto fail;
	}
	err = set_key(dp, PROBE_INDEX, probe);
	if (!err)
		err = set_key(dp, PROBE_INDEX, NULL);
	if (err) {
		snprintf(dp->tc_cipher_note, sizeof(dp->tc_cipher_note),
			 "the kernel makes no AES-128-ECB crypto context: %s",
			 strerror(-err));
		goto fail;
	}
	err = dp_check_shared(dp, dp->tc_kskel->obj, "steer_tc");
	if (err)
		goto fail;
	dp->tc_keys = calloc(N_CONFIGS, sizeof(*dp->tc_keys));
	if (!dp->tc_keys) {
		err = -ENOMEM;
		goto fail;
	}
	dp->tc_cipher_note[0] = '\0';
	return 0;
fail:
	steer_tc_kfunc_bpf__destroy(dp->tc_kskel);
	dp->tc_kskel = NULL;
	return err;
}

int dp_tc_open(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .pin_root_path = dp->root[0] ? dp->root : NULL);
	const char *force = getenv("RINGSTEER_QUIC_LB_CIPHER");
	int err;

	if (dp->tc_skel || dp->tc_kskel)
		return 0;
	if (force && !strcmp(force, "software"))
		snprintf(dp->tc_cipher_note, sizeof(dp->tc_cipher_note),
			 "RINGSTEER_QUIC_LB_CIPHER=software");
	else if (rs_probe_crypto_kfuncs(dp->tc_cipher_note,
					sizeof(dp->tc_cipher_note)) == 1 &&
		 !load_kfunc(dp, &opts))
		return 0;
	else
		rs_info("quic-lb: software AES in steer_tc: %s",
			dp->tc_cipher_note);

	dp->tc_skel = steer_tc_bpf__open_opts(&opts);
	if (!dp->tc_skel) {
		err = -errno;
		rs_err("bpf: cannot open steer_tc: %s", strerror(-err));
		return err;
	}
	dp_share_unpinned(dp, dp->tc_skel->obj);
	err = steer_tc_bpf__load(dp->tc_skel);
	if (err) {
		rs_err("bpf: cannot load steer_tc next to the maps under %s: "
		       "%s",
		       dp->root[0] ? dp->root : "(none)", strerror(-err));
		goto fail;
	}
	err = dp_check_shared(dp, dp->tc_skel->obj, "steer_tc");
	if (err)
		goto fail;
	return 0;
fail:
	steer_tc_bpf__destroy(dp->tc_skel);
	dp->tc_skel = NULL;
	return err;
}

void dp_tc_close(struct rs_dataplane *dp)
{
	if (dp->tc_skel)
		steer_tc_bpf__destroy(dp->tc_skel);
	if (dp->tc_kskel)
		steer_tc_kfunc_bpf__destroy(dp->tc_kskel);
	if (dp->tc_keys) {
		OPENSSL_cleanse(dp->tc_keys, N_CONFIGS * sizeof(*dp->tc_keys));
		free(dp->tc_keys);
	}
	dp->tc_skel = NULL;
	dp->tc_kskel = NULL;
	dp->tc_keys = NULL;
}

bool dp_tc_loaded(const struct rs_dataplane *dp)
{
	return tc_obj(dp) != NULL;
}

const char *dp_tc_cipher(const struct rs_dataplane *dp, const char **why)
{
	if (why)
		*why = dp->tc_cipher_note;
	if (dp->tc_kskel)
		return "kfunc";
	return dp->tc_skel ? "software" : NULL;
}

int dp_tc_sync_quic_lb(struct rs_dataplane *dp,
		       const struct quic_cid_keys *cfgs, size_t *changed)
{
	struct bpf_map *map = dp->skel->maps.rs_quic_lb;
	struct rs_quic_lb *want, have;
	size_t n = 0;
	int fd = bpf_map__fd(map), err = 0;

	if (!dp_tc_loaded(dp))
		return -ENOENT;
	want = calloc(1, sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (__u32 i = 0; i < N_CONFIGS && !err; i++) {
		const struct quic_cid_keys *c = &cfgs[i / RS_QUIC_LB_CONFIGS];
		__u32 config = i % RS_QUIC_LB_CONFIGS;
		bool encrypted = c->mode[config] == RS_QUIC_LB_ENCRYPTED;

		memset(want, 0, sizeof(*want));
		want->mode = c->mode[config];
		want->plen = encrypted ? c->plen : 0;
		if (encrypted && dp->tc_skel)
			rs_aes128_expand(c->key[config], &want->key);
		/* A new context before the entry that uses it. */
		if (dp->tc_kskel && config != QUIC_LB_UNROUTABLE_SLOT) {
			const uint8_t *k = encrypted ? c->key[config] : NULL;
			static const uint8_t zero[16];

			if (memcmp(dp->tc_keys[i], k ? k : zero, 16)) {
				err = set_key(dp, i, k);
				if (err) {
					rs_err("quic-lb: cannot make the "
					       "crypto "
					       "context of service %u config "
					       "%u: %s",
					       i / RS_QUIC_LB_CONFIGS, config,
					       strerror(-err));
					break;
				}
				memcpy(dp->tc_keys[i], k ? k : zero, 16);
				n++;
			}
		}
		if (!bpf_map_lookup_elem(fd, &i, &have) &&
		    !memcmp(&have, want, sizeof(have)))
			continue;
		err = dp_map_update(map, &i, want, "rs_quic_lb");
		n++;
	}
	OPENSSL_cleanse(want, sizeof(*want));
	OPENSSL_cleanse(&have, sizeof(have));
	free(want);
	if (changed)
		*changed = n;
	return err;
}

int dp_tc_prog_fd(struct rs_dataplane *dp)
{
	struct bpf_program *p = tc_prog(dp);

	return p ? bpf_program__fd(p) : -1;
}

uint32_t dp_tc_program_id(struct rs_dataplane *dp)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (!tc_prog(dp) ||
	    bpf_obj_get_info_by_fd(dp_tc_prog_fd(dp), &info, &len))
		return 0;
	return info.id;
}

uint32_t dp_sockets_map_id(struct rs_dataplane *dp)
{
	return dp_map_id_of_fd(bpf_map__fd(dp->skel->maps.rs_sockets));
}

uint32_t dp_pinned_sockets_map_id(const char *root)
{
	char path[PATH_MAX + 16];
	uint32_t id;
	int fd;

	snprintf(path, sizeof(path), "%s/rs_sockets", root);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	id = dp_map_id_of_fd(fd);
	close(fd);
	return id;
}

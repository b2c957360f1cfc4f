/* SPDX-License-Identifier: MIT */
/*
 * What the running kernel can do, found by asking it (libbpf's feature
 * probes, and a live test where a probe cannot see the difference), never
 * by comparing version numbers: distribution kernels backport features,
 * and a version says nothing about what a config left out.
 */
#ifndef RS_DATAPLANE_PROBE_H
#define RS_DATAPLANE_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* A feature: 1 present, 0 absent, negative errno: the probe itself failed. */
struct rs_kernel_features {
	char release[65]; /* uname -r */
	int sk_lookup;	  /* BPF_PROG_TYPE_SK_LOOKUP: 5.9 */
	int sk_assign;	  /* bpf_sk_assign from sk_lookup: 5.9 */
	int bpf_loop;	  /* bpf_loop() from sk_lookup: 5.17 */
	int sockmap;	  /* BPF_MAP_TYPE_SOCKMAP (UDP sockets: 5.7) */
	int tc_sk_assign; /* bpf_sk_assign from TC (sched_cls): 5.7 */
	int sockops;	  /* BPF_PROG_TYPE_SOCK_OPS: 4.13 */
	/*
	 * bpf_sk_assign at TC ingress accepts a SO_REUSEPORT socket: 6.6
	 * (before: -ESOCKTNOSUPPORT). The live probe, run in a private
	 * network namespace; negative errno when it could not run.
	 */
	int tc_assign_reuseport;
	/*
	 * The BPF crypto kfuncs steer_tc decrypts QUIC-LB CIDs with (6.10);
	 * without them it runs AES in BPF (docs/quic.md).
	 */
	int crypto_kfunc;
};

/* One kernel feature the data plane cannot do without. */
struct rs_kernel_need {
	const char *what;  /* as in the log and the docs */
	const char *since; /* the first Linux release that has it */
};

/* Probe everything above. Returns 0 (each field says what it found). */
int rs_kernel_probe(struct rs_kernel_features *kf);

/*
 * The live probe alone: 1 when bpf_sk_assign at TC ingress takes a
 * SO_REUSEPORT socket, 0 when it refuses one, negative errno when the
 * probe could not run (no privilege, no clsact, fork failed).
 */
int rs_probe_tc_assign_reuseport(void);

/*
 * 1 when the kernel's BTF has the crypto kfuncs (bpf_crypto_ctx_create,
 * _release, bpf_crypto_encrypt, _decrypt), 0 when one is missing (named
 * in @why), negative errno when the BTF cannot be read.
 */
int rs_probe_crypto_kfuncs(char *why, size_t len);

/*
 * The first feature steer_lookup needs that @kf lacks, or NULL when
 * everything is there. Features whose probe failed count as present:
 * the load that follows reports what is really wrong.
 */
const struct rs_kernel_need *rs_kernel_missing(
	const struct rs_kernel_features *kf);

/* The same for steer_tc (services with cookie = quic). */
const struct rs_kernel_need *rs_kernel_missing_tc(
	const struct rs_kernel_features *kf);

/* One line: "6.1.0-57-amd64: sk_lookup yes, bpf_loop yes, ...". */
void rs_kernel_format(const struct rs_kernel_features *kf, char *buf,
		      size_t len);

#endif /* RS_DATAPLANE_PROBE_H */

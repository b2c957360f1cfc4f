/* SPDX-License-Identifier: MIT */
/*
 * tc_fixture: the TC program (steer_tc) with private maps, the entries
 * its tests write into them, and what its counters must show for each
 * outcome of a datagram.
 *
 * test_steer_tc (hand-made frames) and test_tc_fuzz (random frames judged
 * by a model) both predict the counters frame by frame; sharing how an
 * outcome is counted keeps the two from disagreeing about the program, in
 * particular about what a hit looks like under BPF_PROG_TEST_RUN.
 */
#ifndef TC_FIXTURE_H
#define TC_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>

#include "steer_tc.skel.h"

/* steer_tc opened and loaded with private maps, or NULL. */
struct steer_tc_bpf *tc_fixture_load(void);

struct steer_tc_kfunc_bpf;

/*
 * steer_tc_kfunc (QUIC-LB with the kernel's crypto kfuncs) loaded with
 * private maps into *@k, and seen through a steer_tc skeleton whose map
 * and program pointers are *@k's (same names), so every tc_* call below
 * works on it. NULL when it does not load (a kernel without the kfuncs).
 * tc_fixture_free_kfunc() frees both.
 */
struct steer_tc_bpf *tc_fixture_load_kfunc(struct steer_tc_kfunc_bpf **k);
void tc_fixture_free_kfunc(struct steer_tc_bpf *view,
			   struct steer_tc_kfunc_bpf *k);

/*
 * rs_quic_lb entry of config @config of service @svc: @mode, @plen, and @key
 * (16 bytes; NULL for no key). With @k (the kfunc object) the key becomes
 * a crypto context through rs_quic_lb_set_key, else round keys in the map.
 */
int tc_set_quic_lb(struct steer_tc_bpf *skel, struct steer_tc_kfunc_bpf *k,
		   uint32_t svc, uint8_t config, uint8_t mode, uint8_t plen,
		   const uint8_t *key);

/*
 * @s as a QUIC cookie service over UDP with @sid_len-byte server IDs in
 * @cid_len-byte CIDs under config @config, everything else zero.
 */
void tc_quic_service(struct rs_service *s, uint32_t id, uint8_t sid_len,
		     uint8_t cid_len, uint8_t config);

/* Server ID @sid big-endian in @len bytes, as the daemon stores it. */
void tc_sid_bytes(uint32_t sid, unsigned int len, uint8_t *out);

/* Map writes; each returns what bpf_map_update_elem() returns. */
int tc_set_service(struct steer_tc_bpf *skel, const struct rs_service *s);
int tc_add_bind(struct steer_tc_bpf *skel, int family, const char *addr,
		int plen, uint16_t port, uint32_t svc);
/* The same for protocol @proto (tc_add_bind: UDP). */
int tc_add_bind_proto(struct steer_tc_bpf *skel, int proto, int family,
		      const char *addr, int plen, uint16_t port, uint32_t svc);
int tc_set_backend(struct steer_tc_bpf *skel, uint32_t id, uint32_t svc,
		   uint32_t state);
/* tc_set_backend() with held_slots (restart_grace) set to @held. */
int tc_set_backend_held(struct steer_tc_bpf *skel, uint32_t id, uint32_t svc,
			uint32_t state, uint32_t held);
int tc_set_socket(struct steer_tc_bpf *skel, uint32_t slot, int fd);

/* rs_cookies entries of @svc, keyed by its server ID length. */
int tc_set_cookie(struct steer_tc_bpf *skel, const struct rs_service *svc,
		  const uint8_t *sid, uint32_t backend);
int tc_del_cookie(struct steer_tc_bpf *skel, const struct rs_service *svc,
		  const uint8_t *sid);

/* What the program makes of a datagram, as its counters tell. */
enum tc_outcome {
	TC_NOTHING,   /* not a cookie service's datagram: no counter moves */
	TC_HIT,	      /* cookie_hits of the backend, see tc_count() */
	TC_NONE,      /* cookie_none */
	TC_UNKNOWN,   /* cookie_unknown */
	TC_DOWN,      /* cookie_down */
	TC_MALFORMED, /* cookie_malformed */
	TC_ERROR,     /* errors */
	TC_HELD,      /* held: dropped for a restarting backend */
	TC_NOUTCOMES
};

/*
 * Adds @what to the counters of service @svc and backend @be. A hit moves
 * the backend's cookie_hits, then its assigned if bpf_sk_assign took the
 * socket (@assigned), else the service's errors. Under BPF_PROG_TEST_RUN
 * bpf_sk_assign always fails (the skb is not at TC ingress), so there
 * @assigned is false.
 */
void tc_count(struct rs_service_stats *svc, struct rs_backend_stats *be,
	      enum tc_outcome what, bool assigned);

/* The counters of services 0..@nsvc-1 and backends 0..@nbe-1. */
int tc_snapshot(struct steer_tc_bpf *skel, struct rs_service_stats *svc,
		uint32_t nsvc, struct rs_backend_stats *be, uint32_t nbe);

/*
 * One test run on @len bytes of @data. Returns 0 with *@retval set, a
 * negative errno from the kernel, or -EILSEQ if the program changed the
 * frame (it never may: it only steers).
 */
int tc_run(struct steer_tc_bpf *skel, const uint8_t *data, size_t len,
	   int *retval);

/* tc_run() with the packet's skb->cb[] as @cb says (what the stack left). */
int tc_run_cb(struct steer_tc_bpf *skel, const uint8_t *data, size_t len,
	      const uint32_t cb[5], int *retval);

#endif /* TC_FIXTURE_H */

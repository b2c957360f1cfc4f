// SPDX-License-Identifier: MIT
/*
 * QUIC-LB encrypted CIDs on the real steer_tc under BPF_PROG_TEST_RUN,
 * both builds: the software AES (every kernel; `make vmtest` runs it on
 * Debian 12's 6.1) and steer_tc_kfunc with the kernel's crypto kfuncs
 * (where the kernel has them; where it does not, the probe must say so,
 * or the test fails).
 *
 * Three services, one per mode: four-pass decoded in three passes
 * (server ID 2 and nonce 5 in a 9-byte CID whose last byte is the
 * server's own, as Envoy appends one), four-pass needing the fourth (6 in 11),
 * single-pass (3 in 17). The first keeps its plaintext config 1 during a
 * rotation, the second a previous encrypted config under another key.
 * Every frame's counters are predicted by the userspace decoder
 * (quic_cid_decode_keyed, libcrypto) and compared with the kernel's:
 * each backend's CIDs under every config it can be reached by, both
 * families, short and long headers; a server ID written in the clear; a
 * CID made with a wrong key; a config id not held; 0b111; every
 * truncation; thousands of random CIDs. With the kfuncs: a config whose
 * context is gone counts as an error, not as a guess.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf_fixture.h"
#include "dataplane_probe.h"
#include "frames.h"
#include "quic_cid.h"
#include <ringsteer/quic_lb.h>
#include "steer_tc_kfunc.skel.h"
#include "tc_fixture.h"

#define NSVC 3
#define NBE  9 /* backend id = service * 3 + j */

static const char *const addr4[NSVC] = {"198.18.0.20", "198.18.0.21",
					"198.18.0.22"};
static const char *const addr6[NSVC] = {"2001:db8::20", "2001:db8::21",
					"2001:db8::22"};

static struct steer_tc_bpf *skel;	/* the program under test */
static struct steer_tc_kfunc_bpf *kobj; /* set when it is the kfunc one */
static struct rs_service svcs[NSVC];
static struct quic_cid_keys keys[NSVC];
static uint8_t sids[NBE][RS_QUIC_MAX_SERVER_ID];
static int socks[NBE], socks4[NBE];

static uint64_t rng = 0x853c49e6748fea9bull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

static void rnd_key(uint8_t *k)
{
	for (int i = 0; i < 16; i++)
		k[i] = rnd8();
}

static int setup_common(void)
{
	static const uint8_t shape[NSVC][3] = {
		{2, 9, 2}, {6, 11, 3}, {3, 17, 0}};

	for (uint32_t s = 0; s < NSVC; s++) {
		tc_quic_service(&svcs[s], s, shape[s][0], shape[s][1],
				shape[s][2]);
		if (tc_set_service(skel, &svcs[s]) ||
		    tc_add_bind(skel, AF_INET, addr4[s], 32, 443, s) ||
		    tc_add_bind(skel, AF_INET6, addr6[s], 128, 443, s))
			return -1;
	}
	memset(keys, 0, sizeof(keys));
	/* Two bytes of server ID, five of nonce, one byte of the server's. */
	keys[0].plen = 7;
	keys[0].mode[2] = RS_QUIC_LB_ENCRYPTED;
	keys[0].mode[1] = RS_QUIC_LB_PLAINTEXT;
	keys[1].mode[3] = RS_QUIC_LB_ENCRYPTED;
	keys[1].mode[4] = RS_QUIC_LB_ENCRYPTED;
	keys[2].mode[0] = RS_QUIC_LB_ENCRYPTED;
	for (uint32_t s = 0; s < NSVC; s++)
		for (uint8_t c = 0; c < RS_QUIC_LB_CONFIGS; c++) {
			if (keys[s].mode[c] == RS_QUIC_LB_ENCRYPTED)
				rnd_key(keys[s].key[c]);
			if (keys[s].mode[c] &&
			    tc_set_quic_lb(
				    skel, kobj, s, c, keys[s].mode[c],
				    keys[s].mode[c] == RS_QUIC_LB_ENCRYPTED
					    ? keys[s].plen
					    : 0,
				    keys[s].mode[c] == RS_QUIC_LB_ENCRYPTED
					    ? keys[s].key[c]
					    : NULL))
				return -1;
		}
	for (uint32_t b = 0; b < NBE; b++) {
		uint32_t s = b / 3;

		/* Distinct IDs, and the same in every service's length. */
		tc_sid_bytes(0x100 * (s + 1) + b + 1,
			     svcs[s].quic_server_id_len, sids[b]);
		socks[b] =
			fixture_socket(AF_INET6, SOCK_DGRAM, "::1", 0, false);
		socks4[b] = fixture_socket(AF_INET, SOCK_DGRAM, "127.0.0.1", 0,
					   false);
		if (socks[b] < 0 || socks4[b] < 0 ||
		    tc_set_backend(skel, b, s, RS_BACKEND_UP) ||
		    tc_set_socket(skel, rs_socket_slot(b, 0), socks4[b]) ||
		    tc_set_socket(skel, rs_socket_slot(b, 1), socks[b]) ||
		    tc_set_cookie(skel, &svcs[s], sids[b], b))
			return -1;
	}
	return 0;
}

static int teardown_common(void)
{
	for (int b = 0; b < NBE; b++) {
		if (socks[b] > 0)
			close(socks[b]);
		if (socks4[b] > 0)
			close(socks4[b]);
	}
	if (kobj)
		tc_fixture_free_kfunc(skel, kobj);
	else
		steer_tc_bpf__destroy(skel);
	skel = NULL;
	kobj = NULL;
	return 0;
}

static int setup_software(void)
{
	skel = tc_fixture_load();
	return skel ? setup_common() : -1;
}

static int setup_kfunc(void)
{
	skel = tc_fixture_load_kfunc(&kobj);
	return skel ? setup_common() : -1;
}

/* ---- the model: what the program must make of a CID ---- */

static enum tc_outcome predict(uint32_t s, const uint8_t *cid, size_t len,
			       uint32_t *backend)
{
	struct quic_cid_info info;

	CU_ASSERT_EQUAL_FATAL(
		quic_cid_decode_keyed(&svcs[s], &keys[s], cid, len, &info), 0);
	switch (info.reason) {
	case QUIC_CID_UNROUTABLE:
		return TC_NONE;
	case QUIC_CID_WRONG_CONFIG:
	case QUIC_CID_WRONG_LENGTH:
		return TC_UNKNOWN;
	case QUIC_CID_ROUTABLE:
		break;
	}
	for (uint32_t b = s * 3; b < s * 3 + 3; b++)
		if (!memcmp(sids[b], info.server_id,
			    svcs[s].quic_server_id_len)) {
			*backend = b;
			return TC_HIT;
		}
	return TC_UNKNOWN;
}

struct snap {
	struct rs_service_stats svc[NSVC];
	struct rs_backend_stats be[NBE];
};

static int runs, mismatches;

/*
 * Run @len bytes of @f, its skb->cb[] as @cb says (NULL: zero); the
 * counters must move exactly as @exp says.
 */
static void check_cb(const char *what, const uint8_t *f, size_t len, uint32_t s,
		     enum tc_outcome exp, uint32_t backend, const uint32_t *cb)
{
	struct snap want, got;
	int retval = -1;

	CU_ASSERT_EQUAL_FATAL(tc_snapshot(skel, want.svc, NSVC, want.be, NBE),
			      0);
	CU_ASSERT_EQUAL(tc_run_cb(skel, f, len, cb, &retval), 0);
	CU_ASSERT_EQUAL(retval, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL_FATAL(tc_snapshot(skel, got.svc, NSVC, got.be, NBE), 0);
	tc_count(&want.svc[s], &want.be[backend], exp, false);
	runs++;
	if (memcmp(&want, &got, sizeof(want))) {
		if (mismatches++ < 10)
			fprintf(stderr,
				"  %s: counters differ (want outcome %d, "
				"backend %u)\n",
				what, exp, backend);
		CU_FAIL("counters differ from the prediction");
	}
}

static void check(const char *what, const uint8_t *f, size_t len, uint32_t s,
		  enum tc_outcome exp, uint32_t backend)
{
	check_cb(what, f, len, s, exp, backend, NULL);
}

static size_t frame_of(uint8_t *out, size_t cap, uint32_t s, int family,
		       int type, const uint8_t *cid, size_t n)
{
	uint8_t p[128];
	struct frame f;
	size_t plen = type < 0 ? quic_short(p, cid, n)
			       : quic_long(p, 1, type, cid, n);

	frame_udp(&f, family, family == AF_INET ? addr4[s] : addr6[s], 443, 0,
		  p, plen);
	CU_ASSERT_FATAL(f.len <= cap);
	memcpy(out, f.b, f.len);
	return f.len;
}

static void check_cid(const char *what, uint32_t s, const uint8_t *cid,
		      size_t n, int family, int type)
{
	uint8_t f[256];
	size_t len = frame_of(f, sizeof(f), s, family, type, cid, n);
	uint32_t b = 0;
	enum tc_outcome exp = predict(s, cid, n, &b);

	check(what, f, len, s, exp, b);
}

/* ---- the cases ---- */

static void test_every_backend_every_config(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	int hits = 0;

	for (uint32_t b = 0; b < NBE; b++) {
		uint32_t s = b / 3, be = 0;

		for (uint8_t c = 0; c < RS_QUIC_LB_CONFIGS - 1; c++) {
			if (!keys[s].mode[c])
				continue;
			CU_ASSERT_EQUAL_FATAL(
				quic_cid_encode_keyed(&svcs[s], &keys[s], c,
						      sids[b], NULL, cid),
				svcs[s].quic_cid_len);
			CU_ASSERT_EQUAL(
				predict(s, cid, svcs[s].quic_cid_len, &be),
				TC_HIT);
			CU_ASSERT_EQUAL(be, b);
			for (int fam = 0; fam < 2; fam++)
				for (int type = -1; type <= 2; type += 3) {
					check_cid("a backend's CID", s, cid,
						  svcs[s].quic_cid_len,
						  fam ? AF_INET6 : AF_INET,
						  type);
					hits++;
				}
		}
	}
	/* 3 + 3 backends with two configs, 3 with one; 2 families, 2 types. */
	CU_ASSERT_EQUAL(hits, (3 * 2 + 3 * 2 + 3) * 4);
}

static void test_hostile_cids(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	struct quic_cid_keys wrong;
	uint32_t b = 0;
	int unknown = 0;

	for (uint32_t s = 0; s < NSVC; s++) {
		uint8_t cur = svcs[s].quic_config_id;
		size_t n = svcs[s].quic_cid_len;
		struct quic_cid_keys plain = {0};

		/* A backend's server ID in the clear, under the current config.
		 */
		plain.mode[cur] = RS_QUIC_LB_PLAINTEXT;
		for (uint32_t j = 0; j < 3; j++) {
			quic_cid_encode_keyed(&svcs[s], &plain, cur,
					      sids[s * 3 + j], NULL, cid);
			unknown += predict(s, cid, n, &b) == TC_UNKNOWN;
			check_cid("server ID in the clear", s, cid, n, AF_INET,
				  -1);
		}
		/* Made with a key this host does not hold. */
		wrong = keys[s];
		rnd_key(wrong.key[cur]);
		wrong.mode[cur] = RS_QUIC_LB_ENCRYPTED;
		quic_cid_encode_keyed(&svcs[s], &wrong, cur, sids[s * 3], NULL,
				      cid);
		unknown += predict(s, cid, n, &b) == TC_UNKNOWN;
		check_cid("wrong key", s, cid, n, AF_INET6, -1);
		/* A config id the service does not decode, and 0b111. */
		cid[0] = (uint8_t)(5 << 5) | (cid[0] & 0x1f);
		check_cid("config not held", s, cid, n, AF_INET, -1);
		cid[0] |= 0xe0;
		check_cid("unroutable 0b111", s, cid, n, AF_INET, -1);
		/* Every truncation of a short header inside the CID. */
		quic_cid_encode_keyed(&svcs[s], &keys[s], cur, sids[s * 3 + 1],
				      NULL, cid);
		for (size_t cut = 0; cut < n; cut++) {
			uint8_t p[QUIC_CID_MAX_LEN + 1] = {0x41};
			struct frame f;

			/* A short header whose datagram ends in the CID. */
			memcpy(p + 1, cid, cut);
			frame_udp(&f, AF_INET, addr4[s], 443, 0, p, 1 + cut);
			check("truncated", f.b, f.len, s, TC_MALFORMED, 0);
		}
	}
	/* 4 per service; a chance of 3 in 2^16 each to hit a real ID. */
	CU_ASSERT(unknown >= 10);
}

static void test_random_cids_agree(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN];
	int hits = 0;

	for (int i = 0; i < 6000; i++) {
		uint32_t s = (uint32_t)i % NSVC, b = 0;
		size_t n = svcs[s].quic_cid_len;

		for (size_t k = 0; k < n; k++)
			cid[k] = rnd8();
		/* Half of them real CIDs of a random backend and config. */
		if (i & 1) {
			uint8_t c;

			do
				c = rnd8() % 7;
			while (!keys[s].mode[c]);
			quic_cid_encode_keyed(&svcs[s], &keys[s], c,
					      sids[s * 3 + rnd8() % 3], NULL,
					      cid);
		}
		hits += predict(s, cid, n, &b) == TC_HIT;
		check_cid("random", s, cid, n, i & 2 ? AF_INET6 : AF_INET,
			  i & 4 ? 2 : -1);
	}
	CU_ASSERT(hits >= 3000);
	fprintf(stderr, "  %d runs, %d hits, %d mismatches\n", runs, hits,
		mismatches);
}

/*
 * The cookie step takes a server ID the fleet step decoded for the same
 * packet (the memo: a per-CPU map, and a word in skb->cb[]). A packet
 * whose cb[] arrives holding that very word (the stack may leave anything
 * there), while the map holds another backend's ID from an earlier
 * packet, must still be decoded from its own bytes.
 */
static void test_memo_from_the_stack(void)
{
	const uint32_t s = 0, b = 1, other = 2;
	/* Ethernet, IPv4 without options, UDP, the short header's octet. */
	const uint32_t dcid_off = 14 + 20 + 8 + 1;
	int ncpu = libbpf_num_possible_cpus(), fd;
	uint8_t cid[QUIC_CID_MAX_LEN], f[256], *vals;
	uint32_t cb[5] = {0}, zero = 0, be = 0;
	size_t len;

	CU_ASSERT_FATAL(ncpu > 0);
	CU_ASSERT_EQUAL_FATAL(keys[s].mode[2], RS_QUIC_LB_ENCRYPTED);
	CU_ASSERT_EQUAL_FATAL(quic_cid_encode_keyed(&svcs[s], &keys[s], 2,
						    sids[b], NULL, cid),
			      svcs[s].quic_cid_len);
	CU_ASSERT_EQUAL_FATAL(predict(s, cid, svcs[s].quic_cid_len, &be),
			      TC_HIT);
	CU_ASSERT_EQUAL_FATAL(be, b);
	CU_ASSERT_NOT_EQUAL_FATAL(
		memcmp(sids[b], sids[other], svcs[s].quic_server_id_len), 0);
	/* struct quic_lb_sid: the length, then the ID; on every CPU. */
	vals = calloc((size_t)ncpu, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vals);
	for (int c = 0; c < ncpu; c++) {
		vals[c * 16] = svcs[s].quic_server_id_len;
		memcpy(vals + c * 16 + 1, sids[other],
		       svcs[s].quic_server_id_len);
	}
	fd = bpf_map__fd(skel->maps.rs_quic_sid_memo);
	CU_ASSERT_EQUAL(bpf_map_update_elem(fd, &zero, vals, BPF_ANY), 0);
	free(vals);

	len = frame_of(f, sizeof(f), s, AF_INET, -1, cid, svcs[s].quic_cid_len);
	cb[RS_QUIC_SID_MEMO_CB] = rs_quic_sid_memo_word(s, dcid_off);
	check_cb("a memo word the packet did not earn", f, len, s, TC_HIT, b,
		 cb);
	check_cb("no memo word", f, len, s, TC_HIT, b, NULL);
}

/* kfunc only: an encrypted config without its context is an error. */
static void test_missing_context(void)
{
	uint8_t cid[QUIC_CID_MAX_LEN], f[256];
	size_t len;

	CU_ASSERT_EQUAL_FATAL(quic_cid_encode_keyed(&svcs[2], &keys[2], 0,
						    sids[7], NULL, cid),
			      17);
	len = frame_of(f, sizeof(f), 2, AF_INET, -1, cid, 17);
	check("context present", f, len, 2, TC_HIT, 7);
	/* The daemon drops a context: the entry still says encrypted. */
	CU_ASSERT_EQUAL_FATAL(
		tc_set_quic_lb(skel, kobj, 2, 0, RS_QUIC_LB_ENCRYPTED, 0, NULL),
		0);
	check("context gone", f, len, 2, TC_ERROR, 0);
	CU_ASSERT_EQUAL_FATAL(tc_set_quic_lb(skel, kobj, 2, 0,
					     RS_QUIC_LB_ENCRYPTED, 0,
					     keys[2].key[0]),
			      0);
	check("context back", f, len, 2, TC_HIT, 7);
}

static void test_kfunc_must_load(void)
{
	CU_FAIL("steer_tc_kfunc did not load on a kernel with the kfuncs");
}

int main(void)
{
	CU_pSuite s;
	char why[128];
	int failed, kf = rs_probe_crypto_kfuncs(why, sizeof(why));
	struct steer_tc_kfunc_bpf *probe_k = NULL;
	struct steer_tc_bpf *probe = tc_fixture_load_kfunc(&probe_k);

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite_with_setup_and_teardown("quic_lb software AES",
						 setup_software,
						 teardown_common, NULL, NULL);
	CU_add_test(s, "every backend, every config, both families",
		    test_every_backend_every_config);
	CU_add_test(s, "hostile CIDs", test_hostile_cids);
	CU_add_test(s, "6000 random CIDs agree with the decoder",
		    test_random_cids_agree);
	CU_add_test(s, "a memo left in skb->cb is not taken",
		    test_memo_from_the_stack);
	if (probe) {
		tc_fixture_free_kfunc(probe, probe_k);
		s = CU_add_suite("quic_lb crypto kfuncs", setup_kfunc,
				 teardown_common);
		CU_add_test(s, "every backend, every config, both families",
			    test_every_backend_every_config);
		CU_add_test(s, "hostile CIDs", test_hostile_cids);
		CU_add_test(s, "6000 random CIDs agree with the decoder",
			    test_random_cids_agree);
		CU_add_test(s, "a memo left in skb->cb is not taken",
			    test_memo_from_the_stack);
		CU_add_test(s, "a config without its context: error",
			    test_missing_context);
	} else {
		/* Not run is only right where the kernel has no kfuncs. */
		fprintf(stderr,
			"test_quic_lb_tc: steer_tc_kfunc does not load here "
			"(%s); only the software AES is tested\n",
			kf == 1 ? "yet the kernel has the kfuncs" : why);
		s = CU_add_suite("quic_lb crypto kfuncs", NULL, NULL);
		if (kf == 1)
			CU_add_test(s,
				    "steer_tc_kfunc loads where the kernel "
				    "has the kfuncs",
				    test_kfunc_must_load);
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}

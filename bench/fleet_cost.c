// SPDX-License-Identifier: MIT
/*
 * fleet_cost: what steer_tc's fleet step costs per packet, by path.
 *
 *   fleet_cost [--runs N]
 *
 * The real steer_tc, loaded next to steer_lookup with private maps through
 * the daemon's own data-plane calls (dp_open(NULL), dp_tc_open), a fleet
 * table of three hosts built by core/fleet/fleet_table.c and installed with
 * dp_fleet_install(). Each packet runs N times under BPF_PROG_TEST_RUN with
 * a repeat count of 1 (the encapsulating paths change the packet, so every
 * run must start from the original); the kernel reports each run's time.
 * Printed: the median per path, one markdown table row each. Each run
 * also pays the harness's own cost: the first row, a packet the program
 * looks at and leaves at once, is the floor the others compare with.
 * The same paths for IPv6 clients follow (outer IPv6, 56 bytes).
 * The QUIC rows: a UDP fleet service with cookie = quic whose server IDs
 * the three members publish (core/fleet/fleet_cids.c), 1-RTT packets from a
 * client the table gives to this host.
 *
 * Every path runs twice: unsigned (no fleet key), then with a fleet key
 * (forwarded packets tagged, received ones checked: docs/fleet.md,
 * "Authenticated forwarding"); the difference is the tag's cost.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "dataplane.h"
#include "fleet_cids.h"
#include "fleet_keys.h"
#include "fleet_table.h"
#include "hash.h"
#include "steer_tc.skel.h"

#define SVC    0
#define SVC_Q  1  /* udp 198.18.0.10:443, cookie = quic, 2-byte server IDs */
#define ROUNDS 10 /* alternating blocks of unsigned and signed runs */

static struct rs_fleet_member_info members[3];
static uint8_t owners[RS_FLEET_BUCKETS], owners_q[RS_FLEET_BUCKETS];
static uint64_t fseed, fseed_q;
static const char *const addrs6[3] = {"2001:db8:11::2", "2001:db8:12::2",
				      "2001:db8:13::2"};
static const char *const vip6 = "2001:db8::10";

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a.s_addr;
}

#define ENC sizeof(struct rs_fleet_encap)

/* The forwarding key of the signed rows (NULL: unsigned). */
static const struct rs_fleet_auth *signer;

/*
 * Sign the forwarded packet whose outer IP header is at @ip, our header
 * at @e and @n bytes of inner packet behind it, as a member would.
 */
static void sign(const uint8_t *ip, int family, uint8_t *e, size_t n)
{
	struct rs_fleet_tag_msg m = {0};
	struct rs_fleet_tag_meta meta = {.version = e[4], .hops = e[5]};
	uint64_t t;
	uint32_t w;

	if (!signer)
		return;
	e[6] = signer->id;
	meta.key_id = e[6];
	meta.inner_len = (uint32_t)n;
	if (family == AF_INET6) {
		memcpy(&m.v6.src, ip + 8, 16);
		memcpy(&m.v6.dst, ip + 24, 16);
		m.v6.meta = meta;
		memcpy(m.v6.inner, e + ENC, n < 64 ? n : 64);
	} else {
		memcpy(&m.v4.src, ip + 12, 4);
		memcpy(&m.v4.dst, ip + 16, 4);
		m.v4.meta = meta;
		memcpy(m.v4.inner, e + ENC, n < 40 ? n : 40);
	}
	t = rs_fleet_tag(signer, &m, family == AF_INET6);
	w = htonl((uint32_t)(t >> 32));
	memcpy(e + 8, &w, 4);
	w = htonl((uint32_t)t);
	memcpy(e + 12, &w, 4);
}

static int setup(struct rs_dataplane *dp)
{
	static struct rs_fleet_slot slots[RS_FLEET_SLOTS];
	const char *names[3] = {"host-1", "host-2", "host-3"};
	const char *addrs[3] = {"198.18.11.2", "198.18.12.2", "198.18.13.2"};
	struct rs_service svc = {.id = SVC,
				 .enabled = 1,
				 .protocol = IPPROTO_TCP,
				 .prefix4 = 32,
				 .prefix6 = 64};
	struct rs_bind_key k = {.prefixlen = 64,
				.protocol = IPPROTO_TCP,
				.family = AF_INET,
				.port = 80};
	struct rs_bind_key k6 = {.prefixlen = 32 + 128,
				 .protocol = IPPROTO_TCP,
				 .family = AF_INET6,
				 .port = 80};
	struct rs_bind v[3] = {{.service = SVC, .addr_prefixlen = 32},
			       {.service = SVC, .addr_prefixlen = 128},
			       {.service = SVC_Q, .addr_prefixlen = 32}};
	struct rs_bind_key keys[3];
	struct rs_fleet_cid_owner o[3];
	uint32_t vip = ip4("198.18.0.10");

	memcpy(k.addr, &vip, 4);
	inet_pton(AF_INET6, vip6, k6.addr);
	keys[0] = k;
	keys[1] = k6;
	keys[2] = k;
	keys[2].protocol = IPPROTO_UDP;
	keys[2].port = 443;
	snprintf(svc.name, sizeof(svc.name), "web");
	if (dp_set_service(dp, SVC, &svc))
		return -1;
	svc.id = SVC_Q;
	svc.protocol = IPPROTO_UDP;
	svc.cookie = RS_COOKIE_QUIC;
	svc.quic_server_id_len = 2;
	svc.quic_cid_len = 8;
	snprintf(svc.name, sizeof(svc.name), "q");
	if (dp_set_service(dp, SVC_Q, &svc) || dp_sync_binds(dp, keys, v, 3))
		return -1;
	for (int i = 0; i < 3; i++) {
		snprintf(members[i].name, sizeof(members[i].name), "%s",
			 names[i]);
		members[i].addr = ip4(addrs[i]);
		snprintf(members[i].caps[0].service, RS_NAME_MAX, "web");
		members[i].caps[0].capacity = 2;
		snprintf(members[i].caps[1].service, RS_NAME_MAX, "q");
		members[i].caps[1].capacity = 2;
		members[i].n_caps = 2;
		/* Server ID 0x0i01 for member i. */
		members[i].sids[0].cap = 1;
		members[i].sids[0].len = 2;
		members[i].sids[0].id[0] = (uint8_t)(i + 1);
		members[i].sids[0].id[1] = 1;
		members[i].n_sids = 1;
		slots[1 + i].member.addr = members[i].addr;
		inet_pton(AF_INET6, addrs6[i],
			  &slots[RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr);
	}
	slots[RS_FLEET_SLOT_ADDR6].addr6.addr =
		slots[RS_FLEET_SLOT_ADDR6 + 1].addr6.addr;
	fseed = rs_fleet_seed("web", 0);
	rs_fleet_buckets(members, 3, "web", fseed, owners);
	fseed_q = rs_fleet_seed("q", 0);
	rs_fleet_buckets(members, 3, "q", fseed_q, owners_q);
	slots[RS_FLEET_SLOT_SERVICES + SVC_Q].service.seed = fseed_q;
	slots[RS_FLEET_SLOT_SERVICES + SVC_Q].service.owners = 3;
	memcpy(&slots[RS_FLEET_SLOT_ROWS + SVC_Q * RS_FLEET_ROWS], owners_q,
	       sizeof(owners_q));
	rs_fleet_cids_place(slots + RS_FLEET_SLOT_CIDS, SVC_Q, o,
			    rs_fleet_cid_owners(members, 3, "q", 2, o, 3));
	memset(&slots[RS_FLEET_SLOT_KEYS], 0,
	       RS_FLEET_AUTH_KEYS * sizeof(slots[0]));
	if (signer)
		slots[RS_FLEET_SLOT_KEYS].auth = *signer;
	slots[0].hdr.version = 1;
	slots[0].hdr.nmembers = 3;
	slots[0].hdr.self = 0;
	slots[0].hdr.self_addr = members[0].addr;
	slots[0].hdr.port = RS_FLEET_DEFAULT_PORT;
	slots[RS_FLEET_SLOT_SERVICES + SVC].service.seed = fseed;
	slots[RS_FLEET_SLOT_SERVICES + SVC].service.owners = 3;
	memcpy(&slots[RS_FLEET_SLOT_ROWS + SVC * RS_FLEET_ROWS], owners,
	       sizeof(owners));
	return dp_fleet_install(dp, slots, false);
}

/*
 * The TCP options Linux puts in a SYN (MSS, SACK permitted, timestamps,
 * window scale): 20 bytes, so that a segment is as long as in production
 * (which decides, among other things, whether the tag reads the inner
 * packet in place: docs/fleet.md).
 */
#define TCP_OPTS 20
static const uint8_t tcp_opts[TCP_OPTS] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0,
					   0, 1, 0,    0,    0, 0, 1, 3,  3, 7};

/* Ethernet + IPv4 + TCP SYN with options from @src to the service. */
static size_t syn(uint8_t *f, uint32_t src, uint32_t dst)
{
	memset(f, 0, 54 + TCP_OPTS);
	f[12] = 0x08;
	f[14] = 0x45;
	f[17] = 40 + TCP_OPTS;
	f[22] = 64;
	f[23] = IPPROTO_TCP;
	memcpy(f + 26, &src, 4);
	memcpy(f + 30, &dst, 4);
	f[34] = 0x9c;
	f[36] = 0;
	f[37] = 80;
	f[46] = (5 + TCP_OPTS / 4) << 4;
	f[47] = 0x02;
	memcpy(f + 54, tcp_opts, TCP_OPTS);
	return 54 + TCP_OPTS;
}

/* The SYN @inner (from syn()) as host-2 forwards it to us. */
static size_t encap(uint8_t *f, const uint8_t *inner)
{
	uint32_t from = members[1].addr, self = members[0].addr;
	size_t n = 40 + TCP_OPTS;

	memset(f, 0, 14 + RS_FLEET_ENCAP_LEN);
	f[12] = 0x08;
	f[14] = 0x45;
	f[17] = (uint8_t)(n + RS_FLEET_ENCAP_LEN);
	f[22] = 64;
	f[23] = IPPROTO_UDP;
	memcpy(f + 26, &from, 4);
	memcpy(f + 30, &self, 4);
	f[36] = RS_FLEET_DEFAULT_PORT >> 8;
	f[37] = RS_FLEET_DEFAULT_PORT & 0xff;
	f[39] = (uint8_t)(n + 8 + ENC);
	memcpy(f + 42, "RSF1", 4);
	f[46] = RS_FLEET_WIRE_VERSION;
	f[47] = 1;
	memcpy(f + 42 + ENC, inner + 14, n);
	sign(f + 14, AF_INET, f + 42, n);
	return 42 + ENC + n;
}

/* Ethernet + IPv6 + TCP SYN with options from @src to the service. */
static size_t syn6(uint8_t *f, const uint8_t src[16], const char *dst)
{
	memset(f, 0, 74 + TCP_OPTS);
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14] = 0x60;
	f[19] = 20 + TCP_OPTS;
	f[20] = IPPROTO_TCP;
	f[21] = 64;
	memcpy(f + 22, src, 16);
	inet_pton(AF_INET6, dst, f + 38);
	f[54] = 0x9c;
	f[57] = 80;
	f[66] = (5 + TCP_OPTS / 4) << 4;
	f[67] = 0x02;
	memcpy(f + 74, tcp_opts, TCP_OPTS);
	return 74 + TCP_OPTS;
}

/* The IPv6 SYN @inner (from syn6()) as host-2 forwards it to us. */
static size_t encap6(uint8_t *f, const uint8_t *inner)
{
	size_t n = 60 + TCP_OPTS;

	memset(f, 0, 14 + RS_FLEET_ENCAP6_LEN);
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14] = 0x60;
	f[19] = (uint8_t)(n + 8 + ENC);
	f[20] = IPPROTO_UDP;
	f[21] = 64;
	inet_pton(AF_INET6, addrs6[1], f + 22);
	inet_pton(AF_INET6, addrs6[0], f + 38);
	f[56] = RS_FLEET_DEFAULT_PORT >> 8;
	f[57] = RS_FLEET_DEFAULT_PORT & 0xff;
	f[59] = (uint8_t)(n + 8 + ENC);
	memcpy(f + 62, "RSF1", 4);
	f[66] = RS_FLEET_WIRE_VERSION;
	f[67] = 1;
	memcpy(f + 62 + ENC, inner + 14, n);
	sign(f + 14, AF_INET6, f + 62, n);
	return 62 + ENC + n;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * @runs single runs of @f, their ns appended at @d; the verdict in
 * *@verdict. -1 when the kernel refuses a run.
 */
static int time_runs(int prog, const uint8_t *f, size_t n, int runs,
		     uint32_t *d, int *verdict)
{
	struct __sk_buff ctx = {.ifindex = 1, .ingress_ifindex = 1};
	uint8_t out[256];

	for (int i = 0; i < runs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f,
			    .data_size_in = (__u32)n, .data_out = out,
			    .data_size_out = sizeof(out), .ctx_in = &ctx,
			    .ctx_size_in = sizeof(ctx), .repeat = 1);

		if (bpf_prog_test_run_opts(prog, &o))
			return -1;
		d[i] = o.duration;
		*verdict = (int)o.retval;
	}
	return 0;
}

static double median_of(uint32_t *d, size_t n)
{
	qsort(d, n, sizeof(*d), cmp_u32);
	return d[n / 2];
}

/*
 * Ethernet + IPv4 + UDP + a QUIC 1-RTT packet (8-byte DCID naming server
 * ID 0x0@m01, 24 bytes of stand-in payload) from @src to the service.
 */
static size_t quic_short(uint8_t *f, uint32_t src, uint32_t dst, int m)
{
	size_t n = 14 + 20 + 8 + 1 + 8 + 24;

	memset(f, 0, n);
	f[12] = 0x08;
	f[14] = 0x45;
	f[17] = (uint8_t)(n - 14);
	f[22] = 64;
	f[23] = IPPROTO_UDP;
	memcpy(f + 26, &src, 4);
	memcpy(f + 30, &dst, 4);
	f[34] = 0xc3;
	f[36] = 443 >> 8;
	f[37] = 443 & 0xff;
	f[39] = (uint8_t)(n - 34);
	f[42] = 0x41; /* short header, fixed bit */
	f[43] = 0x00; /* config 0 */
	f[44] = (uint8_t)m;
	f[45] = 1;
	return n;
}

/* A client whose owner is member @want by table @o with seed @seed. */
static uint32_t client_by(int want, const uint8_t *o, uint64_t seed)
{
	struct rs_service s = {.prefix4 = 32};

	for (uint32_t c = 1; c < 65536; c++) {
		uint32_t src = htonl(0xc6120000u + c);
		struct rs_affinity_key key;

		uint8_t a[16] = {0};

		memcpy(a, &src, 4);
		rs_fleet_key_build(&key, &s, AF_INET, a, 0);
		if (o[rs_fleet_bucket(rs_hash_key(&key, seed))] == want + 1)
			return src;
	}
	return 0;
}

static uint32_t client_of(int want)
{
	return client_by(want, owners, fseed);
}

/* An IPv6 client (one per /64) whose owner is member @want, in @a. */
static void client6_of(int want, uint8_t a[16])
{
	struct rs_service s = {.prefix6 = 64};

	for (uint32_t c = 1; c < 65536; c++) {
		struct rs_affinity_key key;

		inet_pton(AF_INET6, "2001:db8:100::7", a);
		a[6] = (uint8_t)(c >> 8);
		a[7] = (uint8_t)c;
		rs_fleet_key_build(&key, &s, AF_INET6, a, 0);
		if (owners[rs_fleet_bucket(rs_hash_key(&key, fseed))] ==
		    want + 1)
			return;
	}
}

int main(int argc, char **argv)
{
	struct rs_dataplane dp = {0};
	uint8_t own[96], other[96], none[96], enc[160], ack[96];
	uint8_t own6[112], other6[112], none6[112], enc6[192], ack6[112],
		a6[16];
	uint8_t q_other[96], q_own[96], q_unknown[96];
	uint32_t vip = ip4("198.18.0.10");
	int runs = 20000, prog, c, v = 0, verdict[2][13];
	static const uint8_t raw_key[RS_FLEET_KEY_LEN] = {
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
		0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
	struct rs_fleet_auth key;
	double ns[2][13];
	uint32_t *d[2 * 13], t;
	int per;
	struct {
		const char *what;
		const uint8_t *f;
		size_t n;
	} paths[13];

	while ((c = getopt(argc, argv, "n:")) != -1)
		if (c == 'n')
			runs = atoi(optarg);
	if (runs < 1 || dp_open(&dp, NULL) || dp_tc_open(&dp) || setup(&dp)) {
		fprintf(stderr, "fleet_cost: cannot load (root, bpffs?)\n");
		return 1;
	}
	prog = dp_tc_prog_fd(&dp);
	paths[0].what = "not a fleet service (other destination)";
	paths[0].n = syn(none, client_of(1), ip4("198.18.0.99"));
	paths[0].f = none;
	paths[1].what = "SYN owned here (on to sk_lookup)";
	paths[1].n = syn(own, client_of(0), vip);
	paths[1].f = own;
	paths[2].what = "SYN owned by another host (encapsulated, redirected)";
	paths[2].n = syn(other, client_of(1), vip);
	paths[2].f = other;
	paths[3].what = "ACK of a forwarded connection (to its SYN's owner)";
	paths[3].n = syn(ack, client_of(1), vip);
	ack[47] = 0x10;
	paths[3].f = ack;
	paths[4].what = "encapsulated SYN from a member (decapsulated)";
	paths[4].n = encap(enc, own);
	paths[4].f = enc;
	client6_of(1, a6);
	paths[5].what = "IPv6: not a fleet service (other destination)";
	paths[5].n = syn6(none6, a6, "2001:db8::99");
	paths[5].f = none6;
	client6_of(0, a6);
	paths[6].what = "IPv6: SYN owned here (on to sk_lookup)";
	paths[6].n = syn6(own6, a6, vip6);
	paths[6].f = own6;
	client6_of(1, a6);
	paths[7].what = "IPv6: SYN owned by another host (encapsulated, "
			"redirected)";
	paths[7].n = syn6(other6, a6, vip6);
	paths[7].f = other6;
	paths[8].what = "IPv6: ACK of a forwarded connection (to its SYN's "
			"owner)";
	paths[8].n = syn6(ack6, a6, vip6);
	ack6[67] = 0x10;
	paths[8].f = ack6;
	paths[9].what = "IPv6: encapsulated SYN from a member (decapsulated)";
	paths[9].n = encap6(enc6, own6);
	paths[9].f = enc6;
	paths[10].what = "QUIC 1-RTT, this host's server ID (on to its cookie "
			 "step)";
	paths[10].n =
		quic_short(q_own, client_by(0, owners_q, fseed_q), vip, 1);
	paths[10].f = q_own;
	paths[11].what = "QUIC 1-RTT, another member's server ID "
			 "(encapsulated by cookie)";
	paths[11].n =
		quic_short(q_other, client_by(0, owners_q, fseed_q), vip, 2);
	paths[11].f = q_other;
	paths[12].what = "QUIC 1-RTT, unknown server ID (by the table: owned "
			 "here)";
	paths[12].n =
		quic_short(q_unknown, client_by(0, owners_q, fseed_q), vip, 9);
	paths[12].f = q_unknown;
	/*
	 * Unsigned and signed blocks alternate, ROUNDS of each, so that what
	 * else the machine does meanwhile weighs on both columns alike.
	 */
	if (rs_fleet_auth_derive(raw_key, &key))
		return 1;
	per = runs / ROUNDS > 0 ? runs / ROUNDS : 1;
	for (int i = 0; i < 2 * 13; i++)
		d[i] = calloc((size_t)(per * ROUNDS), sizeof(uint32_t));
	for (int r = 0; r < ROUNDS; r++)
		for (int pass = 0; pass < 2; pass++) {
			signer = pass ? &key : NULL;
			if (setup(&dp))
				return 1;
			paths[4].n = encap(enc, own);
			paths[9].n = encap6(enc6, own6);
			/* The SYNs of paths[3] and [8]: their flows. */
			time_runs(prog, other, paths[2].n, 1, &t, &v);
			time_runs(prog, other6, paths[7].n, 1, &t, &v);
			for (int i = 0; i < 13; i++)
				if (!d[pass * 13 + i] ||
				    time_runs(prog, paths[i].f, paths[i].n, per,
					      d[pass * 13 + i] + r * per,
					      &verdict[pass][i]))
					return 1;
		}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 13; i++) {
			ns[pass][i] = median_of(d[pass * 13 + i],
						(size_t)(per * ROUNDS));
			free(d[pass * 13 + i]);
		}
	printf("| path | ns unsigned | ns signed (fleet key) | tag's cost, ns "
	       "| "
	       "verdict |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (int i = 0; i < 13; i++) {
		printf("| %s | %.0f | %.0f | %+.0f | %d", paths[i].what,
		       ns[0][i], ns[1][i], ns[1][i] - ns[0][i], verdict[1][i]);
		if (verdict[0][i] != verdict[1][i])
			printf(" (unsigned: %d)", verdict[0][i]);
		printf(" |\n");
	}
	printf("\nMedians of %d runs each, in %d alternating blocks.\n",
	       per * ROUNDS, ROUNDS);
	dp_close(&dp);
	return 0;
}

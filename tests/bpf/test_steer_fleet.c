// SPDX-License-Identifier: MIT
/*
 * steer_tc's fleet step (bpf/lib/fleet.bpf.h) under BPF_PROG_TEST_RUN, on
 * a fleet table built by the daemon's own builder (core/fleet/fleet_table.c):
 * the owner the kernel forwards to is the owner userspace computes, the
 * encapsulation is byte for byte what docs/fleet.md says, an encapsulated
 * packet from a member loses its outer headers, and forged, over-hop-limit
 * and truncated ones are dropped and counted, never passed on. All of it
 * for IPv4 clients in outer IPv4 and IPv6 clients in outer IPv6; an IPv6
 * client whose owner has no IPv6 address stays here, counted. QUIC
 * datagrams of a fleet service follow their connection ID's server ID to
 * the member that issued it (bpf/lib/fleet_quic.bpf.h). Each of those
 * outcomes is a trace event with its reason, member and 4-tuple when a
 * trace runs (issue 24).
 *
 * Every test runs twice: unsigned (no fleet key), then with a fleet key
 * in the table, every frame it sends signed and every packet it sees
 * forwarded checked for its tag. Then the tag's own cases: unsigned,
 * wrong key, altered, replayed to another host, rotation.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "replica.h"
#include "bpf_fixture.h"
#include "fleet_cids.h"
#include "fleet_keys.h"
#include "fleet_sip.h"
#include "fleet_table.h"
#include "frames.h"
#include "hash.h"
#include "tc_fixture.h"
#include "trace_capture.h"

#define SVC	  0 /* tcp 198.18.0.10:80 and [2001:db8::10]:80, fleet */
#define SVC_Q	  1 /* udp 198.18.0.10:443, fleet, cookie = quic */
#define NMEMBERS  3 /* host-1 (this host), host-2, host-3 */
#define FRAME_LEN 2048

static struct steer_tc_bpf *skel;
static struct rs_fleet_member_info members[NMEMBERS];
static uint8_t owners[RS_FLEET_BUCKETS], owners_q[RS_FLEET_BUCKETS];
static uint64_t fleet_seed, fleet_seed_q;

/*
 * Server IDs of service q (2 bytes): host-1 (this host) 0x0101, host-2
 * 0x0201, host-3 0x0301; 0x0a0a is published by host-2 and host-3.
 */
static const uint16_t sids[NMEMBERS][2] = {
	{0x0101, 0}, {0x0201, 0x0a0a}, {0x0301, 0x0a0a}};
static const char *const addrs6[NMEMBERS] = {"2001:db8:11::2", "2001:db8:12::2",
					     "2001:db8:13::2"};
static const char *const vip6 = "2001:db8::10";

static void ip6(const char *s, uint8_t out[16])
{
	inet_pton(AF_INET6, s, out);
}

/* A member's address as rs_fleet_peers keys it (abi.h). */
static struct rs_fleet_addr peer_v4(uint32_t v4)
{
	return (struct rs_fleet_addr){.w = {0, 0, htonl(0xffff), v4}};
}

static struct rs_fleet_addr peer_v6(const char *s)
{
	struct rs_fleet_addr a;

	inet_pton(AF_INET6, s, &a);
	return a;
}

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a.s_addr;
}

static uint16_t csum16(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An IPv4 TCP packet (no payload) at @p: 40 bytes. */
static size_t tcp_packet(uint8_t *p, uint32_t saddr, uint32_t daddr,
			 uint16_t sport, uint16_t dport, uint8_t flags)
{
	uint16_t c;

	memset(p, 0, 40);
	p[0] = 0x45;
	p[3] = 40;
	p[6] = 0x40; /* DF */
	p[8] = 64;
	p[9] = IPPROTO_TCP;
	memcpy(p + 12, &saddr, 4);
	memcpy(p + 16, &daddr, 4);
	c = csum16(p, 20);
	p[10] = (uint8_t)(c >> 8);
	p[11] = (uint8_t)c;
	p[20] = (uint8_t)(sport >> 8);
	p[21] = (uint8_t)sport;
	p[22] = (uint8_t)(dport >> 8);
	p[23] = (uint8_t)dport;
	p[32] = 5 << 4;
	p[33] = flags;
	p[34] = 0xff;
	return 40;
}

/* An IPv6 TCP packet (no payload) at @p: 60 bytes. */
static size_t tcp6_packet(uint8_t *p, const char *saddr, const char *daddr,
			  uint16_t sport, uint16_t dport, uint8_t flags)
{
	memset(p, 0, 60);
	p[0] = 0x60;
	p[5] = 20; /* payload length */
	p[6] = IPPROTO_TCP;
	p[7] = 64;
	ip6(saddr, p + 8);
	ip6(daddr, p + 24);
	p[40] = (uint8_t)(sport >> 8);
	p[41] = (uint8_t)sport;
	p[42] = (uint8_t)(dport >> 8);
	p[43] = (uint8_t)dport;
	p[52] = 5 << 4;
	p[53] = flags;
	p[54] = 0xff;
	return 60;
}

/* Ethernet to us carrying IPv6. */
static size_t eth6(uint8_t *f)
{
	memset(f, 0, 14);
	f[12] = 0x86;
	f[13] = 0xdd;
	return 14;
}

/* Ethernet to us (all-zero addresses: loopback's) carrying IPv4. */
static size_t eth(uint8_t *f)
{
	memset(f, 0, 14);
	f[12] = 0x08;
	return 14;
}

#define ENC ((uint16_t)sizeof(struct rs_fleet_encap))

/*
 * Forwarding keys: table_keys go into the table install_table() writes
 * (none: this host neither signs nor checks); frames built below are
 * signed with *signer when it is set.
 */
static struct rs_fleet_auth table_keys[RS_FLEET_AUTH_KEYS];
static const struct rs_fleet_auth *signer;
/* The wire version of the frames built below (and of their tags). */
static uint8_t frame_wire = RS_FLEET_WIRE_VERSION;

/* The addresses of the outer header at @ip as the table holds them. */
static void outer_addrs(const uint8_t *ip, int family, struct rs_fleet_addr *s,
			struct rs_fleet_addr *d)
{
	if (family == AF_INET6) {
		memcpy(s, ip + 8, 16);
		memcpy(d, ip + 24, 16);
		return;
	}
	memset(s, 0, sizeof(*s));
	memset(d, 0, sizeof(*d));
	s->w[2] = d->w[2] = htonl(0xffff);
	memcpy(&s->w[3], ip + 12, 4);
	memcpy(&d->w[3], ip + 16, 4);
}

/* The tag of the packet whose outer IP header is at @ip (userspace's). */
static uint64_t tag_of(const uint8_t *ip, int family, const uint8_t *e,
		       const uint8_t *inner, size_t n,
		       const struct rs_fleet_auth *k)
{
	struct rs_fleet_tag_msg m = {0};
	struct rs_fleet_tag_meta meta = {.version = e[4],
					 .hops = e[5],
					 .key_id = e[6],
					 .inner_len = (uint32_t)n};
	struct rs_fleet_addr s, d;

	outer_addrs(ip, family, &s, &d);
	if (family == AF_INET6) {
		m.v6.src = s;
		m.v6.dst = d;
		m.v6.meta = meta;
		memcpy(m.v6.inner, inner, n < 64 ? n : 64);
	} else {
		m.v4.src = s.w[3];
		m.v4.dst = d.w[3];
		m.v4.meta = meta;
		memcpy(m.v4.inner, inner, n < 40 ? n : 40);
	}
	return rs_fleet_tag(k, &m, family == AF_INET6);
}

static uint64_t tag_in(const uint8_t *e)
{
	uint32_t hi, lo;

	memcpy(&hi, e + 8, 4);
	memcpy(&lo, e + 12, 4);
	return (uint64_t)ntohl(hi) << 32 | ntohl(lo);
}

static void frame_sign(const uint8_t *ip, int family, uint8_t *e,
		       const uint8_t *inner, size_t n)
{
	uint64_t t;
	uint32_t w;

	if (!signer)
		return;
	e[6] = signer->id;
	t = tag_of(ip, family, e, inner, n, signer);
	w = htonl((uint32_t)(t >> 32));
	memcpy(e + 8, &w, 4);
	w = htonl((uint32_t)t);
	memcpy(e + 12, &w, 4);
}

/*
 * A packet this host forwarded (@len bytes from its outer IP header at
 * @ip): signed with the table's first key and its tag what userspace
 * computes; unsigned, key id 0 and tag 0, when the table has no key.
 */
static void check_tag(const uint8_t *ip, int family, size_t len)
{
	size_t elen =
		family == AF_INET6 ? RS_FLEET_ENCAP6_LEN : RS_FLEET_ENCAP_LEN;
	const uint8_t *e = ip + elen - ENC;

	CU_ASSERT_FATAL(len > elen);
	if (!table_keys[0].id) {
		CU_ASSERT_EQUAL(e[4], RS_FLEET_WIRE_VERSION);
		CU_ASSERT_EQUAL(e[6], 0);
		CU_ASSERT_EQUAL(tag_in(e), 0);
		return;
	}
	/* 3 where the pair's state says the member takes it (below). */
	CU_ASSERT(e[4] == RS_FLEET_WIRE_VERSION || e[4] == RS_FLEET_WIRE_MAX);
	CU_ASSERT_EQUAL(e[6], table_keys[0].id);
	CU_ASSERT_EQUAL(tag_in(e), tag_of(ip, family, e, ip + elen, len - elen,
					  &table_keys[0]));
}

/* @inner (@n bytes) as a member at @from sends it to this host. */
static size_t encap_frame(uint8_t *f, uint32_t from, uint8_t hops,
			  const uint8_t *inner, size_t n)
{
	uint8_t *ip = f + eth(f), *udp = ip + 20, *e = udp + 8;
	uint32_t self = ip4("198.18.11.2");
	uint16_t c, tot = (uint16_t)(n + RS_FLEET_ENCAP_LEN);

	memset(ip, 0, RS_FLEET_ENCAP_LEN);
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &from, 4);
	memcpy(ip + 16, &self, 4);
	c = csum16(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	udp[0] = 0xc0;
	udp[2] = RS_FLEET_DEFAULT_PORT >> 8;
	udp[3] = RS_FLEET_DEFAULT_PORT & 0xff;
	udp[4] = (uint8_t)((n + 8 + ENC) >> 8);
	udp[5] = (uint8_t)(n + 8 + ENC);
	memcpy(e, "RSF1", 4);
	e[4] = frame_wire;
	e[5] = hops;
	memcpy(e + ENC, inner, n);
	frame_sign(ip, AF_INET, e, inner, n);
	return 14 + RS_FLEET_ENCAP_LEN + n;
}

/* @inner (@n bytes) as a member at @from (IPv6) sends it to this host. */
static size_t encap6_frame(uint8_t *f, const char *from, uint8_t hops,
			   const uint8_t *inner, size_t n)
{
	uint8_t *ip = f + eth6(f), *udp = ip + 40, *e = udp + 8;
	uint16_t pl = (uint16_t)(n + 8 + ENC);

	memset(ip, 0, RS_FLEET_ENCAP6_LEN);
	ip[0] = 0x60;
	ip[4] = (uint8_t)(pl >> 8);
	ip[5] = (uint8_t)pl;
	ip[6] = IPPROTO_UDP;
	ip[7] = 64;
	ip6(from, ip + 8);
	ip6(addrs6[0], ip + 24);
	udp[0] = 0xc0;
	udp[2] = RS_FLEET_DEFAULT_PORT >> 8;
	udp[3] = RS_FLEET_DEFAULT_PORT & 0xff;
	udp[4] = (uint8_t)(pl >> 8);
	udp[5] = (uint8_t)pl;
	memcpy(e, "RSF1", 4);
	e[4] = frame_wire;
	e[5] = hops;
	memcpy(e + ENC, inner, n);
	frame_sign(ip, AF_INET6, e, inner, n);
	return 14 + RS_FLEET_ENCAP6_LEN + n;
}

struct run {
	int verdict;
	uint8_t out[FRAME_LEN];
	uint32_t out_len;
};

static int run(const uint8_t *f, size_t n, struct run *r)
{
	struct __sk_buff ctx = {.ifindex = 1, .ingress_ifindex = 1};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f,
		    .data_size_in = (__u32)n, .data_out = r->out,
		    .data_size_out = sizeof(r->out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx));
	int err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.steer_tc),
					 &opts);

	r->verdict = (int)opts.retval;
	r->out_len = opts.data_size_out;
	return err;
}

static struct rs_fleet_stats stats(void)
{
	struct rs_fleet_stats st = {0};

	fixture_percpu_sum(bpf_map__fd(skel->maps.rs_fleet_stats), 0, &st,
			   sizeof(st));
	return st;
}

/* The owner userspace computes for IPv4 client @saddr: member index. */
static int replica_owner_of(uint32_t saddr, uint64_t seed, const uint8_t *o)
{
	struct rs_service svc = {.prefix4 = 32, .prefix6 = 64};
	uint8_t a[16] = {0};

	memcpy(a, &saddr, 4);
	return replica_fleet_owner(&svc, seed, o, AF_INET, a);
}

/* The same for service web. */
static int replica_owner(uint32_t saddr)
{
	return replica_owner_of(saddr, fleet_seed, owners);
}

/* The same for IPv6 client @saddr (prefix6 64). */
static int replica_owner6(const char *saddr)
{
	struct rs_service svc = {.prefix4 = 32, .prefix6 = 64};
	uint8_t a[16];

	ip6(saddr, a);
	return replica_fleet_owner(&svc, fleet_seed, owners, AF_INET6, a);
}

/* The table's number: its SipHash states are in rs_fleet_sip's half 1. */
#define TABLE_GEN 5

static int table_fd(void);

/* Entry @i of rs_fleet_sip, read (@set 0) or written (@set 1). */
static int sip_entry(__u32 i, struct rs_fleet_sip *e, int set)
{
	int fd = bpf_map__fd(skel->maps.rs_fleet_sip);

	return set ? bpf_map_update_elem(fd, &i, e, BPF_ANY)
		   : bpf_map_lookup_elem(fd, &i, e);
}

/*
 * rs_fleet_sip for the table in force, as the daemon writes it
 * (rs_fleet_sip_fill() into the half of the table's number), after every
 * change of its keys or addresses; the other half all zero.
 */
static int sip_refresh(void)
{
	static struct rs_fleet_slot t[RS_FLEET_SLOTS];
	static struct rs_fleet_sip half[RS_FLEET_SIP_HALF];
	int fd = table_fd(), err = 0;

	if (fd < 0)
		return -1;
	for (__u32 i = 0; i < RS_FLEET_SLOTS && !err; i++)
		err = bpf_map_lookup_elem(fd, &i, &t[i]);
	close(fd);
	if (err)
		return -1;
	rs_fleet_sip_fill(t, half);
	for (__u32 i = 0; i < RS_FLEET_SIP_HALF && !err; i++) {
		struct rs_fleet_sip zero = {0};

		err = sip_entry(rs_fleet_sip_index(t[0].hdr.gen, 0, 0, 0) + i,
				&half[i], 1) ||
		      sip_entry(rs_fleet_sip_index(t[0].hdr.gen + 1, 0, 0, 0) +
					i,
				&zero, 1);
	}
	return err ? -1 : 0;
}

static int install_table(void)
{
	/* The table in force; the previous half stays empty. */
	static struct rs_fleet_slot slots[RS_FLEET_MAP_SLOTS];
	__u32 keys_n = RS_FLEET_MAP_SLOTS, outer_key = 0;
	static __u32 keys[RS_FLEET_MAP_SLOTS];
	struct rs_fleet_addr pa;
	int fd, outer = bpf_map__fd(skel->maps.rs_fleet), err, key_id, val_id;
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	struct btf *btf;
	const char *names[NMEMBERS] = {"host-1", "host-2", "host-3"};
	const char *addrs[NMEMBERS] = {"198.18.11.2", "198.18.12.2",
				       "198.18.13.2"};

	for (int i = 0; i < NMEMBERS; i++) {
		snprintf(members[i].name, sizeof(members[i].name), "%s",
			 names[i]);
		members[i].addr = ip4(addrs[i]);
		snprintf(members[i].caps[0].service, RS_NAME_MAX, "web");
		members[i].caps[0].capacity = 2;
		snprintf(members[i].caps[1].service, RS_NAME_MAX, "q");
		members[i].caps[1].capacity = 2;
		members[i].n_caps = 2;
		members[i].n_sids = 0;
		for (int k = 0; k < 2 && sids[i][k]; k++) {
			struct rs_fleet_sid *sid =
				&members[i].sids[members[i].n_sids++];

			sid->cap = 1;
			sid->len = 2;
			sid->id[0] = (uint8_t)(sids[i][k] >> 8);
			sid->id[1] = (uint8_t)sids[i][k];
		}
		slots[1 + i].member.addr = members[i].addr;
		/* Their records say they take wire version 3. */
		slots[1 + i].member.flags = RS_FLEET_MEMBER_WIRE3;
		ip6(addrs6[i], members[i].addr6);
		members[i].has_addr6 = true;
		memcpy(&slots[RS_FLEET_SLOT_ADDR6 + 1 + i].addr6.addr,
		       members[i].addr6, 16);
		if (!i)
			continue;
		struct rs_fleet_peer peer = {.member = (__u32)i};

		pa = peer_v4(members[i].addr);
		bpf_map_update_elem(bpf_map__fd(skel->maps.rs_fleet_peers), &pa,
				    &peer, BPF_ANY);
		pa = peer_v6(addrs6[i]);
		bpf_map_update_elem(bpf_map__fd(skel->maps.rs_fleet_peers), &pa,
				    &peer, BPF_ANY);
	}
	memcpy(&slots[RS_FLEET_SLOT_ADDR6].addr6.addr, members[0].addr6, 16);
	fleet_seed = rs_fleet_seed("web", 0);
	if (rs_fleet_buckets(members, NMEMBERS, "web", fleet_seed, owners) !=
	    NMEMBERS)
		return -1;
	for (int k = 0; k < RS_FLEET_AUTH_KEYS; k++)
		slots[RS_FLEET_SLOT_KEYS + k].auth = table_keys[k];
	slots[0].hdr.version = 7;
	slots[0].hdr.gen = TABLE_GEN;
	slots[0].hdr.nmembers = NMEMBERS;
	slots[0].hdr.self = 0;
	slots[0].hdr.self_addr = members[0].addr;
	slots[0].hdr.port = RS_FLEET_DEFAULT_PORT;
	slots[RS_FLEET_SLOT_SERVICES + SVC].service.seed = fleet_seed;
	slots[RS_FLEET_SLOT_SERVICES + SVC].service.owners = NMEMBERS;
	memcpy(&slots[RS_FLEET_SLOT_ROWS + SVC * RS_FLEET_ROWS], owners,
	       sizeof(owners));
	/* Service q and its server IDs, as the daemon builds them. */
	fleet_seed_q = rs_fleet_seed("q", 0);
	if (rs_fleet_buckets(members, NMEMBERS, "q", fleet_seed_q, owners_q) !=
	    NMEMBERS)
		return -1;
	slots[RS_FLEET_SLOT_SERVICES + SVC_Q].service.seed = fleet_seed_q;
	slots[RS_FLEET_SLOT_SERVICES + SVC_Q].service.owners = NMEMBERS;
	memcpy(&slots[RS_FLEET_SLOT_ROWS + SVC_Q * RS_FLEET_ROWS], owners_q,
	       sizeof(owners_q));
	{
		struct rs_fleet_cid_owner o[8];
		size_t n = rs_fleet_cid_owners(members, NMEMBERS, "q", 2, o, 8);

		if (n != 4 || rs_fleet_cids_place(slots + RS_FLEET_SLOT_CIDS,
						  SVC_Q, o, n))
			return -1;
	}
	/*
	 * With BTF, as the daemon creates it (dp_inner_map_btf): 6.1 refuses
	 * an inner map whose BTF-derived layout differs from the template's
	 * (a map without BTF has none), with EINVAL at the outer update.
	 */
	btf = bpf_object__btf(skel->obj);
	key_id = btf__find_by_name_kind(btf, "__u32", BTF_KIND_TYPEDEF);
	val_id = btf__find_by_name_kind(btf, "rs_fleet_slot", BTF_KIND_STRUCT);
	if (key_id > 0 && val_id > 0) {
		opts.btf_fd = btf__fd(btf);
		opts.btf_key_type_id = key_id;
		opts.btf_value_type_id = val_id;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fleet_test", 4,
			    sizeof(slots[0]), RS_FLEET_MAP_SLOTS, &opts);
	if (fd < 0)
		return -1;
	for (__u32 i = 0; i < RS_FLEET_MAP_SLOTS; i++)
		keys[i] = i;
	err = bpf_map_update_batch(fd, keys, slots, &keys_n, NULL) ||
	      bpf_map_update_elem(outer, &outer_key, &fd, BPF_ANY);
	close(fd);
	return err || sip_refresh() ? -1 : 0;
}

static int setup(void)
{
	struct rs_service s = {.id = SVC,
			       .enabled = 1,
			       .protocol = IPPROTO_TCP,
			       .prefix4 = 32,
			       .prefix6 = 64};

	skel = tc_fixture_load();
	if (!skel)
		return -1;
	snprintf(s.name, sizeof(s.name), "web");
	if (tc_set_service(skel, &s) ||
	    tc_add_bind_proto(skel, IPPROTO_TCP, AF_INET, "198.18.0.10", 32, 80,
			      SVC) ||
	    tc_add_bind_proto(skel, IPPROTO_TCP, AF_INET6, vip6, 128, 80, SVC))
		return -1;
	s.id = SVC_Q;
	s.protocol = IPPROTO_UDP;
	s.cookie = RS_COOKIE_QUIC;
	s.quic_server_id_len = 2;
	s.quic_cid_len = 8;
	s.quic_config_id = 0;
	snprintf(s.name, sizeof(s.name), "q");
	if (tc_set_service(skel, &s) ||
	    tc_add_bind_proto(skel, IPPROTO_UDP, AF_INET, "198.18.0.10", 32,
			      443, SVC_Q))
		return -1;
	return install_table();
}

static void teardown(void)
{
	steer_tc_bpf__destroy(skel);
}

/* 300 clients' SYNs: forwarded exactly to the replica's owner, or kept. */
static void test_owner_agrees_with_replica(void)
{
	uint8_t f[FRAME_LEN];
	int per_owner[NMEMBERS] = {0};
	struct rs_fleet_stats before = stats(), after;
	uint32_t vip = ip4("198.18.0.10"), fwd = 0;
	struct run r;

	for (uint32_t c = 0; c < 300; c++) {
		uint32_t src = htonl(0xc6120100u + c);
		size_t n = eth(f);
		int want = replica_owner(src);

		n += tcp_packet(f + n, src, vip, (uint16_t)(40000 + c), 80,
				0x02);
		CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
		CU_ASSERT(want >= 0);
		if (want < 0)
			continue;
		per_owner[want]++;
		if (want == 0) {
			/* Ours: untouched, on to sk_lookup. */
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
			CU_ASSERT_EQUAL(r.out_len, n);
			CU_ASSERT_EQUAL(memcmp(r.out, f, n), 0);
			continue;
		}
		fwd++;
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
		CU_ASSERT_EQUAL_FATAL(r.out_len, n + RS_FLEET_ENCAP_LEN);
		/* Outer IPv4: us -> the owner, UDP to the fleet port. */
		CU_ASSERT_EQUAL(r.out[14], 0x45);
		CU_ASSERT_EQUAL(r.out[14 + 9], IPPROTO_UDP);
		CU_ASSERT_EQUAL(csum16(r.out + 14, 20), 0);
		CU_ASSERT_EQUAL(memcmp(r.out + 14 + 12, &members[0].addr, 4),
				0);
		CU_ASSERT_EQUAL(memcmp(r.out + 14 + 16, &members[want].addr, 4),
				0);
		CU_ASSERT_EQUAL(r.out[14 + 20 + 2] << 8 | r.out[14 + 20 + 3],
				RS_FLEET_DEFAULT_PORT);
		CU_ASSERT_EQUAL(memcmp(r.out + 14 + 28, "RSF1", 4), 0);
		CU_ASSERT_EQUAL(r.out[14 + 28 + 5], 1); /* hops */
		check_tag(r.out + 14, AF_INET, r.out_len - 14);
		/* The client's packet behind it, unchanged. */
		CU_ASSERT_EQUAL(
			memcmp(r.out + 14 + RS_FLEET_ENCAP_LEN, f + 14, n - 14),
			0);
	}
	for (int m = 0; m < NMEMBERS; m++)
		CU_ASSERT(per_owner[m] > 50);
	after = stats();
	CU_ASSERT_EQUAL(after.forwarded - before.forwarded, fwd);
	CU_ASSERT_EQUAL(after.errors, before.errors);
}

/*
 * A client's packet as the entry host reads it, in place: a SYN with IPv4
 * options (IHL 6 to 15) goes to its owner whole, as one without; a frame
 * cut anywhere inside the bytes the parse reads (the IP header, the ports,
 * TCP's flags) is left alone, unchanged, never forwarded.
 */
static void test_client_headers_in_place(void)
{
	uint32_t vip = ip4("198.18.0.10"), src = 0;
	uint8_t f[FRAME_LEN], ip[100];
	struct run r;

	for (uint32_t c = 0; c < 300 && !src; c++)
		if (replica_owner(htonl(0xc6120100u + c)) > 0)
			src = htonl(0xc6120100u + c);
	CU_ASSERT_FATAL(src != 0);
	for (size_t ihl = 5; ihl <= 15; ihl++) {
		size_t olen = (ihl - 5) * 4, n = eth(f), len;
		uint16_t c;

		len = tcp_packet(ip, src, vip, 40000, 80, 0x02);
		memmove(ip + 20 + olen, ip + 20, len - 20);
		memset(ip + 20, 1, olen); /* NOPs */
		len += olen;
		ip[0] = (uint8_t)(0x40 | ihl);
		ip[3] = (uint8_t)len;
		ip[10] = ip[11] = 0;
		c = csum16(ip, 20 + olen);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
		memcpy(f + n, ip, len);
		n += len;
		CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
		CU_ASSERT_EQUAL_FATAL(r.out_len, n + RS_FLEET_ENCAP_LEN);
		CU_ASSERT_EQUAL(
			memcmp(r.out + 14 + RS_FLEET_ENCAP_LEN, f + 14, n - 14),
			0);
		/*
		 * From the fixed IP header on (BPF_PROG_TEST_RUN takes no
		 * shorter IPv4 frame): cut inside the options, the ports or
		 * before TCP's flags.
		 */
		for (size_t cut = 14 + 20; cut < 14 + 20 + olen + 14; cut++) {
			CU_ASSERT_EQUAL_FATAL(run(f, cut, &r), 0);
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
			CU_ASSERT_EQUAL(r.out_len, cut);
			CU_ASSERT_EQUAL(memcmp(r.out, f, cut), 0);
		}
	}
}

/* A member's encapsulated SYN: outer headers off, on to sk_lookup. */
static void test_decap(void)
{
	uint8_t f[FRAME_LEN], inner[64];
	struct rs_fleet_stats before = stats(), after;
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	size_t n = encap_frame(f, members[1].addr, 1, inner, in);
	struct run r;

	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL_FATAL(r.out_len, 14 + in);
	CU_ASSERT_EQUAL(memcmp(r.out + 14, inner, in), 0);
	after = stats();
	CU_ASSERT_EQUAL(after.received - before.received, 1);
	CU_ASSERT_EQUAL(after.forged, before.forged);
}

/* Dropped and counted: never on to the stack, never forwarded. */
static void expect_drop(const uint8_t *f, size_t n, const char *what,
			bool hop_limit)
{
	struct rs_fleet_stats before = stats(), after;
	struct run r;

	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	after = stats();
	if (r.verdict != TC_ACT_SHOT)
		fprintf(stderr, "\n%s: verdict %d\n", what, r.verdict);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_SHOT);
	CU_ASSERT_EQUAL(after.received, before.received);
	if (hop_limit) {
		CU_ASSERT_EQUAL(after.hop_limit - before.hop_limit, 1);
	} else {
		CU_ASSERT_EQUAL(after.forged - before.forged, 1);
	}
}

static void test_forged_and_hop_limit(void)
{
	uint8_t f[FRAME_LEN], inner[64];
	uint32_t vip = ip4("198.18.0.10");
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), vip, 1234, 80, 0x02);
	size_t n;

	n = encap_frame(f, ip4("198.18.99.1"), 1, inner, in);
	expect_drop(f, n, "not a member", false);
	n = encap_frame(f, members[1].addr, 3, inner, in);
	expect_drop(f, n, "3 hops", true);
	n = encap_frame(f, members[1].addr, 0, inner, in);
	expect_drop(f, n, "0 hops", true);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	f[14 + 28] = 'X';
	expect_drop(f, n, "bad magic", false);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	f[14 + 28 + 4] = 1; /* the wire before tags */
	expect_drop(f, n, "other version", false);
	/* An inner packet for no service here. */
	in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.99"), 1234, 80,
			0x02);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_drop(f, n, "inner for no service", false);
	/* An inner packet that is not IPv4 TCP/UDP. */
	in = tcp_packet(inner, ip4("198.18.1.7"), vip, 1234, 80, 0x02);
	inner[9] = IPPROTO_ICMP;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_drop(f, n, "inner ICMP", false);
}

static struct trace_capture cap;

static int addr4_is(const __u8 *a, uint32_t v4)
{
	return !memcmp(a, &v4, 4);
}

/*
 * The fleet step's trace events (issue 24): a SYN forwarded names the
 * member it went to; one kept here makes none; a member's packet taken in
 * is received, with the client's 4-tuple from behind the outer headers;
 * forged, over-hop-limit and (signed) unauthenticated packets are dropped
 * with their reason and the sender's address; a hook filter without tc
 * lets none through.
 */
static void test_trace_events(void)
{
	uint8_t f[FRAME_LEN], inner[64];
	struct rs_trace_ctl t = trace_capture_all();
	const struct rs_trace_event *e = cap.ev;
	uint32_t vip = ip4("198.18.0.10"), src = 0, ours = 0;
	uint32_t client = ip4("198.18.1.7"), forger = ip4("198.18.99.1");
	int want = -1;
	size_t n, in;
	struct run r;

	CU_ASSERT_EQUAL_FATAL(trace_capture_open(&cap, skel->obj), 0);
	CU_ASSERT_EQUAL_FATAL(trace_capture_set(&cap, &t), 0);
	for (uint32_t c = 0; c < 300 && (want <= 0 || !ours); c++) {
		uint32_t a = htonl(0xc6120100u + c);
		int o = replica_owner(a);

		if (o > 0 && want <= 0) {
			src = a;
			want = o;
		} else if (o == 0 && !ours) {
			ours = a;
		}
	}
	CU_ASSERT_FATAL(want > 0 && ours);
	n = eth(f);
	n += tcp_packet(f + n, src, vip, 41000, 80, 0x02);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 1);
	CU_ASSERT_EQUAL(e[0].hook, RS_TRACE_HOOK_TC);
	CU_ASSERT_EQUAL(e[0].reason, RS_TRACE_FLEET_FORWARD);
	CU_ASSERT_EQUAL(e[0].member, (uint32_t)want);
	CU_ASSERT_EQUAL(e[0].service, SVC);
	CU_ASSERT_EQUAL(e[0].backend, RS_NONE);
	CU_ASSERT_EQUAL(e[0].family, AF_INET);
	CU_ASSERT_EQUAL(e[0].protocol, IPPROTO_TCP);
	CU_ASSERT(addr4_is(e[0].client, src));
	CU_ASSERT_EQUAL(e[0].client_port, 41000);
	CU_ASSERT(addr4_is(e[0].local, vip));
	CU_ASSERT_EQUAL(e[0].local_port, 80);
	CU_ASSERT_EQUAL(e[0].verdict, 1);

	n = eth(f);
	n += tcp_packet(f + n, ours, vip, 41000, 80, 0x02);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(trace_capture_poll(&cap), 1);

	in = tcp_packet(inner, client, vip, 1234, 80, 0x02);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 2);
	CU_ASSERT_EQUAL(e[1].reason, RS_TRACE_FLEET_RECEIVED);
	CU_ASSERT_EQUAL(e[1].service, SVC);
	CU_ASSERT(addr4_is(e[1].client, client));
	CU_ASSERT_EQUAL(e[1].client_port, 1234);
	CU_ASSERT(addr4_is(e[1].local, vip));
	CU_ASSERT_EQUAL(e[1].verdict, 1);

	n = encap_frame(f, forger, 1, inner, in);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	n = encap_frame(f, members[1].addr, 3, inner, in);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 4);
	CU_ASSERT_EQUAL(e[2].reason, RS_TRACE_FLEET_FORGED);
	CU_ASSERT_EQUAL(e[2].verdict, 0);
	CU_ASSERT_EQUAL(e[2].service, RS_NONE);
	CU_ASSERT_EQUAL(e[2].protocol, IPPROTO_UDP);
	CU_ASSERT(addr4_is(e[2].client, forger));
	CU_ASSERT_EQUAL(e[2].local_port, RS_FLEET_DEFAULT_PORT);
	CU_ASSERT_EQUAL(e[3].reason, RS_TRACE_FLEET_HOP_LIMIT);
	CU_ASSERT_EQUAL(e[3].verdict, 0);
	CU_ASSERT(addr4_is(e[3].client, members[1].addr));
	if (signer) {
		n = encap_frame(f, members[1].addr, 1, inner, in);
		f[14 + 28 + 8] ^= 1; /* the tag */
		CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_SHOT);
		CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 5);
		CU_ASSERT_EQUAL(e[4].reason, RS_TRACE_FLEET_UNAUTH);
	}

	t.hook_mask = 1u << RS_TRACE_HOOK_LOOKUP | 1u << RS_TRACE_HOOK_SOCKOPS;
	CU_ASSERT_EQUAL_FATAL(trace_capture_set(&cap, &t), 0);
	n = encap_frame(f, forger, 1, inner, in);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(trace_capture_poll(&cap), 0);
	CU_ASSERT_EQUAL(trace_capture_off(&cap), 0);
	trace_capture_close(&cap);
}

/*
 * Every truncation of a member's encapsulated packet @f (@n bytes) from
 * @min on (the kernel runs nothing shorter than Ethernet and the outer IP
 * header), and every lie by up to 8 in its outer length field (at byte
 * @len_off, truly @len): dropped as forged (or, cut inside the outer
 * headers, not recognised as ours and left alone unchanged), never taken
 * in.
 */
static void check_truncations(const uint8_t *f, size_t n, size_t min,
			      size_t len_off, uint16_t len)
{
	struct rs_fleet_stats before = stats(), after;
	struct run r;

	for (size_t cut = min; cut < n; cut++) {
		CU_ASSERT_EQUAL_FATAL(run(f, cut, &r), 0);
		CU_ASSERT(r.verdict == TC_ACT_SHOT ||
			  r.verdict == TC_ACT_UNSPEC);
		if (r.verdict == TC_ACT_UNSPEC) {
			CU_ASSERT_EQUAL(r.out_len, cut);
			CU_ASSERT_EQUAL(memcmp(r.out, f, cut), 0);
		}
	}
	for (int d = -8; d <= 8; d++) {
		uint8_t g[FRAME_LEN];
		uint16_t lie = (uint16_t)(len + d);

		if (!d)
			continue;
		memcpy(g, f, n);
		g[len_off] = (uint8_t)(lie >> 8);
		g[len_off + 1] = (uint8_t)lie;
		CU_ASSERT_EQUAL_FATAL(run(g, n, &r), 0);
		CU_ASSERT(r.verdict == TC_ACT_SHOT ||
			  r.verdict == TC_ACT_UNSPEC);
	}
	after = stats();
	CU_ASSERT_EQUAL(after.received, before.received);
}

static void test_truncated(void)
{
	uint8_t f[FRAME_LEN], inner[64];
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	size_t n = encap_frame(f, members[1].addr, 1, inner, in);

	/* IPv4 total length: the whole packet. */
	check_truncations(f, n, 14 + 20, 14 + 2, (uint16_t)(n - 14));
}

/* Client c's IPv6 address: one per /64, the key's prefix. */
static void client6(uint32_t c, char *buf, size_t n)
{
	snprintf(buf, n, "2001:db8:100:%x::7", c);
}

/*
 * The outer IPv6 headers of a forwarded packet: @from -> @to, UDP to the
 * fleet port with checksum 0 (RFC 6935), our header with @hops, the
 * client's packet @inner (@n bytes) behind it unchanged.
 */
static void check_outer6(const struct run *r, const char *from, const char *to,
			 uint8_t hops, const uint8_t *inner, size_t n)
{
	uint8_t a[16];

	CU_ASSERT_EQUAL(r->verdict, TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(r->out_len, 14 + RS_FLEET_ENCAP6_LEN + n);
	CU_ASSERT_EQUAL(r->out[12] << 8 | r->out[13], 0x86dd);
	CU_ASSERT_EQUAL(r->out[14] >> 4, 6);
	CU_ASSERT_EQUAL(r->out[14 + 4] << 8 | r->out[14 + 5], n + 8 + ENC);
	CU_ASSERT_EQUAL(r->out[14 + 6], IPPROTO_UDP);
	CU_ASSERT_EQUAL(r->out[14 + 7], 64);
	ip6(from, a);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + 8, a, 16), 0);
	ip6(to, a);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + 24, a, 16), 0);
	CU_ASSERT_EQUAL(r->out[14 + 40 + 2] << 8 | r->out[14 + 40 + 3],
			RS_FLEET_DEFAULT_PORT);
	CU_ASSERT_EQUAL(r->out[14 + 40 + 4] << 8 | r->out[14 + 40 + 5],
			n + 8 + ENC);
	CU_ASSERT_EQUAL(r->out[14 + 40 + 6] | r->out[14 + 40 + 7], 0);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + 48, "RSF1", 4), 0);
	/* The version: check_tag(). */
	CU_ASSERT_EQUAL(r->out[14 + 48 + 5], hops);
	check_tag(r->out + 14, AF_INET6, r->out_len - 14);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + RS_FLEET_ENCAP6_LEN, inner, n), 0);
}

/* 300 IPv6 clients' SYNs: to the replica's owner in outer IPv6, or kept. */
static void test_owner_agrees_with_replica6(void)
{
	uint8_t f[FRAME_LEN];
	int per_owner[NMEMBERS] = {0};
	struct rs_fleet_stats before = stats(), after;
	uint32_t fwd = 0;
	char src[64];
	struct run r;

	for (uint32_t c = 0; c < 300; c++) {
		size_t n = eth6(f);
		int want;

		client6(c, src, sizeof(src));
		want = replica_owner6(src);
		n += tcp6_packet(f + n, src, vip6, (uint16_t)(40000 + c), 80,
				 0x02);
		CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
		CU_ASSERT(want >= 0);
		if (want < 0)
			continue;
		per_owner[want]++;
		if (want == 0) {
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
			CU_ASSERT_EQUAL(r.out_len, n);
			CU_ASSERT_EQUAL(memcmp(r.out, f, n), 0);
			continue;
		}
		fwd++;
		check_outer6(&r, addrs6[0], addrs6[want], 1, f + 14, n - 14);
	}
	for (int m = 0; m < NMEMBERS; m++)
		CU_ASSERT(per_owner[m] > 50);
	after = stats();
	CU_ASSERT_EQUAL(after.forwarded - before.forwarded, fwd);
	CU_ASSERT_EQUAL(after.errors, before.errors);
	CU_ASSERT_EQUAL(after.no_address6, before.no_address6);
}

/* A member's encapsulated IPv6 SYN: outer IPv6 headers off. */
static void test_decap6(void)
{
	uint8_t f[FRAME_LEN], inner[80];
	struct rs_fleet_stats before = stats(), after;
	size_t in = tcp6_packet(inner, "2001:db8:1::7", vip6, 1234, 80, 0x02);
	size_t n = encap6_frame(f, addrs6[1], 1, inner, in);
	struct run r;

	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL_FATAL(r.out_len, 14 + in);
	CU_ASSERT_EQUAL(r.out[12] << 8 | r.out[13], 0x86dd);
	CU_ASSERT_EQUAL(memcmp(r.out + 14, inner, in), 0);
	after = stats();
	CU_ASSERT_EQUAL(after.received - before.received, 1);
	CU_ASSERT_EQUAL(after.forged, before.forged);
}

/*
 * An ACK from host-2 without a connection here: on to the owner by this
 * host's table (host-3) at hop 2, never back to host-2; at hop 2 taken in.
 */
static void test_second_chance6(void)
{
	uint8_t f[FRAME_LEN], inner[80];
	struct rs_fleet_stats before, after;
	char src[64];
	uint32_t c;
	size_t in, n;
	struct run r;

	for (c = 0; c < 1000; c++) {
		client6(c, src, sizeof(src));
		if (replica_owner6(src) == 2)
			break;
	}
	CU_ASSERT_FATAL(c < 1000);
	in = tcp6_packet(inner, src, vip6, 5555, 80, 0x10);
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	before = stats();
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	check_outer6(&r, addrs6[0], addrs6[2], 2, inner, in);
	after = stats();
	CU_ASSERT_EQUAL(after.second_chance - before.second_chance, 1);
	/* Already at hop 2: nowhere left, taken in (stray). */
	n = encap6_frame(f, addrs6[1], 2, inner, in);
	before = stats();
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(r.out_len, 14 + in);
	after = stats();
	CU_ASSERT_EQUAL(after.stray - before.stray, 1);
	CU_ASSERT_EQUAL(after.received - before.received, 1);
}

static void test_forged_and_hop_limit6(void)
{
	uint8_t f[FRAME_LEN], inner[80];
	size_t in = tcp6_packet(inner, "2001:db8:1::7", vip6, 1234, 80, 0x02);
	char mapped[64];
	size_t n;

	n = encap6_frame(f, "2001:db8:99::1", 1, inner, in);
	expect_drop(f, n, "IPv6: not a member", false);
	/* A member's IPv4 address, mapped, is no member's IPv6 address. */
	snprintf(mapped, sizeof(mapped), "::ffff:%s", "198.18.12.2");
	n = encap6_frame(f, mapped, 1, inner, in);
	expect_drop(f, n, "IPv6: mapped IPv4 member", false);
	n = encap6_frame(f, addrs6[1], 3, inner, in);
	expect_drop(f, n, "IPv6: 3 hops", true);
	n = encap6_frame(f, addrs6[1], 0, inner, in);
	expect_drop(f, n, "IPv6: 0 hops", true);
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	f[14 + 48] = 'X';
	expect_drop(f, n, "IPv6: bad magic", false);
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	f[14 + 48 + 4] = 1;
	expect_drop(f, n, "IPv6: other version", false);
	in = tcp6_packet(inner, "2001:db8:1::7", "2001:db8::99", 1234, 80,
			 0x02);
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	expect_drop(f, n, "IPv6: inner for no service", false);
	in = tcp6_packet(inner, "2001:db8:1::7", vip6, 1234, 80, 0x02);
	inner[6] = 58; /* ICMPv6 */
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	expect_drop(f, n, "IPv6: inner ICMPv6", false);
	/* IPv4 in IPv6: families do not mix. */
	in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"), 1234, 80,
			0x02);
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	expect_drop(f, n, "IPv4 in IPv6", false);
}

static void test_truncated6(void)
{
	uint8_t f[FRAME_LEN], inner[80];
	size_t in = tcp6_packet(inner, "2001:db8:1::7", vip6, 1234, 80, 0x02);
	size_t n = encap6_frame(f, addrs6[1], 1, inner, in);

	/* IPv6 payload length: all behind the fixed header. */
	check_truncations(f, n, 14 + 40, 14 + 4, (uint16_t)(n - 14 - 40));
}

/* An fd of the fleet table in force (its inner map), or -1. */
static int table_fd(void)
{
	__u32 outer_key = 0, id;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.rs_fleet), &outer_key,
				&id))
		return -1;
	return bpf_map_get_fd_by_id(id);
}

/* Member @m's IPv6 address in the table in force (NULL: none). */
static int set_table_addr6(int m, const char *addr)
{
	__u32 slot = RS_FLEET_SLOT_ADDR6 + 1 + (__u32)m;
	struct rs_fleet_slot s = {0};
	int fd = table_fd(), err;

	if (fd < 0)
		return -1;
	if (addr)
		ip6(addr, (uint8_t *)&s.addr6.addr);
	err = bpf_map_update_elem(fd, &slot, &s, BPF_ANY);
	close(fd);
	return err || sip_refresh();
}

/*
 * host-3 publishes no IPv6 address: IPv6 clients it owns stay here and
 * are counted; the others are forwarded as before, IPv4 not touched.
 */
static void test_owner_without_address6(void)
{
	uint8_t f[FRAME_LEN];
	struct rs_fleet_stats before, after;
	uint32_t kept = 0, fwd = 0;
	char src[64];
	struct run r;

	CU_ASSERT_FATAL(set_table_addr6(2, NULL) == 0);
	before = stats();
	for (uint32_t c = 0; c < 300; c++) {
		size_t n = eth6(f);
		int want;

		client6(c, src, sizeof(src));
		want = replica_owner6(src);
		n += tcp6_packet(f + n, src, vip6, (uint16_t)(40000 + c), 80,
				 0x02);
		CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
		if (want == 2) {
			kept++;
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
			CU_ASSERT_EQUAL(r.out_len, n);
		} else if (want == 1) {
			fwd++;
			check_outer6(&r, addrs6[0], addrs6[1], 1, f + 14,
				     n - 14);
		}
	}
	after = stats();
	CU_ASSERT(kept > 50);
	CU_ASSERT_EQUAL(after.no_address6 - before.no_address6, kept);
	CU_ASSERT_EQUAL(after.forwarded - before.forwarded, fwd);
	CU_ASSERT_FATAL(set_table_addr6(2, addrs6[2]) == 0);
}

/*
 * A 4-tuple whose earlier SYN was forwarded (flow memory: host-3), now
 * steered here because host-3 lost its address6: its ACKs stay here too,
 * not sent after the earlier connection.
 */
static void test_no_address6_forgets_the_flow(void)
{
	uint8_t f[FRAME_LEN];
	char src[64];
	uint32_t c;
	size_t n;
	struct run r;

	for (c = 0; c < 1000; c++) {
		client6(c, src, sizeof(src));
		if (replica_owner6(src) == 2)
			break;
	}
	CU_ASSERT_FATAL(c < 1000);
	n = eth6(f);
	n += tcp6_packet(f + n, src, vip6, 47000, 80, 0x02);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
	CU_ASSERT_FATAL(set_table_addr6(2, NULL) == 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	f[14 + 53] = 0x10; /* the ACK of that SYN */
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL(r.out_len, n);
	CU_ASSERT_FATAL(set_table_addr6(2, addrs6[2]) == 0);
}

/* An 8-byte DCID with config 0 and server ID @sid (or octet 0 @first). */
static void dcid_of(uint8_t *dcid, uint8_t first, uint16_t sid)
{
	dcid[0] = first;
	dcid[1] = (uint8_t)(sid >> 8);
	dcid[2] = (uint8_t)sid;
	for (int i = 3; i < 8; i++)
		dcid[i] = (uint8_t)(0x30 + i);
}

/* A QUIC datagram from client @src:@sport to service q, into @f. */
static void quic_frame(struct frame *f, uint32_t src, uint16_t sport,
		       const uint8_t *payload, size_t plen)
{
	uint32_t vip = ip4("198.18.0.10");
	struct udp_headers h = {.family = AF_INET,
				.saddr = (const uint8_t *)&src,
				.daddr = (const uint8_t *)&vip,
				.sport = sport,
				.dport = 443};

	frame_udp_bare(f, &h, payload, plen);
}

/*
 * What happened to frame @f: -1 taken in unchanged, else the member index
 * it was encapsulated to (outer bytes checked as for TCP, hops 1, the
 * client's datagram unchanged behind).
 */
static int forwarded_to(const struct frame *f, const struct run *r)
{
	if (r->verdict == TC_ACT_UNSPEC) {
		CU_ASSERT_EQUAL(r->out_len, f->len);
		CU_ASSERT_EQUAL(memcmp(r->out, f->b, f->len), 0);
		return -1;
	}
	CU_ASSERT_EQUAL_FATAL(r->verdict, TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(r->out_len, f->len + RS_FLEET_ENCAP_LEN);
	CU_ASSERT_EQUAL(r->out[14], 0x45);
	CU_ASSERT_EQUAL(r->out[14 + 9], IPPROTO_UDP);
	CU_ASSERT_EQUAL(csum16(r->out + 14, 20), 0);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + 12, &members[0].addr, 4), 0);
	CU_ASSERT_EQUAL(r->out[14 + 20 + 2] << 8 | r->out[14 + 20 + 3],
			RS_FLEET_DEFAULT_PORT);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + 28, "RSF1", 4), 0);
	CU_ASSERT_EQUAL(r->out[14 + 28 + 5], 1);
	check_tag(r->out + 14, AF_INET, r->out_len - 14);
	CU_ASSERT_EQUAL(memcmp(r->out + 14 + RS_FLEET_ENCAP_LEN, f->b + 14,
			       f->len - 14),
			0);
	for (int m = 0; m < NMEMBERS; m++)
		if (!memcmp(r->out + 14 + 16, &members[m].addr, 4))
			return m;
	CU_FAIL("encapsulated to no member");
	return -2;
}

/*
 * 200 clients (addresses and ports: a migration spreads them over every
 * table owner) send a packet naming server ID @sid: each goes to member
 * @want (-1: this host), or with @want -2 by the fleet table.
 */
static void quic_expect(int handshake, uint8_t first, uint16_t sid, int want,
			uint64_t cookie_forwards)
{
	struct rs_fleet_stats before = stats(), after;
	uint8_t dcid[8], payload[256];
	int by_table_other = 0;
	struct frame f;
	struct run r;

	dcid_of(dcid, first, sid);
	for (uint32_t c = 0; c < 200; c++) {
		uint32_t src = htonl(0xc6120200u + c);
		size_t plen = handshake ? quic_long(payload, QUIC_V1,
						    V1_HANDSHAKE, dcid, 8)
					: quic_short(payload, dcid, 8);
		int owner = replica_owner_of(src, fleet_seed_q, owners_q), got;

		if (handshake < 0) /* an Initial: the client's own DCID */
			plen = quic_long(payload, QUIC_V1, V1_INITIAL, dcid, 8);
		quic_frame(&f, src, (uint16_t)(20000 + 7 * c), payload, plen);
		CU_ASSERT_EQUAL_FATAL(run(f.b, f.len, &r), 0);
		got = forwarded_to(&f, &r);
		if (want == -2) {
			CU_ASSERT_EQUAL(got, owner == 0 ? -1 : owner);
			by_table_other += owner > 0;
		} else {
			CU_ASSERT_EQUAL(got, want);
		}
	}
	after = stats();
	CU_ASSERT_EQUAL(after.cookie_forwarded - before.cookie_forwarded,
			cookie_forwards);
	CU_ASSERT_EQUAL(after.forwarded - before.forwarded,
			cookie_forwards + (uint64_t)by_table_other);
	CU_ASSERT_EQUAL(after.errors, before.errors);
}

static void test_quic_other_member(void)
{
	quic_expect(0, 0x00, 0x0201, 1, 200); /* 1-RTT to host-2's ID */
	quic_expect(1, 0x00, 0x0301, 2, 200); /* Handshake to host-3's */
}

/*
 * More trace events: a QUIC datagram whose server ID is host-2's names
 * member 1 (fleet_quic.bpf.h); an IPv6 packet without a connection here,
 * sent on by its second chance, the inner client's 4-tuple.
 */
static void test_trace_quic_and_second_chance(void)
{
	struct rs_trace_ctl t = trace_capture_all();
	const struct rs_trace_event *e = cap.ev;
	uint8_t dcid[8], payload[64], f6[FRAME_LEN], inner[80], want[16];
	char src[64];
	struct frame f;
	struct run r;
	size_t in, n;
	uint32_t c;

	CU_ASSERT_EQUAL_FATAL(trace_capture_open(&cap, skel->obj), 0);
	CU_ASSERT_EQUAL_FATAL(trace_capture_set(&cap, &t), 0);
	dcid_of(dcid, 0x00, 0x0201);
	quic_frame(&f, htonl(0xc6120305u), 20001, payload,
		   quic_short(payload, dcid, 8));
	CU_ASSERT_EQUAL_FATAL(run(f.b, f.len, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 1);
	CU_ASSERT_EQUAL(e[0].reason, RS_TRACE_FLEET_FORWARD);
	CU_ASSERT_EQUAL(e[0].member, 1);
	CU_ASSERT_EQUAL(e[0].service, SVC_Q);
	CU_ASSERT_EQUAL(e[0].protocol, IPPROTO_UDP);
	CU_ASSERT_EQUAL(e[0].client_port, 20001);
	CU_ASSERT_EQUAL(e[0].local_port, 443);

	for (c = 0; c < 1000; c++) {
		client6(c, src, sizeof(src));
		if (replica_owner6(src) == 2)
			break;
	}
	CU_ASSERT_FATAL(c < 1000);
	in = tcp6_packet(inner, src, vip6, 5555, 80, 0x10);
	n = encap6_frame(f6, addrs6[1], 1, inner, in);
	CU_ASSERT_EQUAL_FATAL(run(f6, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL_FATAL(trace_capture_poll(&cap), 2);
	CU_ASSERT_EQUAL(e[1].reason, RS_TRACE_FLEET_SECOND_CHANCE);
	CU_ASSERT_EQUAL(e[1].service, SVC);
	CU_ASSERT_EQUAL(e[1].family, AF_INET6);
	CU_ASSERT_EQUAL(e[1].protocol, IPPROTO_TCP);
	ip6(src, want);
	CU_ASSERT_EQUAL(memcmp(e[1].client, want, 16), 0);
	CU_ASSERT_EQUAL(e[1].client_port, 5555);
	ip6(vip6, want);
	CU_ASSERT_EQUAL(memcmp(e[1].local, want, 16), 0);
	CU_ASSERT_EQUAL(trace_capture_off(&cap), 0);
	trace_capture_close(&cap);
}

static void test_quic_local_unknown_conflict(void)
{
	/* This host's ID: never forwarded, the cookie step here takes it. */
	quic_expect(0, 0x00, 0x0101, -1, 0);
	quic_expect(1, 0x00, 0x0101, -1, 0);
	/* Nobody's, or two members': by the table. */
	quic_expect(0, 0x00, 0x0999, -2, 0);
	quic_expect(0, 0x00, 0x0a0a, -2, 0);
	/* Another config rotation, or unroutable (0b111): by the table. */
	quic_expect(0, 0x20, 0x0201, -2, 0);
	quic_expect(0, 0xe0, 0x0201, -2, 0);
	/* An Initial's DCID is the client's, whatever it looks like. */
	quic_expect(-1, 0x00, 0x0201, -2, 0);
}

/*
 * Truncated and lying datagrams naming host-2's ID are never forwarded by
 * cookie (by the table at most), nor is a member's encapsulated datagram
 * forwarded again: it is taken in here.
 */
static void test_quic_malformed_and_decap(void)
{
	struct rs_fleet_stats before = stats(), after;
	uint8_t dcid[8], payload[64], inner[128];
	uint32_t src = htonl(0xc6120301u);
	int owner = replica_owner_of(src, fleet_seed_q, owners_q);
	size_t plen, n;
	struct frame f;
	struct run r;

	dcid_of(dcid, 0x00, 0x0201);
	plen = quic_short(payload, dcid, 8);
	quic_frame(&f, src, 4433, payload, plen);
	for (size_t cut = 14 + 20 + 4; cut < f.len; cut++) {
		CU_ASSERT_EQUAL_FATAL(run(f.b, cut, &r), 0);
		if (r.verdict == TC_ACT_UNSPEC)
			continue;
		/* By the table, if anywhere. */
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
		CU_ASSERT_EQUAL(memcmp(r.out + 14 + 16,
				       &members[owner < 0 ? 0 : owner].addr, 4),
				0);
	}
	/*
	 * UDP lengths that end before the DCID does or run past the IP
	 * packet, IP lengths that lie about the frame. (A UDP length
	 * shorter than the IP payload that still holds the DCID is a real
	 * datagram: the rest is padding.)
	 */
	for (int d = -12; d <= 12; d++) {
		struct frame g = f;
		uint16_t udp = (uint16_t)(d < 0 ? 8 + 8 + d
						: get16(f.b + f.l4 + 4) + d);

		if (!d)
			continue;
		put16(g.b + g.l4 + 4, udp);
		CU_ASSERT_EQUAL_FATAL(run(g.b, g.len, &r), 0);
		g = f;
		put16(g.b + 14 + 2, (uint16_t)(get16(f.b + 16) + d));
		CU_ASSERT_EQUAL_FATAL(run(g.b, g.len, &r), 0);
	}
	/* A short header cut inside its DCID. */
	quic_frame(&f, src, 4433, payload, 5);
	CU_ASSERT_EQUAL_FATAL(run(f.b, f.len, &r), 0);
	after = stats();
	CU_ASSERT_EQUAL(after.cookie_forwarded, before.cookie_forwarded);

	/* From host-3, a datagram naming host-2's ID: taken in here. */
	before = stats();
	quic_frame(&f, src, 4433, payload, plen);
	memcpy(inner, f.b + 14, f.len - 14);
	n = encap_frame(f.b, members[2].addr, 1, inner, f.len - 14);
	CU_ASSERT_EQUAL_FATAL(run(f.b, n, &r), 0);
	CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	CU_ASSERT_EQUAL_FATAL(r.out_len, n - RS_FLEET_ENCAP_LEN);
	CU_ASSERT_EQUAL(memcmp(r.out + 14, inner, n - RS_FLEET_ENCAP_LEN - 14),
			0);
	after = stats();
	CU_ASSERT_EQUAL(after.received - before.received, 1);
	CU_ASSERT_EQUAL(after.forwarded, before.forwarded);
}

/* Where frame @f went: the member its outer IPv4 header names, or -1. */
static int outer_member(const struct run *r)
{
	if (r->verdict != TC_ACT_REDIRECT)
		return -1;
	for (int m = 0; m < NMEMBERS; m++)
		if (!memcmp(r->out + 14 + 16, &members[m].addr, 4))
			return m;
	return -2;
}

/*
 * A SYN retransmitted after the table moved its key goes where the first
 * one went (that host may have answered it); not once its entry is older
 * than RS_FLEET_SYN_RETRY_NS, nor when the member it names has another
 * address in the current table.
 */
static void test_syn_retry_follows_first(void)
{
	int fd = bpf_map__fd(skel->maps.rs_fleet_flows);
	uint32_t vip = ip4("198.18.0.10"), src = 0, c;
	struct rs_fleet_flow_key fk;
	struct rs_fleet_flow fl;
	uint8_t f[FRAME_LEN];
	struct timespec now;
	struct run r;
	size_t n;

	for (c = 0; c < 1000; c++) {
		src = htonl(0xc6125000u + c);
		if (replica_owner(src) == 1)
			break;
	}
	CU_ASSERT_FATAL(c < 1000);
	n = eth(f);
	n += tcp_packet(f + n, src, vip, 45000, 80, 0x02);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(outer_member(&r), 1);
	{
		/* Its ACK (another sequence number) follows by flow memory. */
		uint8_t a[FRAME_LEN];
		struct rs_fleet_stats b0 = stats(), b1;
		size_t an = eth(a);

		an += tcp_packet(a + an, src, vip, 45000, 80, 0x10);
		a[14 + 20 + 7] = 1; /* sequence number 1 */
		CU_ASSERT_EQUAL_FATAL(run(a, an, &r), 0);
		CU_ASSERT_EQUAL(outer_member(&r), 1);
		b1 = stats();
		CU_ASSERT_EQUAL(b1.flow_hits - b0.flow_hits, 1);
	}

	/* As if the first SYN had gone to host-3 under an earlier table. */
	memset(&fk, 0, sizeof(fk));
	fk.saddr = (struct rs_fleet_addr){.w = {0, 0, htonl(0xffff), src}};
	fk.daddr = (struct rs_fleet_addr){.w = {0, 0, htonl(0xffff), vip}};
	fk.sport = htons(45000);
	fk.dport = htons(80);
	CU_ASSERT_EQUAL_FATAL(bpf_map_lookup_elem(fd, &fk, &fl), 0);
	CU_ASSERT_EQUAL(fl.member, 1);
	clock_gettime(CLOCK_MONOTONIC, &now);
	fl.owner = (struct rs_fleet_addr){
		.w = {0, 0, htonl(0xffff), members[2].addr}};
	fl.member = 2;
	fl.syn_ns =
		(uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	CU_ASSERT_EQUAL_FATAL(bpf_map_update_elem(fd, &fk, &fl, BPF_ANY), 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(outer_member(&r), 2);

	/* Named with another address than the table's: by the table. */
	fl.member = 1;
	CU_ASSERT_EQUAL_FATAL(bpf_map_update_elem(fd, &fk, &fl, BPF_ANY), 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(outer_member(&r), 1);
	/*
	 * Its member moved to another address than the entry's, and is not
	 * the key's owner: by the table, to the owner's address (not to the
	 * address the entry's member has now).
	 */
	fl.member = 2;
	fl.owner = (struct rs_fleet_addr){
		.w = {0, 0, htonl(0xffff), ip4("198.18.99.99")}};
	CU_ASSERT_EQUAL_FATAL(bpf_map_update_elem(fd, &fk, &fl, BPF_ANY), 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(outer_member(&r), 1);
	fl.owner = (struct rs_fleet_addr){
		.w = {0, 0, htonl(0xffff), members[2].addr}};
	fl.member = 1;

	/* Another sequence number: a new connection of that 4-tuple. */
	fl.isn ^= 1;
	CU_ASSERT_EQUAL_FATAL(bpf_map_update_elem(fd, &fk, &fl, BPF_ANY), 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(outer_member(&r), 1);
	fl.isn ^= 1;

	/* Older than the retry window: a new connection, by the table. */
	fl.owner = (struct rs_fleet_addr){
		.w = {0, 0, htonl(0xffff), members[2].addr}};
	fl.member = 2;
	fl.syn_ns -= RS_FLEET_SYN_RETRY_NS + 1000000000ull;
	CU_ASSERT_EQUAL_FATAL(bpf_map_update_elem(fd, &fk, &fl, BPF_ANY), 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL(outer_member(&r), 1);
}

/* The keys in the table in force: @n of @k (the first signs). */
static int set_table_keys(const struct rs_fleet_auth *k, int n)
{
	int fd = table_fd(), err = 0;

	memset(table_keys, 0, sizeof(table_keys));
	for (int i = 0; i < n; i++)
		table_keys[i] = k[i];
	if (fd < 0)
		return -1;
	for (__u32 i = 0; i < RS_FLEET_AUTH_KEYS && !err; i++) {
		__u32 slot = RS_FLEET_SLOT_KEYS + i;
		struct rs_fleet_slot v = {.auth = table_keys[i]};

		err = bpf_map_update_elem(fd, &slot, &v, BPF_ANY);
	}
	close(fd);
	return err || sip_refresh();
}

/* Fleet keys A, B (as lines of a key file would give them). */
static struct rs_fleet_auth key_a, key_b;

static void derive_keys(void)
{
	uint8_t a[RS_FLEET_KEY_LEN], b[RS_FLEET_KEY_LEN];

	for (int i = 0; i < RS_FLEET_KEY_LEN; i++) {
		a[i] = (uint8_t)(0x11 * i + 1);
		b[i] = (uint8_t)(0x2d * i + 7);
	}
	CU_ASSERT_FATAL(!rs_fleet_auth_derive(a, &key_a));
	CU_ASSERT_FATAL(!rs_fleet_auth_derive(b, &key_b));
	CU_ASSERT_FATAL(key_a.id && key_b.id && key_a.id != key_b.id);
}

/* The second run: a fleet key in the table, every frame signed with it. */
static void test_keys_on(void)
{
	derive_keys();
	CU_ASSERT_EQUAL_FATAL(set_table_keys(&key_a, 1), 0);
	signer = &key_a;
}

/* Taken in (received + 1) or dropped as unauthenticated: @ok says which. */
static void expect_auth(const uint8_t *f, size_t n, const char *what, bool ok)
{
	struct rs_fleet_stats before = stats(), after;
	struct run r;

	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	after = stats();
	if ((r.verdict == TC_ACT_SHOT) == ok)
		fprintf(stderr, "\n%s: verdict %d\n", what, r.verdict);
	CU_ASSERT_EQUAL(after.received - before.received, ok ? 1u : 0u);
	CU_ASSERT_EQUAL(after.unauthenticated - before.unauthenticated,
			ok ? 0u : 1u);
	CU_ASSERT_EQUAL(after.forged, before.forged);
	if (ok) {
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
	} else {
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_SHOT);
	}
}

static void fix_csum4(uint8_t *ip)
{
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = csum16(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

/*
 * fleet_parse()'s refusals, one byte of a client's SYN changed each: what
 * it refuses stays here untouched and uncounted (sk_lookup and the stack
 * decide), though its key's owner is another member, as the unchanged
 * SYN shows by going there. Fragments: only the first carries the ports.
 * Extension headers: not walked, as IPv4 fragments are not steered.
 */
struct parse_case {
	const char *what;
	int family;
	size_t at;	     /* byte of the IP header changed */
	uint8_t mask, value; /* ip[at] = (ip[at] & ~mask) | value */
	bool forwarded;
};

static const struct parse_case parse_cases[] = {
	{"IPv4 SYN", AF_INET, 0, 0, 0, true},
	{"IPv4 without DF", AF_INET, 6, 0xe0, 0, true},
	{"IPv4 more fragments", AF_INET, 6, 0x20, 0x20, false},
	{"IPv4 fragment offset", AF_INET, 7, 0xff, 1, false},
	{"IPv4 header of version 6", AF_INET, 0, 0xf0, 0x60, false},
	{"IPv4 IHL 4", AF_INET, 0, 0x0f, 4, false},
	{"IPv4 ICMP", AF_INET, 9, 0xff, IPPROTO_ICMP, false},
	{"IPv4 SCTP", AF_INET, 9, 0xff, IPPROTO_SCTP, false},
	{"IPv6 SYN", AF_INET6, 0, 0, 0, true},
	{"IPv6 hop-by-hop options", AF_INET6, 6, 0xff, IPPROTO_HOPOPTS, false},
	{"IPv6 routing header", AF_INET6, 6, 0xff, IPPROTO_ROUTING, false},
	{"IPv6 fragment header", AF_INET6, 6, 0xff, IPPROTO_FRAGMENT, false},
	{"IPv6 header of version 4", AF_INET6, 0, 0xf0, 0x40, false},
};

static void test_parse_refusals(void)
{
	uint32_t vip = ip4("198.18.0.10"), src = 0;
	char src6[64] = "";
	uint8_t f[FRAME_LEN];
	struct run r;

	/* A client of each family whose key another member owns. */
	for (uint32_t c = 0; !src && c < 256; c++)
		if (replica_owner(htonl(0xc6120200u + c)) > 0)
			src = htonl(0xc6120200u + c);
	for (uint32_t c = 0; !src6[0] && c < 256; c++) {
		client6(0x200 + c, src6, sizeof(src6));
		if (replica_owner6(src6) <= 0)
			src6[0] = 0;
	}
	CU_ASSERT_FATAL(src && src6[0]);
	for (size_t i = 0; i < ARRAY_SIZE(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		uint16_t sport = (uint16_t)(47000 + i);
		struct rs_fleet_stats before = stats(), after;
		size_t n;
		uint8_t *ip;

		if (c->family == AF_INET) {
			n = eth(f);
			ip = f + n;
			n += tcp_packet(ip, src, vip, sport, 80, 0x02);
		} else {
			n = eth6(f);
			ip = f + n;
			n += tcp6_packet(ip, src6, vip6, sport, 80, 0x02);
		}
		ip[c->at] = (uint8_t)((ip[c->at] & ~c->mask) | c->value);
		if (c->family == AF_INET)
			fix_csum4(ip);
		CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
		after = stats();
		if (c->forwarded) {
			if (r.verdict != TC_ACT_REDIRECT)
				printf("\n  %s: verdict %d, want redirect",
				       c->what, r.verdict);
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_REDIRECT);
			CU_ASSERT_EQUAL(after.forwarded, before.forwarded + 1);
			continue;
		}
		if (r.verdict != TC_ACT_UNSPEC)
			printf("\n  %s: verdict %d, want unspec", c->what,
			       r.verdict);
		CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
		CU_ASSERT_EQUAL(r.out_len, n);
		CU_ASSERT_EQUAL(memcmp(r.out, f, n), 0);
		CU_ASSERT_EQUAL(memcmp(&after, &before, sizeof(after)), 0);
	}
}

/*
 * With key A in the table: a packet signed with A is taken in; unsigned,
 * signed with a key this host does not hold, with a key that claims A's
 * id, altered after signing (inner flags, hop count), or captured on its
 * way to another member and sent here: dropped, counted unauthenticated.
 * In both wire versions (frames of frame_wire).
 */
static void auth_refusals(void)
{
	uint8_t f[FRAME_LEN], inner[80];
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	struct rs_fleet_auth liar;
	uint32_t host3 = members[2].addr;
	size_t n;

	derive_keys();
	CU_ASSERT_EQUAL_FATAL(set_table_keys(&key_a, 1), 0);
	signer = &key_a;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "signed with A", true);
	signer = NULL;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "unsigned", false);
	signer = &key_b;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "signed with B, not held", false);
	liar = key_b;
	liar.id = key_a.id;
	signer = &liar;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "another key under A's id", false);
	signer = &key_a;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	f[14 + RS_FLEET_ENCAP_LEN + 20 + 13] = 0x04; /* SYN -> RST */
	expect_auth(f, n, "inner flags altered", false);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	f[14 + 28 + 5] = 2;
	expect_auth(f, n, "hop count altered", false);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	f[14 + 28 + 8] ^= 0x80;
	expect_auth(f, n, "tag altered", false);
	/* Signed in one version, relabelled as the other. */
	n = encap_frame(f, members[1].addr, 1, inner, in);
	f[14 + 28 + 4] = frame_wire == RS_FLEET_WIRE_MAX ? RS_FLEET_WIRE_VERSION
							 : RS_FLEET_WIRE_MAX;
	expect_auth(f, n, "version byte altered", false);
	/* Signed for host-3, then sent to this host. */
	n = encap_frame(f, members[1].addr, 1, inner, in);
	memcpy(f + 14 + 16, &host3, 4);
	frame_sign(f + 14, AF_INET, f + 14 + 28, inner, in);
	memcpy(f + 14 + 16, &members[0].addr, 4);
	fix_csum4(f + 14);
	expect_auth(f, n, "replayed from host-3's path", false);
	/* Sanity: the same frame signed for this host passes. */
	frame_sign(f + 14, AF_INET, f + 14 + 28, inner, in);
	expect_auth(f, n, "signed for this host", true);

	/* IPv6 in IPv6: the same rules. */
	in = tcp6_packet(inner, "2001:db8:1::7", vip6, 1234, 80, 0x02);
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	expect_auth(f, n, "IPv6: signed with A", true);
	signer = NULL;
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	expect_auth(f, n, "IPv6: unsigned", false);
	signer = &key_b;
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	expect_auth(f, n, "IPv6: signed with B, not held", false);
	signer = &key_a;
	n = encap6_frame(f, addrs6[1], 1, inner, in);
	ip6(addrs6[2], f + 14 + 24);
	frame_sign(f + 14, AF_INET6, f + 14 + 48, inner, in);
	ip6(addrs6[0], f + 14 + 24);
	expect_auth(f, n, "IPv6: replayed from host-3's path", false);
}

static void test_auth_refusals(void)
{
	auth_refusals();
	frame_wire = RS_FLEET_WIRE_MAX;
	auth_refusals();
	frame_wire = RS_FLEET_WIRE_VERSION;
}

/*
 * @n bytes of TCP options (NOPs) appended to the TCP packet at @p of
 * @family (from tcp_packet() or tcp6_packet()), its lengths fixed.
 */
static size_t tcp_with_options(uint8_t *p, int family, size_t len, size_t n)
{
	size_t l4 = family == AF_INET6 ? 40 : 20;

	memset(p + len, 1, n);
	p[l4 + 12] = (uint8_t)((5 + n / 4) << 4);
	if (family == AF_INET6) {
		p[5] = (uint8_t)(len + n - 40);
	} else {
		p[3] = (uint8_t)(len + n);
		fix_csum4(p);
	}
	return len + n;
}

/*
 * The tag covers the inner packet's first 40 (IPv4) or 64 (IPv6; 56 in
 * wire version 3) bytes whichever way the data plane reads them: in place
 * when the inner packet is at least 64 bytes long, copied and
 * zero-padded when shorter. For each, in both versions, a packet signed
 * with A is taken in; one altered in the last byte the tag covers is
 * dropped; one altered just past it is taken in.
 */
static void test_auth_lengths(void)
{
	static const struct {
		const char *what;
		int family;
		size_t options, covered;
	} cases[] = {
		{"IPv4, 40 bytes: read in place", AF_INET, 0, 40},
		{"IPv4, 60 bytes: read in place", AF_INET, 20, 40},
		{"IPv6, 60 bytes: copied, padded", AF_INET6, 0, 60},
		{"IPv6, 64 bytes: read in place", AF_INET6, 4, 64},
		{"IPv6, 80 bytes: read in place", AF_INET6, 20, 64},
	};
	uint8_t f[FRAME_LEN], inner[128];

	derive_keys();
	CU_ASSERT_EQUAL_FATAL(set_table_keys(&key_a, 1), 0);
	signer = &key_a;
	for (size_t c = 0; c < 2 * ARRAY_SIZE(cases); c++) {
		size_t i = c % ARRAY_SIZE(cases);
		int v6 = cases[i].family == AF_INET6,
		    v3 = c >= ARRAY_SIZE(cases);
		size_t elen = v6 ? RS_FLEET_ENCAP6_LEN : RS_FLEET_ENCAP_LEN;
		size_t covered =
			v3 && v6 ? RS_FLEET_TAG3_INNER6 : cases[i].covered;
		size_t in, n, last = 14 + elen + covered - 1;
		char what[112];

		in = v6 ? tcp6_packet(inner, "2001:db8:1::7", vip6, 1234, 80,
				      0x02)
			: tcp_packet(inner, ip4("198.18.1.7"),
				     ip4("198.18.0.10"), 1234, 80, 0x02);
		in = tcp_with_options(inner, cases[i].family, in,
				      cases[i].options);
		frame_wire = v3 ? RS_FLEET_WIRE_MAX : RS_FLEET_WIRE_VERSION;
		n = v6 ? encap6_frame(f, addrs6[1], 1, inner, in)
		       : encap_frame(f, members[1].addr, 1, inner, in);
		snprintf(what, sizeof(what), "v%d, %s: signed", frame_wire,
			 cases[i].what);
		expect_auth(f, n, what, true);
		f[last] ^= 0x01;
		snprintf(what, sizeof(what),
			 "v%d, %s: last covered byte altered", frame_wire,
			 cases[i].what);
		expect_auth(f, n, what, false);
		f[last] ^= 0x01;
		if (last + 1 < n) {
			f[last + 1] ^= 0x01;
			snprintf(what, sizeof(what),
				 "v%d, %s: first byte past the tag altered",
				 frame_wire, cases[i].what);
			expect_auth(f, n, what, true);
		}
	}
	frame_wire = RS_FLEET_WIRE_VERSION;
	signer = NULL;
}

/* Member @m's flags in the table in force, the pairs' states after them. */
static int set_member_flags(int m, __u32 flags)
{
	__u32 slot = 1 + (__u32)m;
	struct rs_fleet_slot s;
	int fd = table_fd(), err;

	if (fd < 0)
		return -1;
	err = bpf_map_lookup_elem(fd, &slot, &s);
	s.member.flags = flags;
	err = err || bpf_map_update_elem(fd, &slot, &s, BPF_ANY);
	close(fd);
	return err || sip_refresh();
}

/* The wire version of what this host forwards of @f (@n bytes). */
static int sent_wire(const uint8_t *f, size_t n)
{
	struct run r;

	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.verdict, TC_ACT_REDIRECT);
	check_tag(r.out + 14, AF_INET, r.out_len - 14);
	return r.out[14 + 28 + 4];
}

/*
 * Wire versions (docs/fleet.md "Upgrading"): a signed packet goes in
 * version 3 to a member whose record says it takes it (its pair's state
 * fits and says so), in version 2 otherwise: a member that does not say
 * so, or no fitting state. Unsigned packets go in version 2. Both are
 * taken in; any other version is forged.
 */
static void test_wire_versions(void)
{
	__u32 send = rs_fleet_sip_index(TABLE_GEN, 1, 0, 0);
	struct rs_fleet_sip good, none = {0};
	uint8_t f[FRAME_LEN], inner[80];
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	size_t n;
	uint32_t src;

	derive_keys();
	CU_ASSERT_EQUAL_FATAL(set_table_keys(&key_a, 1), 0);
	signer = &key_a;
	for (src = 0xc6120100u; replica_owner(htonl(src)) != 1; src++)
		;
	n = eth(f);
	n += tcp_packet(f + n, htonl(src), ip4("198.18.0.10"), 40000, 80, 0x02);
	CU_ASSERT_EQUAL(sent_wire(f, n), RS_FLEET_WIRE_MAX);
	CU_ASSERT_EQUAL_FATAL(set_member_flags(1, 0), 0);
	CU_ASSERT_EQUAL(sent_wire(f, n), RS_FLEET_WIRE_VERSION);
	CU_ASSERT_EQUAL_FATAL(set_member_flags(1, RS_FLEET_MEMBER_WIRE3), 0);
	CU_ASSERT_EQUAL_FATAL(sip_entry(send, &good, 0), 0);
	CU_ASSERT_EQUAL(sip_entry(send, &none, 1), 0);
	CU_ASSERT_EQUAL(sent_wire(f, n), RS_FLEET_WIRE_VERSION);
	CU_ASSERT_EQUAL(sip_entry(send, &good, 1), 0);
	CU_ASSERT_EQUAL(sent_wire(f, n), RS_FLEET_WIRE_MAX);
	/* Taken in: 2 and 3; 4 (or 1) is no member's. */
	for (int w = 1; w <= 4; w++) {
		struct rs_fleet_stats before = stats(), after;
		uint8_t g[FRAME_LEN];
		size_t gn;
		struct run r;

		frame_wire = (uint8_t)w;
		gn = encap_frame(g, members[1].addr, 1, inner, in);
		CU_ASSERT_EQUAL_FATAL(run(g, gn, &r), 0);
		after = stats();
		if (w == RS_FLEET_WIRE_VERSION || w == RS_FLEET_WIRE_MAX) {
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_UNSPEC);
			CU_ASSERT_EQUAL(after.received - before.received, 1);
		} else {
			CU_ASSERT_EQUAL(r.verdict, TC_ACT_SHOT);
			CU_ASSERT_EQUAL(after.forged - before.forged, 1);
		}
	}
	frame_wire = RS_FLEET_WIRE_VERSION;
	/* Unsigned: version 2. */
	CU_ASSERT_EQUAL_FATAL(set_table_keys(NULL, 0), 0);
	signer = NULL;
	CU_ASSERT_EQUAL(sent_wire(f, n), RS_FLEET_WIRE_VERSION);
}

/*
 * A rotation: B added after A (A signs), then B first (B signs, A still
 * verifies), then A removed. At every step each host's packets pass at
 * the others, whichever step they are at: add everywhere, move
 * everywhere, remove everywhere.
 */
static void test_auth_rotation(void)
{
	struct rs_fleet_auth ab[2], ba[2];
	uint8_t f[FRAME_LEN], inner[80];
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	size_t n;
	struct run r;
	uint32_t src;

	derive_keys();
	ab[0] = ba[1] = key_a;
	ab[1] = ba[0] = key_b;
	/* Step 1 here, hosts at step 0 or 1 sign with A. */
	CU_ASSERT_EQUAL_FATAL(set_table_keys(ab, 2), 0);
	signer = &key_a;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "A, B held: from a host signing with A", true);
	/* Step 2 here: B signs; hosts at step 1 (A) or 2 (B) both pass. */
	CU_ASSERT_EQUAL_FATAL(set_table_keys(ba, 2), 0);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "B, A held: from a host signing with A", true);
	signer = &key_b;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "B, A held: from a host signing with B", true);
	/* What this host forwards now is signed with B. */
	for (src = 0xc6120100u;; src++) {
		if (replica_owner(htonl(src)) > 0)
			break;
	}
	n = eth(f);
	n += tcp_packet(f + n, htonl(src), ip4("198.18.0.10"), 40000, 80, 0x02);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.verdict, TC_ACT_REDIRECT);
	CU_ASSERT_EQUAL(r.out[14 + 28 + 6], key_b.id);
	check_tag(r.out + 14, AF_INET, r.out_len - 14);
	/* Step 3: A gone; a host still signing with A is refused. */
	CU_ASSERT_EQUAL_FATAL(set_table_keys(&key_b, 1), 0);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "B held: from a host signing with B", true);
	signer = &key_a;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "B held: from a host signing with A", false);
}

/* rs_fleet_peers' entry for @a: which member the data plane is told. */
static int set_peer_member(const struct rs_fleet_addr *a, __u32 member)
{
	struct rs_fleet_peer peer = {.member = member};

	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_fleet_peers), a,
				   &peer, BPF_EXIST);
}

/* Entry @i of rs_fleet_sip with its state altered (v[0] ^ 1) and @how. */
static void sip_alter(__u32 i, const struct rs_fleet_sip *good, int how)
{
	struct rs_fleet_sip e = *good;

	e.v[0] ^= 1;
	if (how == 1)
		e.k1 ^= 1; /* another key's */
	if (how == 2)
		e.head[0] ^= 1; /* other addresses' */
	CU_ASSERT_EQUAL(sip_entry(i, &e, 1), 0);
}

/*
 * The SipHash states of member pairs (rs_fleet_sip) are taken when they
 * fit the packet and never otherwise. A state altered under its own words
 * and key shows that it is used: the tag then fails, and what this host
 * signs differs from the tag computed whole. A state whose key or
 * addresses are not the packet's is passed over (the tag is computed
 * whole and passes), so are the half of another table's number and the
 * states an index of rs_fleet_peers points to when it names another
 * member.
 */
static void test_auth_pair_states(void)
{
	uint8_t f[FRAME_LEN], inner[80], inner6[80];
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	size_t in6 = tcp6_packet(inner6, "2001:db8:1::7", vip6, 1234, 80, 0x02);
	__u32 recv = rs_fleet_sip_index(TABLE_GEN, 1, 0, 1),
	      recv6 = rs_fleet_sip_index(TABLE_GEN, 1, 1, 1),
	      other = rs_fleet_sip_index(TABLE_GEN + 1, 1, 0, 1),
	      send = rs_fleet_sip_index(TABLE_GEN, 1, 0, 0);
	struct rs_fleet_sip good, good6, goods;
	struct rs_fleet_addr host3 = peer_v4(members[2].addr);
	size_t n, n6, elen = RS_FLEET_ENCAP_LEN;
	struct run r;
	uint32_t src;

	derive_keys();
	CU_ASSERT_EQUAL_FATAL(set_table_keys(&key_a, 1), 0);
	signer = &key_a;
	CU_ASSERT_EQUAL_FATAL(sip_entry(recv, &good, 0), 0);
	CU_ASSERT_EQUAL_FATAL(sip_entry(recv6, &good6, 0), 0);
	CU_ASSERT_EQUAL_FATAL(sip_entry(send, &goods, 0), 0);
	CU_ASSERT(good.k0 == key_a.k0 && good.k1 == key_a.k1);
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "the pair's state in place", true);
	sip_alter(recv, &good, 0);
	expect_auth(f, n, "state altered under its words and key: used", false);
	sip_alter(recv, &good, 1);
	expect_auth(f, n, "altered state of another key: passed over", true);
	sip_alter(recv, &good, 2);
	expect_auth(f, n, "altered state of other addresses: passed over",
		    true);
	CU_ASSERT_EQUAL(sip_entry(recv, &good, 1), 0);
	sip_alter(other, &good, 0);
	expect_auth(f, n, "altered state in another table's half: not read",
		    true);
	/* host-3's packets, rs_fleet_peers naming host-2 (a stale index). */
	CU_ASSERT_EQUAL(set_peer_member(&host3, 1), 0);
	sip_alter(recv, &good, 0);
	n = encap_frame(f, members[2].addr, 1, inner, in);
	expect_auth(f, n, "host-3 told as host-2: host-2's state passed over",
		    true);
	CU_ASSERT_EQUAL(set_peer_member(&host3, 2), 0);
	CU_ASSERT_EQUAL(sip_entry(recv, &good, 1), 0);
	/* IPv6: 32 bytes of addresses in the state. */
	n6 = encap6_frame(f, addrs6[1], 1, inner6, in6);
	expect_auth(f, n6, "IPv6: the pair's state in place", true);
	sip_alter(recv6, &good6, 0);
	expect_auth(f, n6, "IPv6: state altered under its words and key: used",
		    false);
	sip_alter(recv6, &good6, 2);
	expect_auth(f, n6,
		    "IPv6: altered state of other addresses: passed "
		    "over",
		    true);
	CU_ASSERT_EQUAL(sip_entry(recv6, &good6, 1), 0);
	/* Signing: a SYN host-2 owns. */
	for (src = 0xc6120100u; replica_owner(htonl(src)) != 1; src++)
		;
	n = eth(f);
	n += tcp_packet(f + n, htonl(src), ip4("198.18.0.10"), 40000, 80, 0x02);
	sip_alter(send, &goods, 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.verdict, TC_ACT_REDIRECT);
	CU_ASSERT_NOT_EQUAL(tag_in(r.out + 14 + elen - ENC),
			    tag_of(r.out + 14, AF_INET, r.out + 14 + elen - ENC,
				   r.out + 14 + elen, r.out_len - 14 - elen,
				   &key_a));
	sip_alter(send, &goods, 1);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	check_tag(r.out + 14, AF_INET, r.out_len - 14);
	CU_ASSERT_EQUAL(sip_entry(send, &goods, 1), 0);
	CU_ASSERT_EQUAL_FATAL(run(f, n, &r), 0);
	check_tag(r.out + 14, AF_INET, r.out_len - 14);
	CU_ASSERT_EQUAL(sip_refresh(), 0);
}

/*
 * Without a fleet key a host checks nothing (as before tags): a signed
 * packet from a member is taken in, and what it forwards is unsigned.
 */
static void test_auth_off(void)
{
	uint8_t f[FRAME_LEN], inner[80];
	size_t in = tcp_packet(inner, ip4("198.18.1.7"), ip4("198.18.0.10"),
			       1234, 80, 0x02);
	size_t n;

	derive_keys();
	CU_ASSERT_EQUAL_FATAL(set_table_keys(NULL, 0), 0);
	signer = &key_a;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "no key here: signed packet", true);
	signer = NULL;
	n = encap_frame(f, members[1].addr, 1, inner, in);
	expect_auth(f, n, "no key here: unsigned packet", true);
}

int main(void)
{
	static const struct fixture_test tests[] = {
		{"SYNs go to the owner userspace computes, encapsulated as "
		 "documented",
		 test_owner_agrees_with_replica},
		{"a client's headers read in place: IPv4 options forwarded "
		 "whole, a cut inside them left alone",
		 test_client_headers_in_place},
		{"a member's packet is decapsulated", test_decap},
		{"forged and over-hop-limit packets are dropped and counted",
		 test_forged_and_hop_limit},
		{"truncated and lying packets never pass", test_truncated},
		{"what the parse refuses (fragments, extension headers, other "
		 "protocols) stays here untouched",
		 test_parse_refusals},
		{"trace events: forward to a member, received, dropped and why",
		 test_trace_events},
		{"a retransmitted SYN follows the first one, not a moved key",
		 test_syn_retry_follows_first},
		{"IPv6: SYNs go to the owner userspace computes, in outer "
		 "IPv6",
		 test_owner_agrees_with_replica6},
		{"IPv6: a member's packet is decapsulated", test_decap6},
		{"IPv6: second chance to the owner, hop limit",
		 test_second_chance6},
		{"IPv6: forged and over-hop-limit packets are dropped and "
		 "counted",
		 test_forged_and_hop_limit6},
		{"IPv6: truncated and lying packets never pass",
		 test_truncated6},
		{"IPv6: an owner without address6 keeps its clients here, "
		 "counted",
		 test_owner_without_address6},
		{"IPv6: a SYN kept for want of address6 forgets its 4-tuple's "
		 "flow",
		 test_no_address6_forgets_the_flow},
		{"QUIC: another member's server ID goes to that member",
		 test_quic_other_member},
		{"trace events: a QUIC server ID's member, IPv6 second chance",
		 test_trace_quic_and_second_chance},
		{"QUIC: local, unknown, conflicting, unroutable IDs and "
		 "Initials",
		 test_quic_local_unknown_conflict},
		{"QUIC: malformed never forwarded by cookie, decapsulated "
		 "never again",
		 test_quic_malformed_and_decap},
	};
	static const struct fixture_test auth[] = {
		{"tags: unsigned, wrong key, altered, replayed are dropped",
		 test_auth_refusals},
		{"tags: a key rotation loses nothing", test_auth_rotation},
		{"tags: the covered bytes, read in place or copied",
		 test_auth_lengths},
		{"tags: the pairs' SipHash states, taken only where they fit",
		 test_auth_pair_states},
		{"tags: wire version 3 only to members that take it, both "
		 "taken in",
		 test_wire_versions},
		{"tags: a host without a key checks nothing", test_auth_off},
	};
	enum { N = ARRAY_SIZE(tests), NA = ARRAY_SIZE(auth) };
	static struct fixture_test all[2 * N + 1 + NA];
	static char names[N][160];

	for (size_t i = 0; i < N; i++) {
		all[i] = tests[i];
		snprintf(names[i], sizeof(names[i]), "signed: %s",
			 tests[i].name);
		all[N + 1 + i] = (struct fixture_test){names[i], tests[i].fn};
	}
	all[N] = (struct fixture_test){"a fleet key in the table: every "
				       "test again, signed",
				       test_keys_on};
	for (size_t i = 0; i < NA; i++)
		all[2 * N + 1 + i] = auth[i];
	return fixture_main("steer_fleet", setup, teardown, all,
			    ARRAY_SIZE(all));
}

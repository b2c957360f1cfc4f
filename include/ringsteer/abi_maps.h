/* SPDX-License-Identifier: MIT */
/*
 * The steering maps: services, binds, backends and their sockets, rings,
 * sticky and cookie entries, QUIC-LB, load gauges, statistics, rs_meta.
 */
#ifndef RINGSTEER_ABI_MAPS_H
#define RINGSTEER_ABI_MAPS_H

#include "abi_base.h"

enum rs_backend_state {
	RS_BACKEND_DOWN = 0,  /* takes nothing */
	RS_BACKEND_UP = 1,    /* takes new and sticky clients */
	RS_BACKEND_DRAIN = 2, /* sticky clients only */
};

enum rs_key_policy {
	RS_KEY_SRC_IP = 0,
	RS_KEY_SRC_IP_PORT = 1,
};

enum rs_cookie_policy {
	RS_COOKIE_NONE = 0,
	RS_COOKIE_QUIC = 1, /* QUIC-LB server ID in the DCID (rs_quic_lb) */
};

#define RS_QUIC_MAX_SERVER_ID 15

enum rs_fallback {
	RS_FALLBACK_PASS = 0, /* let the kernel's own socket lookup proceed */
	RS_FALLBACK_DROP = 1,
};

/*
 * rs_binds (LPM_TRIE): which service owns a destination. The first 32 bits
 * (protocol, family, port) are always part of the prefix, so prefixlen is
 * 32 + the address prefix length. The data plane looks up the exact port and
 * port 0 and keeps the longer address prefix; on a tie the exact port wins.
 */
struct rs_bind_key {
	__u32 prefixlen;
	__u8 protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 family;   /* AF_INET or AF_INET6 */
	__u16 port;    /* host byte order; 0 = every port */
	__u8 addr[16]; /* network byte order; IPv4 in the first 4 bytes */
};

struct rs_bind {
	__u32 service;
	__u32 addr_prefixlen;
};

/*
 * rs_binds_exact (HASH): listens of one address and one port, the most
 * specific match there is, looked up before the trie.
 */
struct rs_bind_exact_key {
	__u8 protocol;
	__u8 family;
	__u16 port;    /* host byte order, never 0 */
	__u8 addr[16]; /* network byte order */
};

/* rs_services (ARRAY, index = service id). */
struct rs_service {
	/*
	 * seed, key_policy, prefix4 and prefix6 are copied into every ring
	 * header (struct rs_ring_header), and the data plane reads them
	 * there: a ring swap then changes the key, its hash and the points
	 * in one step. They are kept here for readers of this map.
	 */
	__u64 seed;
	__u32 id;
	__u8 enabled;
	__u8 protocol;
	__u8 key_policy; /* enum rs_key_policy */
	__u8 fallback;	 /* enum rs_fallback */
	__u8 prefix4;
	__u8 prefix6;
	__u8 cookie;		 /* enum rs_cookie_policy (UDP only) */
	__u8 quic_server_id_len; /* 1..RS_QUIC_MAX_SERVER_ID */
	__u8 quic_cid_len;	 /* DCID length of short-header packets */
	__u8 quic_config_id;	 /* config rotation bits, 0..6 */
	/*
	 * 1: UDP only; a backend's address may hold several sockets, the
	 * newest taking new flows (rs_gen_working), each older one keeping
	 * the flows recorded on it (rs_udp_flows) until it closes. 0: one
	 * socket per backend, the kernel's reuseport pick kept.
	 */
	__u8 generations;
	__u8 pad[1];
	__u32 sticky_ttl; /* seconds idle before a sticky entry lapses; 0 = off
			   */
	/*
	 * balance_factor x 1000, 0 = no bound. For readers of this map: the
	 * data plane reads the copy in each backend's word (struct rs_backend).
	 */
	__u32 balance_milli;
	char name[RS_NAME_MAX];
};

/*
 * rs_sticky (ARRAY_OF_MAPS, index = service id) of LRU_HASH maps keyed by
 * struct rs_affinity_key, each sized to its service's sticky_max. An entry
 * is honoured while its backend is UP or DRAIN and it was seen within
 * sticky_ttl; every use refreshes last_seen_ns (sliding timeout).
 */
struct rs_sticky_entry {
	__u32 backend;
	__u32 pad;
	__u64 last_seen_ns; /* bpf_ktime_get_ns() clock (CLOCK_MONOTONIC) */
};

/* rs_cookies (HASH): a service's QUIC server ID -> backend id. */
struct rs_cookie_key {
	__u32 service;
	__u8 len; /* = quic_server_id_len of the service */
	__u8 server_id[RS_QUIC_MAX_SERVER_ID];
};

struct rs_cookie {
	__u32 backend;
};

/*
 * rs_quic_lb (ARRAY, index = service id * RS_QUIC_LB_CONFIGS + config
 * rotation bits): how steer_tc reads a CID of that config
 * (include/ringsteer/quic_lb.h, docs/quic.md "Encrypted CIDs"). A config
 * with no entry (mode RS_QUIC_LB_NONE) is read as the plaintext layout when
 * it is the service's quic_config_id, and not at all otherwise. The
 * lengths are the service's (quic_server_id_len, quic_cid_len): a rotation
 * changes the key, not the layout.
 *
 * The round keys are the key's AES-128 schedule, for the software AES in
 * BPF (kernels before 6.10: no crypto kfuncs). Where the kfuncs are used
 * they stay zero: the key then lives only in the kernel's crypto context.
 * Either way only root can read this map.
 */
#define RS_QUIC_LB_CONFIGS 8

/* An AES-128 key schedule (include/ringsteer/aes128.h uses it). */
struct rs_aes128_key {
	__u32 enc[44]; /* encryption round keys, FIPS-197 5.2 */
	__u32 dec[44]; /* the equivalent inverse cipher's, FIPS-197 5.3.5 */
};

enum rs_quic_lb_mode {
	RS_QUIC_LB_NONE = 0,	  /* no config here: see above */
	RS_QUIC_LB_PLAINTEXT = 1, /* server ID in clear */
	RS_QUIC_LB_ENCRYPTED = 2, /* single pass or four-pass, by length */
};

struct rs_quic_lb {
	__u8 mode; /* enum rs_quic_lb_mode */
	/*
	 * Encrypted: server ID + nonce, the bytes after the first octet that
	 * are encrypted; any CID bytes after them are the server's own (the
	 * draft lets it append some). 0: all of the CID after octet 0.
	 */
	__u8 plen;
	__u8 pad[6];
	struct rs_aes128_key key; /* zero unless the software AES runs */
};

/*
 * ctx_in of steer_tc_kfunc's rs_quic_lb_set_key (SEC("syscall")): make
 * the crypto context of rs_quic_lb entry @index from @key, or drop it when
 * @key is all zero. @err: 0 or the kernel's negative errno.
 */
struct rs_quic_lb_key_args {
	__u32 index;
	__u8 key[16];
	__s32 err;
};

/*
 * rs_backends (ARRAY, index = backend id; SOCKMAP slots via rs_socket_slot).
 * The data plane reads the first 16 bytes: the state word and the bound
 * parameters. Points of this backend with ordinal >= active_points are
 * skipped, which maps keys exactly like a ring built at the lower weight
 * would.
 *
 * The bound's parameters live in each backend's own word, not in the ring
 * header or the service entry: the weights the bound divides by change
 * with health and slow start, which write words and swap no ring. A
 * backend's state, points and bound are then one map write, and a reload
 * gives every backend the bound of the old or of the new file (see
 * rs_load_bound()).
 */
struct rs_backend {
	__u32 state;	     /* enum rs_backend_state */
	__u32 active_points; /* weight * vnodes */
	/*
	 * Sum of active_points over the service's UP backends (those that
	 * take new clients): the bound's total weight. 0 = no bound.
	 */
	__u32 bound_points;
	__u32 balance_milli; /* the service's balance_factor x 1000, 0 = off */
	__u32 service;
	__u32 max_points; /* points built into the ring */
	/*
	 * Not read by the data plane: kept here so that a restarted daemon
	 * and `bpftool map dump` see why a backend is in its state.
	 */
	__u32 op_state;	  /* enum rs_op_state: operator's up/drain/down */
	__u32 health;	  /* 1 = passing its checks */
	__u32 weight;	  /* current weight (config or operator) */
	__u32 weight_set; /* 1 = weight set by the operator, not the file */
	/*
	 * Connections of this backend that no program counted (opened before
	 * steer_sockops was attached, e.g. under an earlier daemon that was
	 * --detach'ed) and that the daemon added to the load gauge after
	 * finding them with sock_diag. Kept here so a restarted daemon knows
	 * how much of the gauge is its own to take back as they close.
	 */
	__u32 uncounted;
	/*
	 * Socket slots (bit 0: IPv4, bit 1: IPv6, as rs_socket_slot()) whose
	 * UDP flows wait for this backend while the slot is empty: its
	 * socket is gone for a moment (a restart, the service's
	 * restart_grace). A datagram that would go to it is dropped, not
	 * sent to another backend; the client's next one reaches the
	 * backend's new socket (rs_restart_holds(), rules.h). The daemon
	 * sets a bit once the slot held a socket and clears it when the
	 * grace ends without one: then the flows go on as to a DOWN one.
	 */
	__u32 held_slots;
	char name[RS_NAME_MAX];
};

/*
 * rs_backend_load (ARRAY, index = backend id) and rs_service_load (ARRAY,
 * index = service id): established TCP connections steered to a backend
 * and still open, and their sum per service. One shared value each,
 * changed only with atomic adds (steer_sockops at establishment and at
 * close), so sk_lookup reads the exact figure without summing CPUs.
 * Both maps are mmap()able: the daemon adds the connections sock_diag
 * finds that predate the counting with atomic adds of its own, which a
 * map update (a plain copy of the value) could not do without losing the
 * kernel's concurrent adds.
 */
struct rs_load {
	__s64 active;
};

/*
 * The value of rs_listen (below): which backend and service a listening
 * socket serves, and in each accepted child's own copy whether
 * steer_sockops counted that connection in the gauge (RS_CONN_COUNTED in
 * service, taken off when it is counted down at close), so that the
 * close counts down the same backend and service exactly once, and the
 * daemon's reconciliation (sock_diag) tells counted connections from
 * those that predate the counting. The daemon never writes the mark:
 * service ids are below RS_MAX_SERVICES.
 */
struct rs_conn {
	__u32 backend;
	__u32 service;
};

#define RS_CONN_COUNTED 0x80000000u
/*
 * With RS_CONN_COUNTED: steer_sockops turned the socket's state callbacks
 * on itself (no other program had), so it turns them off again once the
 * connection is counted down, and the callbacks of its close cost nothing.
 */
#define RS_CONN_STATE_CB 0x40000000u
#define RS_CONN_FLAGS	 (RS_CONN_COUNTED | RS_CONN_STATE_CB)

/*
 * The TCP states in which a counted connection is in its backend's load:
 * ESTABLISHED, and CLOSE_WAIT (the client is done; the backend may still
 * be answering). From the handshake's end until the backend closes its
 * side or the connection ends (Linux's numbers, as BPF_TCP_* and TCP_*
 * give them): rs_load_tcp_state() in rules.h.
 */
#define RS_LOAD_TCP_STATES (1u << 1 | 1u << 8)

/* Loads above this are treated as this: keeps rs_load_bound() in 64 bits. */
#define RS_LOAD_CLAMP	  (1ll << 24)
#define RS_LOAD_UNBOUNDED 0xffffffffffffffffull

/*
 * The bounded-loads rule (consistent hashing with bounded loads, as
 * HAProxy's hash-balance-factor): a backend takes a new connection while
 * its load is below ceil(factor x (service load + 1) x weight / total
 * weight), the weights being active points (so weight, operator weight and
 * slow start all count). One function for BPF and userspace, so the
 * replica cannot drift from the kernel. Product bounds: 2^17 (factor <=
 * 100) x 2^25 x 2^20 (ring points) < 2^63.
 */
static inline __u64 rs_load_bound(const struct rs_backend *be,
				  __s64 service_active)
{
	__u64 total = be->bound_points, s;

	if (!be->balance_milli || !total)
		return RS_LOAD_UNBOUNDED;
	s = service_active < 0		     ? 0
	    : service_active > RS_LOAD_CLAMP ? RS_LOAD_CLAMP
					     : (__u64)service_active;
	total *= 1000;
	return ((__u64)be->balance_milli * (s + 1) * be->active_points + total -
		1) /
	       total;
}

/* Whether @be, holding @active connections, is at its bound. */
static inline int rs_load_at_bound(const struct rs_backend *be, __s64 active,
				   __s64 service_active)
{
	__u64 bound = rs_load_bound(be, service_active);

	return bound != RS_LOAD_UNBOUNDED && active >= 0 &&
	       (__u64)active >= bound;
}

enum rs_op_state {
	RS_OP_UP = 0,
	RS_OP_DRAIN = 1,
	RS_OP_DOWN = 2,
};

/* Hashed with XXH64, seeded per service. Padding must be zero. */
struct rs_affinity_key {
	__u32 service;
	__u8 family;
	__u8 pad;
	__u16 port;    /* host byte order; 0 unless key = src-ip-port */
	__u8 addr[16]; /* masked client address, network byte order */
};

/*
 * Slot 0 of a ring map: everything a lookup needs to agree with the points,
 * so that one swap of the ring changes all of it at once (a reload that
 * changes the seed, the key or the points is never seen half done).
 */
struct rs_ring_header {
	__u64 seed; /* the service's hash seed the points were built with */
	__u32 npoints;
	/* Flat table's bits | RS_RING_FLAT; 0: no index, search all points */
	__u8 bucket_bits;
	__u8 key_policy; /* enum rs_key_policy */
	__u8 prefix4;	 /* client address bits kept in the key */
	__u8 prefix6;
};

/* Last slot of a ring map, read by userspace only. */
struct rs_ring_trailer {
	__u64 generation; /* counts swaps of this service's ring */
	__u64 pad;
};

/*
 * Slots npoints + 1 onwards: the flat table, two buckets per slot, then
 * the trailer. For a bucket no point falls into, @point is the slot of
 * the point that owns it (the first at or after it, wrapping to 1) and
 * @owner that point's backend and ordinal (RS_FLAT_BACKEND/_ORDINAL), so
 * the lookup reads no point. A bucket holding points has RS_FLAT_SPLIT in
 * @owner: @point is the slot of its first point (npoints + 1 when past
 * the last) and the count in the low bits says how many it holds; the
 * lookup searches those.
 */
#define RS_FLAT_SPLIT	      0x80000000u
#define RS_FLAT_BACKEND_SHIFT 20
#define RS_FLAT_ORDINAL_MASK  0xfffffu
#define RS_FLAT_BACKEND_MASK  0x3ffu

struct rs_ring_flat {
	__u32 point;
	__u32 owner;
};

struct rs_ring_buckets {
	struct rs_ring_flat flat[2];
};

struct rs_point {
	__u64 pos;
	__u32 backend;
	__u32 ordinal; /* index among this backend's points, 0-based */
};

/* Value of a ring inner map (ARRAY): slot 0 header, then sorted points. */
struct rs_ring_slot {
	union {
		struct rs_ring_header hdr;
		struct rs_point point;
		struct rs_ring_buckets buckets;
		struct rs_ring_trailer trailer;
	};
};

/* rs_backend_stats (PERCPU_ARRAY, index = backend id). */
struct rs_backend_stats {
	__u64 assigned;	   /* connections/datagrams handed to this backend */
	__u64 sticky_hits; /* of which through the sticky table */
	__u64 spills;	   /* of which it was not the primary owner */
	__u64 cookie_hits; /* of which through a QUIC cookie (TC) */
	/*
	 * New connections this backend owned (ring primary or live sticky
	 * entry) and passed on because it was at its bound.
	 */
	__u64 load_spills;
};

/* rs_service_stats (PERCPU_ARRAY, index = service id). */
struct rs_service_stats {
	__u64 lookups;	  /* sk_lookup runs that matched this service */
	__u64 no_backend; /* no backend could take it: fallback applied */
	__u64 errors;	  /* missing ring, failed sk_assign, ... */
	__u64 walk_limit; /* walked past RS_WALK_MAX points (slow path) */
	/*
	 * TC QUIC cookie path (bpf/steer_tc.bpf.c, docs/quic.md): datagrams
	 * to a cookie service that were left to sk_lookup, by reason.
	 */
	__u64 cookie_none;	/* no server-chosen CID (Initial, not QUIC) */
	__u64 cookie_unknown;	/* CID of another length/config, unknown ID */
	__u64 cookie_down;	/* ID's backend DOWN or without a socket */
	__u64 cookie_malformed; /* truncated or inconsistent headers */
	/*
	 * Connections that did not go where the client's affinity named (its
	 * live sticky entry, else its ring owner): spills for load, for a
	 * backend down or without a socket. The reassignment rate is this
	 * over lookups.
	 */
	__u64 reassigned;
	/* Datagrams dropped while their backend's socket was gone (held). */
	__u64 held;
	/*
	 * Generations (rs_udp_flows): datagrams delivered to a draining
	 * generation; flows whose generation closed, moved to the working
	 * one (handovers); new flows left unrecorded, the table full.
	 */
	__u64 gen_draining;
	__u64 gen_handovers;
	__u64 flows_full;
};

/*
 * Generations (rs_service.generations, docs/architecture.md
 * "Generations"). rs_gen_sockets (SOCKHASH): every socket of a generations
 * backend, keyed by its socket cookie. rs_gen_working (ARRAY, index
 * rs_socket_slot()): the cookie of the backend's working socket for that
 * family, 0 = none known (then its rs_sockets slot is the working one).
 * rs_gen_sockets holds RS_GEN_SOCKETS_MAX, or 1 when no service has
 * generations; rs_gen_working always RS_SOCKMAP_SLOTS (16 KiB).
 */
#define RS_GEN_SOCKETS_MAX 4096

/*
 * rs_udp_flows (HASH, not LRU: a flood of forged sources must not evict a
 * recorded flow): the generation each UDP flow of a generations service
 * started on. A full table records no new flow (it goes to the working
 * socket, where a new flow belongs anyway); the daemon deletes entries
 * idle for the service's flow_idle. Sized by flow_table, default
 * RS_GEN_FLOWS_DEFAULT, 1 when no service has generations.
 */
#define RS_GEN_FLOWS_DEFAULT 65536

struct rs_udp_flow_key {
	__u32 saddr[4]; /* network order; IPv4 in word 0, the rest zero */
	__u32 daddr[4];
	__u16 sport; /* host order */
	__u16 dport;
	__u8 family;
	__u8 pad[3];
};

struct rs_udp_flow {
	__u32 backend;
	/*
	 * CLOCK_MONOTONIC seconds when last seen, refreshed at most once a
	 * second (no write per datagram).
	 */
	__u32 seen;
	/*
	 * Socket cookie of the generation the flow is on; 0: none yet (TC
	 * wrote the backend a QUIC CID names, sk_lookup picks the socket).
	 */
	__u64 cookie;
};

/*
 * rs_meta (ARRAY, one entry): the ABI version of the pinned maps. A daemon
 * of another ABI refuses to adopt them instead of misreading them; libbpf
 * alone only notices changes of key or value size.
 */
struct rs_meta {
	__u32 abi_version;
	/*
	 * Entries in rs_binds (the LPM trie): zero means every listen is an
	 * exact address and port, found in rs_binds_exact alone.
	 */
	__u32 lpm_binds;
	/*
	 * 1 while steer_sockops is attached: TCP sticky entries are then
	 * written at establishment (from the child's rs_listen storage),
	 * and steer_lookup writes nothing for a TCP decision. 0: written at
	 * the SYN, as for UDP, since nothing would ever see establishment.
	 */
	__u32 handoff;
	__u32 pad;
	/*
	 * The network namespace steer_lookup is attached to (its
	 * SO_NETNS_COOKIE); 0 = not known. Kept for the ABI: steer_sockops
	 * no longer needs it, since only this daemon's listeners carry its
	 * rs_listen storage.
	 */
	__u64 netns_cookie;
};

/*
 * rs_listen (SK_STORAGE, BPF_F_CLONE): written by the daemon on each
 * backend's listening socket(s) (every socket of a SO_REUSEPORT group) as
 * it puts them in rs_sockets: which backend and service the socket serves
 * (a struct rs_conn). The kernel copies it to every child the listener
 * accepts, so steer_sockops knows at establishment where a connection
 * was steered without anything written at the SYN (issue 21; before it,
 * steer_lookup wrote the decision per SYN into an LRU hash, rs_handoff).
 * A child whose local address is not the service's listen address (a
 * health check, a client of the backend's own address) is not counted.
 * The child's copy is the connection's own record: steer_sockops marks it
 * RS_CONN_COUNTED when it counts the connection (before issue 21's
 * profile, a second storage per connection, rs_conn, held that).
 */

RS_ABI_SIZE(rs_bind_key, 24);
/* LPM: prefixlen, then protocol, family and port as the first 32 bits. */
RS_ABI_OFFSET(rs_bind_key, protocol, 4);
RS_ABI_OFFSET(rs_bind_key, family, 5);
RS_ABI_OFFSET(rs_bind_key, port, 6);
RS_ABI_OFFSET(rs_bind_key, addr, 8);
RS_ABI_SIZE(rs_bind, 8);
RS_ABI_SIZE(rs_bind_exact_key, 20);
RS_ABI_SIZE(rs_service, 96);
RS_ABI_SIZE(rs_sticky_entry, 16);
RS_ABI_SIZE(rs_cookie_key, 20);
/* steer_tc loads the DCID's first octet onto len and the ID behind it. */
RS_ABI_OFFSET(rs_cookie_key, len, 4);
RS_ABI_OFFSET(rs_cookie_key, server_id, 5);
RS_ABI_SIZE(rs_cookie, 4);
RS_ABI_SIZE(rs_quic_lb, 360);
RS_ABI_SIZE(rs_quic_lb_key_args, 24);
RS_ABI_SIZE(rs_backend, 112);
/* The state word and bound: the 16 bytes of rs_backends the data plane reads.
 */
RS_ABI_OFFSET(rs_backend, state, 0);
RS_ABI_OFFSET(rs_backend, active_points, 4);
RS_ABI_OFFSET(rs_backend, bound_points, 8);
RS_ABI_OFFSET(rs_backend, balance_milli, 12);
RS_ABI_SIZE(rs_load, 8);
RS_ABI_SIZE(rs_conn, 8);
/* XXH64 in BPF is unrolled for exactly 24 bytes, padding included. */
RS_ABI_SIZE(rs_affinity_key, 24);
RS_ABI_OFFSET(rs_affinity_key, port, 6);
RS_ABI_OFFSET(rs_affinity_key, addr, 8);
/* Every slot of a ring map is 16 bytes, whichever member it holds. */
RS_ABI_SIZE(rs_ring_header, 16);
RS_ABI_SIZE(rs_ring_trailer, 16);
RS_ABI_SIZE(rs_ring_buckets, 16);
RS_ABI_SIZE(rs_ring_flat, 8);
/* A flat entry packs a backend id and an ordinal into 30 bits. */
_Static_assert(RS_MAX_BACKENDS <= RS_FLAT_BACKEND_MASK + 1,
	       "backend ids fit RS_FLAT_BACKEND_MASK");
_Static_assert(RS_MAX_RING_POINTS <= RS_FLAT_ORDINAL_MASK + 1,
	       "ordinals fit RS_FLAT_ORDINAL_MASK");
_Static_assert(RS_MAX_BUCKET_BITS <= RS_RING_BITS_MASK, "bits fit the mask");
RS_ABI_SIZE(rs_point, 16);
RS_ABI_SIZE(rs_ring_slot, 16);
RS_ABI_SIZE(rs_backend_stats, 40);
RS_ABI_SIZE(rs_service_stats, 104);
RS_ABI_SIZE(rs_udp_flow_key, 40);
/* steer_tc reads an IPv6 source and destination into both at once. */
RS_ABI_OFFSET(rs_udp_flow_key, daddr, 16);
RS_ABI_SIZE(rs_udp_flow, 16);
RS_ABI_SIZE(rs_meta, 24);

#endif /* RINGSTEER_ABI_MAPS_H */

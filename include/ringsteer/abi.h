/* SPDX-License-Identifier: MIT */
/*
 * The one ABI between the BPF programs and userspace: map keys, map values
 * and limits. Both sides include this file; nothing here may be duplicated.
 * Every struct is fixed-size with explicit padding so that the BTF the
 * compiler emits is what `bpftool map dump` shows.
 */
#ifndef RINGSTEER_ABI_H
#define RINGSTEER_ABI_H

#include <linux/types.h>

/* "No backend" (and no service, no owner) wherever an id is expected. */
#define RS_NONE 0xffffffffu

/*
 * Every change of what a pinned value means (a size, an offset, a flag, a
 * limit) is a new ABI: tests/unit/abi/test_abi.c fails until the new layout is
 * recorded (docs/architecture.md "The ABI").
 */
#define RS_ABI_VERSION 10

#define RS_NAME_MAX 64
/*
 * Service ids and backend ids: entries of the maps indexed by them. ABI 9
 * raised services from 64 (issue 37). Backends stay at 1,024: a flat
 * table entry packs a backend id into RS_FLAT_BACKEND_MASK's 10 bits.
 */
#define RS_MAX_SERVICES 256
/*
 * Address families as the structs below carry them: Linux's AF_INET and
 * AF_INET6, named here for the BPF side, which has no <sys/socket.h>.
 */
#define RS_AF_INET  2
#define RS_AF_INET6 10

#define RS_MAX_BACKENDS 1024
#define RS_MAX_BINDS	4096
/* Slot 0 of every ring map is the header, points are slots 1..npoints. */
#define RS_MAX_RING_POINTS (1u << 20)
/* ceil(log2(RS_MAX_RING_POINTS + 1)): bound of the lower-bound search. */
#define RS_SEARCH_STEPS 21
/*
 * A walk longer than this many points is counted (walk_limit): it still
 * finds its backend, since the walk covers the whole ring if it must, but
 * the daemon keeps rings in which walks stay well below it.
 */
#define RS_WALK_MAX 64

/*
 * The flat table in front of the sorted points (struct rs_ring_flat): one
 * entry per bucket, a bucket being the hashes that share their top
 * bucket_bits. A bucket no point falls into lies on one arc, and its
 * entry names that arc's owner (point, backend, ordinal), so nearly every
 * lookup is one table read; the few buckets that hold points name the
 * points to search. About four buckets per point; at most
 * 2^RS_MAX_BUCKET_BITS.
 */
#define RS_MAX_BUCKET_BITS 20
/*
 * Set in rs_ring_header.bucket_bits (beside the bit count) when the index
 * is the flat table. A program that predates it sees more than 18 bits,
 * the bound of its own index, and searches the whole ring: an upgrade
 * never misreads a ring, old or new.
 */
#define RS_RING_FLAT	  0x80u
#define RS_RING_BITS_MASK 0x3fu

/*
 * Ports that no service listens on, per protocol: rs_ports (ARRAY) word
 * rs_port_word(protocol, port) has bit port % 64 set when no service has
 * a listen on that port (a port-0 listen covers every port). Set bits say
 * "no", so an empty map (a daemon that predates it, a map just created)
 * turns nothing away.
 */
#define RS_PORT_WORDS (2 * 65536 / 64)

static inline __u32 rs_port_word(__u8 protocol, __u16 port)
{
	return (protocol == 17 /* IPPROTO_UDP */ ? 65536 / 64 : 0) + port / 64;
}

/*
 * Each backend has one SOCKMAP slot per client family, since a connection
 * can only go to a socket of a compatible family (an AF_INET listener cannot
 * take an IPv6 client). A dual-stack AF_INET6 socket fills both slots.
 */
#define RS_SOCKMAP_SLOTS (2 * RS_MAX_BACKENDS)

static inline __u32 rs_socket_slot(__u32 backend, int is_ipv6)
{
	return backend * 2 + (is_ipv6 ? 1 : 0);
}

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
	__u8 pad[2];
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
/*
 * Fleet mode (docs/fleet.md): the same affinity key first picks the owner
 * host of a PoP from the fleet table, then the owner's ring picks the
 * backend. A packet of a fleet service that reaches another host is
 * encapsulated (outer IP of the client's family + UDP + struct
 * rs_fleet_encap) and sent to the owner, whose steer_tc takes the outer
 * headers off again. IPv4 goes in IPv4, IPv6 in IPv6: bpf_redirect_neigh()
 * routes by skb->protocol, which the encapsulation cannot change.
 *
 * rs_fleet (ARRAY_OF_MAPS, one entry, key 0) holds one ARRAY of
 * RS_FLEET_MAP_SLOTS struct rs_fleet_slot: the table in force from slot
 * RS_FLEET_CURRENT, the one it replaced (for the second chance) from slot
 * RS_FLEET_PREVIOUS. The daemon writes both into a fresh map and swaps it
 * in with one update, so the data plane never sees a new table beside a
 * stale previous one. (Two updates, previous then current, left a moment
 * in which both were the old table: packets of connections that table
 * had moved then had nowhere to go, and the e2e test lost some.)
 * Within a table, from its base:
 *   slot 0                     header
 *   slots 1..MAX_MEMBERS       members, sorted by name (index = slot - 1)
 *   RS_FLEET_SLOT_ADDR6        this host's IPv6 forwarding address
 *   RS_FLEET_SLOT_ADDR6 + 1 + i  member i's (all zero: it has none)
 *   RS_FLEET_SLOT_SERVICES + s per local service id s: its fleet seed
 *   RS_FLEET_SLOT_ROWS + s * RS_FLEET_ROWS + r: owners of buckets
 *                              r * RS_FLEET_ROW_OWNERS ..
 *   RS_FLEET_SLOT_CIDS + i     QUIC server IDs -> member (struct
 *                              rs_fleet_cid), an open-addressed hash
 *                              table: it lives in the table's own map so
 *                              that the members its entries name are the
 *                              members of that table, swapped in the same
 *                              update (docs/fleet.md "QUIC").
 *   RS_FLEET_SLOT_KEYS + k     forwarding keys (struct rs_fleet_auth):
 *                              k = 0 signs, every one verifies; all
 *                              empty: packets are neither signed nor
 *                              checked. In the table so that a rotation
 *                              is one swap, never a torn key.
 */
#define RS_FLEET_MAX_MEMBERS   64
#define RS_FLEET_BUCKET_BITS   12
#define RS_FLEET_BUCKETS       (1u << RS_FLEET_BUCKET_BITS)
#define RS_FLEET_ROW_OWNERS    32
#define RS_FLEET_ROWS	       (RS_FLEET_BUCKETS / RS_FLEET_ROW_OWNERS)
#define RS_FLEET_SLOT_ADDR6    (1 + RS_FLEET_MAX_MEMBERS)
#define RS_FLEET_SLOT_SERVICES (RS_FLEET_SLOT_ADDR6 + 1 + RS_FLEET_MAX_MEMBERS)
#define RS_FLEET_SLOT_ROWS     (RS_FLEET_SLOT_SERVICES + RS_MAX_SERVICES)
#define RS_FLEET_SLOT_CIDS                                                     \
	(RS_FLEET_SLOT_ROWS + RS_MAX_SERVICES * RS_FLEET_ROWS)
/*
 * Server ID slots per table (a power of two) and the longest probe: an ID
 * lives in the first free slot of RS_FLEET_CID_PROBES from its home slot
 * (XXH64 of struct rs_affinity_key {service = local service id, family =
 * 0, port = ID length, addr = the ID} with RS_FLEET_CID_SEED); one that
 * finds none is left out (its packets go by the table).
 */
#define RS_FLEET_CID_SLOTS  2048
#define RS_FLEET_CID_PROBES 8
#define RS_FLEET_CID_SEED   0x51554943u /* "QUIC" */
#define RS_FLEET_SLOT_KEYS  (RS_FLEET_SLOT_CIDS + RS_FLEET_CID_SLOTS)
/* Keys of a fleet key file (docs/fleet.md "Authenticated forwarding"). */
#define RS_FLEET_AUTH_KEYS 8
#define RS_FLEET_SLOTS	   (RS_FLEET_SLOT_KEYS + RS_FLEET_AUTH_KEYS)
/* Base slots of the two tables in the one inner map. */
#define RS_FLEET_CURRENT   0
#define RS_FLEET_PREVIOUS  RS_FLEET_SLOTS
#define RS_FLEET_MAP_SLOTS (2 * RS_FLEET_SLOTS)
/* Owner byte: 0 = nobody (steer locally), else member index + 1. */
#define RS_FLEET_NO_OWNER 0
/* Forwards a packet may take: entry -> owner -> previous owner. */
#define RS_FLEET_MAX_HOPS     2
#define RS_FLEET_DEFAULT_PORT 7440
#define RS_FLEET_MAGIC	      0x52534631u /* "RSF1", network order on the wire */
/*
 * 2: the header carries a key id and a tag (struct rs_fleet_encap); every
 * member takes it, and unsigned packets are sent in it. 3: the same
 * header, its tag over a shorter message (struct rs_fleet_tag_msg), sent
 * only to members whose record says they take it (docs/fleet.md
 * "Upgrading").
 */
#define RS_FLEET_WIRE_VERSION 2
#define RS_FLEET_WIRE_MAX     3
/* Outer IPv4 (no options) + UDP + struct rs_fleet_encap. */
#define RS_FLEET_ENCAP_LEN (20 + 8 + 16)
/* Outer IPv6 (no extension headers) + UDP + struct rs_fleet_encap. */
#define RS_FLEET_ENCAP6_LEN (40 + 8 + 16)

/*
 * An address as the fleet maps hold it, network order: IPv6, or IPv4
 * mapped (::ffff:a.b.c.d), so one key type serves both families.
 */
struct rs_fleet_addr {
	__u32 w[4];
};

struct rs_fleet_header {
	__u64 version;	 /* etcd revision the table was built from */
	__u32 nmembers;	 /* members in slots 1..nmembers */
	__u32 self;	 /* this host's member index, RS_NONE if not a member */
	__u32 self_addr; /* IPv4, network order: source of forwarded packets */
	__u16 port;	 /* UDP port of forwarded packets, host order */
	__u16 pad;
	/*
	 * Which table this is, counted by the daemon that installs it (0
	 * from builds before it): picks the half of rs_fleet_sip whose
	 * entries were written for it (struct rs_fleet_sip).
	 */
	__u64 gen;
};

#define RS_FLEET_MEMBER_DRAINED 0x1u
/* Its record says it takes wire version 3 (RS_FLEET_WIRE_MAX). */
#define RS_FLEET_MEMBER_WIRE3 0x2u

struct rs_fleet_member {
	__u32 addr;    /* IPv4 forwarding address, network order */
	__u32 flags;   /* RS_FLEET_MEMBER_* */
	char name[24]; /* for bpftool readers; cut at 23 characters */
};

/* A forwarding IPv6 address; all zero: none published. */
struct rs_fleet_addr6 {
	struct rs_fleet_addr addr;
	__u64 pad[2];
};

/* Per local service id: 0 owners = not fleet-steered by this table. */
struct rs_fleet_service {
	__u64 seed;   /* fleet-wide: from the service's name and seed */
	__u32 owners; /* members that own buckets of this service */
	__u32 pad;
	__u64 pad2[2];
};

struct rs_fleet_row {
	__u8 owner[RS_FLEET_ROW_OWNERS]; /* RS_FLEET_NO_OWNER or index + 1 */
};

/*
 * Two or more members publish this server ID for the service: no member
 * gets it, its packets go by the table.
 */
#define RS_FLEET_CID_CONFLICT 0x1u

/*
 * One QUIC server ID of a fleet service: which member's backend issued it.
 * len and server_id first, as the data plane compares them: 16 bytes.
 */
struct rs_fleet_cid {
	__u8 len; /* = quic_server_id_len of the service; 0: free slot */
	__u8 server_id[RS_QUIC_MAX_SERVER_ID];
	__u32 service; /* local service id */
	__u8 member;   /* RS_FLEET_NO_OWNER or member index + 1 */
	__u8 flags;    /* RS_FLEET_CID_* */
	__u16 pad;
	__u64 pad2;
};

/*
 * A forwarding key: SipHash-2-4 key words derived from one line of the
 * fleet key file (never the line itself, which also signs records), and
 * the id a packet names it by. id 0: an empty slot.
 */
struct rs_fleet_auth {
	__u64 k0;
	__u64 k1;
	__u8 id;
	__u8 pad[7];
	__u64 pad2;
};

struct rs_fleet_slot {
	union {
		struct rs_fleet_auth auth;
		struct rs_fleet_header hdr;
		struct rs_fleet_member member;
		struct rs_fleet_addr6 addr6;
		struct rs_fleet_service service;
		struct rs_fleet_row row;
		struct rs_fleet_cid cid;
	};
};

/* After the outer UDP header of a forwarded packet. */
struct rs_fleet_encap {
	__u32 magic;  /* RS_FLEET_MAGIC, network order */
	__u8 version; /* RS_FLEET_WIRE_VERSION or RS_FLEET_WIRE_MAX */
	__u8 hops;    /* forwards so far, 1..RS_FLEET_MAX_HOPS */
	__u8 key_id;  /* struct rs_fleet_auth id; 0: unsigned */
	__u8 pad;
	/*
	 * rs_fleet_tag() with that key, high word first, each in network
	 * order (0 when unsigned). Two words: the header follows 28 bytes of
	 * IPv4 and UDP, where a 64-bit field would not be aligned.
	 */
	__u32 tag[2];
};

/*
 * What a forwarded packet's tag covers (rs_fleet_tag() in rules.h): the
 * outer addresses (so a packet sniffed on its way to one host is refused
 * by any other), the header's version, hop count and key id, the inner
 * packet's length and its first bytes (zero-padded): the inner IP header
 * and the TCP or UDP header after it (20 + 20 bytes in IPv4, 40 + 24 in
 * IPv6). The payload is not covered: TCP and QUIC protect their own. As
 * few whole words as that takes, since each word costs two SipHash
 * rounds per forwarded packet: 7 for IPv4, 13 for IPv6.
 *
 * Wire version 3 hashes the same fields in fewer rounds: the outer
 * addresses, the inner bytes (40 in IPv4; 56 in IPv6: its header and the
 * TCP header up to the window, or UDP's and 8 bytes of QUIC), and then
 * the meta's first 7 bytes (version, hops, key id, pad, the length's low
 * 24 bits) as SipHash's own tail bytes, in its final block: 5 + 1 words
 * and a final block for IPv4 (55 bytes), 4 + 7 for IPv6 (95 bytes).
 */
#define RS_FLEET_TAG_INNER4  40
#define RS_FLEET_TAG_INNER6  64
#define RS_FLEET_TAG3_INNER6 56
#define RS_FLEET_TAG_HEAD4   16 /* the bytes before inner */
#define RS_FLEET_TAG_HEAD6   40
struct rs_fleet_tag_meta {
	__u8 version;
	__u8 hops;
	__u8 key_id;
	__u8 pad;
	__u32 inner_len;
};

struct rs_fleet_tag_msg {
	union {
		struct {
			__u32 src; /* network order */
			__u32 dst;
			struct rs_fleet_tag_meta meta;
			__u8 inner[RS_FLEET_TAG_INNER4];
		} v4;
		struct {
			struct rs_fleet_addr src;
			struct rs_fleet_addr dst;
			struct rs_fleet_tag_meta meta;
			__u8 inner[RS_FLEET_TAG_INNER6];
		} v6;
	};
};

/*
 * rs_fleet_peers (HASH, key struct rs_fleet_addr): forwarding addresses
 * of members, IPv4 mapped and IPv6.
 */
struct rs_fleet_peer {
	__u32 member; /* index in the current table, RS_NONE if only previous */
};

/*
 * rs_fleet_sip (ARRAY, RS_FLEET_SIP_ENTRIES): SipHash's state after the
 * outer addresses of a forwarded packet's tag (rs_fleet_tag_start()),
 * computed by the daemon for each member, family and key of the table in
 * force, so that a packet pays only for the words after them: 8 rounds
 * fewer for IPv6, 2 for IPv4, and the same tags on the wire.
 *
 * The data plane takes an entry only when its words and key are the
 * packet's own (rs_fleet_sip_fits()): an index from a stale member
 * number, a half being rewritten, or no entry at all costs the full
 * computation, never a wrong tag. Two halves: the daemon writes the half
 * of the table it is about to install (header gen & 1), never the one in
 * use. Per half, member m, family f (0 IPv4, 1 IPv6), key k: k = 0 for
 * the packets this host signs to m (table key 0), k = 1 + j for those it
 * checks from m under table key j (rs_fleet_sip_index()).
 */
#define RS_FLEET_SIP_KEYS    (1 + RS_FLEET_AUTH_KEYS)
#define RS_FLEET_SIP_HALF    (RS_FLEET_MAX_MEMBERS * 2 * RS_FLEET_SIP_KEYS)
#define RS_FLEET_SIP_ENTRIES (2 * RS_FLEET_SIP_HALF)
struct rs_fleet_sip {
	__u64 head[4]; /* the message's address words (IPv4: head[0] only) */
	__u64 k0, k1;  /* the key they were hashed with */
	__u64 v[4];    /* SipHash's state after them */
	/*
	 * Signing entries (k = 0): the wire version to send the member in,
	 * RS_FLEET_WIRE_MAX if it takes it. A packet signed without a
	 * fitting entry goes in RS_FLEET_WIRE_VERSION, which all take.
	 */
	__u8 wire;
	__u8 pad[7];
};

/*
 * rs_fleet_flows (LRU_HASH, RS_FLEET_FLOWS_MAX): the owner a TCP SYN was
 * forwarded to, by 4-tuple, at the host where the flow enters. The
 * router's ECMP keeps a flow on one entry host, so every later packet of
 * the connection follows its SYN whatever the table says meanwhile; the
 * table and the second chance serve flows whose entry is lost (an LRU
 * eviction, a path the router moved).
 */
#define RS_FLEET_FLOWS_MAX 262144

struct rs_fleet_flow_key {
	struct rs_fleet_addr saddr; /* client */
	struct rs_fleet_addr daddr; /* service address */
	__u16 sport;		    /* network order */
	__u16 dport;
};

/*
 * A SYN retransmitted (same sequence number) within RS_FLEET_SYN_RETRY_NS
 * of the one that wrote its flow's entry goes where that one went, whatever the
 * table says by then (the owner it reached may have answered already), as long
 * as the current table still has that member at that address.
 */
#define RS_FLEET_SYN_RETRY_NS (4ull * 1000000000ull)

struct rs_fleet_flow {
	struct rs_fleet_addr owner; /* forwarding address of the owner */
	__u64 syn_ns;		    /* bpf_ktime_get_ns() of that SYN */
	__u32 member;		    /* the owner's index in that table */
	__u32 isn;		    /* that SYN's sequence number, as sent */
};

/* rs_fleet_stats (PERCPU_ARRAY, one entry): packets by outcome. */
struct rs_fleet_stats {
	__u64 forwarded;     /* encapsulated to the owner host */
	__u64 received;	     /* decapsulated here (we are the owner) */
	__u64 second_chance; /* no local socket: sent to the previous owner */
	__u64 hop_limit;     /* encapsulated with hops 0 or over the limit */
	__u64 forged;	     /* not from a member, bad header or inner packet */
	__u64 local_socket;  /* not ours by the table, but a local connection */
	__u64 errors;	     /* no route to the owner, failed rewrite */
	__u64 flow_hits;     /* of forwarded: to the owner its SYN went to */
	/*
	 * TCP non-SYN packets taken in here without a connection for them
	 * and nowhere left to send them: the kernel resets those.
	 */
	__u64 stray;
	/*
	 * IPv6 packets whose owner (or this host) publishes no address6:
	 * steered by this host instead (docs/fleet.md).
	 */
	__u64 no_address6;
	/*
	 * Of forwarded: QUIC datagrams sent to the member whose backend
	 * issued their connection ID (docs/fleet.md "QUIC").
	 */
	__u64 cookie_forwarded;
	/*
	 * From a member's address with our header, but without a valid tag
	 * under any key of ours (this host has a fleet key): dropped.
	 */
	__u64 unauthenticated;
};

/*
 * Tracing (`ringsteer trace`, issue 24): the data plane's own decisions as
 * events in a ring buffer. Off unless a tracer set rs_trace_ctl.enabled;
 * then each decision that passes the filters, the 1-in-N sampling and the
 * per-CPU token bucket becomes one struct rs_trace_event in rs_trace_events
 * (BPF_MAP_TYPE_RINGBUF, RS_TRACE_RING_BYTES). What the filters let through
 * but the bucket or a full buffer refused is counted in rs_trace_cpu.
 */
#define RS_TRACE_RING_BYTES (1u << 20)

enum rs_trace_hook {
	RS_TRACE_HOOK_LOOKUP = 1, /* steer_lookup (sk_lookup) */
	RS_TRACE_HOOK_TC = 2,	  /* steer_tc (TC ingress) */
	RS_TRACE_HOOK_SOCKOPS = 3,
};

/* Why the connection went where it went (one per event). */
enum rs_trace_reason {
	RS_TRACE_STICKY = 1,	   /* a live sticky entry's backend took it */
	RS_TRACE_PRIMARY = 2,	   /* the key's ring owner took it */
	RS_TRACE_SPILL = 3,	   /* owner down, drained, or no socket */
	RS_TRACE_SPILL_LOAD = 4,   /* owner (or sticky backend) at its bound */
	RS_TRACE_LEAST_LOADED = 5, /* every taker at its bound */
	RS_TRACE_NO_BACKEND = 6,   /* nobody could: fallback applied */
	/* steer_tc, QUIC cookie services */
	RS_TRACE_COOKIE_HIT = 7,     /* the DCID's server ID chose @backend */
	RS_TRACE_COOKIE_UNKNOWN = 8, /* no backend of the service has it */
	RS_TRACE_COOKIE_DOWN = 9,    /* its backend is down or has no socket */
	/* steer_tc, fleet (docs/fleet.md) */
	RS_TRACE_FLEET_FORWARD = 10,	   /* sent to fleet member @member */
	RS_TRACE_FLEET_RECEIVED = 11,	   /* from a member, unwrapped here */
	RS_TRACE_FLEET_SECOND_CHANCE = 12, /* no connection here: sent on */
	RS_TRACE_FLEET_FORGED = 13,	   /* dropped: not a member's packet */
	RS_TRACE_FLEET_UNAUTH = 14,	   /* dropped: its tag did not verify */
	RS_TRACE_FLEET_HOP_LIMIT = 15,	   /* dropped: hops out of range */
	/* steer_sockops, connections steer_lookup steered */
	RS_TRACE_ESTABLISHED = 16, /* handshake done; flags say what followed */
	RS_TRACE_CLOSED = 17,	   /* a counted connection reached TCP_CLOSE */
	/* dropped: its backend restarts, the flow waits (restart_grace) */
	RS_TRACE_HELD = 18,
	RS_TRACE_REASONS = 19, /* one past the last (reason_mask: 32 bits) */
};

/* Why the backend the client's affinity named did not take it. */
enum rs_trace_skip {
	RS_TRACE_SKIP_NONE = 0,
	RS_TRACE_SKIP_DOWN = 1,
	RS_TRACE_SKIP_DRAIN = 2,
	RS_TRACE_SKIP_NO_SOCKET = 3,
	RS_TRACE_SKIP_BOUND = 4,
};

/* rs_trace_event.flags */
#define RS_TRACE_F_STICKY_OVER 0x1u /* a live sticky entry at its bound */
#define RS_TRACE_F_COUNTED     0x2u /* ESTABLISHED: load gauge counted up */
#define RS_TRACE_F_STICKY_SET  0x4u /* ESTABLISHED: sticky entry written */
#define RS_TRACE_F_ASSIGNED    0x8u /* COOKIE_HIT: the kernel took the socket */

struct rs_trace_event {
	__u64 ts_ns;	   /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 hash;	   /* XXH64 of the affinity key */
	__u64 generation;  /* of the ring decided on (its trailer) */
	__u8 client[16];   /* network order; IPv4 in the first 4 bytes */
	__u8 local[16];	   /* the address the client dialled */
	__u16 client_port; /* host order */
	__u16 local_port;  /* host order */
	__u32 cpu;
	__u32 service;
	__u32 backend; /* chosen, RS_NONE for no backend */
	/* The key's ring owner (first point with an active ordinal). */
	__u32 primary;
	__u32 sticky; /* backend of a live sticky entry, else RS_NONE */
	__u32 point;  /* ring slot the walk started at (0: sticky hit) */
	/* With RS_TRACE_SKIP_BOUND: the passed-over backend's load, bound */
	__u32 load;
	__u32 bound;
	__u8 hook;     /* enum rs_trace_hook */
	__u8 family;   /* AF_INET or AF_INET6 */
	__u8 protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 reason;   /* enum rs_trace_reason */
	__u8 skip;     /* enum rs_trace_skip, of sticky, else of primary */
	__u8 verdict;  /* SK_PASS or SK_DROP */
	__u8 flags;    /* RS_TRACE_F_* */
	__u8 pad;
	/* FLEET_FORWARD, FLEET_SECOND_CHANCE: member index, RS_NONE unknown */
	__u32 member;
};

/*
 * rs_trace_ctl (ARRAY, one entry): what to trace. `enabled` first: with
 * tracing off it is the one word a decision reads. Written whole by the
 * tracer (one update), so a decision sees old or new filters, never half.
 */
struct rs_trace_ctl {
	__u32 enabled;
	__u32 service;	    /* RS_NONE: any */
	__u32 backend;	    /* chosen backend; RS_NONE: any */
	__u32 reason_mask;  /* bit 1 << reason; 0: any */
	__u32 sample;	    /* 1 in @sample of the matching decisions; 0: all */
	__u32 rate;	    /* events per second per CPU; 0: no bucket */
	__u32 burst;	    /* the bucket's depth (events) */
	__u32 owner;	    /* pid of the tracer, for the refusal message */
	__u8 client_family; /* 0: any client */
	__u8 client_plen;   /* prefix of @client */
	__u8 hook_mask;	    /* bit 1 << enum rs_trace_hook; 0: any */
	__u8 pad[5];
	__u8 client[16]; /* network order */
};

/*
 * rs_trace_cpu (PERCPU_ARRAY, one entry): the sampling counter and token
 * bucket of this CPU beside its counters, so an event costs one per-CPU
 * lookup. Counters only grow; the daemon shows their sums.
 */
struct rs_trace_cpu {
	__u64 emitted;	 /* events in the ring buffer */
	__u64 lost_full; /* matched, but the ring buffer was full */
	__u64 lost_rate; /* matched and sampled, but the bucket was empty */
	__u64 matched;	 /* passed the filters (sampling counts these) */
	__u64 tokens;	 /* bucket state */
	__u64 refill_ns; /* bucket state: time of the last refill */
};

/* Input/output of the hash self-test program (BPF_PROG_TEST_RUN). */
struct rs_hash_probe {
	struct rs_affinity_key key;
	__u64 seed;
	__u64 hash;
};

/*
 * Output of the clock self-test program: CLOCK_MONOTONIC, then the sticky
 * TTLs' cached reading of it (bpf/lib/coarse_clock.bpf.h), then
 * CLOCK_MONOTONIC again, in one run.
 */
struct rs_clock_probe {
	__u64 before_ns;
	__u64 cached_ns;
	__u64 after_ns;
};

/*
 * The layout this file promises, checked where both sides compile it. A
 * size that changes is a new ABI (RS_ABI_VERSION); an offset below is one
 * the BPF code reads or writes by position, not by field name.
 */
#define RS_ABI_SIZE(type, size)                                                \
	_Static_assert(sizeof(struct type) == (size),                          \
		       #type " is " #size " bytes")
#define RS_ABI_OFFSET(type, field, off)                                        \
	_Static_assert(__builtin_offsetof(struct type, field) == (off),        \
		       #type "." #field " is at byte " #off)

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
RS_ABI_SIZE(rs_service_stats, 80);
RS_ABI_SIZE(rs_meta, 24);
RS_ABI_SIZE(rs_hash_probe, 40);
RS_ABI_SIZE(rs_clock_probe, 24);
RS_ABI_SIZE(rs_fleet_header, 32);
RS_ABI_SIZE(rs_fleet_member, 32);
RS_ABI_SIZE(rs_fleet_service, 32);
RS_ABI_SIZE(rs_fleet_row, 32);
RS_ABI_SIZE(rs_fleet_cid, 32);
RS_ABI_OFFSET(rs_fleet_cid, service, 16);
RS_ABI_SIZE(rs_fleet_slot, 32);
RS_ABI_SIZE(rs_fleet_addr6, 32);
RS_ABI_SIZE(rs_fleet_encap, 16);
RS_ABI_SIZE(rs_fleet_auth, 32);
RS_ABI_SIZE(rs_fleet_tag_msg, 104);
RS_ABI_SIZE(rs_fleet_tag_meta, 8);
_Static_assert(sizeof(((struct rs_fleet_tag_msg *)0)->v4) == 56,
	       "an IPv4 tag covers 7 words");
RS_ABI_OFFSET(rs_fleet_tag_msg, v4.inner, RS_FLEET_TAG_HEAD4);
RS_ABI_OFFSET(rs_fleet_tag_msg, v6.inner, RS_FLEET_TAG_HEAD6);
RS_ABI_SIZE(rs_fleet_addr, 16);
RS_ABI_SIZE(rs_fleet_peer, 4);
RS_ABI_SIZE(rs_fleet_sip, 88);
RS_ABI_SIZE(rs_fleet_stats, 96);
RS_ABI_SIZE(rs_fleet_flow_key, 36);
RS_ABI_SIZE(rs_fleet_flow, 32);
RS_ABI_SIZE(rs_trace_event, 104);
RS_ABI_OFFSET(rs_trace_event, client, 24);
RS_ABI_SIZE(rs_trace_ctl, 56);
RS_ABI_OFFSET(rs_trace_ctl, enabled, 0);
RS_ABI_SIZE(rs_trace_cpu, 48);

#endif /* RINGSTEER_ABI_H */

/* SPDX-License-Identifier: MIT */
/*
 * Fleet mode's maps and wire format: the fleet table, forwarding
 * (encapsulation, authentication tags), peers, flows, statistics.
 */
#ifndef RINGSTEER_ABI_FLEET_H
#define RINGSTEER_ABI_FLEET_H

#include "abi_maps.h" /* the QUIC server IDs of rs_cookie */

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

#endif /* RINGSTEER_ABI_FLEET_H */

/* SPDX-License-Identifier: MIT */
/*
 * The ABI's limits and ids that every map and program shares (abi.h
 * gathers the themed headers; include the one you use). Also the
 * macros the headers check their layouts with.
 */
#ifndef RINGSTEER_ABI_BASE_H
#define RINGSTEER_ABI_BASE_H

#include <linux/types.h>

/* "No backend" (and no service, no owner) wherever an id is expected. */
#define RS_NONE 0xffffffffu

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
/*
 * map_flags of every ring map and of rs_rings' inner template, which the
 * kernel requires to be equal: BPF_F_INNER_MAP (1 << 12: each ring sized
 * to its points) | BPF_F_MMAPABLE (1 << 10, ABI 11: the daemon writes a
 * new ring through mmap() in one pass, where bpf_map_update_batch copied
 * and stored it slot by slot, about 0.4 s at 823,000 slots).
 */
#define RS_RING_MAP_FLAGS 0x1400u
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

/*
 * The layout each abi_*.h promises, checked at its end where both sides
 * compile it. A size that changes is a new ABI (RS_ABI_VERSION); an
 * offset checked is one the BPF code reads or writes by position, not by
 * field name.
 */
#define RS_ABI_SIZE(type, size)                                                \
	_Static_assert(sizeof(struct type) == (size),                          \
		       #type " is " #size " bytes")
#define RS_ABI_OFFSET(type, field, off)                                        \
	_Static_assert(__builtin_offsetof(struct type, field) == (off),        \
		       #type "." #field " is at byte " #off)

#endif /* RINGSTEER_ABI_BASE_H */

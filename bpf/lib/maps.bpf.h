/* SPDX-License-Identifier: MIT */
/*
 * Maps of the data plane. All pinned by name under the daemon's bpffs root
 * so a restarted daemon, the CLI and `bpftool map dump pinned` share them.
 */
#ifndef RS_BPF_MAPS_H
#define RS_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <ringsteer/abi.h>
#include <ringsteer/quic_lb.h>
#include <ringsteer/rules.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_meta);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_MAX_BINDS);
	__type(key, struct rs_bind_exact_key);
	__type(value, struct rs_bind);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_binds_exact SEC(".maps");

/*
 * Ports no service listens on (rs_port_word()): checked before any bind
 * lookup, so a connection or datagram to any other port, a SYN flood at
 * one included, costs one array read.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_PORT_WORDS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, RS_MAX_BINDS);
	__type(key, struct rs_bind_key);
	__type(value, struct rs_bind);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_binds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct rs_service);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct rs_backend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_backends SEC(".maps");

/*
 * Slot = rs_socket_slot(backend, family). The daemon closes its copy of each
 * socket right after the insert, so a backend that exits empties its own slot.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, RS_SOCKMAP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_sockets SEC(".maps");

/*
 * Generations (abi_maps.h): every socket of a generations backend by its
 * cookie, each backend slot's working cookie, and the flows' generations.
 * Sized down to one entry when no service has generations
 * (dataplane_sizing.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, RS_GEN_SOCKETS_MAX);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_gen_sockets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_SOCKMAP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_gen_working SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_GEN_FLOWS_DEFAULT);
	__type(key, struct rs_udp_flow_key);
	__type(value, struct rs_udp_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_udp_flows SEC(".maps");

/*
 * The template of every ring (RS_RING_MAP_FLAGS): the kernel swaps in
 * only an inner map whose flags equal it. BPF_F_INNER_MAP lets each ring
 * be sized to its own point count, BPF_F_MMAPABLE lets the daemon write a
 * new ring through mmap() before it swaps the outer slot.
 */
struct rs_ring_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, RS_RING_MAP_FLAGS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_ring_slot);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RS_MAX_SERVICES);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct rs_ring_map);
} rs_rings SEC(".maps");

struct rs_sticky_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* each service's map is sized by the daemon */
	__type(key, struct rs_affinity_key);
	__type(value, struct rs_sticky_entry);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RS_MAX_SERVICES);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct rs_sticky_map);
} rs_sticky SEC(".maps");

/*
 * The load gauge (struct rs_load): established steered TCP connections
 * per backend and per service, counted by steer_sockops with atomic adds
 * and read by steer_lookup for the bound. Shared values, not per-CPU: the
 * bound needs the exact figure at every decision.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RS_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct rs_load);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_backend_load SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RS_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct rs_load);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_service_load SEC(".maps");

/*
 * Per counted connection, written by builds before the RS_CONN_COUNTED
 * mark in rs_listen (abi.h): read only at close, to count down the
 * connections such a build counted that are still open after an upgrade.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rs_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_conn SEC(".maps");

/*
 * Per backend listening socket, written by the daemon, cloned by the
 * kernel into every accepted child, whose copy then records whether the
 * connection is counted (include/ringsteer/abi.h). Freed with the socket:
 * nothing here outlives a connection or needs cleaning.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, struct rs_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_listen SEC(".maps");

/* QUIC server IDs of cookie services; read by the TC program. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_MAX_BACKENDS);
	__type(key, struct rs_cookie_key);
	__type(value, struct rs_cookie);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_cookies SEC(".maps");

/* QUIC-LB configs (and keys) of cookie services; read by the TC program. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_SERVICES *RS_QUIC_LB_CONFIGS);
	__type(key, __u32);
	__type(value, struct rs_quic_lb);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_quic_lb SEC(".maps");

/* Work space of an encrypted CID's decode (bpf/lib/quic_lb.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_quic_lb_work);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_quic_lb_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct rs_backend_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_backend_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct rs_service_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_service_stats SEC(".maps");

/*
 * Fleet tables (abi.h, docs/fleet.md): the table in force and the one it
 * replaced, in one inner map written whole and swapped in, like a ring.
 */
struct rs_fleet_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_FLEET_MAP_SLOTS);
	__type(key, __u32);
	__type(value, struct rs_fleet_slot);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct rs_fleet_map);
} rs_fleet SEC(".maps");

/*
 * Members of the current and previous table, by IPv4 (mapped) and IPv6
 * address: who may send us packets.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * RS_FLEET_MAX_MEMBERS);
	__type(key, struct rs_fleet_addr);
	__type(value, struct rs_fleet_peer);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_fleet_peers SEC(".maps");

/*
 * SipHash's state after each member pair's outer addresses (abi.h struct
 * rs_fleet_sip): the daemon's work, so that a tag costs only the rest.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_FLEET_SIP_ENTRIES);
	__type(key, __u32);
	__type(value, struct rs_fleet_sip);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_fleet_sip SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RS_FLEET_FLOWS_MAX);
	__type(key, struct rs_fleet_flow_key);
	__type(value, struct rs_fleet_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_fleet_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_fleet_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_fleet_stats SEC(".maps");

/*
 * The message a forwarding tag covers (struct rs_fleet_tag_msg): its
 * header words always, the inner bytes only when a short inner packet
 * must be zero-padded (fleet_tag_of()); 104 bytes more on steer_tc's
 * stack would pass its 512. Per CPU,
 * and TC programs are not preempted, so one packet's message is never
 * another's. Pinned like every map, so that all programs share one
 * (dataplane_share.c), though nothing in it outlives a run.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_fleet_tag_msg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_fleet_scratch SEC(".maps");

/*
 * Tracing (abi.h "Tracing", bpf/lib/trace.bpf.h): the control word and
 * filters, the events, and per CPU the sampling counter, token bucket and
 * lost-event counters. Pinned like every map: the CLI opens them by name
 * under the daemon's bpffs directory, and every program shares them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_trace_ctl);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_trace_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RS_TRACE_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_trace_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_trace_cpu);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rs_trace_cpu SEC(".maps");

/*
 * Never called. The map-in-map templates above name key and value types
 * that a program may use nowhere else; clang then emits only forward
 * declarations for them and libbpf cannot size the inner maps. Parameters
 * of those types make clang emit them in full, at no cost to any program.
 */
static __attribute__((used, noinline)) int rs_btf_anchor(
	const struct rs_ring_slot *ring, const struct rs_affinity_key *key,
	const struct rs_sticky_entry *sticky, const struct rs_fleet_slot *fleet)
{
	return ring && key && sticky && fleet;
}

#endif /* RS_BPF_MAPS_H */

// SPDX-License-Identifier: MIT
/*
 * Test-only object: one global of every struct and enum of
 * include/ringsteer/abi.h, so that its BTF describes them all and
 * tests/unit/abi/test_abi.c can print the layout the pins are made of.
 * test_abi fails naming any struct or enum left out here.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringsteer/abi.h>

enum rs_backend_state layout_rs_backend_state;
enum rs_key_policy layout_rs_key_policy;
enum rs_cookie_policy layout_rs_cookie_policy;
enum rs_fallback layout_rs_fallback;
struct rs_bind_key layout_rs_bind_key;
struct rs_bind layout_rs_bind;
struct rs_bind_exact_key layout_rs_bind_exact_key;
struct rs_service layout_rs_service;
struct rs_sticky_entry layout_rs_sticky_entry;
struct rs_cookie_key layout_rs_cookie_key;
struct rs_cookie layout_rs_cookie;
struct rs_aes128_key layout_rs_aes128_key;
enum rs_quic_lb_mode layout_rs_quic_lb_mode;
struct rs_quic_lb layout_rs_quic_lb;
struct rs_quic_lb_key_args layout_rs_quic_lb_key_args;
struct rs_backend layout_rs_backend;
struct rs_load layout_rs_load;
struct rs_conn layout_rs_conn;
enum rs_op_state layout_rs_op_state;
struct rs_affinity_key layout_rs_affinity_key;
struct rs_ring_header layout_rs_ring_header;
struct rs_ring_trailer layout_rs_ring_trailer;
struct rs_ring_flat layout_rs_ring_flat;
struct rs_ring_buckets layout_rs_ring_buckets;
struct rs_point layout_rs_point;
struct rs_ring_slot layout_rs_ring_slot;
struct rs_backend_stats layout_rs_backend_stats;
struct rs_service_stats layout_rs_service_stats;
struct rs_udp_flow_key layout_rs_udp_flow_key;
struct rs_udp_flow layout_rs_udp_flow;
struct rs_meta layout_rs_meta;
struct rs_fleet_addr layout_rs_fleet_addr;
struct rs_fleet_header layout_rs_fleet_header;
struct rs_fleet_member layout_rs_fleet_member;
struct rs_fleet_addr6 layout_rs_fleet_addr6;
struct rs_fleet_service layout_rs_fleet_service;
struct rs_fleet_row layout_rs_fleet_row;
struct rs_fleet_cid layout_rs_fleet_cid;
struct rs_fleet_auth layout_rs_fleet_auth;
struct rs_fleet_slot layout_rs_fleet_slot;
struct rs_fleet_encap layout_rs_fleet_encap;
struct rs_fleet_tag_meta layout_rs_fleet_tag_meta;
struct rs_fleet_tag_msg layout_rs_fleet_tag_msg;
struct rs_fleet_peer layout_rs_fleet_peer;
struct rs_fleet_sip layout_rs_fleet_sip;
struct rs_fleet_flow_key layout_rs_fleet_flow_key;
struct rs_fleet_flow layout_rs_fleet_flow;
struct rs_fleet_stats layout_rs_fleet_stats;
enum rs_trace_hook layout_rs_trace_hook;
enum rs_trace_reason layout_rs_trace_reason;
enum rs_trace_skip layout_rs_trace_skip;
struct rs_trace_event layout_rs_trace_event;
struct rs_trace_ctl layout_rs_trace_ctl;
struct rs_trace_cpu layout_rs_trace_cpu;
struct rs_hash_probe layout_rs_hash_probe;
struct rs_clock_probe layout_rs_clock_probe;

char LICENSE[] SEC("license") = "Dual MIT/GPL";

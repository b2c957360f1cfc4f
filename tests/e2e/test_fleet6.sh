#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: fleet mode for IPv6 clients (docs/fleet.md). The PoP of
# test_fleet.sh (client, router with ECMP over three hosts, etcd, all in
# namespaces made here), with the service on [2001:db8::10]:80 too, an
# IPv6 ECMP route (fib_multipath_hash_policy=1) and every host publishing
# its address6:
#   every connection of each of 200 IPv6 clients reaches one backend,
#   connections entering elsewhere are forwarded in outer IPv6; IPv4 keeps
#   working beside it; forged and over-hop-limit IPv6 packets are dropped
#   and counted; with 100 long-lived IPv6 connections open (a line every
#   200 ms) and IPv6 connection load running: a drain and undrain, and the
#   router dropping a path (second chance), lose nothing; a member without
#   address6 (and out of the router's IPv6 group): status and --check say
#   so, its IPv6 clients are steered where they enter (counted), the
#   others keep their backends, and no connection fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/fleet_lib.sh

e2e_fleet_setup fl6
# shellcheck disable=SC2034 # read by rs_fleet_conf (scripts/fleet-netns.sh)
RS_FLEET_IPV6=1
rs_fleet_ecmp6 1 2 3

# clients6 NAME COUNT ROUNDS: every IPv6 source connects ROUNDS times
# (prefix6 = 128: one key per address).
clients6() {
	rs_in_client build/tools/rs_client --target '[2001:db8::10]:80' \
		--src-base 2001:db8:1::1 --count "$2" --rounds "$3" \
		--concurrency 16 >"$OUT/$1" 2>/dev/null || true
}

clients4() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count "$2" --rounds "$3" \
		--concurrency 16 >"$OUT/$1" 2>/dev/null || true
}

stat_sum() { # stat_sum FIELD: over the three hosts
	echo $(($(stat_of 1 "$1") + $(stat_of 2 "$1") + $(stat_of 3 "$1")))
}

# encap6 HOPS: our wire header around an IPv6 TCP SYN to the service.
encap6() {
	encap_header "$1"
	# IPv6, payload 20, TCP, hop limit 64, 2001:db8:1::77 -> 2001:db8::10
	printf '\x60\x00\x00\x00\x00\x14\x06\x40'
	printf '\x20\x01\x0d\xb8\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x77'
	printf '\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10'
	printf '\x0f\xa0\x00\x50\x00\x00\x00\x01\x00\x00\x00\x00'
	printf '\x50\x02\x20\x00\x00\x00\x00\x00'
}

# send_encap6 NS SRC HOPS: one encapsulated packet to host 1's address6.
send_encap6() {
	encap6 "$3" >"$OUT/pkt6"
	nsenter --net="/run/netns/$1" -- socat -u "OPEN:$OUT/pkt6" \
		"UDP6-SENDTO:[2001:db8:11::2]:7440,bind=[$2]" 2>/dev/null || true
}

for i in 1 2 3; do start_host "$i"; done
e2e_check "ringsteerd --check accepts the IPv6 fleet config" \
	build/ringsteerd --check -c "$OUT/h1.conf"
e2e_check "all three hosts agree on three members" \
	wait_members host-1,host-2,host-3 1 2 3
ctl 1 fleet status
e2e_eq "fleet status lists every member's address6" \
	"$(ctl 1 -j fleet status | jq -r '[.members[].address6] | join(",")')" \
	2001:db8:11::2,2001:db8:12::2,2001:db8:13::2

echo "# affinity across the fleet: 200 IPv6 clients x 4 connections"
fwd0=$(stat_sum forwarded)
clients6 base 200 4
e2e_eq "no failed connections" "$(e2e_errors "$OUT/base")" 0
e2e_eq "every client reaches one backend only" "$(e2e_unstable "$OUT/base")" 0
e2e_eq "4 replies per client" "$(wc -l <"$OUT/base")" 800
e2e_eq "all six backends used" "$(awk '{print $3}' "$OUT/base" | sort -u | wc -l)" 6
fwd=$(($(stat_sum forwarded) - fwd0))
e2e_check "IPv6 connections entered at other hosts were forwarded ($fwd packets)" \
	test "$fwd" -gt 100
e2e_eq "no IPv6 packet lacked an address6" "$(stat_sum no_address6)" 0
src=$(awk 'NR == 1 {print $1}' "$OUT/base")
be=$(awk 'NR == 1 {print $3}' "$OUT/base")
owner=$(ctl 2 -j lookup web "$src" | jq -r .owner)
e2e_eq "ringsteer lookup names the owner host of $src" "h${owner#host-}-x" "${be%-*}-x"
clients4 base4 100 2
e2e_eq "IPv4 beside it: no failed connections" "$(e2e_errors "$OUT/base4")" 0
e2e_eq "IPv4 beside it: every client reaches one backend only" \
	"$(e2e_unstable "$OUT/base4")" 0

echo "# forged and over-hop-limit IPv6 packets"
ip -n "$RS_NS_CLIENT" -6 route add 2001:db8:11::/64 via "$RS_EDGE_IP6"
forged0=$(stat_of 1 forged)
hop0=$(stat_of 1 hop_limit)
recv0=$(stat_of 1 received)
send_encap6 "$RS_NS_CLIENT" "$RS_CLIENT_IP6" 1 # not a member
send_encap6 "$(rs_fleet_ns 2)" 2001:db8:12::2 3 # a member, 3 hops > 2
send_encap6 "$(rs_fleet_ns 2)" 2001:db8:12::2 0 # a member, 0 hops
for ((t = 0; t < 50; t++)); do
	(($(stat_of 1 hop_limit) - hop0 >= 2)) && break
	sleep 0.1
done
e2e_eq "a packet from a non-member is dropped as forged" \
	"$(($(stat_of 1 forged) - forged0))" 1
e2e_eq "hop counts 3 and 0 are dropped at the hop limit" \
	"$(($(stat_of 1 hop_limit) - hop0))" 2
e2e_eq "none reached the stack" "$(($(stat_of 1 received) - recv0))" 0

# 100 long-lived IPv6 connections (2001:db8:1::1:1 .. ::1:64), a line
# every 200 ms through every change below.
rs_bg_start idle rs_in_client build/tools/rs_idle --tcp '[2001:db8::10]:80' \
	--count 100 --src 2001:db8:1::1:1 --sources 100 --step 1 --ping
rs_bg_wait_ready idle
held() { # held HOSTS...: established long-lived connections there
	local i n=0
	for i in "$@"; do
		n=$((n + $(rs_in_host "$i" ss -Htn state established \
			'( sport = :80 )' | grep -c '\[2001:db8:1::1:[0-9a-f]*\]' || true)))
	done
	echo "$n"
}
for ((t = 0; t < 100; t++)); do
	[[ $(held 1 2 3) == 100 ]] && break
	sleep 0.05
done
e2e_eq "100 long-lived IPv6 connections established" "$(held 1 2 3)" 100
e2e_check "they are spread over the hosts (forwarded ones among them)" \
	test "$(held 1)" -lt 100
idle_open() { # connections still open, after two more pings
	pinged idle || {
		echo "no pings from rs_idle"
		return 0
	}
	grep '^closed' "$(rs_bg_err idle)" >&2 || true
	grep '^open' "$(rs_bg_out idle)" | tail -n 1 | awk '{print $2}'
}

# load NAME: IPv6 connections from 50 clients for 2 s, in the background.
load() {
	rs_bg_start "$1" rs_in_client build/tools/rs_client \
		--target '[2001:db8::10]:80' --src-base 2001:db8:1::1 \
		--count 50 --loop-seconds 2 --concurrency 2
}

echo "# drain host-2 under IPv6 load: its keys move, everyone else's stay"
check_drain clients6 "IPv6 "

echo "# the router drops host-2's IPv6 path, host-2 is drained: second chance"
sc0=$(stat_sum second_chance)
load load-path
rs_fleet_ecmp6 1 3
ctl 1 fleet drain host-2 >/dev/null
e2e_check "path dropped and drained: host-2 leaves every table" \
	wait_members host-1,host-3 1 2 3
clients6 pathdrop 200 2
e2e_eq "path dropped: no failed connections" "$(e2e_errors "$OUT/pathdrop")" 0
e2e_eq "path dropped: every client reaches one backend only" \
	"$(e2e_unstable "$OUT/pathdrop")" 0
e2e_eq "path dropped: long-lived connections of host-2 still reach it" \
	"$(idle_open)" 100
sc=$(($(stat_sum second_chance) - sc0))
e2e_check "their packets went there by second chance ($sc)" test "$sc" -gt 0
ctl 1 fleet undrain host-2 >/dev/null
rs_fleet_ecmp6 1 2 3
e2e_check "path back, undrained: three members again" \
	wait_members host-1,host-2,host-3 1 2 3
wait "${RS_BG_PID[load-path]}" || true
e2e_eq "IPv6 load through the path drop: no failed connections" \
	"$(load_failed load-path)" 0
clients6 pathback 200 1
e2e_eq "path back: no failed connections" "$(e2e_errors "$OUT/pathback")" 0
e2e_eq "path back: long-lived connections stay" "$(idle_open)" 100
rs_bg_stop idle

echo "# host-3 without address6: its IPv6 clients stay where they enter"
sed -i '/^address6 = /d' "$OUT/h3.conf"
e2e_check "--check says what that means" \
	sh -c "build/ringsteerd --check -c '$OUT/h3.conf' | grep -q 'no address6'"
e2e_check "ringsteer reload (host-3 rejoins without address6)" ctl 3 reload
for ((t = 0; t < 100; t++)); do
	[[ $(ctl 1 -j fleet status | jq -r '.members[2].address6') == null ]] && break
	sleep 0.1
done
e2e_eq "fleet status shows host-3 without address6" \
	"$(ctl 1 -j fleet status | jq -r '.members[2].address6')" null
e2e_check "fleet status warns about it" \
	sh -c "build/ringsteer -s '$OUT/h1.sock' fleet status | grep -q 'without address6'"
wait_members host-1,host-2,host-3 1 2 3 || true
# As docs/fleet.md advises: out of the router's IPv6 group (a host without
# address6 cannot forward the IPv6 packets entering it either).
rs_fleet_ecmp6 1 2
na0=$(stat_sum no_address6)
clients6 noaddr6 200 2
e2e_eq "no address6: no failed IPv6 connections" "$(e2e_errors "$OUT/noaddr6")" 0
e2e_check "no address6: its IPv6 clients were steered where they entered ($(($(stat_sum no_address6) - na0)))" \
	test "$(stat_sum no_address6)" -gt "$na0"
e2e_mapping "$OUT/noaddr6" >"$OUT/noaddr6.map"
e2e_eq "no address6: clients of host-1 and host-2 kept their backend" \
	"$(join "$OUT/base.map" "$OUT/noaddr6.map" | awk '$2 !~ /^h3-/ && $2 != $3' | wc -l)" 0
clients4 noaddr4 100 2
e2e_eq "no address6: IPv4 clients still keep one backend" \
	"$(e2e_unstable "$OUT/noaddr4")" 0
e2e_eq "no address6: no failed IPv4 connections" "$(e2e_errors "$OUT/noaddr4")" 0

e2e_summary

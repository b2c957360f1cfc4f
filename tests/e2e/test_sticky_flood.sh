#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: a flood of SYNs from forged addresses does not evict real
# clients from the sticky table (issue 9, item 10). TCP sticky entries are
# written when a handshake completes (steer_sockops where the backends'
# listeners are, from the listener's rs_listen storage), never for a SYN alone.
#   20 real clients connect: their entries exist; a weight change makes
#   the ring want to move some of them, so only the sticky table keeps
#   them; 204k SYNs from 51,000 forged sources in 198.19.0.0/16 (no
#   handshake); the 20 clients connect again and land where they were.
#   --detach removes the sockops link with the rest.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup stf

FLOOD=200000 # SYNs sk_lookup must see; a few more are sent (rare drops)
# 51,000 forged sources in 198.19.0.0/16, 4 SYNs each in a row: a source
# seen again soon is what an active client looks like to an LRU (the
# kernel's LRU spares recently referenced entries), so the flood competes
# with the real clients instead of only with itself.
FORGED_BASE=198.19.0.0

cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 600
sticky_max = 1024

[backend web-1]
service = web
address = 127.0.0.1:8081

[backend web-2]
service = web
address = 127.0.0.1:8082
CONF


for i in 1 2; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "web-$i" --hold \
		--tcp "127.0.0.1:808$i"
	rs_bg_wait_ready "be$i"
done
# Forged sources get their SYN-ACKs routed back to the client namespace,
# which drops them (not local, no forwarding): nothing leaves the test.
ip -n "$RS_NS_EDGE" route add 198.19.0.0/16 via "$RS_CLIENT_IP4"

rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10

echo "# the sockops hook is attached and pinned"
e2e_check "daemon attached steer_sockops" \
	grep -q "steer_sockops attached at " "$(rs_bg_err d1)"
e2e_check "its link is pinned next to the others" \
	bpftool link show pinned "$BPFFS/steer_sockops_link"
e2e_eq "rs_meta.handoff" \
	"$(bpftool -j map lookup pinned "$BPFFS/rs_meta" key 0 0 0 0 | jq '.formatted.value.handoff')" 1
e2e_check "no cgroup2 mount left behind" \
	bash -c "! grep -q ' $OUT/cgroup2-' /proc/self/mountinfo"

# sticky_dump: the entries of web's sticky table (inner map of rs_sticky).
sticky_map_id() {
	local hex
	hex=$(bpftool -j map lookup pinned "$BPFFS/rs_sticky" key 0 0 0 0 |
		jq -r '[.value[] | ltrimstr("0x")] | reverse | join("")')
	echo $((16#$hex))
}
sticky_dump() { bpftool -j map dump id "$(sticky_map_id)"; }

# moved NAME: clients of run NAME on another backend than in "before".
moved() {
	join "$OUT/before.map" <(e2e_mapping "$OUT/$1") | awk '$2 != $3' | wc -l
}

clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count 20 --rounds 1 >"$OUT/$1" 2>/dev/null || true
}

echo "# 20 real clients: sticky entries written at establishment"
clients before
e2e_eq "all 20 connected" "$(e2e_errors "$OUT/before")" 0
e2e_mapping "$OUT/before" >"$OUT/before.map"
e2e_eq "the sticky table holds the 20 clients" "$(sticky_dump | jq length)" 20
sticky=0
for i in $(seq 1 20); do
	r=$(rsjson lookup web "198.18.1.$i" | jq -r .reason)
	[[ $r == sticky ]] && sticky=$((sticky + 1))
done
e2e_eq "ringsteer lookup says sticky for each" "$sticky" 20

echo "# a weight change the ring would move clients for"
moving=$(rsjson sim web weight web-2 8 | jq .sticky_owner_changes)
e2e_check "the ring would move some of them ($moving)" test "$moving" -ge 3
rsjson backend weight web-2 8 >/dev/null
clients after_weight
e2e_eq "the sticky table keeps them: clients moved" "$(moved after_weight)" 0

echo "# $FLOOD SYNs from forged sources, no handshake"
lookups() {
	bpftool -j map dump pinned "$BPFFS/rs_service_stats" |
		jq '[.[] | select(.formatted.key == 0) | .formatted.values[].value.lookups] | add'
}
# One of the 20 holds 5 connections open through the flood: the load
# gauge must count those and not one forged SYN.
rs_bg_start held rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.1.1 --count 5
rs_bg_wait_ready held
l0=$(lookups)
start=$(date +%s)
rs_in_client build/tools/syn_flood --target 198.18.0.10:80 \
	--src-base "$FORGED_BASE" --sources 51000 --burst 4 --count 204000 \
	>"$OUT/flood"
echo "  $(cat "$OUT/flood") in $(($(date +%s) - start)) s"
seen=$(($(lookups) - l0))
e2e_check "sk_lookup saw the flood ($seen SYNs)" test "$seen" -ge "$FLOOD"

echo "# after the flood"
e2e_eq "no forged SYN was counted as a connection: service active" \
	"$(e2e_json services | jq '.services[0].active')" 5
e2e_eq "the 5 held connections are still open" \
	"$(tail -n 1 "$(rs_bg_out held)")" "open 5"
rs_bg_stop held
e2e_eq_within 5 "and the gauge returns to 0 when they close" 0 e2e_svc_active
entries=$(sticky_dump | jq length)
e2e_eq "the sticky table still holds just the 20 clients" "$entries" 20
forged=$(sticky_dump | jq '[.[] | select(.formatted.key.addr[1] == 19)] | length')
e2e_eq "no forged source has a sticky entry" "$forged" 0
clients again
e2e_eq "all 20 connected again" "$(e2e_errors "$OUT/again")" 0
e2e_eq "every client landed where it was: clients moved" "$(moved again)" 0

echo "# restart adopts the pinned sockops link; --detach removes it"
rs_bg_stop d1
rs_bg_start d2 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d2)" "sk_lookup link" 10
e2e_check "restarted daemon swapped its program in" \
	grep -q "steer_sockops swapped in" "$(rs_bg_err d2)"
clients restarted
e2e_eq "clients still where they were: moved" "$(moved restarted)" 0
link_id=$(bpftool -j link show pinned "$BPFFS/steer_sockops_link" | jq .id)
rs_bg_stop d2
build/ringsteerd -q --detach -c "$CONF"
e2e_check "the sockops link is gone after --detach" \
	bash -c "! bpftool link show id $link_id >/dev/null 2>&1"
e2e_summary

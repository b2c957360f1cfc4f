#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: restart_grace (issue 38). A UDP service (IPv4 and IPv6) and
# a QUIC cookie service, three backends each, restart_grace = 20s. While a
# backend's process is gone (killed, or handing over to a new process on
# SO_REUSEPORT), the datagrams of its flows wait for it: none reaches
# another backend (before, all its flows went to the others for the
# gap, 0.26 to 0.5 s, and a QUIC connection broke there). Its new socket
# is taken within the watch's 50 ms and every flow is back on it; so in
# a rolling restart of every backend in turn. A grace
# that ends without a socket lets the flows go on to the others; a tcp
# service refuses the key.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup rgr
# --detach where the TC filter is: in the edge namespace.
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'
N=30

write_conf() { # GRACE
	e2e_conf_global "interfaces = rs-e"
	e2e_conf_dns "restart_grace = $1"
	e2e_conf_quic "restart_grace = $1"
	for i in 1 2 3; do
		e2e_conf_dns_backend "$i"
		e2e_conf_quic_backend "$i" "check = none"
	done
}

# start_be N TAG: process b-N (SO_REUSEPORT) serving d-N and q-N.
start_be() {
	rs_bg_start "b$1-$2" rs_in_edge build/tools/rs_backend --name "b-$1" \
		--reuseport --udp "127.0.0.$1:5353" --udp "[2001:db8::1:$1]:5353" \
		--udp "127.0.0.$1:443"
	rs_bg_wait_ready "b$1-$2"
}

# dns NAME FAMILY: one datagram from each of N clients: "SRC BACKEND".
dns() {
	local target=198.18.0.10:5353 base=198.18.1.1
	[[ $2 == 6 ]] && target="[2001:db8::10]:5353" base=2001:db8:1::100
	rs_in_client build/tools/rs_client --udp --target "$target" \
		--src-base "$base" --count "$N" --rounds 1 --concurrency 4 \
		--timeout-ms 300 >"$OUT/$1.raw" 2>/dev/null || true
	awk '$2 == 0 { print $1, $3 }' "$OUT/$1.raw" | sort >"$OUT/$1"
}
# quic NAME: 12 migrating sources with q-1's connection ID.
quic() {
	rs_in_client build/tools/quic_client --target 198.18.0.10:443 \
		--src-base 198.18.2.1 --count 12 --dcid "$CID1" \
		--timeout-ms 300 >"$OUT/$1" 2>/dev/null || true
}
from() { awk -v b="$2" '$NF == b' "$OUT/$1" | wc -l; }
not_victim() { awk '$NF != "b-1" && $NF !~ /^ERR/' "$OUT/$1" | wc -l; }
has_socket() {
	[[ $(rsjson backends | jq -r ".backends[] | select(.name == \"$1\") | .has_socket") == "$2" ]]
}
held() { rsjson services | jq --arg s "$1" '.services[] | select(.name == $s) | .stats.held'; }
assigned() { rsjson backends | jq ".backends[] | select(.name == \"$1\") | .assigned"; }
# more_assigned BACKEND FROM COUNT: BACKEND took COUNT datagrams since FROM.
more_assigned() { (($(assigned "$1") >= $2 + $3)); }
# victims FAMILY: the clients of b-1 before, as one source per line.
victims() { awk '$2 == "b-1" { print $1 }' "$OUT/before$1"; }

write_conf 20s
for i in 1 2 3; do start_be "$i" 0; done
e2e_check "--check accepts restart_grace on udp services" \
	build/ringsteerd --check -c "$CONF"
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
DLOG=$(rs_bg_err d1)
e2e_wait_for "$DLOG" "sk_lookup link" 10
CID1=$(rsctl cid quic q-1)

dns before4 4
dns before6 6
quic qbefore
e2e_eq "IPv4: every client answered" "$(wc -l <"$OUT/before4")" "$N"
e2e_eq "IPv6: every client answered" "$(wc -l <"$OUT/before6")" "$N"
e2e_eq "QUIC: q-1's ID reaches b-1 from every source" "$(from qbefore b-1)" 12
victims 4 >"$OUT/victims4"
e2e_check "b-1 has IPv4 clients ($(wc -l <"$OUT/victims4"))" test -s "$OUT/victims4"

echo "# hard restart: b-1 killed, started again; its flows under load"
rs_bg_start load rs_in_client build/tools/rs_client --udp \
	--target 198.18.0.10:5353 --src-list "$OUT/victims4" --count 1000 \
	--loop-seconds 600 --concurrency 2 --timeout-ms 100 \
	--forbid b-2 --forbid b-3
a0=$(assigned d-1)
e2e_check "the load reaches b-1" rs_until 10 more_assigned d-1 "$a0" 50
kill -KILL "${RS_BG_PID[b1-0]}"
e2e_check "its socket is gone" rs_until 10 has_socket d-1 false
e2e_check "log: its flows wait for it" rs_until 10 \
	grep -q "backend d-1: socket gone; its flows wait for it up to 20 s" "$DLOG"
rsjson backends >"$OUT/gap.json"
e2e_check "backends -j: d-1 restarting, its socket gone (gone_s)" \
	jq -e '.backends[] | select(.name == "d-1") | .restarting and .sockets[0].gone_s >= 0 and .sockets[0].cookie == null' "$OUT/gap.json"
e2e_check "backends: d-1 (restarting: its flows wait for it)" \
	bash -c "build/ringsteer -s '$SOCK' backends | grep -q '^d-1 .*(restarting: its flows wait for it)'"
dns gap4 4
dns gap6 6
quic qgap
e2e_eq "gap, IPv4: none of b-1's clients reached another backend" \
	"$(join "$OUT/before4" "$OUT/gap4" | awk '$2 == "b-1" && $3 != "b-1" && $3 !~ /^ERR/' | wc -l)" 0
e2e_eq "gap, IPv6: none of b-1's clients reached another backend" \
	"$(join "$OUT/before6" "$OUT/gap6" | awk '$2 == "b-1" && $3 != "b-1" && $3 !~ /^ERR/' | wc -l)" 0
e2e_eq "gap: the other clients stayed where they were" \
	"$(cat <(join "$OUT/before4" "$OUT/gap4") <(join "$OUT/before6" "$OUT/gap6") |
		awk '$2 != "b-1" && $2 != $3' | wc -l)" 0
e2e_eq "gap, QUIC: no datagram of q-1's ID reached another backend" \
	"$(not_victim qgap)" 0
e2e_check "gap: datagrams held for d-1 ($(held dns))" test "$(held dns)" -gt 0
e2e_check "gap: datagrams held for q-1 ($(held quic))" test "$(held quic)" -gt 0
start_be 1 1
e2e_check "its new socket is taken" rs_until 10 has_socket d-1 true
rsjson backends >"$OUT/back.json"
e2e_check "backends -j: d-1's second socket, from the new process" \
	jq -e --argjson pid "${RS_BG_PID[b1-1]}" '.backends[] | select(.name == "d-1") | (.restarting | not) and .sockets[0].taken == 2 and .sockets[0].pid == $pid' "$OUT/back.json"
e2e_check "log: back after the gap" \
	grep -qE "backend d-1: socket 127.0.0.1:5353 back after [0-9]+ ms" "$DLOG"
grep -E "backend [dq]-1: socket .* back after" "$DLOG" | sed 's/^.*backend/  backend/'
a0=$(assigned d-1)
e2e_check "the load reaches the new b-1" rs_until 10 more_assigned d-1 "$a0" 50
kill -USR1 "${RS_BG_PID[load]}"
wait "${RS_BG_PID[load]}" || true
head -2 "$(rs_bg_out load)" | sed 's/^/  load: /'
e2e_eq "load: no datagram reached another backend" \
	"$(sed -n 's/^forbidden=//p' "$(rs_bg_out load)")" 0
e2e_check "load: answered by b-1" grep -q "^backend b-1=" "$(rs_bg_out load)"
dns after4 4
dns after6 6
quic qafter
e2e_eq "IPv4: no client moved" "$(join "$OUT/before4" "$OUT/after4" | awk '$2 != $3' | wc -l)" 0
e2e_eq "IPv4: every client answered" "$(wc -l <"$OUT/after4")" "$N"
e2e_eq "IPv6: no client moved" "$(join "$OUT/before6" "$OUT/after6" | awk '$2 != $3' | wc -l)" 0
e2e_eq "QUIC: q-1's ID reaches b-1 again" "$(from qafter b-1)" 12

echo "# graceful handover: a new b-1 binds beside the old one, which then closes"
rs_bg_start load2 rs_in_client build/tools/rs_client --udp \
	--target 198.18.0.10:5353 --src-list "$OUT/victims4" --count 1000 \
	--loop-seconds 600 --concurrency 2 --timeout-ms 100 \
	--forbid b-2 --forbid b-3
start_be 1 2
kill -USR2 "${RS_BG_PID[b1-1]}"
e2e_check "the new process's socket is taken" \
	rs_until 10 bash -c "[[ \$(grep -c 'backend d-1: socket 127.0.0.1:5353 (cookie' '$DLOG') -ge 3 ]]"
e2e_check "d-1 has its socket" rs_until 10 has_socket d-1 true
dns hand4 4
quic qhand
kill -USR1 "${RS_BG_PID[load2]}"
wait "${RS_BG_PID[load2]}" || true
head -2 "$(rs_bg_out load2)" | sed 's/^/  load: /'
e2e_eq "handover load: no datagram reached another backend" \
	"$(sed -n 's/^forbidden=//p' "$(rs_bg_out load2)")" 0
e2e_eq "handover: no client moved" "$(join "$OUT/before4" "$OUT/hand4" | awk '$2 != $3' | wc -l)" 0
e2e_eq "handover, QUIC: q-1's ID reaches b-1" "$(from qhand b-1)" 12
rs_bg_stop b1-1 2>/dev/null || true

echo "# a rolling restart: every backend in turn, killed and started again"
declare -A TAG=([1]=b1-2 [2]=b2-0 [3]=b3-0)
moved=0 lost=0
for i in 1 2 3; do
	kill -KILL "${RS_BG_PID[${TAG[$i]}]}"
	rs_until 10 has_socket "d-$i" false || true
	dns "roll$i" 4
	moved=$((moved + $(join "$OUT/before4" "$OUT/roll$i" | awk '$2 != $3 && $3 !~ /^ERR/' | wc -l)))
	start_be "$i" "r$i"
	TAG[$i]=b$i-r$i
	rs_until 10 has_socket "d-$i" true || lost=$((lost + 1))
done
dns rolled4 4
dns rolled6 6
e2e_eq "rolling: during each gap, no client answered by another backend" "$moved" 0
e2e_eq "rolling: every backend's socket taken again" "$lost" 0
e2e_eq "rolling, IPv4: every client answered, none moved" \
	"$(join "$OUT/before4" "$OUT/rolled4" | awk '$2 == $3' | wc -l)" "$N"
e2e_eq "rolling, IPv6: every client answered, none moved" \
	"$(join "$OUT/before6" "$OUT/rolled6" | awk '$2 == $3' | wc -l)" "$N"

echo "# a grace that ends without a socket: the flows go on"
write_conf 1s
rsctl reload >/dev/null
e2e_check "reloaded with restart_grace = 1s" \
	rs_until 10 bash -c "[[ \$(build/ringsteer -s '$SOCK' -j services | jq '.services[0].restart_grace_ms') == 1000 ]]"
kill -KILL "${RS_BG_PID[${TAG[1]}]}"
e2e_check "log: no socket within the grace" \
	e2e_wait_for "$DLOG" "backend d-1: no socket within restart_grace (1 s)" 10
dns late4 4
e2e_eq "after the grace, IPv4: every client answered" "$(wc -l <"$OUT/late4")" "$N"
e2e_eq "after the grace: b-1's clients on other backends" \
	"$(join "$OUT/before4" "$OUT/late4" | awk '$2 == "b-1" && $3 != "b-1"' | wc -l)" \
	"$(wc -l <"$OUT/victims4")"

echo "# a tcp service refuses restart_grace"
cat >"$OUT/tcp.conf" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
restart_grace = 5s

[backend web-1]
service = web
address = 127.0.0.1:8081
CONF
e2e_check "--check refuses it" bash -c "! build/ringsteerd --check -c '$OUT/tcp.conf' 2>'$OUT/tcp.err'"
e2e_check "naming the file, line and why" \
	grep -q "tcp.conf:4: .*restart_grace is for UDP services" "$OUT/tcp.err"
e2e_summary

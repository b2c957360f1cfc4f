#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the load gauge reconciled with sock_diag (issue 11).
# Connections that predate the counting program carry no counted mark in
# their copy of rs_listen and were never counted: here, 60 connections
# held open while the daemon is stopped with --detach (pins, programs
# and gauges gone) and started again. The new daemon finds them, gives
# each to the backend whose process holds it, and `ringsteer backends`
# `active` equals what `ss` counts for every backend's process; as they
# close, the gauge follows.
# A plain restart (pins adopted) keeps the gauge exact.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup lrc

e2e_client_prefixes

e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
balance_factor = 2
CONF
e2e_held_backends web 3

svc_active_is() { [[ $(e2e_svc_active) == "$1" ]]; }
gauge_matches() { e2e_gauge_matches web 3 198.18.0.10:80; }
# settles CMD: true once CMD holds, polled for up to 15 s (the daemon
# looks for predating connections every 5 s while any remain).
settles() {
	local i
	for ((i = 0; i < 75; i++)); do
		"$@" 2>/dev/null && return 0
		sleep 0.2
	done
	"$@"
}
start_daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
	e2e_wait_for "$(rs_bg_err "$1")" "steer_sockops .* at " 10
}

start_daemon d1
echo "# 60 connections from 12 clients, held open"
rs_bg_start old rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.64.1 --sources 12 --count 60
rs_bg_wait_ready old
e2e_check "counted by steer_sockops: gauge equals ss" settles gauge_matches

echo "# the daemon stops and --detach removes its pins: gauges are gone"
rs_bg_stop d1
rs_in_edge build/ringsteerd -q --detach -c "$CONF"
e2e_check "pins removed" test ! -e "$BPFFS/rs_backend_load"
open_old=$(tail -n 1 "$(rs_bg_out old)")
e2e_eq "the 60 connections outlive the data plane" "$open_old" "open 60"

start_daemon d2
e2e_check "predating connections found and attributed: gauge equals ss" \
	gauge_matches
e2e_eq "service active" "$(e2e_svc_active)" 60
e2e_check "the daemon says so" grep -q "predate the counting" "$(rs_bg_err d2)"
e2e_eq "backends' uncounted add up to the 60" \
	"$(rsjson backends | jq '[.backends[].uncounted] | add')" 60
e2e_eq "status: none unattributed" "$(rsjson status | jq .load_check.unattributed)" 0

echo "# 30 new connections are counted by the kernel"
rs_bg_start new rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.80.1 --sources 6 --count 30
rs_bg_wait_ready new
e2e_check "gauge equals ss with both kinds open" settles gauge_matches
e2e_eq "service active" "$(e2e_svc_active)" 90

echo "# a plain restart adopts the pins"
rs_bg_stop d2
start_daemon d3
e2e_check "gauge equals ss after the restart" gauge_matches
e2e_eq "service active" "$(e2e_svc_active)" 90
e2e_eq "the restarted daemon keeps the 60 uncounted as its own" \
	"$(rsjson backends | jq '[.backends[].uncounted] | add')" 60

echo "# balance_factor toggled by reloads and a restart, 90 held open"
bounds() { e2e_json backends | jq -c '[.backends[].bound]'; }
sed -i '/^balance_factor = /d' "$CONF"
e2e_check "reload: balance_factor off" e2e_json reload
e2e_eq "no bound while off" "$(bounds)" "[null,null,null]"
e2e_check "gauge equals ss with the bound off" gauge_matches
sed -i 's|^listen = 198.18.0.10:80$|&\nbalance_factor = 1.25|' "$CONF"
e2e_check "reload: balance_factor 1.25" e2e_json reload
# ceil(1.25 x 91 x 1/3) = 38 for each of three equal backends.
e2e_eq "bounds back" "$(bounds)" "[38,38,38]"
e2e_check "gauge equals ss with the bound on again" gauge_matches
rs_bg_stop d3
start_daemon d4
e2e_check "gauge equals ss after a restart with the bound on" gauge_matches
e2e_eq "service active" "$(e2e_svc_active)" 90
e2e_eq "held connections survived: old" "$(tail -n 1 "$(rs_bg_out old)")" "open 60"
e2e_eq "held connections survived: new" "$(tail -n 1 "$(rs_bg_out new)")" "open 30"

echo "# the predating connections close: the gauge follows"
rs_bg_stop old
e2e_check "gauge equals ss once they are gone" settles gauge_matches
e2e_check "service active back to 30" settles svc_active_is 30
e2e_eq "uncounted back to 0" \
	"$(rsjson backends | jq '[.backends[].uncounted] | add')" 0
echo "# web-3 leaves with connections open; a new backend comes next reload"
id3=$(rsjson backends | jq '.backends[] | select(.name == "web-3") | .id')
held3=$(e2e_active_of web-3)
e2e_check "web-3 holds connections ($held3)" test "$held3" -gt 0
cp "$CONF" "$OUT/with-web-3.conf"
awk '/^\[backend web-3\]/ { skip = 1; next } /^\[/ { skip = 0 } !skip' \
	"$OUT/with-web-3.conf" >"$CONF"
e2e_check "reload: web-3 removed" e2e_json reload
rs_bg_start be4 rs_in_edge build/tools/rs_backend --name web-4 \
	--tcp 127.0.0.1:8084 --hold
rs_bg_wait_ready be4
printf '\n[backend web-4]\nservice = web\naddress = 127.0.0.1:8084\ncheck = none\n' >>"$CONF"
e2e_check "reload: web-4 added" e2e_json reload
id4=$(rsjson backends | jq '.backends[] | select(.name == "web-4") | .id')
e2e_check "web-4 does not take the id web-3's open connections count ($id4 != $id3)" \
	test "$id4" != "$id3"
e2e_eq "web-4 starts with no load" "$(e2e_active_of web-4)" 0
# They are still open: the service's total counts them until they close.
e2e_eq "service active still counts web-3's open connections" \
	"$(e2e_svc_active)" 30
printf '\n[backend web-3]\nservice = web\naddress = 127.0.0.1:8083\ncheck = none\n' >>"$CONF"
e2e_check "reload: web-3 configured again" e2e_json reload
e2e_eq "web-3 gets its id back" \
	"$(rsjson backends | jq '.backends[] | select(.name == "web-3") | .id')" "$id3"
e2e_eq "and the load of the connections it still holds" \
	"$(e2e_active_of web-3)" "$held3"
e2e_check "gauge equals ss for web-1..3" gauge_matches
rs_bg_stop new
e2e_check "all closed: service active 0" settles svc_active_is 0
e2e_eq "all closed: sum of backends' active" \
	"$(rsjson backends | jq '[.backends[].active] | add')" 0
e2e_eq "status: the checks ran without error" \
	"$(rsjson status | jq -c '[.load_check.passes > 0, .load_check.error]')" '[true,null]'
rs_bg_stop d4
e2e_summary

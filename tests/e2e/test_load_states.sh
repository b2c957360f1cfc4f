#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: which TCP states a steered connection is in its backend's
# load in (rs_load_tcp_state(), issue 21): from the end of its handshake
# until the backend closes its side, or the connection ends. steer_sockops
# counts it down there and turns off the state callbacks it asked for, so
# the rest of the close does not run it.
#   - web-1 answers a line and closes; its clients keep their side open:
#     the connections live on (FIN_WAIT2 on web-1's side) but are in no
#     load, and the gauges equal what the reconciliation sees;
#   - web-2 holds its connections: counted while established;
#   - the clients close: web-2's connections go through CLOSE_WAIT (still
#     counted: the backend may still be answering) and LAST_ACK (counted
#     down, callbacks off), two runs each and none for their TCP_CLOSE
#     (the kernel's run counts on; the backends are in a cgroup of their
#     own, where the program sits, so no other socket runs it). Counting
#     down at TCP_CLOSE, as before, made it three.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup lst
e2e_client_prefixes
CGNAME=rs-lst-$RUN
e2e_cgroup2 "$CGNAME"
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
RS_CLEANUP_HOOK+="; sysctl -qw kernel.bpf_stats_enabled=$STATS_WAS"

e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80

[backend web-1]
service = web
address = 127.0.0.1:8081
check = none

[backend web-2]
service = web
address = 127.0.0.1:8082
check = none
CONF
# web-1 answers a line and closes; web-2 holds its connections open.
e2e_in_cgroup be1 "$CG2/$CGNAME" build/tools/rs_backend --name web-1 \
	--tcp 127.0.0.1:8081
e2e_in_cgroup be2 "$CG2/$CGNAME" build/tools/rs_backend --name web-2 \
	--tcp 127.0.0.1:8082 --hold
rs_bg_wait_ready be1
rs_bg_wait_ready be2
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10
e2e_check "steer_sockops sits at the backends' cgroup" grep -q \
	"steer_sockops attached at cgroup /$CGNAME " "$(rs_bg_err d1)"
PROG=$(e2e_json status |
	jq -r '.programs[] | select(.name == "steer_sockops") | .id')
sysctl -qw kernel.bpf_stats_enabled=1
runs() { bpftool -j prog show id "$PROG" | jq '.run_cnt // 0'; }
# in_state STATE: the backends' sockets of the service in that state.
in_state() {
	rs_in_edge ss -Htn state "$1" src 198.18.0.10:80 | wc -l
}
active() { e2e_json services | jq '.services[0].active'; }

echo "# clients that keep their side open after the backend closed its own"
# 64 keys: both backends get some; web-1's close theirs at once.
rs_bg_start c1 rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.64.1 --sources 64 --count 64 --serial --keep
rs_bg_wait_ready c1
n2=$(e2e_active_of web-2)
e2e_check "both backends took some (web-2 holds $n2)" \
	test "$n2" -gt 0 -a "$n2" -lt 64
n1=$((64 - n2))
e2e_eq_within 5 "web-1's $n1 connections live on, closed on its side" \
	"$n1" in_state fin-wait-2
e2e_eq "and are in no load: web-1 counts 0" "$(e2e_active_of web-1)" 0
e2e_eq "web-2 counts its established ones ($n2)" \
	"$(in_state established)" "$n2"
e2e_check "each backend's gauge equals ss" \
	e2e_gauge_matches web 2 198.18.0.10:80
e2e_eq "the reconciliation finds nothing uncounted" \
	"$(e2e_json status | jq .load_check.uncounted)" 0

echo "# the clients close: web-2's connections count down at LAST_ACK"
r0=$(runs)
rs_bg_stop c1
e2e_eq_within 5 "none left in FIN_WAIT2" 0 in_state fin-wait-2
e2e_eq_within 5 "nor established" 0 in_state established
e2e_eq_within 5 "web-2's closed connections counted down once: 0" 0 active
r1=$(runs)
# web-2's: CLOSE_WAIT and LAST_ACK each, not TCP_CLOSE; web-1's: none
# (orphaned in FIN_WAIT2, they are the kernel's time-wait entries now).
e2e_eq "steer_sockops ran twice per web-2 connection, not at TCP_CLOSE" \
	$((r1 - r0)) $((2 * n2))
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
rs_bg_stop d1
e2e_summary

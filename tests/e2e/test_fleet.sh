#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: fleet mode (docs/fleet.md). A client, a router spreading the
# service address over three hosts by ECMP (L4 hash, so one client's
# connections enter through different hosts), three hosts each running
# ringsteerd and two backends, and an etcd, all in namespaces made here.
#   every connection of a client reaches the same backend (200 clients);
#   forged and over-hop-limit packets are dropped and counted, and traced
#   (`ringsteer trace --hook tc`), as are the forwards of host-2, each of a
#   client whose backend is on another host; then, with
#   100 long-lived connections open (a line every 200 ms) and connection
#   load running: a host drained and undrained, two hosts on different
#   table versions, etcd stopped and restarted, the router dropping a path
#   (second chance), a host killed (its lease expires), the host joining
#   again under connection load, a reload changing
#   [fleet]: no failed connection, no long-lived connection lost but those
#   the killed host held, and clients keep their backends.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/fleet_lib.sh

e2e_fleet_setup flt

for i in 1 2 3; do start_host "$i"; done
e2e_check "ringsteerd --check accepts the fleet config" \
	build/ringsteerd --check -c "$OUT/h1.conf"
e2e_check "all three hosts agree on three members" \
	wait_members host-1,host-2,host-3 1 2 3
ctl 1 fleet status

echo "# affinity across the fleet: 200 clients x 4 connections"
clients base 200 4
e2e_eq "no failed connections" "$(e2e_errors "$OUT/base")" 0
e2e_eq "every client reaches one backend only" "$(e2e_unstable "$OUT/base")" 0
e2e_eq "4 replies per client" "$(wc -l <"$OUT/base")" 800
e2e_eq "all six backends used" "$(awk '{print $3}' "$OUT/base" | sort -u | wc -l)" 6
fwd=0
for i in 1 2 3; do fwd=$((fwd + $(stat_of "$i" forwarded))); done
e2e_check "connections entered at other hosts were forwarded ($fwd packets)" \
	test "$fwd" -gt 100
# lookup names the owner, and the client really lands on that host.
src=$(awk 'NR == 1 {print $1}' "$OUT/base")
be=$(awk 'NR == 1 {print $3}' "$OUT/base")
owner=$(ctl 2 -j lookup web "$src" | jq -r .owner)
e2e_eq "ringsteer lookup names the owner host of $src" "h${owner#host-}-x" "${be%-*}-x"

echo "# forged and over-hop-limit packets"
# Only for this check: the client can reach host-1's forwarding address.
ip -n "$RS_NS_CLIENT" route add 198.18.11.0/24 via "$RS_EDGE_IP4"
forged0=$(stat_of 1 forged)
hop0=$(stat_of 1 hop_limit)
recv0=$(stat_of 1 received)
# The drops as host-1's trace shows them (issue 24).
rs_bg_start ftr1 build/ringsteer -s "$OUT/h1.sock" trace --hook tc --count 3 -j
e2e_wait_for "$(rs_bg_err ftr1)" "ringsteer: tracing" 10
send_encap "$RS_NS_CLIENT" 198.18.254.2 1 # not a member
send_encap "$(rs_fleet_ns 2)" 198.18.12.2 3 # a member, 3 hops > 2
send_encap "$(rs_fleet_ns 2)" 198.18.12.2 0 # a member, 0 hops
# Until host-1 has counted all three (a drop is counted as it happens).
dropped() {
	(($(stat_of 1 forged) - forged0 >= 1 && $(stat_of 1 hop_limit) - hop0 >= 2))
}
rs_until 5 dropped || true
e2e_eq "a packet from a non-member is dropped as forged" \
	"$(($(stat_of 1 forged) - forged0))" 1
e2e_eq "hop counts 3 and 0 are dropped at the hop limit" \
	"$(($(stat_of 1 hop_limit) - hop0))" 2
e2e_eq "neither reached the stack" "$(($(stat_of 1 received) - recv0))" 0
trace_ended() { ! _rs_alive "${RS_BG_PID[$1]}"; }
rs_until 10 trace_ended ftr1 || true
e2e_eq "trace: forged from 198.18.254.2, twice the hop limit from 198.18.12.2, dropped" \
	"$(jq -r '"\(.reason) \(.client) \(.verdict)"' "$(rs_bg_out ftr1)" | sort | uniq -c | awk '{$1 = $1; print}')" \
	"1 fleet-forged 198.18.254.2 drop
2 fleet-hop-limit 198.18.12.2 drop"

echo "# ringsteer trace on host-2: what it forwards belongs to other hosts"
rs_bg_start ftr2 build/ringsteer -s "$OUT/h2.sock" trace web --hook tc \
	--reason fleet-forward --count 30 -j
e2e_wait_for "$(rs_bg_err ftr2)" "ringsteer: tracing" 10
clients ftr 50 2
rs_until 10 trace_ended ftr2 || true
e2e_eq "30 fleet-forward events, each naming a member, of tcp to 198.18.0.10:80" \
	"$(jq -r 'select(.member != null) | "\(.protocol) \(.local):\(.local_port)"' "$(rs_bg_out ftr2)" | sort | uniq -c | awk '{$1 = $1; print}')" \
	"30 tcp 198.18.0.10:80"
e2e_eq "each forwarded client's backend is on another host" \
	"$(jq -r .client "$(rs_bg_out ftr2)" | sort -u | join - <(awk '$3 !~ /^ERR/ { print $1, $3 }' "$OUT/ftr" | sort -u) | awk '{ n++ } $2 ~ /^h2-/ { h++ } END { print (n > 0), h + 0 }')" "1 0"

# Long-lived connections that carry a line every 200 ms through every
# change below: 100 clients (198.18.2.1-100), one connection each.
rs_bg_start idle rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--count 100 --src 198.18.2.1 --sources 100 --step 1 --ping
rs_bg_wait_ready idle
# held HOSTS...: established connections of the long-lived clients there.
held() {
	local i n=0
	for i in "$@"; do
		n=$((n + $(rs_in_host "$i" ss -Htn state established \
			'( sport = :80 and dst 198.18.2.0/24 )' | wc -l)))
	done
	echo "$n"
}
# Established everywhere before anything changes: a handshake in flight
# while the table changes is another matter (docs/fleet.md).
for ((t = 0; t < 100; t++)); do
	[[ $(held 1 2 3) == 100 ]] && break
	sleep 0.05
done
e2e_eq "100 long-lived connections established" "$(held 1 2 3)" 100
idle_open() { # connections still open, after two more pings
	local a
	pinged idle || {
		echo "no pings from rs_idle"
		return 0
	}
	# On a loss: which client, its owner, how it ended (for the log).
	for a in $(awk '/^closed/ {print $2}' "$(rs_bg_err idle)" | sort -u); do
		grep -q "^lost $a" "$OUT/lost" 2>/dev/null && continue
		echo "lost $a owner $(ctl 1 -j lookup web "${a%:*}" | jq -r .owner) $(grep "closed $a" "$(rs_bg_err idle)" | head -1)" |
			tee -a "$OUT/lost" >&2
	done
	grep '^open' "$(rs_bg_out idle)" | tail -n 1 | awk '{print $2}'
}

# load NAME [SECONDS]: connections from 50 clients for SECONDS (2), in
# the background.
load() {
	rs_bg_start "$1" rs_in_client build/tools/rs_client \
		--target 198.18.0.10:80 --src-base 198.18.1.1 --count 50 \
		--loop-seconds "${2:-2}" --concurrency 2 \
		--timeout-ms "$((1000 * ${E2E_SLOW:-1}))"
}

echo "# drain host-2: its keys move, everyone else's stay"
check_drain clients ""

echo "# two hosts on different table versions for a while"
kill -STOP "${RS_BG_PID[d1]}" # host-1 keeps its table: it cannot update
ctl 3 fleet drain host-2 >/dev/null
wait_members host-1,host-3 3 || true
e2e_eq "host-1 still has the old table" "$(ctl 2 -j fleet status | jq .version)" \
	"$(ctl 3 -j fleet status | jq .version)"
clients split 200 1
kill -CONT "${RS_BG_PID[d1]}"
e2e_eq "different versions: no failed connections" "$(e2e_errors "$OUT/split")" 0
e2e_eq "different versions: long-lived connections stay" "$(idle_open)" 100
ctl 3 fleet undrain host-2 >/dev/null
e2e_check "versions agree again" wait_members host-1,host-2,host-3 1 2 3

echo "# etcd stopped: every host keeps its table and steers"
rs_bg_stop etcd
load load-noetcd
clients noetcd 200 2
e2e_eq "etcd down: no failed connections" "$(e2e_errors "$OUT/noetcd")" 0
e2e_eq "etcd down: every client reaches one backend only" \
	"$(e2e_unstable "$OUT/noetcd")" 0
e2e_mapping "$OUT/noetcd" >"$OUT/noetcd.map"
e2e_eq "etcd down: clients keep their backends" \
	"$(join "$OUT/base.map" "$OUT/noetcd.map" | awk '$2 != $3' | wc -l)" 0
e2e_eq "status says etcd is down" "$(ctl 1 -j fleet status | jq -r .etcd)" down
rs_fleet_etcd_start etcd2 "$OUT/etcd"
e2e_check "etcd back: hosts agree again" wait_members host-1,host-2,host-3 1 2 3
wait "${RS_BG_PID[load-noetcd]}" || true
e2e_eq "load through etcd stop and start: no failed connections" \
	"$(load_failed load-noetcd)" 0
e2e_check "load through etcd stop and start: connections were made" \
	test "$(load_attempts load-noetcd)" -gt 100
e2e_eq "long-lived connections survive etcd stop and start" "$(idle_open)" 100

echo "# etcd slow: an operator's fleet command waits for it, the daemon does not"
epid=${RS_BG_PID[etcd2]}
e2e_eq "the etcd process to freeze is etcd" "$(cat "/proc/$epid/comm")" etcd
kill -STOP "$epid"
# host-9 is no member: whenever etcd takes the delete, nothing changes.
threads_of() { # threads_of PID: how many threads the process has
	local t=("/proc/$1/task"/*)
	echo "${#t[@]}"
}
d1pid=${RS_BG_PID[d1]}
th0=$(threads_of "$d1pid")
ctl 1 fleet undrain host-9 >"$OUT/undrain9" 2>&1 &
upid=$!
# The daemon makes each fleet command's etcd call on a thread of its own
# (fleet/fleet_drain.c, drain_thread): one thread more, and the command is
# waiting.
waiting() { (($(threads_of "$d1pid") > th0)); }
e2e_check "the daemon took the fleet command: a thread of it waits for etcd" \
	rs_until 5 waiting
e2e_check "ringsteer status answers while a fleet command waits for etcd" \
	ctl 1 status
e2e_check "and the fleet command was still waiting then" kill -0 "$upid"
kill -CONT "$epid"
wait "$upid" || true
e2e_check "the fleet command got its answer once etcd took it" \
	grep -q "undrain host-9\|etcd" "$OUT/undrain9"

echo "# the router drops host-2's path, host-2 is drained: second chance"
sc() { echo $(($(stat_of 1 second_chance) + $(stat_of 2 second_chance) + $(stat_of 3 second_chance))); }
sc0=$(sc)
rs_fleet_ecmp 1 3
ctl 1 fleet drain host-2 >/dev/null
e2e_check "path dropped and drained: host-2 leaves every table" \
	wait_members host-1,host-3 1 2 3
clients pathdrop 200 2
e2e_eq "path dropped: no failed connections" "$(e2e_errors "$OUT/pathdrop")" 0
e2e_eq "path dropped: every client reaches one backend only" \
	"$(e2e_unstable "$OUT/pathdrop")" 0
e2e_eq "path dropped: long-lived connections of host-2 still reach it" \
	"$(idle_open)" 100
e2e_check "their packets went there by second chance ($(($(sc) - sc0)))" \
	test "$(sc)" -gt "$sc0"
ctl 1 fleet undrain host-2 >/dev/null
rs_fleet_ecmp 1 2 3
e2e_check "path back, undrained: three members again" \
	wait_members host-1,host-2,host-3 1 2 3
clients pathback 200 1
e2e_eq "path back: no failed connections" "$(e2e_errors "$OUT/pathback")" 0
e2e_eq "path back: long-lived connections stay" "$(idle_open)" 100

echo "# host-3 killed and its path dropped: its lease expires, keys move"
held3=$(held 3)
rs_fleet_ecmp 1 2
for p in d3 be3a be3b; do rs_bg_stop "$p"; done
e2e_check "host-3 leaves every table after its lease" \
	wait_members host-1,host-2 1 2
clients killed 200 2
e2e_eq "killed: no failed connections" "$(e2e_errors "$OUT/killed")" 0
e2e_eq "killed: every client reaches one backend only" \
	"$(e2e_unstable "$OUT/killed")" 0
e2e_mapping "$OUT/killed" >"$OUT/killed.map"
e2e_eq "clients of host-1 and host-2 kept their backend" \
	"$(join "$OUT/base.map" "$OUT/killed.map" | awk '$2 !~ /^h3-/ && $2 != $3' | wc -l)" 0
e2e_eq "long-lived connections: only host-3's ($held3) are lost" \
	"$(idle_open)" $((100 - held3))
# 100 more long-lived connections (198.18.2.101-200), made while host-3 is
# out: when it joins, the keys of about a third of them move to host-3, and
# the router sends about a third of their packets through host-3. Those
# reach their host by host-3's second chance alone, which needs host-3's
# previous table to be the two-host one the others ran (docs/fleet.md).
rs_bg_start idle2 rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--count 100 --src 198.18.2.101 --sources 100 --step 1 --ping
rs_bg_wait_ready idle2
idle2_open() {
	pinged idle2 || {
		echo "no pings from rs_idle"
		return 0
	}
	grep '^open' "$(rs_bg_out idle2)" | tail -n 1 | awk '{print $2}'
}
e2e_eq "100 more long-lived connections made on host-1 and host-2" \
	"$(idle2_open)" 100

echo "# host-3 joins again under connection load: a third of the keys move to it"
# Through the start, the router change and the tables' change that
# follows it, however long those take (ended by SIGUSR1 below).
load load-join 600
start_host 3
# An operator adds a host to the router once it is ready (docs/fleet.md).
ready3() { ctl 3 fleet ready 30 || { ctl 3 -j fleet status >&2; false; }; }
e2e_check "ringsteer fleet ready: host-3 is ready for traffic" ready3
e2e_eq "host-3 says ready in fleet status" "$(ctl 3 -j fleet status | jq .ready)" true
sc0=$(sc)
rs_fleet_ecmp 1 2 3
e2e_check "host-3 is in every table again" wait_members host-1,host-2,host-3 1 2 3
e2e_check "the load was still running when they were" \
	kill -USR1 "${RS_BG_PID[load-join]}"
wait "${RS_BG_PID[load-join]}" || true
e2e_eq "load through the join: no failed connections" \
	"$(load_failed load-join)" 0
e2e_check "load through the join: connections were made" \
	test "$(load_attempts load-join)" -gt 100
e2e_eq "connections made while host-3 was out survive its join" \
	"$(idle2_open)" 100
e2e_check "host-3 sent their packets on by second chance ($(($(sc) - sc0)))" \
	test "$(sc)" -gt "$sc0"
clients joined 200 2
e2e_eq "joined: no failed connections" "$(e2e_errors "$OUT/joined")" 0
e2e_eq "joined: every client reaches one backend only" \
	"$(e2e_unstable "$OUT/joined")" 0
e2e_mapping "$OUT/joined" >"$OUT/joined.map"
e2e_eq "joined: clients are where they were before host-3 was lost" \
	"$(join "$OUT/base.map" "$OUT/joined.map" | awk '$2 != $3' | wc -l)" 0
e2e_eq "long-lived connections survive the join" "$(idle_open)" \
	$((100 - held3))

echo "# a reload that changes [fleet] (lease_ttl) joins again with it"
sed -i 's/^lease_ttl = 5s$/lease_ttl = 6s/' "$OUT/h1.conf"
e2e_check "ringsteer reload" ctl 1 reload
e2e_check "host-1 left and joined with the new settings" \
	e2e_wait_for "$(rs_bg_err d1)" "ttl 6s" 10
e2e_check "every host still has three members" \
	wait_members host-1,host-2,host-3 1 2 3
e2e_eq "long-lived connections survive the reload" "$(idle_open)" \
	$((100 - held3))

e2e_summary

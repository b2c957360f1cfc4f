#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: `ringsteer trace` (issue 24) against real connections.
#   50 new clients: each event's backend is the backend that answered the
#   client, reason primary; the same 50 again: sticky; a drained backend:
#   its new clients spill (skip drained), the rest stay primary; a hot
#   client prefix of a bounded service: spill for load with load >= bound;
#   filters (client prefix, backend, reason); a second trace refused;
#   Ctrl-C and the daemon's exit end a trace and put the filters back;
#   an overflow (--rate 1) counts its lost events (status, Prometheus);
#   a user the test creates holds the lock file older versions used in
#   /run/lock, and root's trace still runs (issue 36), leaving no lock.
#   steer_sockops: each of 20 new connections established (counted, sticky
#   entry written) and closed, on the backend the client reached. The
#   traces of steer_lookup's decisions ask for --hook lookup: a connection
#   also makes sockops events.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup trc
e2e_client_prefixes

e2e_conf_global "metrics = 127.0.0.1:9464"
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 600

[service held]
protocol = tcp
listen = 198.18.0.10:81
prefix4 = 24
balance_factor = 1.25
CONF
for i in 1 2 3 4; do
	printf '\n[backend web-%d]\nservice = web\naddress = 127.0.0.1:808%d\ncheck = none\n' \
		"$i" "$i" >>"$CONF"
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "web-$i" \
		--tcp "127.0.0.1:808$i"
	rs_bg_wait_ready "be$i"
done
for i in 1 2; do
	printf '\n[backend held-%d]\nservice = held\naddress = 127.0.0.1:809%d\ncheck = none\n' \
		"$i" "$i" >>"$CONF"
	rs_bg_start "hb$i" rs_in_edge build/tools/rs_backend --name "held-$i" \
		--tcp "127.0.0.1:809$i" --hold
	rs_bg_wait_ready "hb$i"
done
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10
e2e_wait_for "$(rs_bg_err d1)" "steer_sockops attached" 10

rsj() { build/ringsteer -s "$SOCK" -j "$@"; }

# trace_start NAME ARGS...: a trace in the background, once it runs.
trace_start() {
	local name=$1
	shift
	rs_bg_start "$name" build/ringsteer -s "$SOCK" trace "$@"
	e2e_wait_for "$(rs_bg_err "$name")" "ringsteer: tracing" 10
}

# trace_wait NAME [TIMEOUT_S]: wait for the trace to end; its exit status.
trace_wait() {
	local pid=${RS_BG_PID[$1]} i rc=0
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		_rs_alive "$pid" || break
		sleep 0.05
	done
	_rs_alive "$pid" && {
		echo "trace $1 still running" >&2
		return 124
	}
	wait "$pid" || rc=$?
	unset "RS_BG_PID[$1]"
	return $rc
}

# lines_at_least FILE N [TIMEOUT_S]
lines_at_least() {
	local i
	for ((i = 0; i < ${3:-10} * 20; i++)); do
		(($(wc -l <"$1") >= $2)) && return 0
		sleep 0.05
	done
	return 1
}

# clients NAME SRC_BASE COUNT: one connection each to web, results in OUT.
clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base "$2" --count "$3" --rounds 1 >"$OUT/$1" 2>/dev/null || true
}

# agree EVENTS CLIENTS: events whose backend is not the one the client
# reached (client output "SRC ROUND BACKEND"), or that the client lacks.
disagree() {
	jq -r '"\(.client) \(.backend)"' "$1" | sort >"$1.map"
	e2e_mapping "$2" >"$2.map"
	join -a1 "$1.map" "$2.map" | awk 'NF != 3 || $2 != $3 { n++ } END { print n + 0 }'
}

ctl_enabled() { rsj status | jq -r .trace.enabled; }

echo "# 50 new clients"
trace_start t1 --hook lookup web --count 50 -j
clients c1 198.18.1.1 50
trace_wait t1 10 && e2e_pass "trace ends at --count 50" || e2e_fail "trace ends at --count 50"
e2e_eq "50 events" "$(wc -l <"$(rs_bg_out t1)")" 50
e2e_eq "no failed connection" "$(e2e_errors "$OUT/c1")" 0
e2e_eq "each event's backend is the one the client reached" \
	"$(disagree "$(rs_bg_out t1)" "$OUT/c1")" 0
e2e_eq "reasons: all primary" \
	"$(jq -r .reason "$(rs_bg_out t1)" | sort -u | tr '\n' ' ')" "primary "
e2e_eq "every event: service web, tcp, lookup, 198.18.0.10:80" \
	"$(jq -r '"\(.service) \(.protocol) \(.hook) \(.local):\(.local_port)"' \
		"$(rs_bg_out t1)" | sort -u)" "web tcp lookup 198.18.0.10:80"
e2e_eq "trace off again" "$(ctl_enabled)" false

echo "# the same 50: sticky"
trace_start t2 --hook lookup web --count 50 -j
clients c2 198.18.1.1 50
trace_wait t2 10 || true
e2e_eq "50 events" "$(wc -l <"$(rs_bg_out t2)")" 50
e2e_eq "backends agree" "$(disagree "$(rs_bg_out t2)" "$OUT/c2")" 0
e2e_eq "reasons: all sticky" \
	"$(jq -r .reason "$(rs_bg_out t2)" | sort -u | tr '\n' ' ')" "sticky "
e2e_eq "sticky names the backend" \
	"$(jq -r 'select(.sticky != .backend)' "$(rs_bg_out t2)" | wc -l)" 0

drained=$(awk 'NR == 1 { print $2 }' "$OUT/c1.map")
echo "# $drained drained; 50 other new clients"
rsj backend drain "$drained" >/dev/null
trace_start t3 --hook lookup web --count 50 -j
clients c3 198.18.2.1 50
trace_wait t3 10 || true
ev3=$(rs_bg_out t3)
e2e_eq "50 events" "$(wc -l <"$ev3")" 50
e2e_eq "backends agree" "$(disagree "$ev3" "$OUT/c3")" 0
e2e_eq "nobody new on $drained" \
	"$(jq -r "select(.backend == \"$drained\")" "$ev3" | wc -l)" 0
e2e_check "some clients of $drained spill" \
	test "$(jq -r "select(.primary == \"$drained\")" "$ev3" | wc -l)" -gt 0
e2e_eq "its clients: spill, skipped drained" \
	"$(jq -r "select(.primary == \"$drained\") | \"\(.reason) \(.skip)\"" "$ev3" | sort -u)" \
	"spill drained"
e2e_eq "the others: primary" \
	"$(jq -r "select(.primary != \"$drained\") | .reason" "$ev3" | sort -u)" "primary"
rsj backend undrain "$drained" >/dev/null

echo "# filters"
trace_start t4 --hook lookup --client 198.18.70.0/28 -j
clients c4 198.18.70.1 50
lines_at_least "$(rs_bg_out t4)" 15 || true
kill -INT "${RS_BG_PID[t4]}"
trace_wait t4 10 && e2e_pass "Ctrl-C ends a trace (status 0)" || e2e_fail "Ctrl-C ends a trace"
e2e_eq "--client /28: the 15 clients of 198.18.70.1-15" \
	"$(jq -r .client "$(rs_bg_out t4)" | sort -u | awk -F. '$4 >= 1 && $4 <= 15' | wc -l) $(wc -l <"$(rs_bg_out t4)")" "15 15"
e2e_eq "filters put back" "$(ctl_enabled)" false

want=$(awk '$2 == "web-2"' "$OUT/c1.map" | wc -l)
trace_start t5 --hook lookup web --backend web-2 --count "$want" -j
clients c5 198.18.71.1 50
# Fresh clients: how many went to web-2 is what the clients say.
want5=$(e2e_mapping "$OUT/c5" | awk '$2 == "web-2"' | wc -l)
kill -INT "${RS_BG_PID[t5]}" 2>/dev/null || true
trace_wait t5 10 || true
e2e_eq "--backend web-2: only its decisions" \
	"$(jq -r .backend "$(rs_bg_out t5)" | sort -u | tr -d '\n')" "web-2"
e2e_eq "--backend web-2: as many as reached it (up to --count $want)" \
	"$(wc -l <"$(rs_bg_out t5)")" "$((want5 < want ? want5 : want))"

trace_start t6 --hook lookup web --reason sticky -j
clients c6 198.18.1.1 10
clients c6b 198.18.72.1 10
lines_at_least "$(rs_bg_out t6)" 10 || true
echo "# a second trace while one runs"
rc=0
build/ringsteer -s "$SOCK" trace --count 1 >"$OUT/second" 2>&1 || rc=$?
e2e_eq "a second trace is refused" "$rc" 1
e2e_check "saying another one runs, with its pid" \
	grep -q "another trace is running (pid ${RS_BG_PID[t6]})" "$OUT/second"
kill -INT "${RS_BG_PID[t6]}"
trace_wait t6 10 || true
e2e_eq "--reason sticky: the 10 returning clients only" \
	"$(jq -r '"\(.reason) \(.client)"' "$(rs_bg_out t6)" | sort -u | awk '$1 == "sticky" && $2 ~ /^198\.18\.1\./' | wc -l) $(wc -l <"$(rs_bg_out t6)")" "10 10"

echo "# the lock is root's: a user cannot block root's trace (issue 36)"
USER_NAME=rst$$
useradd --system --no-create-home --home-dir /nonexistent \
	--shell /usr/sbin/nologin "$USER_NAME"
RS_CLEANUP_HOOK+="; userdel '$USER_NAME' 2>/dev/null"
AS_USER="setpriv --reuid=$(id -u "$USER_NAME") --regid=$(id -g "$USER_NAME") --clear-groups"
LOCKNAME=$(stat -c '%d %i' "$BPFFS" | awk '{ printf "%x-%x", $1, $2 }')
# The user holds the file that used to be the lock, in world-writable
# /run/lock (a stale one from an older version is removed first).
OLDLOCK=/run/lock/ringsteer-trace-$LOCKNAME.lock
rm -f "$OLDLOCK"
RS_CLEANUP_HOOK+="; rm -f '$OLDLOCK'"
# shellcheck disable=SC2086 # AS_USER is words
rs_bg_start ulock $AS_USER bash -c \
	'exec 9>"$1" && flock -n 9 && echo ready && exec sleep 600' - "$OLDLOCK"
rs_bg_wait_ready ulock
e2e_check "the user cannot write in /run/ringsteer" \
	bash -c "! $AS_USER touch /run/ringsteer/x 2>/dev/null"
trace_start tl --hook lookup web --count 1 -j
clients cl 198.18.1.1 1
trace_wait tl 10 && e2e_pass "root's trace runs and ends" || e2e_fail "root's trace runs and ends"
e2e_eq "  with its event" "$(wc -l <"$(rs_bg_out tl)")" 1
e2e_check "no lock file left behind" test ! -e "/run/ringsteer/trace-$LOCKNAME.lock"
e2e_check "/run/ringsteer: root's, writable by root only ($(stat -c '%U %a' /run/ringsteer))" \
	bash -c '[[ $(stat -c %u /run/ringsteer) == 0 ]] && (((8#$(stat -c %a /run/ringsteer) & 8#022) == 0))'
rs_bg_stop ulock

echo "# spill for load: one hot /24 on a bounded service"
hot=198.18.120.1
owner=$(rsj lookup held "$hot" | jq -r .primary)
trace_start t7 held --reason spill-load --count 3 -j
rs_bg_start hot rs_in_client build/tools/rs_idle --tcp 198.18.0.10:81 \
	--src "$hot" --count 12
rs_bg_wait_ready hot
trace_wait t7 10 || true
ev7=$(rs_bg_out t7)
e2e_eq "3 spill-load events" "$(wc -l <"$ev7")" 3
e2e_eq "each passes over the owner $owner at its bound" \
	"$(jq -r "select(.primary == \"$owner\" and .backend != \"$owner\" and .skip == \"at-bound\" and .load >= .bound) | .reason" "$ev7" | sort | uniq -c | awk '{print $1, $2}')" \
	"3 spill-load"
rs_bg_stop hot

echo "# overflow: --rate 1"
lost0=$(rsj status | jq .trace.lost_rate)
trace_start t8 --hook lookup web --rate 1 -j
clients c8 198.18.73.1 100
kill -INT "${RS_BG_PID[t8]}"
trace_wait t8 10 || true
lost1=$(rsj status | jq .trace.lost_rate)
e2e_check "status counts lost events ($lost0 -> $lost1)" test $((lost1 - lost0)) -ge 90
e2e_check "the trace says how many it lost" \
	grep -Eq "lost \(0 buffer full, (9[0-9]|100) over --rate\)" "$(rs_bg_err t8)"
e2e_check "Prometheus counts them" bash -c \
	"ip netns exec $RS_NS_EDGE curl -s http://127.0.0.1:9464/metrics | grep -q '^ringsteer_trace_lost_events_total{reason=\"rate\"} $lost1\$'"

echo "# steer_sockops: established and closed"
trace_start t10 web --hook sockops --count 40 -j
clients c10 198.18.74.1 20
trace_wait t10 10 && e2e_pass "40 sockops events" || e2e_fail "40 sockops events"
ev10=$(rs_bg_out t10)
e2e_eq "no failed connection" "$(e2e_errors "$OUT/c10")" 0
jq -c 'select(.reason == "established")' "$ev10" >"$ev10.est"
jq -c 'select(.reason == "closed")' "$ev10" >"$ev10.closed"
e2e_eq "20 established, 20 closed" \
	"$(wc -l <"$ev10.est") $(wc -l <"$ev10.closed")" "20 20"
e2e_eq "each established one counted, its sticky entry written" \
	"$(jq -r '"\(.counted) \(.sticky_written)"' "$ev10.est" | sort -u)" "true true"
e2e_eq "established: on the backend the client reached" \
	"$(disagree "$ev10.est" "$OUT/c10")" 0
e2e_eq "closed: on the backend the client reached" \
	"$(disagree "$ev10.closed" "$OUT/c10")" 0
e2e_eq "every event: sockops, tcp, web, 198.18.0.10:80" \
	"$(jq -r '"\(.hook) \(.protocol) \(.service) \(.local):\(.local_port)"' \
		"$ev10" | sort -u)" "sockops tcp web 198.18.0.10:80"
e2e_eq "each client's port as in its closed event" \
	"$(jq -r '"\(.client) \(.client_port)"' "$ev10.est" | sort)" \
	"$(jq -r '"\(.client) \(.client_port)"' "$ev10.closed" | sort)"
trace_start t11 web --hook sockops --reason closed --count 1
clients c11 198.18.75.1 1
trace_wait t11 10 || true
e2e_check "text: a hook column, the reason" \
	grep -Eq " cpu[0-9]+ sockops tcp 198\.18\.75\.1:[0-9]+ -> 198\.18\.0\.10:80 web web-[1-4] closed\$" \
	"$(rs_bg_out t11)"

echo "# a tracer killed with SIGKILL cannot put its filters back: the daemon does"
trace_start t12
trace_on() { rsj status | jq -e '.trace.enabled' >/dev/null; }
e2e_check "the trace runs" rs_until 5 trace_on
kill -KILL "${RS_BG_PID[t12]}"
trace_off() { ! trace_on; }
e2e_check "within seconds status says no trace runs" rs_until 10 trace_off
e2e_check "and the daemon said why" \
	grep -q "trace: its tracer (pid ${RS_BG_PID[t12]}) is gone" "$(rs_bg_err d1)"
e2e_eq "the pinned control word is off" \
	"$(bpftool -j map lookup pinned "$BPFFS/rs_trace_ctl" key 0 0 0 0 | jq '.formatted.value.enabled // .value[0]')" 0

echo "# the daemon exits during a trace"
trace_start t9 -j
rs_bg_stop d1
rc=0
trace_wait t9 10 || rc=$?
e2e_eq "the trace ends when ringsteerd exits (status 1)" "$rc" 1
e2e_check "saying so" grep -q "ringsteerd exited" "$(rs_bg_err t9)"
e2e_eq "and puts the filters back (enabled 0 in the pinned map)" \
	"$(bpftool -j map lookup pinned "$BPFFS/rs_trace_ctl" key 0 0 0 0 | jq '.formatted.value.enabled // .value[0]')" 0

e2e_summary

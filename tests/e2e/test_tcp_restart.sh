#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: restarting a TCP backend without a reset (issue 38), as
# docs/operations.md "Restarting a TCP backend" says: the new process
# binds beside the old one with SO_REUSEPORT, the old one closes its
# listener, and net.ipv4.tcp_migrate_req = 1 moves the connections still
# in the old listener's queues to the new one. Under a load of new
# connections from 40 clients: 0 failed, and every client back on its
# backend. A hard restart (kill, start again): the new listener is taken
# within the watch's 50 ms of its appearing (restart_watch.c; before, at
# the next once-a-second reconcile), and its sticky clients come back.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup trs
N=40
e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 60
CONF
for i in 1 2 3; do
	printf '\n[backend web-%d]\nservice = web\naddress = 127.0.0.%d:8080\ncheck = none\n' \
		"$i" "$i" >>"$CONF"
done
rs_in_edge sysctl -qw net.ipv4.tcp_migrate_req=1
start_be() { # N TAG
	rs_bg_start "b$1-$2" rs_in_edge build/tools/rs_backend --name "web-$1" \
		--reuseport --tcp "127.0.0.$1:8080"
	rs_bg_wait_ready "b$1-$2"
}
for i in 1 2 3; do start_be "$i" 0; done
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
DLOG=$(rs_bg_err d1)
e2e_wait_for "$DLOG" "sk_lookup link" 10

round() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count "$N" --rounds 1 --concurrency 4 \
		>"$OUT/$1.raw" 2>/dev/null || true
	e2e_mapping "$OUT/$1.raw" >"$OUT/$1"
}
taken() { grep -c "backend web-1: socket 127.0.0.1:8080 (cookie" "$DLOG" || true; }

round before
e2e_eq "every client served" "$(wc -l <"$OUT/before")" "$N"

echo "# handover: a new web-1 beside the old one, which closes its listener"
rs_bg_start load rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base 198.18.1.1 --count "$N" --loop-seconds 600 --concurrency 4
assigned() { rsjson backends | jq '.backends[] | select(.name == "web-1") | .assigned'; }
a0=$(assigned)
e2e_check "the load reaches web-1" rs_until 10 bash -c \
	"(( \$(build/ringsteer -s '$SOCK' -j backends | jq '.backends[] | select(.name == \"web-1\") | .assigned') >= $a0 + 50 ))"
n0=$(taken)
start_be 1 1
kill -USR2 "${RS_BG_PID[b1-0]}"
e2e_check "the new listener is taken" rs_until 10 bash -c "(( \$(grep -c 'backend web-1: socket 127.0.0.1:8080 (cookie' '$DLOG') > $n0 ))"
round during
kill -USR1 "${RS_BG_PID[load]}"
wait "${RS_BG_PID[load]}" || true
head -1 "$(rs_bg_out load)" | sed 's/^/  load: /'
e2e_eq "handover under load: no connection failed" \
	"$(sed -n 's/^attempts=[0-9]* ok=[0-9]* failed=\([0-9]*\)$/\1/p' "$(rs_bg_out load)")" 0
e2e_check "handover under load: connections were made" \
	test "$(sed -n 's/^attempts=\([0-9]*\).*/\1/p' "$(rs_bg_out load)")" -gt 100
e2e_eq "after the handover, no client moved" \
	"$(join "$OUT/before" "$OUT/during" | awk '$2 != $3' | wc -l)" 0
rs_bg_stop b1-0 2>/dev/null || true

echo "# hard restart: web-2 killed and started again"
kill -KILL "${RS_BG_PID[b2-0]}"
e2e_check "its socket is found gone" rs_until 10 bash -c \
	"[[ \$(build/ringsteer -s '$SOCK' -j backends | jq '.backends[] | select(.name == \"web-2\") | .has_socket') == false ]]"
start_be 2 1
e2e_check "its new listener is taken" \
	rs_until 10 bash -c "grep -q 'backend web-2: socket 127.0.0.2:8080 back after' '$DLOG'"
grep "backend web-2: socket 127.0.0.2:8080 back after" "$DLOG" | sed 's/^.*backend/  backend/'
round after
e2e_eq "every client served" "$(wc -l <"$OUT/after")" "$N"
e2e_eq "every client on its backend (sticky)" \
	"$(join "$OUT/before" "$OUT/after" | awk '$2 != $3' | wc -l)" 0
e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, under a continuous load of new connections:
#   a reload of an unchanged file that builds and swaps no ring, 1000
#   ring rebuild+swap cycles, a daemon SIGKILL and restart (state
#   adopted, no rebuild), a program replacement through the pinned link,
#   and reloads of a broken file: zero failed or reset connections and no
#   connection ever reaching a removed backend. Then refusal of pinned maps
#   of another layout or ABI.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup swp
LOAD_SECONDS=${E2E_LOAD_SECONDS:-25}
SWAPS=${E2E_SWAPS:-1000}

write_conf() {
	cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
listen = [2001:db8::10]:80
CONF
	for i in "$@"; do
		cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:808$i
address = [::1]:808$i
interval = 500ms
CONF
	done
}

generation() { rsjson status | jq -r '.services[0].generation'; }

start_daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
}

for i in 1 2 3 4 5; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:808$i" --tcp "[::1]:808$i"
	rs_bg_wait_ready "be$i"
done
write_conf 1 2 3 4 5
start_daemon d1
# cache-5 leaves the configuration but keeps listening: from now on any
# connection reaching it came through a stale ring.
write_conf 1 2 3 4
e2e_check "reload removing web-5" build/ringsteer -s "$SOCK" reload
e2e_eq "web-5 gone from the backends" "$(rsjson backends | jq '[.backends[] | select(.name == "web-5")] | length')" 0
# Issue 39: the ring is made from the last one, never rebuilt whole; an
# unchanged file makes no ring work at all and swaps nothing.
e2e_check "web-5's removal merged the last ring, built none" \
	grep -q "reload: full rings 0 built, 1 merged from the last, [0-9]* reused unchanged; 1 rings swapped" "$(rs_bg_err d1)"
g=$(generation)
e2e_check "reload of the same file" build/ringsteer -s "$SOCK" reload
# Nor does it look at the ring or write the lookup tables: its service
# is left as it is (issue 39: no copy, trim or compare of 13 MB at 200
# backends; rs_binds alone was ~14 ms).
e2e_eq "it built, merged, reused and swapped no ring, wrote no table" \
	"$(grep -c "reload: full rings 0 built, 0 merged from the last, 0 reused unchanged; 0 rings swapped; 1 of 1 services' rings untouched; 0 lookup tables written" "$(rs_bg_err d1)")" 1
e2e_eq "generation unchanged by it" "$(generation)" "$g"

rs_bg_start load4 rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base 198.18.1.1 --count 200 --concurrency 16 \
	--loop-seconds "$LOAD_SECONDS" --forbid cache-5
rs_bg_start load6 rs_in_client build/tools/rs_client --target "[2001:db8::10]:80" \
	--src-base 2001:db8:1::1 --count 50 --concurrency 4 \
	--loop-seconds "$LOAD_SECONDS" --forbid cache-5
start=$(date +%s)

echo "# $SWAPS rebuild+swap cycles under load"
g0=$(generation)
failed_swaps=0
for ((i = 0; i < SWAPS; i++)); do
	build/ringsteer -s "$SOCK" ring rebuild web >/dev/null || failed_swaps=$((failed_swaps + 1))
done
e2e_eq "every swap applied" "$failed_swaps" 0
e2e_eq "generation advanced by $SWAPS" "$(($(generation) - g0))" "$SWAPS"

echo "# SIGKILL the daemon under load, restart it"
build/ringsteer -s "$SOCK" backend weight web-2 2 >/dev/null
g1=$(generation)
kill -KILL "${RS_BG_PID[d1]}"
# The restart is to find what the dead daemon left, so it is dead first.
e2e_check "the killed daemon has exited" rs_until 5 e2e_gone "${RS_BG_PID[d1]}"
start_daemon d2
e2e_check "restart adopted the pinned ring" grep -q "adopted ring generation $g1" "$(rs_bg_err d2)"
e2e_check "restart did not rebuild" bash -c "! grep -q 'ring generation [0-9]*, .*points (' '$(rs_bg_err d2)'"
e2e_eq "generation unchanged" "$(generation)" "$g1"
e2e_eq "the operator's weight survived the restart" \
	"$(rsjson backends | jq -c '.backends[] | select(.name == "web-2") | [.weight, .weight_override]')" "[2,true]"

echo "# replace the program behind the pinned link under load"
rs_bg_stop d2
start_daemon d3
e2e_check "program replaced via the pinned link" grep -q "updated sk_lookup link" "$(rs_bg_err d3)"

echo "# a broken file is refused, by the CLI and by SIGHUP"
cp "$CONF" "$OUT/good.conf"
sed -i 's/^interval = 500ms$/interval = soon/' "$CONF"
before=$(rsjson backends | jq -c '[.backends[] | {name, state, weight, built_points}]')
out=$(build/ringsteer -s "$SOCK" reload 2>&1 || true)
e2e_check "reload refused with file:line" bash -c "[[ '$out' == *'ringsteer.conf:14: [backend web-1] interval: bad interval'* ]]"
kill -HUP "${RS_BG_PID[d3]}"
e2e_wait_for "$(rs_bg_err d3)" "reload refused: nothing changed" 5
e2e_eq "generation unchanged" "$(generation)" "$g1"
e2e_eq "backends unchanged" "$(rsjson backends | jq -c '[.backends[] | {name, state, weight, built_points}]')" "$before"
e2e_eq "refusals counted" "$(rsjson status | jq .reload_failures)" 2
cp "$OUT/good.conf" "$CONF"

echo "# waiting for the load to finish"
for n in load4 load6; do
	pid=${RS_BG_PID[$n]}
	# Each load stops by itself after LOAD_SECONDS; 30 s more is a hang.
	left=$((start + LOAD_SECONDS + 30 - $(date +%s)))
	if ! rs_until $((left > 1 ? left : 1)) e2e_gone "$pid"; then
		e2e_fail "$n still running 30 s after its ${LOAD_SECONDS}s"
		rs_bg_stop "$n"
	fi
	wait "$pid" 2>/dev/null || true
done
echo "#   $(($(date +%s) - start))s of load"
for n in load4 load6; do
	summary=$(cat "$(rs_bg_out "$n")")
	echo "#   $n: $(echo "$summary" | head -2 | tr '\n' ' ')"
	attempts=$(echo "$summary" | sed -n 's/^attempts=\([0-9]*\).*/\1/p')
	e2e_check "$n: many connections ($attempts)" test "${attempts:-0}" -gt 1000
	e2e_eq "$n: zero failed or reset connections" "$(echo "$summary" | sed -n 's/.*failed=\([0-9]*\).*/\1/p')" 0
	e2e_eq "$n: none reached the removed backend" "$(echo "$summary" | sed -n 's/^forbidden=\([0-9]*\).*/\1/p')" 0
done

echo "# pinned maps of another layout or ABI are refused, not mixed"
rs_bg_stop d3
build/ringsteerd -q --detach -c "$CONF"
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/rs_backends" type array key 4 value 8 entries 1024 name rs_backends
if rs_in_edge build/ringsteerd -c "$CONF" 2>"$OUT/layout.err"; then
	e2e_fail "daemon started on a map of another layout"
else
	e2e_pass "daemon refuses a map of another layout"
fi
e2e_check "and says what to do" grep -q -- "--detach" "$OUT/layout.err"
build/ringsteerd -q --detach -c "$CONF"
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/rs_meta" type array key 4 value 24 entries 1 name rs_meta
bpftool map update pinned "$BPFFS/rs_meta" key 0 0 0 0 value 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
if rs_in_edge build/ringsteerd -c "$CONF" 2>"$OUT/abi.err"; then
	e2e_fail "daemon started on maps of ABI 99"
else
	e2e_pass "daemon refuses maps of another ABI"
fi
e2e_check "naming both ABIs" grep -q "are of ABI 99, this build is ABI" "$OUT/abi.err"
e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, an upgrade across an ABI change as the field runs it: an
# earlier release built from git (RS_UPGRADE_FROM, 5d702b9: ABI 7) steers
# TCP over IPv4 and IPv6 and a QUIC connection under a continuous load,
# with held connections, an operator's drain and weights, sticky clients,
# and a backend in its slow start. It is stopped (SIGTERM; then, from the
# previous release v0.2.0, ABI 8, with kill -9) and this build is started,
# with no --detach: this build makes its data plane beside the earlier
# one and retires it once attached. Asserted: no connection failed, no
# client moved (sticky ones included), every QUIC datagram on its
# backend, drain, weights and slow start kept, the gauges equal ss, one
# sk_lookup program left in the netns, nothing left pinned aside. Then a
# start that fails puts the earlier data plane back (sk_lookup and TC),
# and an upgrade killed half-way (before or after ours was made) is
# finished by the next start.
# Last, the way back: this build upgraded to a later release (this tree
# with the ABI bumped and a field added to the backend words) and rolled
# back to this build, under load: 0 failed, 0 moved, drain and weight
# kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

FROM=${RS_UPGRADE_FROM:-5d702b9}
OLD=$(scripts/build-release.sh "$FROM")
# The previous release (ABI 8), upgraded from in the kill -9 round.
PREV_TAG=${RS_UPGRADE_PREVIOUS:-v0.2.0}
PREV=$(scripts/build-release.sh "$PREV_TAG")
CTL=$OLD/ringsteer
e2e_setup upa
# --detach where the TC filter is: in the edge namespace.
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS" "$BPFFS"-abi*'
LOAD_SECONDS=${E2E_LOAD_SECONDS:-8}

write_conf() {
	cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK
interfaces = rs-e

[service web]
protocol = tcp
listen = 198.18.0.10:80
listen = [2001:db8::10]:80
sticky_ttl = 600

[service ramp]
protocol = tcp
listen = 198.18.0.10:81
CONF
	e2e_conf_quic
	for i in 1 2 3; do
		e2e_conf_quic_backend "$i"
	done
	for i in 1 2 3 4; do
		cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:808$i
address = [::1]:808$i
interval = 500ms
CONF
	done
	cat >>"$CONF" <<CONF

[backend ramp-1]
service = ramp
address = 127.0.0.1:8091

[backend ramp-2]
service = ramp
address = 127.0.0.1:8092
interval = 200ms
rise = 1
slow_start = 600s
CONF
}

old_ctl() { "$CTL" -s "$SOCK" "$@"; }
# The netns's sk_lookup programs, by link: one per data plane.
lookup_progs() {
	local ino
	ino=$(rs_in_edge stat -L -c %i /proc/self/ns/net)
	bpftool -j link show |
		jq -c "[.[] | select(.type == \"netns\" and .attach_type == \"sk_lookup\" and .netns_ino == $ino) | .prog_id]"
}
lookup_links() { lookup_progs | jq length; }
# The program of the TC filter on rs-e.
tc_prog() { rs_in_edge bpftool -j net show dev rs-e | jq -c '[.[0].tc[]? | .id]'; }
# The operator's state, by the earlier release's CLI.
operator_state() {
	e2e_check "drain web-2 (old CLI)" old_ctl backend drain web-2
	e2e_check "weight web-3 4 (old CLI)" old_ctl backend weight web-3 4
}
mapping() {
	rs_in_client build/tools/rs_client --target "$2" --src-base "$3" \
		--count 200 --rounds 1 --timeout-ms 5000 \
		>"$OUT/$1.raw" 2>/dev/null || true
	e2e_mapping "$OUT/$1.raw" >"$OUT/$1"
}
moved() { join "$OUT/$1" "$OUT/$2" | awk '$2 != $3' | wc -l; }
# Every web backend's gauge equals the connections ss shows its process.
gauge_matches() {
	local i a n ok=1
	for i in 1 2 3 4; do
		a=$(e2e_active_of "web-$i")
		n=$(e2e_ss_of "$i" 198.18.0.10:80)
		[[ $a == "$n" ]] || {
			echo "  web-$i: active $a, ss $n" >&2
			ok=0
		}
	done
	[[ $ok == 1 ]]
}
settles() { rs_until $((10 * ${E2E_SLOW:-1})) "$@"; }

for i in 1 2 3 4; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:808$i" --tcp "[::1]:808$i" --hold
	rs_bg_wait_ready "be$i"
done
for i in 1 2 3; do
	rs_bg_start "q$i" rs_in_edge build/tools/rs_backend --name "q-$i" \
		--udp "127.0.0.$i:443"
	rs_bg_wait_ready "q$i"
done
rs_bg_start ramp1 rs_in_edge build/tools/rs_backend --name ramp-1 \
	--tcp 127.0.0.1:8091
rs_bg_wait_ready ramp1
write_conf
e2e_client_prefixes

echo "# $(date +%T) release $FROM ($("$OLD/ringsteerd" --version)) steering, with an operator's state"
rs_bg_start d1 rs_in_edge "$OLD/ringsteerd" -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10
operator_state
QCID=$(old_ctl -j cid quic q-2 | jq -r '.cids[0] // .cid')
e2e_check "a connection ID of q-2 ($QCID)" test -n "$QCID"
# ramp-2 comes up now: 600 s of slow start, in flight across the upgrade.
rs_bg_start ramp2 rs_in_edge build/tools/rs_backend --name ramp-2 \
	--tcp 127.0.0.1:8092
rs_bg_wait_ready ramp2
e2e_check "ramp-2 ramping" settles bash -c "'$OLD/ringsteer' -s '$SOCK' -j backends | jq -e '.backends[] | select(.name == \"ramp-2\") | .state == \"UP\"' >/dev/null"
rs_bg_start held rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.64.1 --sources 12 --count 40
rs_bg_wait_ready held
mapping before4 198.18.0.10:80 198.18.1.1
mapping before6 "[2001:db8::10]:80" 2001:db8:1::1
e2e_check "before: 200 IPv4 clients answered" test "$(wc -l <"$OUT/before4")" -eq 200
e2e_eq "before: the drained web-2 takes no new client" "$(awk '$2 == "cache-2"' "$OUT/before4" | wc -l)" 0
# A weight change moves ring owners; the sticky entries keep their clients.
e2e_check "weight web-1 3 (old CLI)" old_ctl backend weight web-1 3
mapping sticky4 198.18.0.10:80 198.18.1.1
e2e_eq "before: sticky clients stayed through the weight change" "$(moved before4 sticky4)" 0

# Connections the running daemon's backends were given, in all.
assigned_sum() { old_ctl -j backends | jq '[.backends[].assigned] | add'; }
load_flowing() { (($(assigned_sum) - A0 >= 2000)); }
upgrade() { # NAME SIGNAL [OLD-DAEMON [NEW-BINARY]]
	local ld=$1 sig=$2 old=${3:-d1} new=${4:-build/ringsteerd}
	A0=$(assigned_sum)
	rs_bg_start "$ld-4" rs_in_client build/tools/rs_client \
		--target 198.18.0.10:80 --src-base 198.18.2.1 --count 100 \
		--concurrency 8 --loop-seconds "$LOAD_SECONDS"
	rs_bg_start "$ld-6" rs_in_client build/tools/rs_client \
		--target "[2001:db8::10]:80" --src-base 2001:db8:1::1:1 --count 50 \
		--concurrency 4 --loop-seconds "$LOAD_SECONDS"
	# A QUIC connection of q-2's: its connection ID, from 20 addresses.
	rs_bg_start "$ld-q" rs_in_client bash -c "end=\$((SECONDS + $LOAD_SECONDS))
		while ((SECONDS < end)); do
			build/tools/quic_client --target 198.18.0.10:443 \
				--src-base 198.18.2.200 --count 20 --dcid $QCID \
				--timeout-ms 2000 || true
		done 2>/dev/null"
	# Some of the load before the switch (2,000 connections), some after.
	rs_until 20 load_flowing ||
		e2e_fail "$ld: the load did not reach the earlier data plane"
	kill "-$sig" "${RS_BG_PID[$old]}"
	rs_until 10 e2e_gone "${RS_BG_PID[$old]}"
	rs_bg_start "$ld-d" rs_in_edge "$new" -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$ld-d")" "upgrade: from ABI .* done" 20
	for n in "$ld-4" "$ld-6"; do
		rs_until $((LOAD_SECONDS + 30)) e2e_gone "${RS_BG_PID[$n]}" || rs_bg_stop "$n"
		summary=$(cat "$(rs_bg_out "$n")")
		echo "# $(date +%T)   $n: $(echo "$summary" | head -2 | tr '\n' ' ')"
		e2e_check "$n: many connections" test "$(echo "$summary" | sed -n 's/^attempts=\([0-9]*\).*/\1/p')" -gt 200
		e2e_eq "$n: none failed across the upgrade" "$(echo "$summary" | sed -n 's/.*failed=\([0-9]*\).*/\1/p')" 0
	done
	rs_until $((LOAD_SECONDS + 30)) e2e_gone "${RS_BG_PID[$ld-q]}" || rs_bg_stop "$ld-q"
	echo "# $(date +%T)   $ld-q: $(wc -l <"$(rs_bg_out "$ld-q")") QUIC datagrams answered"
	e2e_check "$ld-q: many QUIC datagrams" test "$(wc -l <"$(rs_bg_out "$ld-q")")" -gt 100
	e2e_eq "$ld-q: every one answered by q-2" "$(awk '$3 != "q-2"' "$(rs_bg_out "$ld-q")" | wc -l)" 0
}

out=$(rs_in_edge build/ringsteerd --check -c "$CONF" 2>&1 || true)
e2e_check "--check: a start upgrades, no gap" grep -q "holds a data plane of ABI 7.*a start builds its own beside it" <<<"$out"

echo "# $(date +%T) SIGTERM $FROM, start this build: no --detach"
upgrade up TERM
err=$(rs_bg_err up-d)
e2e_check "it says what it does" grep -q "are of ABI 7, this build is ABI .*: building ours beside them" "$err"
e2e_check "ramp-2's slow start resumed, not restarted" grep -q "backend ramp-2: slow start resumed at" "$err"
e2e_check "sticky entries carried" grep -q "upgrade: service web: [0-9]* sticky entries carried" "$err"
e2e_eq "drain kept" "$(rsjson backends | jq -r '.backends[] | select(.name == "web-2") | .op')" drain
e2e_eq "operator weight kept" "$(rsjson backends | jq -c '.backends[] | select(.name == "web-3") | [.weight, .weight_override]')" "[4,true]"
e2e_eq "one sk_lookup program in the netns" "$(lookup_links)" 1
e2e_check "nothing left pinned aside" bash -c "! compgen -G '$BPFFS-abi*'"
mapping after4 198.18.0.10:80 198.18.1.1
mapping after6 "[2001:db8::10]:80" 2001:db8:1::1
e2e_eq "IPv4: no client moved" "$(moved before4 after4)" 0
e2e_eq "IPv6: no client moved" "$(moved before6 after6)" 0
e2e_eq "IPv4: all answered" "$(wc -l <"$OUT/after4")" 200
e2e_eq "the 40 held connections are open" "$(tail -n 1 "$(rs_bg_out held)")" "open 40"
e2e_check "held connections counted: gauges equal ss" settles gauge_matches
e2e_eq "the service's gauge: the 40" "$(rsjson services | jq '.services[] | select(.name == "web") | .active')" 40

echo "# $(date +%T) the same from the previous release, $PREV_TAG, with kill -9"
rs_bg_stop up-d
rs_in_edge build/ringsteerd -q --detach -c "$CONF"
CTL=$PREV/ringsteer
rs_bg_start d2 rs_in_edge "$PREV/ringsteerd" -c "$CONF"
e2e_wait_for "$(rs_bg_err d2)" "sk_lookup link" 10
operator_state
mapping prev4 198.18.0.10:80 198.18.1.1
upgrade k9 KILL d2
CTL=$OLD/ringsteer
e2e_check "from ABI 8" grep -q "are of ABI 8, this build is ABI" "$(rs_bg_err k9-d)"
e2e_eq "drain kept" "$(rsjson backends | jq -r '.backends[] | select(.name == "web-2") | .op')" drain
e2e_eq "operator weight kept" "$(rsjson backends | jq -c '.backends[] | select(.name == "web-3") | [.weight, .weight_override]')" "[4,true]"
mapping k94 198.18.0.10:80 198.18.1.1
e2e_eq "no client moved" "$(moved prev4 k94)" 0
e2e_eq "one sk_lookup program in the netns" "$(lookup_links)" 1

echo "# $(date +%T) a start that fails puts the earlier data plane back"
rs_bg_stop k9-d
rs_in_edge build/ringsteerd -q --detach -c "$CONF"
rs_bg_start d3 rs_in_edge "$OLD/ringsteerd" -c "$CONF"
e2e_wait_for "$(rs_bg_err d3)" "sk_lookup link" 10
old_progs=$(lookup_progs)
old_tc=$(tc_prog)
operator_state
rs_bg_stop d3
# The control socket's path taken by something else: the start fails late,
# after the new data plane is made.
rs_bg_start squat rs_in_edge python3 -c "
import socket, time
s = socket.socket(socket.AF_UNIX); s.bind('$SOCK'); s.listen(); print('ready', flush=True); time.sleep(600)"
rs_bg_wait_ready squat
if rs_in_edge build/ringsteerd -c "$CONF" 2>"$OUT/fail.err"; then
	e2e_fail "the daemon started with its control socket taken"
else
	e2e_pass "the start failed"
fi
e2e_check "it says the earlier data plane is back" grep -q "the ABI 7 data plane is back under" "$OUT/fail.err"
e2e_eq "the earlier program alone decides" "$(lookup_progs)" "$old_progs"
e2e_eq "the earlier steer_tc is back at TC" "$(tc_prog)" "$old_tc"
mapping back4 198.18.0.10:80 198.18.1.1
e2e_eq "and no client moved" "$(moved before4 back4)" 0
rs_bg_stop squat
rm -f "$SOCK"
rs_in_edge build/ringsteerd -q --detach -c "$CONF"

echo "# $(date +%T) an upgrade killed half-way is finished by the next start"
# Killed after the earlier data plane was set aside, before ours was made.
rs_bg_start d5 rs_in_edge "$OLD/ringsteerd" -c "$CONF"
e2e_wait_for "$(rs_bg_err d5)" "sk_lookup link" 10
operator_state
rs_bg_stop d5
mv "$BPFFS" "$BPFFS-abi7-retiring"
rs_bg_start r1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err r1)" "upgrade: from ABI 7 done" 20
e2e_check "it starts over" grep -q "is back under $BPFFS, and the upgrade starts over" "$(rs_bg_err r1)"
e2e_eq "drain kept" "$(rsjson backends | jq -r '.backends[] | select(.name == "web-2") | .op')" drain
e2e_eq "one sk_lookup program in the netns" "$(lookup_links)" 1
mapping r14 198.18.0.10:80 198.18.1.1
e2e_eq "no client moved" "$(moved before4 r14)" 0
# Killed after ours was made, before the earlier one was retired: here an
# earlier release started on the aside directory beside ours.
rs_bg_stop r1
sed -e "s|^bpffs = .*|bpffs = $BPFFS-abi7-retiring|" \
	-e "s|^control_socket = .*|control_socket = $OUT/aside.sock|" "$CONF" >"$OUT/aside.conf"
rs_bg_start d6 rs_in_edge "$OLD/ringsteerd" -c "$OUT/aside.conf"
e2e_wait_for "$(rs_bg_err d6)" "sk_lookup link" 10
rs_bg_stop d6
e2e_eq "two data planes attached" "$(lookup_links)" 2
rs_bg_start r2 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err r2)" "upgrade: from ABI 7 done" 20
e2e_check "it retires the one left aside" grep -q "stopped before it retired $BPFFS-abi7-retiring" "$(rs_bg_err r2)"
e2e_eq "one sk_lookup program in the netns" "$(lookup_links)" 1
e2e_check "nothing left pinned aside" bash -c "! compgen -G '$BPFFS-abi*'"
e2e_eq "drain kept" "$(rsjson backends | jq -r '.backends[] | select(.name == "web-2") | .op')" drain
rs_bg_stop r2
rs_in_edge build/ringsteerd -q --detach -c "$CONF"

# A later release: this tree with the ABI bumped and a field added to the
# backend words (every field after it moves).
next_release() {
	local dir
	dir=$PWD/build/releases/next-$(git rev-parse --short HEAD)
	if [[ ! -x $dir/src/build/ringsteerd ]]; then
		rm -rf "$dir"
		mkdir -p "$dir/src"
		git archive HEAD | tar -x -C "$dir/src"
		perl -0pi -e 's/(struct rs_backend \{.*?__u32 balance_milli;[^\n]*\n)/$1\t__u32 next_field;\n/s; s/^#define RS_ABI_VERSION \d+/#define RS_ABI_VERSION 99/m; s/^RS_ABI_SIZE\(rs_backend, (\d+)\);/"RS_ABI_SIZE(rs_backend, " . ($1 + 4) . ");"/me' \
			"$dir/src/include/ringsteer/abi.h"
		make -C "$dir/src" -j"$(nproc)" build/ringsteerd >"$dir/build.log" 2>&1 ||
			{ tail -20 "$dir/build.log" >&2; return 1; }
	fi
	echo "$dir/src/build"
}
NEXT=$(next_release)
echo "# $(date +%T) this build -> a later release (ABI 99) -> this build, under load"
rs_bg_start d4 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d4)" "sk_lookup link" 10
e2e_check "drain web-2" rsctl backend drain web-2
e2e_check "weight web-3 4" rsctl backend weight web-3 4
mapping mid4 198.18.0.10:80 198.18.1.1
upgrade nx TERM d4 "$NEXT/ringsteerd"
ABI=$(sed -n 's/^#define RS_ABI_VERSION \([0-9]*\).*/\1/p' include/ringsteer/abi.h)
e2e_check "the later release upgraded from ours" grep -q "are of ABI $ABI, this build is ABI 99" "$(rs_bg_err nx-d)"
e2e_eq "drain kept" "$(rsjson backends | jq -r '.backends[] | select(.name == "web-2") | .op')" drain
upgrade rb TERM nx-d
e2e_check "rolled back from ABI 99" grep -q "upgrade: from ABI 99 done" "$(rs_bg_err rb-d)"
e2e_eq "drain kept" "$(rsjson backends | jq -r '.backends[] | select(.name == "web-2") | .op')" drain
e2e_eq "operator weight kept" "$(rsjson backends | jq -c '.backends[] | select(.name == "web-3") | [.weight, .weight_override]')" "[4,true]"
mapping end4 198.18.0.10:80 198.18.1.1
e2e_eq "no client moved on the way there and back" "$(moved mid4 end4)" 0
e2e_eq "one sk_lookup program in the netns" "$(lookup_links)" 1
e2e_summary

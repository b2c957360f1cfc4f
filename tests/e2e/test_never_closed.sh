#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: steering never fails closed while a backend can take the
# connection.
#   1. Weights lowered by every path (operator 256 -> 1 and -> 0, a reload
#      from 200 to 1, `ring rebuild`, a daemon restart, slow start at
#      weight 256): every fresh client
#      is served, and the daemon leaves a ring whose walks stay short.
#   2. Reloads that change every parameter of a service (vnodes, seed,
#      prefix, sticky table on/off and its size, weights, membership,
#      fallback) alternating under load: no connection refused, and every
#      connection lands on its owner under the old file or under the new
#      one, never on a third backend (no half-applied service).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup ncl
RELOADS=${E2E_RELOADS:-8}

backend_conf() { # NAME PORT WEIGHT
	cat >>"$CONF" <<CONF

[backend $1]
service = web
address = 127.0.0.1:$2
weight = $3
interval = 500ms
CONF
}

# head_conf [service line...]: vnodes = 160 unless a line sets it (weights
# go up to 256 here: 256 x 4096, the default, is past the ring's limit).
head_conf() {
	cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
CONF
	[[ " $* " == *" vnodes = "* ]] || echo "vnodes = 160" >>"$CONF"
	for l in "$@"; do echo "$l" >>"$CONF"; done
}

# clients NAME [COUNT]: one connection each from COUNT sources from $SRC.
clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base "$SRC" --count "${2:-60}" 2>/dev/null |
		awk '{ print $1, $3 }' | sort >"$OUT/$1" || true
}
refused() { awk '$2 !~ /^cache-/' "$OUT/$1" | wc -l; }
to() { awk -v b="$2" '$2 == b' "$OUT/$1" | wc -l; }
walk_limit() { rsjson services | jq .services[0].stats.walk_limit; }
# fresh: a new block of 60 client sources, never seen before (the client
# namespace owns 198.18.1.0/24 and 198.18.2.0/24).
SRCN=0
fresh() {
	SRC=198.18.$((1 + SRCN / 4)).$((1 + SRCN % 4 * 60))
	SRCN=$((SRCN + 1))
}

for i in 1 2 3 4 5; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:818$i"
	rs_bg_wait_ready "be$i"
done

echo "# 1. lowering weights, by every path"
head_conf "fallback = drop"
for i in 1 2 3 4; do backend_conf "web-$i" "818$i" 1; done
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10

rsctl backend weight web-1 256 >/dev/null
rsctl backend weight web-1 1 >/dev/null
fresh && clients w256to1
e2e_eq "weight 1 -> 256 -> 1: fresh clients refused" "$(refused w256to1)" 0
rsctl backend weight web-1 0 >/dev/null
fresh && clients w0
e2e_eq "weight -> 0: fresh clients refused" "$(refused w0)" 0
e2e_eq "weight 0: nobody on web-1" "$(to w0 cache-1)" 0
rsctl ring rebuild web >/dev/null
fresh && clients rebuilt
e2e_eq "after ring rebuild: refused" "$(refused rebuilt)" 0
e2e_eq "a ring of the points in use only" "$(rsjson status | jq .services[0].compact)" true
e2e_eq "no walk went long" "$(walk_limit)" 0

rs_bg_stop d1
rs_bg_start d2 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d2)" "sk_lookup link" 10
fresh && clients restarted
e2e_eq "after a restart (weight 0 kept): refused" "$(refused restarted)" 0
e2e_eq "after a restart: nobody on web-1" "$(to restarted cache-1)" 0
rsctl backend weight web-1 1 >/dev/null
fresh && clients back
e2e_eq "weight back to 1: refused" "$(refused back)" 0
e2e_check "web-1 takes clients again" test "$(to back cache-1)" -gt 3

head_conf "fallback = drop"
backend_conf web-1 8181 200
for i in 2 3 4; do backend_conf "web-$i" "818$i" 1; done
rsctl reload >/dev/null
head_conf "fallback = drop"
backend_conf web-1 8181 1
for i in 2 3 4; do backend_conf "web-$i" "818$i" 1; done
rsctl reload >/dev/null
fresh && clients reload200to1
e2e_eq "reload weight 200 -> 1: refused" "$(refused reload200to1)" 0
e2e_eq "no walk went long" "$(walk_limit)" 0

head_conf "fallback = drop"
for i in 2 3 4; do backend_conf "web-$i" "818$i" 1; done
backend_conf web-1 8181 256
# An hour: however slow the machine (a TCG guest), the clients below run
# early in the ramp, when web-1 has a fraction of its weight.
echo "slow_start = 3600s" >>"$CONF"
rsctl reload >/dev/null
rsctl backend down web-1 >/dev/null
rsctl backend up web-1 >/dev/null
# Until web-1's ramp is under way (some points, not all) on a ring trimmed
# to the points in use.
ramping() {
	rsjson backends | jq -e '.backends[] | select(.name == "web-1") |
		.state == "UP" and .active_points > 0 and .active_points < .weight * 160' >/dev/null &&
		rsjson status | jq -e .services[0].compact >/dev/null
}
e2e_check "slow start under way" rs_until 5 ramping
fresh && clients slowstart
e2e_eq "slow start at weight 256: refused" "$(refused slowstart)" 0
e2e_check "slow start: web-1 ramping, not yet at full share" \
	test "$(to slowstart cache-1)" -lt 50
e2e_eq "slow start: a trimmed ring in place" "$(rsjson status | jq .services[0].compact)" true
e2e_eq "no walk went long" "$(walk_limit)" 0

echo "# 2. reloads changing every parameter, under load"
conf_a() {
	head_conf "fallback = drop" "vnodes = 4000" "seed = 11" "prefix4 = 32" \
		"sticky_ttl = 60" "sticky_max = 4096"
	backend_conf web-1 8181 1
	backend_conf web-2 8182 2
	backend_conf web-3 8183 1
	backend_conf web-4 8184 1
}
conf_b() {
	head_conf "vnodes = 160" "seed = 12" "prefix4 = 31" "fallback = pass"
	backend_conf web-1 8181 3
	backend_conf web-2 8182 1
	backend_conf web-4 8184 2
	backend_conf web-5 8185 1
}
# settled: every backend serving at its full points (weight x vnodes):
# the file just loaded is what steers, no ramp left from before.
settled() {
	local v
	v=$(rsjson services | jq '.services[0].vnodes')
	rsjson backends | jq -e --argjson v "$v" \
		'all(.backends[]; .serving and .active_points == .weight * $v)' >/dev/null
}
SRC=198.18.2.1
conf_a
rsctl reload >/dev/null
e2e_check "state A in force" rs_until 5 settled
clients owner_a 200
conf_b
rsctl reload >/dev/null
e2e_check "state B in force" rs_until 5 settled
clients owner_b 200
e2e_eq "state A: every client served" "$(refused owner_a)" 0
e2e_eq "state B: every client served" "$(refused owner_b)" 0
join "$OUT/owner_a" "$OUT/owner_b" >"$OUT/owners"
e2e_check "A and B differ for many clients" test \
	"$(awk '$2 != $3' "$OUT/owners" | wc -l)" -gt 50

rs_bg_start load rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base "$SRC" --count 200 --rounds 600 --concurrency 8
load_pid=${RS_BG_PID[load]}
g0=$(rsjson status | jq .services[0].generation)
done_reloads=0
while ((done_reloads < RELOADS)) && kill -0 "$load_pid" 2>/dev/null; do
	if ((done_reloads % 2 == 0)); then conf_a; else conf_b; fi
	rsctl reload >/dev/null
	done_reloads=$((done_reloads + 1))
	sleep 0.3 # pacing: the reloads spread over the load, not a wait
done
wait "$load_pid" || true
e2e_eq "reloads done while the load ran" "$done_reloads" "$RELOADS"
e2e_check "rings were swapped" test "$(rsjson status | jq .services[0].generation)" -gt "$g0"
load_out=$(rs_bg_out load)
e2e_eq "connections made by the load" "$(wc -l <"$load_out")" 120000
e2e_eq "connections refused or failed" "$(e2e_errors "$load_out")" 0
e2e_eq "connections that reached neither owner" \
	"$(awk 'NR == FNR { a[$1] = $2; b[$1] = $3; next }
		$3 != a[$1] && $3 != b[$1] { n++ } END { print n + 0 }' \
		"$OUT/owners" "$load_out")" 0
e2e_eq "no walk went long" "$(walk_limit)" 0
e2e_summary

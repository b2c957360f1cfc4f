#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end (issue 39, "memory as stated"): the maps are sized by what is
# configured, and `ringsteerd --check` says what a start pins.
#   - one small service, no [fleet]: the fleet's tables have one entry
#     (rs_fleet_flows was 262,144 entries, 34 MiB, on every host), and
#     --check's total is within 10% of what the kernel says: bytes_memlock
#     of every map pinned under bpffs and of the maps inside its
#     map-in-maps (rings, sticky tables, the fleet table);
#   - after a ring change the daemon holds one more ring map, the one the
#     change replaced (its spare, not pinned), of the size --check's
#     "ring changes:" line states, and the total it gives then is within
#     10% of the kernel's with that map counted;
#   - a reload that adds [fleet] is refused, saying a restart resizes the
#     maps: nothing of it applied, the tables still one entry;
#   - stopped and started with [fleet] (a real etcd, no fleet service
#     yet) under a client load:
#     the start meets pins of another size and upgrades make-before-break,
#     no connection fails; the fleet's tables have their full size;
#   - a reload then adds a fleet service (the maps fit): the fleet table
#     is made, and --check is within 10% again;
#   - stopped and started without [fleet] under load (what every host
#     that upgrades to this version meets): shrunk the same way, no
#     connection failed, within 10%.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. scripts/fleet-netns.sh
. tests/e2e/lib.sh

e2e_setup mem
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS" "$BPFFS"-abi*'
# etcd alone in the edge namespace: nothing else listens on its port there.
RS_FLEET_ETCD_IP=127.0.0.1

# The kernel's figure: the maps pinned under $BPFFS and their inner maps.
map_ids() {
	local f
	for f in "$BPFFS"/*; do
		bpftool -j map show pinned "$f" 2>/dev/null | jq -r '.id // empty' || true
	done
	for f in rs_rings rs_sticky rs_fleet; do
		bpftool -j map dump pinned "$BPFFS/$f" |
			jq -r '.[].value | map(ltrimstr("0x")) | reverse | "0x" + join("")' |
			xargs -r printf '%d\n'
	done
}
measured() {
	bpftool -j map show | jq --argjson ids "$(map_ids | sort -un | jq -s .)" \
		'[.[] | select(.id as $i | $ids | index($i)) | .bytes_memlock] | add'
}
estimated() {
	rs_in_edge build/ringsteerd --check -c "$CONF" 2>/dev/null |
		sed -n 's/^kernel memory: .* (\([0-9]*\) bytes) pinned by a start.*/\1/p'
}
entries() { bpftool -j map show pinned "$BPFFS/$1" | jq .max_entries; }
# within_10 WHAT: --check's estimate against the kernel's, as a ratio.
within_10() {
	local est got
	est=$(estimated)
	got=$(measured)
	echo "# $1: --check says $est bytes, bpftool $got bytes"
	e2e_check "$1: --check within 10% of bpftool ($est / $got)" \
		awk -v e="$est" -v g="$got" 'BEGIN { r = e / g; exit !(r >= 0.9 && r <= 1.1) }'
}

e2e_start_web1 "interfaces = rs-e"
e2e_wait_for "$(rs_bg_err daemon)" "sk_lookup link" 10
e2e_eq "no [fleet]: rs_fleet_flows has one entry" "$(entries rs_fleet_flows)" 1
e2e_eq "no [fleet]: rs_fleet_sip has one entry" "$(entries rs_fleet_sip)" 1
e2e_eq "no [fleet]: rs_fleet_peers has one entry" "$(entries rs_fleet_peers)" 1
within_10 "one service"
e2e_check "--check says the fleet's tables are at 1 entry" \
	grep -q "^data plane: ~.* of maps (no \[fleet\]" <(rs_in_edge build/ringsteerd --check -c "$CONF")

echo "# a ring change: the map it replaced is kept, as --check says"
# The ring maps the daemon holds by a descriptor: its spares.
spare_ids() {
	local id
	grep -h '^map_id:' /proc/"$DAEMON"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -un |
		while read -r id; do
			bpftool -j map show id "$id" 2>/dev/null | jq -r 'select(.name | startswith("rs_ring_")) | .id'
		done
}
e2e_eq "no spare before a ring change" "$(spare_ids | wc -l)" 0
e2e_check "a ring change (rebuild)" rsctl ring rebuild web
e2e_eq "then one spare ring map, held by the daemon" "$(spare_ids | wc -l)" 1
spare_est=$(rs_in_edge build/ringsteerd --check -c "$CONF" 2>/dev/null |
	sed -n 's/^ring changes: .* (\([0-9]*\) bytes) more for these rings.*/\1/p')
spare_got=$(bpftool -j map show id "$(spare_ids)" | jq .bytes_memlock)
echo "# spare: --check says $spare_est bytes, bpftool $spare_got bytes"
e2e_check "the spare's size: --check within 10% of bpftool ($spare_est / $spare_got)" \
	awk -v e="$spare_est" -v g="$spare_got" 'BEGIN { r = e / g; exit !(r >= 0.9 && r <= 1.1) }'
est=$(($(estimated) + spare_est))
got=$(($(measured) + spare_got))
e2e_check "after a ring change: --check's total within 10% of bpftool ($est / $got)" \
	awk -v e="$est" -v g="$got" 'BEGIN { r = e / g; exit !(r >= 0.9 && r <= 1.1) }'

echo "# a reload that adds [fleet]: refused, nothing applied"
rs_fleet_etcd_start etcd "$OUT/etcd"
cp "$CONF" "$OUT/small.conf"
{
	echo "[fleet]"
	echo "etcd = http://$RS_FLEET_ETCD_IP:2379"
	echo "name = host-1"
	echo "address = 198.18.0.1"
	echo "prefix = /ringsteer-$RS_RUNID"
	echo
	sed -n '/^\[service web\]/,$p' "$OUT/small.conf"
} >"$OUT/fleet.tail"
sed -n '1,/^$/p' "$OUT/small.conf" >"$CONF"
cat "$OUT/fleet.tail" >>"$CONF"
rc=0
rsctl reload >"$OUT/reload.out" 2>&1 || rc=$?
e2e_check "the reload fails" test "$rc" -ne 0
e2e_check "it says a restart resizes the tables" \
	grep -q "\[fleet\] needs the fleet's flow tables, which this data plane was started without.*restart ringsteerd" "$OUT/reload.out"
e2e_eq "rs_fleet_flows still one entry" "$(entries rs_fleet_flows)" 1
e2e_eq "no fleet thread started" "$(grep -c 'fleet: etcd reachable' "$(rs_bg_err daemon)" || true)" 0

echo "# stopped, started with [fleet] under load: an upgrade, no gap"
e2e_check "--check: a start resizes beside the running data plane" \
	grep -q "sized for another configuration (rs_fleet_[a-z]*: 1 entries, this build's [0-9]*): a start builds one of this file's sizes beside it" \
	<(rs_in_edge build/ringsteerd --check -c "$CONF" 2>&1)
rs_bg_start load rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base 198.18.2.1 --count 50 --concurrency 4 --loop-seconds 6
load_flowing() { (($(rsjson backends | jq '[.backends[].assigned] | add') >= 200)); }
rs_until 10 load_flowing || e2e_fail "the load did not reach the first daemon"
kill -TERM "$DAEMON"
rs_until 10 e2e_gone "$DAEMON"
# The daemon stopped: status reads the pins and says what a start does,
# by the daemon's own rule (it said "adopts" for pins of another size).
e2e_check "status (daemon stopped): a start upgrades, sized for the file" \
	grep -q "Starting this ringsteer's daemon upgrades: .* holds a data plane of this build's ABI ([0-9]*) sized for another configuration (rs_fleet_[a-z]*: 1 entries" \
	<(rs_in_edge build/ringsteer -c "$CONF" -s "$SOCK" status 2>&1)
rs_bg_start daemon2 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon2)" "upgrade: .* done" 20
e2e_check "it says the maps are sized for another configuration" \
	grep -q "sized for another configuration" "$(rs_bg_err daemon2)"
rs_until 20 e2e_gone "${RS_BG_PID[load]}" || rs_bg_stop load
summary=$(cat "$(rs_bg_out load)")
echo "# load: $(echo "$summary" | head -2 | tr '\n' ' ')"
e2e_check "many connections" test "$(sed -n 's/^attempts=\([0-9]*\).*/\1/p' <<<"$summary")" -gt 100
e2e_eq "none failed across the restart" "$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' <<<"$summary")" 0
e2e_eq "[fleet]: rs_fleet_flows at full size" "$(entries rs_fleet_flows)" 262144
e2e_check "nothing left aside" bash -c "! compgen -G '$BPFFS-abi*'"

echo "# a fleet service added by a reload: the maps fit, the table is made"
printf '\n[service edge]\nprotocol = tcp\nlisten = 198.18.0.11:80\nfleet = on\n' >>"$CONF"
printf '\n[backend edge-1]\nservice = edge\naddress = 127.0.0.1:8082\ncheck = none\n' >>"$CONF"
e2e_check "the reload is applied" rsctl reload
# Each table is a new map: measured once the one this host is in stands.
e2e_wait_for "$(rs_bg_err daemon2)" "fleet: table version .* this host a member" 20
within_10 "[fleet], its table made"

# Every host that upgrades to this version has fleet-size pins: its first
# start without [fleet] shrinks them the same way.
echo "# stopped, started without [fleet] under load: shrunk, no gap"
rs_bg_start load2 rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base 198.18.2.1 --count 50 --concurrency 4 --loop-seconds 4
cp "$OUT/small.conf" "$CONF"
kill -TERM "${RS_BG_PID[daemon2]}"
rs_until 10 e2e_gone "${RS_BG_PID[daemon2]}"
rs_bg_start daemon3 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon3)" "upgrade: .* done" 20
rs_until 20 e2e_gone "${RS_BG_PID[load2]}" || rs_bg_stop load2
summary=$(cat "$(rs_bg_out load2)")
echo "# load: $(echo "$summary" | head -2 | tr '\n' ' ')"
e2e_eq "none failed across the shrinking restart" "$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' <<<"$summary")" 0
e2e_eq "no [fleet] again: rs_fleet_flows has one entry" "$(entries rs_fleet_flows)" 1
within_10 "no [fleet] again"

e2e_summary

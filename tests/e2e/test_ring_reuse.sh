#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end (issue 39): the ring map a swap replaces is kept and the ring
# after next is written into it (its pages touched already: a fresh
# 21.6 MB map cost a weight change at 200 backends 30-88 ms).
#   - weight changes up and down: the inner map of rs_rings alternates
#     between two map ids, the daemon holds the other one (its spare), and
#     after each change `ringsteer lookup` names the backend real
#     connections reach, for every client, and generations count on;
#   - a change past the spare's room (the flat table doubles) gets a
#     fresh map, and is as right;
#   - the spare is not pinned: a restart adopts the ring, holds none, and
#     its next changes take turns again between two maps.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup rru
NCLIENTS=${E2E_REUSE_CLIENTS:-64}

# write_conf W1: web-1 at weight W1, web-2..4 at 5. With the default
# vnodes (4,096) 17 to 32 units of weight keep the flat table at 2^19
# buckets: every ring here but the last fits the other's room.
write_conf() {
	e2e_conf_global
	cat >>"$CONF" <<CONF

[service web]
protocol = tcp
listen = 198.18.0.10:80
CONF
	for i in 1 2 3 4; do
		cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:808$i
weight = $((i == 1 ? $1 : 5))
interval = 500ms
CONF
	done
}

start_daemon() {
	rs_bg_start "$1" rs_in_edge "$RS_DAEMON" -v -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
	DAEMON=${RS_BG_PID[$1]}
}

generation() { rsjson status | jq -r '.services[0].generation'; }

# The id of the ring map installed for service 0 (the value is the inner
# map's id as little-endian bytes).
ring_id() {
	bpftool -j map dump pinned "$BPFFS/rs_rings" |
		jq -r '.[] | select(.key == ["0x00","0x00","0x00","0x00"]) | .value |
			map(ltrimstr("0x")) | reverse | "0x" + join("")' |
		xargs printf '%d\n'
}

# The ids of the maps the daemon holds by a descriptor.
held_ids() {
	grep -h '^map_id:' /proc/"$DAEMON"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -un
}

# agree WHAT: every client reaches the backend `ringsteer lookup` names.
agree() {
	local src got want n=0 ok=0
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count "$NCLIENTS" 2>/dev/null |
		awk '{ print $1, $3 }' >"$OUT/conns"
	while read -r src got; do
		n=$((n + 1))
		want=$(rsjson lookup web "$src" | jq -r .backend)
		[[ ${want/web-/cache-} == "$got" ]] && ok=$((ok + 1))
	done <"$OUT/conns"
	e2e_eq "$1: lookup == the backend reached, every client" "$ok/$n" "$NCLIENTS/$NCLIENTS"
}

# change W1 WHAT: reload with web-1 at W1; the generation goes up.
change() {
	local g
	g=$(generation)
	write_conf "$1"
	e2e_check "$2: reload" rsctl reload
	e2e_check "$2: generation up from $g" test "$(generation)" -gt "$g"
}

for i in 1 2 3 4; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:808$i"
	rs_bg_wait_ready "be$i"
done
write_conf 5
start_daemon d1
e2e_eq "start: no spare yet (the daemon holds no ring map by a descriptor)" \
	"$(held_ids | grep -cx "$(ring_id)" || true)" 0
agree "start"

echo "# weights up and down: two maps take turns"
# A reload may swap more than once (a lowered weight goes through the
# ring of the points in use first): every swap takes the other map.
ids=("$(ring_id)")
for w in 6 7 6 4 5 6; do
	change "$w" "web-1 weight $w"
	ids+=("$(ring_id)")
	agree "web-1 weight $w"
	two=$(printf '%s\n' "${ids[@]}" | sort -un)
	e2e_eq "web-1 weight $w: the daemon holds the other map as its spare" \
		"$(held_ids | grep -xF "$two" || true)" "$(grep -vx "${ids[-1]}" <<<"$two" || true)"
done
echo "# ring map ids: ${ids[*]}"
e2e_eq "every ring went into one of two maps" "$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)" 2

echo "# past the spare's room: a fresh map"
change 18 "web-1 weight 18 (2^20 buckets)"
big=$(ring_id)
e2e_check "a map neither of the two ($big)" bash -c "! printf '%s\n' ${ids[*]} | grep -qx '$big'"
agree "web-1 weight 18"
e2e_check "the daemon says which map each ring went into" \
	grep -q "written into the spare map of" "$(rs_bg_err d1)"

echo "# a restart: the spare is not pinned, the ring is adopted"
g=$(generation)
rs_bg_stop d1
start_daemon d2
e2e_eq "restart adopted the ring" "$(generation)" "$g"
e2e_eq "the restarted daemon holds no ring map" \
	"$(held_ids | grep -cxF -e "$big" -e "${ids[0]}" -e "${ids[1]}" || true)" 0
after=("$(ring_id)")
for w in 19 18 19; do
	change "$w" "after the restart, web-1 weight $w"
	after+=("$(ring_id)")
done
agree "after the restart"
e2e_check "after the restart: a new map, then the adopted one reused (${after[*]})" \
	test "${after[1]}" != "${after[0]}"
e2e_eq "after the restart: every ring in the adopted map or one new one" \
	"$(printf '%s\n' "${after[@]}" | sort -u | wc -l)" 2
e2e_summary

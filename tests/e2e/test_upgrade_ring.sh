#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, an upgrade of the ring as an operator meets it:
#   a ring built with vnodes = 160 (the default of earlier versions) and
#   without the flat table (as earlier versions wrote it) is running; the
#   file stops setting vnodes (it takes the new default, 4096). --check
#   says the running ring is kept and how many clients a reload moves;
#   a restarted daemon keeps every client where it was (same points, the
#   flat table added by one swap); the reload then moves about the share
#   --check announced, and only then.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup upg

write_conf() {
	cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
$1
CONF
	for i in 1 2 3 4; do
		cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:808$i
CONF
	done
}

points() { rsjson status | jq -r '.services[0].points'; }
generation() { rsjson status | jq -r '.services[0].generation'; }

start_daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
}

# mapping NAME: "SRC BACKEND" of 400 clients, one connection each (5 s
# timeout: slow guests under TCG).
mapping() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count 400 --rounds 1 --timeout-ms 5000 \
		>"$OUT/$1.raw" 2>/dev/null || true
	e2e_mapping "$OUT/$1.raw" >"$OUT/$1"
}

# same A B WHAT: every client of A reached the same backend in B.
same() {
	local moved missing
	moved=$(join "$OUT/$1" "$OUT/$2" | awk '$2 != $3' | wc -l)
	missing=$(join -v 1 "$OUT/$1" "$OUT/$2" | wc -l)
	e2e_eq "$3: clients on another backend" "$moved" 0
	e2e_eq "$3: clients without a reply" "$missing" 0
	if ((moved)); then
		join "$OUT/$1" "$OUT/$2" | awk '$2 != $3' | head -5
	fi
}

# The installed ring's map id (rs_rings holds it as 4 bytes, little end
# first) and its header's bytes (slot 0; bucket_bits is byte 12).
ring_id() {
	local id=0 shift=0 b
	for b in $(bpftool -j map lookup pinned "$BPFFS/rs_rings" key 0 0 0 0 | jq -r '.value[]'); do
		id=$((id + (b << shift)))
		shift=$((shift + 8))
	done
	echo "$id"
}
header() {
	bpftool -j map lookup id "$(ring_id)" key 0 0 0 0 | jq -r '.value | join(" ")'
}
header_bits() {
	local h
	read -ra h <<<"$(header)"
	echo $((h[12]))
}

for i in 1 2 3 4; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:808$i"
	rs_bg_wait_ready "be$i"
done

echo "# the earlier version's ring: vnodes 160, no flat table"
write_conf "vnodes = 160"
start_daemon d1
e2e_eq "640 points" "$(points)" 640
bits=$(header_bits)
e2e_check "ring has the flat table ($bits)" test $((bits & 128)) -eq 128
mapping before
e2e_eq "every client connected" "$(wc -l <"$OUT/before")" 400
g1=$(generation)
rs_bg_stop d1
# As an earlier version wrote it: the same points, no RS_RING_FLAT, the
# bucket index of 2^9 entries four to a slot, the trailer (generation)
# after it.
old=$(header | awk '{ $13 = 9; print }')
# shellcheck disable=SC2086 # the bytes are separate words
bpftool map update id "$(ring_id)" key 0 0 0 0 value $old
t=$((640 + 1 + (512 + 1 + 3) / 4))
# shellcheck disable=SC2046 # the bytes are separate words
bpftool map update id "$(ring_id)" key $((t & 255)) $((t >> 8)) 0 0 \
	value $((g1 & 255)) $((g1 >> 8 & 255)) 0 0 0 0 0 0 0 0 0 0 0 0 0 0
e2e_eq "header without the flat table" "$(header_bits)" 9
mapping stopped
same before stopped "daemon stopped, old-format ring"

echo "# the file stops setting vnodes: --check says what a reload moves"
write_conf ""
rs_in_edge build/ringsteerd -c "$CONF" --check >"$OUT/check.out" 2>&1
e2e_check "--check: running ring kept" grep -q "service web does not set vnodes, and the running ring was built with 160" "$OUT/check.out"
pct=$(sed -n 's/.*the reload moves \([0-9.]*\)% .*/\1/p' "$OUT/check.out")
e2e_check "--check: moves ${pct:-?}% of the clients" test -n "$pct"

echo "# restart (the upgrade): same points, flat table added, nobody moves"
start_daemon d2
e2e_check "log: kept until a reload" grep -q "service web: vnodes not set, and the running ring was built with 160 .* kept until a reload, which moves $pct%" "$(rs_bg_err d2)"
e2e_eq "still 640 points" "$(points)" 640
e2e_eq "one swap: the same points with the table" "$(generation)" $((g1 + 1))
bits=$(header_bits)
e2e_check "flat table written ($bits)" test $((bits & 128)) -eq 128
mapping restarted
same before restarted "restarted"

echo "# the reload takes the new default"
build/ringsteer -s "$SOCK" reload >/dev/null
e2e_eq "4 x 4096 points" "$(points)" 16384
mapping reloaded
moved=$(join "$OUT/before" "$OUT/reloaded" | awk '$2 != $3 { n++ } END { print n + 0 }')
echo "#   $moved of 400 clients moved; --check said $pct%"
# 400 samples of a share p: within 5 standard deviations of it.
e2e_check "moved about as announced" awk -v m="$moved" -v p="$pct" 'BEGIN {
	e = 400 * p / 100; sd = sqrt(400 * (p / 100) * (1 - p / 100));
	exit !(m > 0 && m >= e - 5 * sd - 1 && m <= e + 5 * sd + 1) }'
e2e_summary

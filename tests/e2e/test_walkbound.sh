#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the data plane walks at most 64 ring points. With 15 of 16
# backends down, runs of skipped points are far longer than that; the
# daemon must install a ring without them so that every client still finds
# the one backend left, and go back to the full ring when they return.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup wlk
N=16

cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
CONF
for i in $(seq $N); do
	cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:$((8100 + i))
CONF
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:$((8100 + i))"
done
for i in $(seq $N); do rs_bg_wait_ready "be$i"; done
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "sk_lookup link" 10

clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count 250 2>/dev/null |
		awk '{ print $1, $3 }' | sort >"$OUT/$1"
}

clients base
e2e_eq "full ring at start" "$(rsjson status | jq .services[0].compact)" false
for i in $(seq $((N - 1))); do
	build/ringsteer -s "$SOCK" backend down "web-$i" >/dev/null
done
clients down
e2e_eq "every client still served" "$(awk '$2 !~ /^cache-/' "$OUT/down" | wc -l)" 0
e2e_eq "all by the backend left" "$(awk '$2 != "cache-16"' "$OUT/down" | wc -l)" 0
e2e_eq "ring without the unavailable backends installed" "$(rsjson status | jq .services[0].compact)" true
e2e_eq "no walk gave up" "$(rsjson services | jq .services[0].stats.walk_limit)" 0
e2e_eq "no lookup without a backend" "$(rsjson services | jq .services[0].stats.no_backend)" 0
e2e_check "the switch was logged" grep -q "walks past unused points too long" "$(rs_bg_err daemon)"

for i in $(seq $((N - 1))); do
	build/ringsteer -s "$SOCK" backend up "web-$i" >/dev/null
done
e2e_eq "back to the full ring" "$(rsjson status | jq .services[0].compact)" false
clients up
e2e_eq "every client back on its backend" \
	"$(join "$OUT/base" "$OUT/up" | awk '$2 != $3' | wc -l)" 0
e2e_summary

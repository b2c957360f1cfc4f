#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: a UDP backend restarted at once keeps its clients (issue
# 38). A sticky UDP service (sticky_ttl = 60) of three backends, 30
# clients with a flow each. One backend's process is killed; while its
# socket is gone, its clients' datagrams go to another backend, but their
# sticky entries (live, naming a backend that is still UP) stay; once the
# backend listens again, every one of its clients is back on it (before
# the fix, the gap's datagrams rewrote their entries: all moved for good).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup urs
N=30
e2e_conf_global
cat >>"$CONF" <<CONF
[service dns]
protocol = udp
listen = 198.18.0.10:5353
sticky_ttl = 60
CONF
start_be() { # N [NAME]
	rs_bg_start "${2:-be$1}" rs_in_edge build/tools/rs_backend --name "dns-$1" \
		--udp "127.0.0.$1:5353"
	rs_bg_wait_ready "${2:-be$1}"
}
for i in 1 2 3; do
	printf '\n[backend dns-%d]\nservice = dns\naddress = 127.0.0.%d:5353\ncheck = none\n' \
		"$i" "$i" >>"$CONF"
	start_be "$i"
done
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10

round() {
	rs_in_client build/tools/rs_client --udp --target 198.18.0.10:5353 \
		--src-base 198.18.1.1 --count "$N" --rounds 1 --concurrency 1 \
		--timeout-ms 1000 >"$OUT/$1.raw" 2>/dev/null || true
	e2e_mapping "$OUT/$1.raw" >"$OUT/$1"
}
has_socket() {
	[[ $(rsjson backends | jq -r ".backends[] | select(.name == \"dns-$1\") | .has_socket") == "$2" ]]
}

round before
e2e_eq "every client answered" "$(wc -l <"$OUT/before")" "$N"
victim=$(e2e_shares "$OUT/before" | sort -k2 -rn | awk 'NR == 1 { print $1 }')
v=${victim#dns-}
mine=$(awk -v b="$victim" '$2 == b' "$OUT/before" | wc -l)
echo "# $victim has $mine of the $N clients: killed"
kill -KILL "${RS_BG_PID[be$v]}"
e2e_check "its socket is gone" rs_until 10 has_socket "$v" false
round gap
e2e_eq "during the gap, none reached it" "$(awk -v b="$victim" '$2 == b' "$OUT/gap" | wc -l)" 0
e2e_eq "the other clients stayed" "$(join "$OUT/before" "$OUT/gap" | awk -v b="$victim" '$2 != b && $2 != $3' | wc -l)" 0
start_be "$v" "be$v-again"
e2e_check "its socket is back" rs_until 10 has_socket "$v" true
round after
e2e_eq "all $mine of its clients are back on $victim" "$(awk -v b="$victim" '$2 == b' "$OUT/after" | wc -l)" "$mine"
e2e_eq "no client moved" "$(join "$OUT/before" "$OUT/after" | awk '$2 != $3' | wc -l)" 0
e2e_summary

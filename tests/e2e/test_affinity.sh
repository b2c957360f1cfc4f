#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: ringsteerd steering real TCP and UDP clients (IPv4 and IPv6,
# hundreds of source addresses) to four real backend processes, in network
# namespaces made and removed here.
#   affinity, shares by weight, failover of only the dead backend's
#   clients, steering with the daemon stopped, re-acquisition of a restarted
#   backend by a restarted daemon, and --detach leaving nothing behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup aff

# Weights 1:1:1:2. TCP backends listen on loopback; the UDP ones bind the
# service port on their own address and answer from the service address
# with IP_PKTINFO, as a real UDP server behind ringsteer must.
cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
listen = [2001:db8::10]:80

[service dns]
protocol = udp
listen = 198.18.0.10:5353
listen = [2001:db8::10]:5353
prefix6 = 128
fallback = drop
CONF
for i in 1 2 3 4; do
	w=1
	[[ $i == 4 ]] && w=2
	cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:808$i
address = [::1]:808$i
weight = $w

[backend dns-$i]
service = dns
address = 127.0.0.$i:5353
address = [2001:db8::1:$i]:5353
weight = $w
CONF
done

start_backend() {
	local i=$1
	rs_bg_start "be$i-$2" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:808$i" --tcp "[::1]:808$i" \
		--udp "127.0.0.$i:5353" --udp "[2001:db8::1:$i]:5353"
	rs_bg_wait_ready "be$i-$2"
}

start_daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
}

# clients NAME TARGET SRC_BASE COUNT ROUNDS [--udp]
clients() {
	local name=$1 target=$2 base=$3 count=$4 rounds=$5
	shift 5
	rs_in_client build/tools/rs_client --target "$target" --src-base "$base" \
		--count "$count" --rounds "$rounds" "$@" >"$OUT/$name" 2>/dev/null || true
}

# all_traffic PREFIX ROUNDS: every client set, results in $OUT/PREFIX-*.
all_traffic() {
	clients "$1-tcp4a" 198.18.0.10:80 198.18.1.1 200 "$2"
	clients "$1-tcp4b" 198.18.0.10:80 198.18.2.1 200 "$2"
	clients "$1-tcp6" "[2001:db8::10]:80" 2001:db8:1::1 50 "$2"
	clients "$1-udp4" 198.18.0.10:5353 198.18.1.1 200 "$2" --udp
	clients "$1-udp6" "[2001:db8::10]:5353" 2001:db8:1::1 50 "$2" --udp
}

for i in 1 2 3 4; do start_backend "$i" 0; done
e2e_check "ringsteerd --check accepts the config" \
	build/ringsteerd --check -c "$CONF"
start_daemon d1

echo "# affinity: 450 TCP + 250 UDP clients, 3 connections each"
all_traffic base 3
for f in tcp4a tcp4b tcp6 udp4 udp6; do
	e2e_eq "$f: no failed attempts" "$(e2e_errors "$OUT/base-$f")" 0
	e2e_eq "$f: every client reaches one backend only" \
		"$(e2e_unstable "$OUT/base-$f")" 0
done
e2e_eq "tcp4: 3 replies per client" "$(wc -l <"$OUT/base-tcp4a")" 600
e2e_eq "tcp6: 3 replies per client" "$(wc -l <"$OUT/base-tcp6")" 150

cat "$OUT/base-tcp4a" "$OUT/base-tcp4b" | awk '$2 == 0 { print $1, $3 }' |
	sort >"$OUT/map-tcp4"
e2e_shares "$OUT/map-tcp4" >"$OUT/shares-tcp4"
echo "# shares of 400 IPv4 clients (weights 1:1:1:2):"
sed 's/^/#   /' "$OUT/shares-tcp4"
e2e_check "all four backends get clients" \
	test "$(wc -l <"$OUT/shares-tcp4")" -eq 4
# Expected 80/80/80/160; allow for ring imbalance and sampling.
e2e_check "shares follow weights (±45%)" awk '
	{ want = ($1 == "cache-4") ? 160 : 80
	  if ($2 < want * 0.55 || $2 > want * 1.45) bad++ }
	END { exit bad > 0 }' "$OUT/shares-tcp4"
# web keeps the default prefix6 = 64: one /64 is one client.
e2e_eq "IPv6 clients of one /64 share a backend (prefix6 = 64)" \
	"$(e2e_mapping "$OUT/base-tcp6" | awk '{print $2}' | sort -u | wc -l)" 1
e2e_check "IPv6 clients spread over several backends with prefix6 = 128" \
	test "$(e2e_mapping "$OUT/base-udp6" | awk '{print $2}' | sort -u | wc -l)" -ge 3
e2e_check "UDP clients spread over several backends" \
	test "$(e2e_mapping "$OUT/base-udp4" | awk '{print $2}' | sort -u | wc -l)" -ge 3

echo "# failover: kill cache-2"
rs_bg_stop be2-0
all_traffic kill 1
for f in tcp4a tcp4b tcp6 udp4 udp6; do
	e2e_eq "$f after kill: no failed attempts" "$(e2e_errors "$OUT/kill-$f")" 0
	moved_other=$(join <(e2e_mapping "$OUT/base-$f") <(e2e_mapping "$OUT/kill-$f") |
		awk '$2 != "cache-2" && $2 != $3' | wc -l)
	to_dead=$(e2e_mapping "$OUT/kill-$f" | awk '$2 == "cache-2"' | wc -l)
	had=$(e2e_mapping "$OUT/base-$f" | awk '$2 == "cache-2"' | wc -l)
	e2e_eq "$f: clients of live backends stay put" "$moved_other" 0
	e2e_eq "$f: nobody reaches the dead backend" "$to_dead" 0
	if [[ $f != tcp6 ]]; then
		e2e_check "$f: cache-2 had clients to move ($had)" test "$had" -gt 0
	fi
done

echo "# the daemon stops: steering continues"
rs_bg_stop d1
e2e_check "link still pinned after SIGTERM" test -e "$BPFFS/steer_lookup_link"
all_traffic stopped 1
for f in tcp4a tcp6 udp4; do
	e2e_eq "$f with daemon stopped: no failures" "$(e2e_errors "$OUT/stopped-$f")" 0
	e2e_eq "$f with daemon stopped: same backends" \
		"$(diff <(e2e_mapping "$OUT/kill-$f") <(e2e_mapping "$OUT/stopped-$f") | wc -l)" 0
done

echo "# cache-2 comes back; a restarted daemon adopts the pins and takes its socket"
start_backend 2 1
start_daemon d2
e2e_check "restarted daemon updated the pinned link in place" \
	grep -q "updated sk_lookup link" "$(rs_bg_err d2)"
# The first daemon may have seen cache-2's checks fail before it stopped;
# the new one then waits for `rise` passes before sending clients back.
back_up() {
	build/ringsteer -s "$SOCK" -j backends | jq -e '[.backends[] |
		select(.name == "web-2" or .name == "dns-2") |
		select(.state == "UP" and .has_socket)] | length == 2' >/dev/null
}
for _ in $(seq 100); do back_up && break; sleep 0.1; done
e2e_check "cache-2 back in service" back_up
all_traffic back 1
for f in tcp4a tcp6 udp4 udp6; do
	e2e_eq "$f back: no failures" "$(e2e_errors "$OUT/back-$f")" 0
	e2e_eq "$f back: every client on its original backend" \
		"$(diff <(e2e_mapping "$OUT/base-$f") <(e2e_mapping "$OUT/back-$f") | wc -l)" 0
done

echo "# --detach removes everything"
rs_bg_stop d2
e2e_check "ringsteerd --detach succeeds" build/ringsteerd -q --detach -c "$CONF"
e2e_check "bpffs directory removed" test ! -e "$BPFFS"
ino=$(stat -L -c %i "/run/netns/$RS_NS_EDGE")
e2e_eq "no sk_lookup link left in the edge namespace" \
	"$(bpftool -j link show | jq --argjson ino "$ino" '[.[] | select(.attach_type == "sk_lookup" and .netns_ino == $ino)] | length')" 0
clients detached-tcp4 198.18.0.10:80 198.18.1.1 20 1 --timeout-ms 500
e2e_eq "service address no longer answers" "$(e2e_errors "$OUT/detached-tcp4")" 20

e2e_summary

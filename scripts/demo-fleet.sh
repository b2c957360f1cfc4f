#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `make demo-fleet`: a PoP of three hosts behind an ECMP router, each with
# ringsteerd and two backends, membership in an etcd the demo starts
# (docs/fleet.md). 200 clients connect 3 times each: the router spreads
# each client's connections over the hosts, fleet mode brings every one
# of them to the same backend; 50 IPv6 clients too (forwarded in outer
# IPv6). Then a host is drained and another killed.
# Everything (namespaces, processes, pins) is removed on exit or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/netns.sh
. scripts/fleet-netns.sh

if [[ $(id -u) -ne 0 ]]; then
	echo "demo-fleet: run as root (it creates network namespaces and loads BPF)" >&2
	exit 1
fi
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

BPFFS=/sys/fs/bpf/rs-demo-fleet-$$
rs_install_cleanup
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='for i in 1 2 3; do [[ -f $OUT/h$i.conf ]] && rs_in_host $i build/ringsteerd -q --detach -c "$OUT/h$i.conf"; rm -rf "$BPFFS-h$i"; done; rs_fleet_teardown'
rs_ns_setup "fdemo$$"
OUT=$RS_BG_DIR

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ctl() {
	local i=$1
	shift
	build/ringsteer -s "$OUT/h$i.sock" "$@"
}

say "router $RS_NS_EDGE: 198.18.0.10 and 2001:db8::10 over host-1..3 by ECMP (L4 hash); etcd on $RS_FLEET_ETCD_IP"
# shellcheck disable=SC2034 # read by rs_fleet_conf (scripts/fleet-netns.sh)
RS_FLEET_IPV6=1
rs_fleet_router
for i in 1 2 3; do rs_fleet_add_host "$i"; done
rs_fleet_ecmp 1 2 3
rs_fleet_ecmp6 1 2 3
rs_fleet_etcd_start etcd "$OUT/etcd"

for i in 1 2 3; do
	rs_fleet_conf "$i" "$BPFFS-h$i" "$OUT/h$i.sock" >"$OUT/h$i.conf"
	rs_fleet_start_host "$i" "$OUT/h$i.conf" build/tools/rs_backend
done
for _ in $(seq 100); do
	[[ $(ctl 1 -j fleet status 2>/dev/null | jq '.members | length') == 3 ]] &&
		ctl 1 -j fleet status | jq -e .agrees >/dev/null && break
	sleep 0.1
done
say "host-1's view of the fleet"
ctl 1 fleet status

run() { # NAME [TARGET SRC COUNT]: 200 clients, 3 connections each; who reached what
	rs_in_client build/tools/rs_client --target "${2:-198.18.0.10:80}" \
		--src-base "${3:-198.18.1.1}" --count "${4:-200}" --rounds 3 >"$OUT/$1" 2>/dev/null || true
	echo "connections: $(wc -l <"$OUT/$1"), failed: $(awk '$3 ~ /^ERR/' "$OUT/$1" | wc -l)"
	echo "clients that reached more than one backend: $(awk '$3 !~ /^ERR/ { s[$1 " " $3] = 1 }
		END { for (k in s) { split(k, a, " "); n[a[1]]++ } for (c in n) if (n[c] > 1) m++; print m + 0 }' "$OUT/$1")"
	echo "connections per backend:"
	awk '$3 !~ /^ERR/ { n[$3]++ } END { for (b in n) printf "  %s %d\n", b, n[b] }' "$OUT/$1" | sort
}

say "200 clients x 3 connections through the router"
run base
for i in 1 2 3; do
	echo "host-$i: $(ctl "$i" -j fleet status | jq -r '.packets | "forwarded \(.forwarded), received \(.received)"')"
done
c=$(awk 'NR == 1 {print $1}' "$OUT/base")
say "ringsteer lookup web $c (on host-3)"
ctl 3 lookup web "$c"

say "50 IPv6 clients x 3 connections (one key per address: prefix6 = 128)"
run base6 '[2001:db8::10]:80' 2001:db8:1::1 50
for i in 1 2 3; do
	echo "host-$i: $(ctl "$i" -j fleet status | jq -r '.packets | "forwarded \(.forwarded), received \(.received)"')"
done

say "ringsteer fleet drain host-2: its clients move, nobody else's"
ctl 1 fleet drain host-2
# tables HOSTS WANT...: every host in HOSTS ("1 2 3") lists exactly the
# members WANT that take new clients, and agrees with the others.
tables() {
	local i want=$2
	for i in $1; do
		[[ $(ctl "$i" -j fleet status | jq -r '[.members[] |
			select((.drained | not) and .capacity > 0) | .name] | join(" ")') == "$want" ]] &&
			ctl "$i" -j fleet status | jq -e .agrees >/dev/null || return 1
	done
}
rs_until 10 tables "1 2 3" "host-1 host-3" || {
	echo "demo-fleet: the hosts did not all drop host-2 within 10 s" >&2
	exit 1
}
ctl 1 fleet status
run drained

say "host-3 killed and taken out of ECMP: its lease (3 s) expires"
ctl 1 fleet undrain host-2
rs_fleet_ecmp 1 2
for p in d3 be3a be3b; do rs_bg_stop "$p"; done
rs_until 20 tables "1 2" "host-1 host-2" || {
	echo "demo-fleet: host-3 still a member after 20 s" >&2
	exit 1
}
ctl 1 fleet status
run killed
say "done: removing namespaces, processes and pins"

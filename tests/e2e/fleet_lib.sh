# shellcheck shell=bash
# Variables are set here for the scripts that source this file.
# shellcheck disable=SC2034
# SPDX-License-Identifier: MIT
#
# Helpers of the fleet suites (tests/e2e/test_fleet*.sh). Source this
# file alone, from the repository's root: it sources the namespace helpers
# and tests/e2e/lib.sh that every fleet suite needs first. Host I's
# configuration, control socket and pins are $OUT/hI.conf, $OUT/hI.sock
# and $BPFFS-hI.

. scripts/netns.sh
. scripts/fleet-netns.sh
. tests/e2e/lib.sh

# e2e_fleet_setup PREFIX [ETCD_START...]: e2e_setup, then the PoP: a
# router, hosts 1..3 behind ECMP and etcd; cleanup detaches every host's
# data plane. etcd is rs_fleet_etcd_start's plain one unless the suite
# names its own start command, ETCD_START... (test_fleet_tls.sh starts
# etcd with TLS and client certificates, whose files need $OUT): it runs
# last, with the namespaces made, and leaves etcd at $ETCD.
e2e_fleet_setup() {
	local i
	e2e_setup "$1"
	shift
	# shellcheck disable=SC2016 # expanded when the hook runs
	RS_CLEANUP_HOOK='for i in 1 2 3; do [[ -f $OUT/h$i.conf ]] && rs_in_host $i build/ringsteerd -q --detach -c "$OUT/h$i.conf"; rm -rf "$BPFFS-h$i"; done; rs_fleet_teardown'
	rs_fleet_router
	for i in 1 2 3; do rs_fleet_add_host "$i"; done
	rs_fleet_ecmp 1 2 3
	PREFIX=/ringsteer-$RS_RUNID
	if (($#)); then
		"$@"
	else
		rs_fleet_etcd_start etcd "$OUT/etcd"
	fi
}

ctl() { # ctl I ARGS...: ringsteer on host I
	local i=$1
	shift
	build/ringsteer -s "$OUT/h$i.sock" "$@"
}

# host_conf I [GLOBAL_LINE...]: host I's configuration with this run's
# pins and control socket (rs_fleet_conf), on stdout for a suite to edit.
host_conf() {
	local i=$1
	shift
	rs_fleet_conf "$i" "$BPFFS-h$i" "$OUT/h$i.sock" "$@"
}

# run_host I: host I's backends and daemon from $OUT/hI.conf, until the
# daemon has its sk_lookup link.
run_host() {
	rs_fleet_start_host "$1" "$OUT/h$1.conf" build/tools/rs_backend --hold
	e2e_wait_for "$(rs_bg_err "d$1")" "sk_lookup link" 10
}

start_host() { # start_host I [GLOBAL_LINE...]: host_conf, then run_host
	host_conf "$@" >"$OUT/h$1.conf"
	run_host "$1"
}

# clients NAME COUNT ROUNDS: COUNT IPv4 sources from 198.18.1.1 each
# connect ROUNDS times to the service; rs_client's lines in $OUT/NAME.
# A client gives up after 1 s (times E2E_SLOW: 4 in the TCG guest of make
# vmtest, where a forwarded handshake beside other work took longer).
clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count "$2" --rounds "$3" \
		--concurrency 16 --timeout-ms "$((1000 * ${E2E_SLOW:-1}))" \
		>"$OUT/$1" 2>/dev/null || true
}

# members I: members that own keys in host I's table (not drained, with
# capacity: a host whose backends are not up yet owns none).
members() {
	ctl "$1" -j fleet status 2>/dev/null | jq -r '[.members[] |
		select((.drained | not) and .capacity > 0 and .keys_share > 0) |
		.name] | join(",")'
}

# wait_members WANT I...: until every host I... shows members WANT, agreeing.
wait_members() {
	local want=$1 i t ok
	shift
	for ((t = 0; t < 150; t++)); do
		ok=1
		for i in "$@"; do
			[[ $(members "$i") == "$want" ]] || ok=""
			ctl "$i" -j fleet status 2>/dev/null | jq -e .agrees >/dev/null || ok=""
		done
		[[ -n $ok ]] && return 0
		sleep 0.1
	done
	return 1
}

# pinged NAME: rs_idle NAME (--ping) has done two more whole rounds of
# pings since the call (an "open N" line ends each round, and the first
# may have begun before the call), so a connection lost by then shows as
# closed. Fails after 5 s without them (rs_idle gone).
pinged() {
	local out n
	out=$(rs_bg_out "$1")
	n=$(grep -c '^open' "$out" || true)
	rs_until 5 opens_reach "$out" $((n + 3))
}
opens_reach() { (($(grep -c '^open' "$1") >= $2)); }

stat_of() { # stat_of I FIELD: a packet counter of host I's fleet step
	ctl "$1" -j fleet status | jq ".packets.$2"
}

# metric_of I NAME: a Prometheus sample of host I (its configuration
# says metrics = 127.0.0.1:946I).
metric_of() {
	rs_in_host "$1" curl -sf "http://127.0.0.1:946$1/metrics" |
		awk -v m="$2" '$1 == m { print $2 }'
}

# rs_client --loop-seconds prints "attempts=N ok=N failed=N" first.
load_failed() { sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$(rs_bg_out "$1")" | head -1; }
load_attempts() { sed -n 's/^attempts=\([0-9]*\).*/\1/p' "$(rs_bg_out "$1")" | head -1; }

# check_drain CLIENTS LABEL: host-2 drained and undrained while `load NAME`
# (the suite's connection load, in the background) runs and the suite's
# long-lived connections (idle_open) are open; CLIENTS NAME COUNT ROUNDS
# is the suite's client run, $OUT/base its first one. LABEL names the
# family in the load's checks ("" or "IPv6 ").
check_drain() {
	local clients=$1 label=$2
	load load-drain
	e2e_check "ringsteer fleet drain host-2" ctl 1 fleet drain host-2
	e2e_check "all hosts drop host-2 from their tables" \
		wait_members host-1,host-3 1 2 3
	"$clients" drained 200 2
	e2e_eq "drained: no failed connections" "$(e2e_errors "$OUT/drained")" 0
	e2e_eq "drained: every client reaches one backend only" \
		"$(e2e_unstable "$OUT/drained")" 0
	e2e_eq "drained: no new connection reaches host-2" \
		"$(awk '$3 ~ /^h2-/' "$OUT/drained" | wc -l)" 0
	e2e_mapping "$OUT/base" >"$OUT/base.map"
	e2e_mapping "$OUT/drained" >"$OUT/drained.map"
	e2e_eq "clients of host-1 and host-3 kept their backend" \
		"$(join "$OUT/base.map" "$OUT/drained.map" | awk '$2 !~ /^h2-/ && $2 != $3' | wc -l)" 0
	e2e_check "ringsteer fleet undrain host-2" ctl 1 fleet undrain host-2
	e2e_check "host-2 is back in every table" \
		wait_members host-1,host-2,host-3 1 2 3
	wait "${RS_BG_PID[load-drain]}" || true
	e2e_eq "${label}load through drain and undrain: no failed connections" \
		"$(load_failed load-drain)" 0
	e2e_check "${label}load through drain and undrain: connections were made" \
		test "$(load_attempts load-drain)" -gt 100
	e2e_eq "long-lived ${label}connections survive drain and undrain" \
		"$(idle_open)" 100
}

# The etcd of e2e_fleet_setup, through its JSON gateway (no etcdctl on
# Debian's etcd-server): PREFIX is the hosts' [fleet] prefix.
ETCD=http://$RS_FLEET_ETCD_IP:2379
b64() { printf '%s' "$1" | base64 -w0; }
etcd_call() { # etcd_call PATH JSON
	nsenter --net="/run/netns/$RS_NS_EDGE" -- curl -sf -m 5 -X POST \
		-d "$2" "$ETCD$1"
}
etcd_put() { # etcd_put KEY VALUE [LEASE]
	etcd_call /v3/kv/put "{\"key\":\"$(b64 "$1")\",\"value\":\"$(b64 "$2")\",\"lease\":\"${3:-0}\"}" >/dev/null
}
etcd_put_file() { # etcd_put_file KEY FILE LEASE: a value too big for the command line
	{
		printf '{"key":"%s","value":"' "$(b64 "$1")"
		base64 -w0 <"$2"
		printf '","lease":"%s"}' "$3"
	} >"$OUT/put.json"
	nsenter --net="/run/netns/$RS_NS_EDGE" -- curl -sf -m 10 -X POST \
		--data-binary "@$OUT/put.json" "$ETCD/v3/kv/put" >/dev/null
}
etcd_get() { # etcd_get KEY: its value
	etcd_call /v3/kv/range "{\"key\":\"$(b64 "$1")\"}" |
		jq -r '.kvs[0].value // empty' | base64 -d
}
etcd_del_prefix() { # etcd_del_prefix PREFIX
	local end last
	# The range end: the prefix with its last character incremented.
	last=$(printf '%d' "'${1: -1}")
	# shellcheck disable=SC2059 # the format is the escape itself
	end=${1%?}$(printf "\\x$(printf %x $((last + 1)))")
	etcd_call /v3/kv/deleterange "{\"key\":\"$(b64 "$1")\",\"range_end\":\"$(b64 "$end")\"}" >/dev/null
}

# rejected_of I KEY: host I's reason for PREFIX/members/KEY, if rejected.
rejected_of() {
	ctl "$1" -j fleet status | jq -r --arg k "$PREFIX/members/$2" \
		'.rejected[] | select(.key == $k) | .reason'
}
wait_rejected() { # wait_rejected KEY: every host lists KEY as rejected
	local t i ok
	for ((t = 0; t < 100; t++)); do
		ok=1
		for i in 1 2 3; do [[ -n $(rejected_of "$i" "$1") ]] || ok=""; done
		[[ -n $ok ]] && return 0
		sleep 0.1
	done
	return 1
}

# encap_header HOPS: our wire header (version 2, unsigned: key id 0,
# tag 0), as bytes.
encap_header() {
	printf 'RSF1\x02'
	printf "\\x$(printf %02x "$1")"
	printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
}

# encap HOPS: that header around a TCP SYN to the service.
encap() {
	encap_header "$1"
	# IPv4, 40 bytes, TCP, 198.18.1.77 -> 198.18.0.10 (checksum unchecked
	# by us), then a TCP SYN header from port 4000 to 80.
	printf '\x45\x00\x00\x28\x00\x00\x40\x00\x40\x06\x00\x00'
	printf '\xc6\x12\x01\x4d\xc6\x12\x00\x0a'
	printf '\x0f\xa0\x00\x50\x00\x00\x00\x01\x00\x00\x00\x00'
	printf '\x50\x02\x20\x00\x00\x00\x00\x00'
}

# send_encap NS SRC HOPS: one encapsulated packet to host 1's fleet port.
send_encap() {
	# From a file: socat sends what one read gets as one datagram.
	encap "$3" >"$OUT/pkt"
	nsenter --net="/run/netns/$1" -- socat -u "OPEN:$OUT/pkt" \
		"UDP4-SENDTO:198.18.11.2:7440,bind=$2" 2>/dev/null || true
}

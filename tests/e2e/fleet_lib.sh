# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# Helpers of the fleet suites (test_fleet.sh, test_fleet6.sh), after
# scripts/fleet-netns.sh and tests/e2e/lib.sh: host I's configuration,
# control socket and pins are $OUT/hI.conf, $OUT/hI.sock and $BPFFS-hI.

ctl() { # ctl I ARGS...: ringsteer on host I
	local i=$1
	shift
	build/ringsteer -s "$OUT/h$i.sock" "$@"
}

start_host() { # start_host I: its configuration, backends and daemon
	local i=$1
	rs_fleet_conf "$i" "$BPFFS-h$i" "$OUT/h$i.sock" >"$OUT/h$i.conf"
	rs_fleet_start_host "$i" "$OUT/h$i.conf" build/tools/rs_backend --hold
	e2e_wait_for "$(rs_bg_err "d$i")" "sk_lookup link" 10
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

stat_of() { # stat_of I FIELD: a packet counter of host I's fleet step
	ctl "$1" -j fleet status | jq ".packets.$2"
}

# rs_client --loop-seconds prints "attempts=N ok=N failed=N" first.
load_failed() { sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$(rs_bg_out "$1")" | head -1; }
load_attempts() { sed -n 's/^attempts=\([0-9]*\).*/\1/p' "$(rs_bg_out "$1")" | head -1; }

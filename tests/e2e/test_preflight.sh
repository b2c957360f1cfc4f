#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end (issue 37): what a start over the pins found will do is what
# `ringsteerd --check` and `ringsteer status` (daemon stopped) say, and a
# start does it.
#   - nothing pinned: --check says a start creates the data plane;
#   - this build's pins: --check says a start adopts them; status too;
#   - one data plane per netns: daemon A on bpffs X, stopped (its link
#     stays attached), then daemon B on bpffs Y in the same netns: B's
#     start and --check refuse, naming A's link, program and pin and how
#     to remove it; nothing of B is attached; status (A's pins, and B's
#     empty bpffs) lists every sk_lookup program of the netns;
#   - pins of another ABI (rs_meta says 99), an unstamped map of another
#     value size, and a map of another size under this ABI's stamp: the
#     start refuses with the documented ABI message naming the command
#     (never libbpf's "parameter mismatch" alone), --check exits 1 saying
#     the same, and status says a start refuses;
#   - limits: 256 services start and the last one (id 255) steers; a
#     257th is refused with its file:line and the limit.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup pre
ABI=$(awk '$1 == "#define" && $2 == "RS_ABI_VERSION" { print $3 }' include/ringsteer/abi.h)
CONF_B=$OUT/b.conf
BPFFS_B=$BPFFS-b
# shellcheck disable=SC2016 # expanded when the hook runs
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
RS_CLEANUP_HOOK='for c in "$CONF" "$CONF_B"; do [[ -f $c ]] && build/ringsteerd -q --detach -c "$c"; done; rm -rf "$BPFFS" "$BPFFS_B"'

e2e_conf_global
e2e_conf_web1
sed -e "s|^bpffs = .*|bpffs = $BPFFS_B|" -e "s|^control_socket = .*|control_socket = $OUT/b.sock|" \
	"$CONF" >"$CONF_B"
rs_bg_start be1 rs_in_edge build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_wait_ready be1

check() { # NAME CONF: --check in the edge netns; its exit status in $OUT/NAME.rc
	local rc=0
	rs_in_edge build/ringsteerd --check -c "$2" >"$OUT/$1.out" 2>"$OUT/$1.err" || rc=$?
	echo "$rc" >"$OUT/$1.rc"
	sed "s/^/#   $1: /" "$OUT/$1.out" "$OUT/$1.err" | grep -v -e 'not local' -e 'has no backends' || true
}
started_or_gone() { e2e_gone "$1" || grep -q "control socket" "$2"; }
# refused NAME CONF: a start that must refuse; it is stopped if it did not.
refused() {
	local pid
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$2"
	pid=$RS_BG_LAST_PID
	rs_until 20 started_or_gone "$pid" "$(rs_bg_err "$1")" || true
	if e2e_gone "$pid"; then
		e2e_pass "$1: the start is refused"
	else
		e2e_fail "$1: the daemon started"
	fi
	rs_bg_stop "$1"
	sed "s/^/#   $1: /" "$(rs_bg_err "$1")"
}
# check_refuses NAME PATTERN: --check exits 1 and its error matches PATTERN
check_refuses() {
	check "$1" "$CONF"
	e2e_eq "$1: --check exits 1" "$(cat "$OUT/$1.rc")" 1
	e2e_check "$1: --check says why" grep -q "$2" "$OUT/$1.err"
}
netns_links() { # sk_lookup links attached in the edge netns
	local ino
	ino=$(stat -L -c %i "/run/netns/$RS_NS_EDGE")
	bpftool -j link show | jq --argjson ino "$ino" \
		'[.[] | select(.type == "netns" and .netns_ino == $ino and .attach_type == "sk_lookup")] | length'
}

echo "# nothing pinned"
check fresh "$CONF"
e2e_eq "--check passes" "$(cat "$OUT/fresh.rc")" 0
e2e_check "says a start creates the data plane" \
	grep -qx "pins: nothing under $BPFFS: a start creates the data plane (ABI $ABI) and attaches it" "$OUT/fresh.out"
e2e_check "states the limits" grep -qE '^limits: 1 of [0-9]+ services, 1 of [0-9]+ backends' "$OUT/fresh.out"

echo "# daemon A on $BPFFS"
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10
link=$(bpftool -j link show pinned "$BPFFS/steer_lookup_link" | jq .id)
prog=$(bpftool -j link show pinned "$BPFFS/steer_lookup_link" | jq .prog_id)
check same "$CONF"
e2e_eq "--check over A's pins passes" "$(cat "$OUT/same.rc")" 0
e2e_check "says a start adopts them" \
	grep -qx "pins: $BPFFS holds a data plane of this build's ABI ($ABI), attached and steering: a start adopts it and moves no client" "$OUT/same.out"
e2e_check "lists A's program as the netns' one sk_lookup program" \
	grep -qx "  link $link (program steer_lookup id $prog, pinned at $BPFFS/steer_lookup_link)" "$OUT/same.out"
rsctl status >"$OUT/status-a.out"
e2e_check "status (daemon running) lists it as ours" \
	grep -qx "  link $link: program steer_lookup id $prog, pinned at $BPFFS/steer_lookup_link (ours)" "$OUT/status-a.out"
rs_bg_stop daemon
rc=0
build/ringsteer -c "$CONF" status >"$OUT/down-a.out" 2>/dev/null || rc=$?
e2e_check "status (A stopped) says a start adopts" grep -q "Starting it (systemctl start ringsteerd) adopts this state" "$OUT/down-a.out"
e2e_check "and lists the one sk_lookup program" grep -qx "sk_lookup programs in this netns: 1 (run in this order)" "$OUT/down-a.out"

echo "# daemon B on $BPFFS_B, same netns, A's link still attached"
check other-dp "$CONF_B"
e2e_eq "--check exits 1" "$(cat "$OUT/other-dp.rc")" 1
e2e_check "--check names A's link, program and pin" \
	grep -q "another ringsteer data plane is attached to this network namespace: link $link (program steer_lookup id $prog, pinned at $BPFFS/steer_lookup_link)" "$OUT/other-dp.err"
e2e_check "and how to remove it" \
	grep -q "ringsteerd --detach -c FILE\` (FILE: a configuration with bpffs = $BPFFS) or \`bpftool link detach id $link\`" "$OUT/other-dp.err"
e2e_check "no 'test is successful'" bash -c "! grep -q successful '$OUT/other-dp.out'"
refused daemon-b "$CONF_B"
e2e_check "the refusal names A's link and pin" \
	grep -q "another ringsteer data plane is attached to this network namespace: link $link .*pinned at $BPFFS/steer_lookup_link" "$(rs_bg_err daemon-b)"
e2e_eq "one sk_lookup program in the netns, A's" "$(netns_links)" 1
rc=0
rs_in_edge build/ringsteer -c "$CONF_B" status >"$OUT/down-b.out" 2>/dev/null || rc=$?
sed 's/^/#   status B: /' "$OUT/down-b.out"
e2e_check "status of B's empty bpffs does not say nothing steers" \
	grep -q "but another ringsteer data plane steers in this netns" "$OUT/down-b.out"
e2e_check "and warns of A's link" grep -q "warning: link $link is another ringsteer data plane (pinned at $BPFFS/steer_lookup_link)" "$OUT/down-b.out"
build/ringsteerd -q --detach -c "$CONF"

echo "# pins of ABI 99"
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/rs_meta" type array key 4 value 24 entries 1 name rs_meta
bpftool map update pinned "$BPFFS/rs_meta" key 0 0 0 0 value 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
check_refuses abi99 "the maps pinned under $BPFFS are of ABI 99, this build is ABI $ABI: a start refuses to mix them. \`ringsteerd --detach -c $CONF\` removes them"
rc=0
build/ringsteer -c "$CONF" status >"$OUT/abi99-status.out" 2>/dev/null || rc=$?
e2e_check "status says a start refuses, naming the command" \
	grep -q "Starting this ringsteer's daemon refuses: the maps pinned under $BPFFS are of ABI 99, this build is ABI $ABI: a start refuses to mix them. \`ringsteerd --detach -c $CONF\` removes them" "$OUT/abi99-status.out"
refused abi99 "$CONF"
e2e_check "the start names both ABIs and the command" \
	grep -q "are of ABI 99, this build is ABI $ABI: a start refuses to mix them. \`ringsteerd --detach -c $CONF\` removes them" "$(rs_bg_err abi99)"
build/ringsteerd -q --detach -c "$CONF"

echo "# an unstamped map of another value size"
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/rs_backends" type array key 4 value 8 entries 1024 name rs_backends
check_refuses layout "are of an earlier ABI (no ABI stamp; rs_backends has value size 8, this build's [0-9]*), this build is ABI $ABI"
refused layout "$CONF"
e2e_check "the start says the same" grep -q "rs_backends has value size 8" "$(rs_bg_err layout)"
e2e_check "not libbpf's parameter mismatch" bash -c "! grep -q 'parameter mismatch' '$(rs_bg_err layout)'"
build/ringsteerd -q --detach -c "$CONF"

echo "# this ABI's stamp over a map of another size"
mkdir -p "$BPFFS"
bpftool map create "$BPFFS/rs_meta" type array key 4 value 24 entries 1 name rs_meta
bpftool map update pinned "$BPFFS/rs_meta" key 0 0 0 0 value "$ABI" 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
bpftool map create "$BPFFS/rs_services" type array key 4 value 8 entries 64 name rs_services
check_refuses stamp "say ABI $ABI but rs_services has value size 8, this build's [0-9]* (a layout changed without an ABI bump)"
rc=0
build/ringsteer -c "$CONF" status >"$OUT/stamp-status.out" 2>/dev/null || rc=$?
e2e_check "status says a start refuses, in the start's words" grep -q "Starting this ringsteer's daemon refuses: the maps pinned under $BPFFS say ABI $ABI but rs_services has value size 8, this build's [0-9]* (a layout changed without an ABI bump)" "$OUT/stamp-status.out"
refused stamp "$CONF"
e2e_check "not libbpf's parameter mismatch" bash -c "! grep -q 'parameter mismatch' '$(rs_bg_err stamp)'"
build/ringsteerd -q --detach -c "$CONF"

echo "# 256 services (ABI 9): a start steers the last one; a 257th is refused"
many() { # N: $OUT/many.conf with services s0..sN-1, web-1 in the last
	{
		printf '[global]\nbpffs = %s\ncontrol_socket = %s\n\n' "$BPFFS" "$SOCK"
		for ((i = 0; i < $1; i++)); do
			printf '[service s%d]\nprotocol = tcp\nlisten = 198.18.0.10:%d\nvnodes = 8\n\n' \
				"$i" $((1000 + i))
		done
		printf '[backend web-1]\nservice = s%d\naddress = 127.0.0.1:8081\ncheck = none\n' $(($1 - 1))
	} >"$OUT/many.conf"
}
many 256
check many "$OUT/many.conf"
e2e_eq "--check of 256 services passes" "$(cat "$OUT/many.rc")" 0
e2e_check "and states the limits" grep -qx "limits: 256 of 256 services, 1 of 1024 backends (the data plane's maps: ringsteer.conf(5) LIMITS)" "$OUT/many.out"
rs_bg_start many rs_in_edge build/ringsteerd -c "$OUT/many.conf"
e2e_wait_for "$(rs_bg_err many)" "control socket" 10
e2e_check "the start says 256 services" grep -q "256 services, 1/1 backends with a socket" "$(rs_bg_err many)"
rs_in_client build/tools/rs_client --target 198.18.0.10:1255 --src-base 198.18.1.1 \
	--count 10 2>/dev/null >"$OUT/many.clients"
e2e_eq "service s255 (id 255) steers: 10 clients on web-1" "$(grep -c ' web-1$' "$OUT/many.clients")" 10
rs_bg_stop many
many 257
line=$(grep -n '^\[service s256\]' "$OUT/many.conf" | cut -d: -f1)
check many257 "$OUT/many.conf"
e2e_eq "--check of 257 services exits 1" "$(cat "$OUT/many257.rc")" 1
e2e_check "naming the 257th's file:line and the limit" \
	grep -q "^$OUT/many.conf:$line: \[service s256\]: too many services (max 256)" "$OUT/many257.err"
build/ringsteerd -q --detach -c "$CONF"
e2e_summary

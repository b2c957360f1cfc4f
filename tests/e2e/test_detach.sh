#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: `ringsteer detach` replies with the result of the detach,
# which the daemon does before it answers.
#   a detach that fails (a directory that is not ringsteer's inside the
#   pin directory, which dp_detach cannot unlink and which keeps the
#   directory from being removed): the CLI exits 1 with the reason and
#   what was left, the daemon logs it at error, keeps running, puts back
#   the links (sk_lookup, steer_sockops) and the pins it had removed and
#   steers on;
#   a detach that succeeds: the CLI prints ok and exits 0, the daemon
#   exits 0, the pins, the control socket and the sk_lookup link are gone
#   and nothing steers.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup det
e2e_start_web1
steered() { # how many of 5 new clients reach web-1
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count 5 2>/dev/null | grep -c ' web-1$' || true
}
LINK=$(bpftool link show pinned "$BPFFS/steer_lookup_link" -j | jq .id)
e2e_check "the sk_lookup link is pinned (id $LINK)" test "$LINK" -gt 0
e2e_eq "steers before" "$(steered)" 5
# steer_sockops's cgroup link: the cgroup it is attached at, 0 when none.
sockops_cg() { bpftool link show pinned "$BPFFS/steer_sockops_link" -j 2>/dev/null | jq '.cgroup_id // 0'; }
e2e_check "steer_sockops is attached ($(sockops_cg))" test "$(sockops_cg)" -gt 0

echo "# a detach that fails"
mkdir "$BPFFS/not-ours"
rc=0
timeout 30 build/ringsteer -s "$SOCK" detach >"$OUT/fail.out" 2>"$OUT/fail.err" || rc=$?
sed "s/^/#   /" "$OUT/fail.err"
e2e_eq "exit 1" "$rc" 1
e2e_check "says why and what was left" grep -qx \
	"ringsteer: detach failed: $BPFFS: Is a directory (left in place: not-ours); ringsteerd keeps running and steering" \
	"$OUT/fail.err"
e2e_check "nothing on stdout (no ok)" test ! -s "$OUT/fail.out"
e2e_check "-j: ok false with the error" bash -c "build/ringsteer -s '$SOCK' -j detach |
	jq -e '.ok == false and (.error | startswith(\"detach failed: \"))'"
e2e_check "logged at error" grep -q " error: detach failed: $BPFFS: Is a directory" "$(rs_bg_err daemon)"
e2e_check "the daemon still runs" _rs_alive "$DAEMON"
e2e_eq "and answers" "$(rsctl -j status | jq -r .ok)" true
e2e_check "the link and the pins are back" test -e "$BPFFS/steer_lookup_link" -a -e "$BPFFS/rs_backends"
# Detached links cannot be attached again: the daemon makes a new one.
LINK=$(bpftool link show pinned "$BPFFS/steer_lookup_link" -j | jq .id)
e2e_eq "an sk_lookup link attached in the namespace (id $LINK)" \
	"$(bpftool link show id "$LINK" -j | jq -c '[.type, .netns_ino > 0]')" '["netns",true]'
e2e_check "steer_sockops is attached again ($(sockops_cg))" test "$(sockops_cg)" -gt 0
e2e_eq "and it steers" "$(steered)" 5

echo "# a detach that succeeds"
rmdir "$BPFFS/not-ours"
rc=0
timeout 30 build/ringsteer -s "$SOCK" detach >"$OUT/ok.out" 2>"$OUT/ok.err" || rc=$?
e2e_eq "exit 0" "$rc" 0
e2e_eq "prints ok" "$(cat "$OUT/ok.out")" ok
drc=0
for _ in $(seq 50); do _rs_alive "$DAEMON" || break; sleep 0.1; done
wait "$DAEMON" || drc=$?
e2e_eq "the daemon exited, status 0" "$drc" 0
e2e_check "the pins are gone" test ! -e "$BPFFS"
e2e_check "the control socket is gone" test ! -e "$SOCK"
e2e_check "the sk_lookup link is gone" bash -c "! bpftool link show id '$LINK' >/dev/null 2>&1"
e2e_eq "nothing steers" "$(steered)" 0
e2e_check "logged the detach" grep -q "info: detached: removed $BPFFS; exiting" "$(rs_bg_err daemon)"
e2e_summary

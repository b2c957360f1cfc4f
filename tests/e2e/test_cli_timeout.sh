#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: every CLI call gives up on a daemon that does not answer.
# With ringsteerd SIGSTOPped (it accepted into its backlog, nobody reads):
#   `status` exits 1 within its timeout (-T, RINGSTEER_TIMEOUT, the
#   default 10 s), naming the daemon's pid, its state ("T: stopped") and
#   the socket; `fleet ready SECONDS` gives up after its SECONDS even with
#   a longer per-call timeout; a bad -T is a usage error (exit 2). After
#   SIGCONT the same calls are answered and the daemon steers on.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup tmo
e2e_start_web1
CLI=(build/ringsteer -s "$SOCK")
rsctl() { "${CLI[@]}" "$@"; }

# timed NAME CMD...: run CMD (killed after 30 s: the code before the fix
# waited for ever), leaving its exit status, stderr and whole seconds.
timed() {
	local name=$1 t0
	shift
	t0=$(date +%s%N)
	rc=0
	timeout 30 "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || rc=$?
	took=$((($(date +%s%N) - t0) / 1000000))
	sed "s/^/#   /" "$OUT/$name.err"
}

e2e_eq "answered while running" "$(rsctl -j status | jq -r .ok)" true

echo "# SIGSTOP: no answer"
kill -STOP "$DAEMON"
timed T2 "${CLI[@]}" -T 2 status
e2e_eq "-T 2: exit 1" "$rc" 1
e2e_check "-T 2: after about 2 s ($took ms)" test "$took" -ge 1900 -a "$took" -lt 6000
e2e_check "-T 2: names pid, state and socket" grep -qx \
	"ringsteer: ringsteerd (pid $DAEMON, state T: stopped) did not answer within 2 s on $SOCK" "$OUT/T2.err"
timed envT env RINGSTEER_TIMEOUT=1.5 build/ringsteer -s "$SOCK" -j backends
e2e_eq "RINGSTEER_TIMEOUT=1.5: exit 1" "$rc" 1
e2e_check "RINGSTEER_TIMEOUT=1.5: after about 1.5 s ($took ms)" test "$took" -ge 1400 -a "$took" -lt 5000
e2e_check "RINGSTEER_TIMEOUT=1.5: said so" grep -q "(pid $DAEMON, state T: stopped) did not answer within 1.5 s" "$OUT/envT.err"
timed T_over_env env RINGSTEER_TIMEOUT=60 build/ringsteer -s "$SOCK" -T 1 status
e2e_check "-T wins over RINGSTEER_TIMEOUT ($took ms)" test "$rc" = 1 -a "$took" -lt 5000
timed default "${CLI[@]}" version
e2e_check "default 10 s: version still prints the CLI's line, exit 0 ($took ms)" \
	test "$rc" = 0 -a "$took" -ge 9500 -a "$took" -lt 14000
e2e_check "default 10 s: said so" grep -q "state T: stopped) did not answer within 10 s" "$OUT/default.err"
timed ready "${CLI[@]}" -T 20 fleet ready 2
e2e_check "fleet ready 2 under -T 20: gives up after its 2 s ($took ms)" \
	test "$rc" = 1 -a "$took" -ge 1900 -a "$took" -lt 6000
timed badT "${CLI[@]}" -T 0 status
e2e_check "-T 0: usage error, exit 2" bash -c "[[ $rc == 2 ]] && grep -q -- '-T 0: seconds' '$OUT/badT.err'"

echo "# SIGCONT: answered again"
kill -CONT "$DAEMON"
timed cont "${CLI[@]}" -T 2 -j status
e2e_eq "status answered (exit 0)" "$rc" 0
e2e_eq "status ok" "$(jq -r .ok "$OUT/cont.out")" true
e2e_eq "still steers: 5 clients on web-1" "$(rs_in_client build/tools/rs_client \
	--target 198.18.0.10:80 --src-base 198.18.1.1 --count 5 2>/dev/null | grep -c ' web-1$')" 5
e2e_summary

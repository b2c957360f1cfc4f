#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: ringsteerd's log lines as journald reads them, with a real
# daemon in a namespace.
#   JOURNAL_STREAM naming stderr's device:inode: every line carries a "<N>"
#   syslog priority (<3> errors, <4> warnings, <6> info, <7> debug), and a
#   refused file's errors each carry <3> with their FILE:LINE, whether the
#   reload came from `ringsteer reload` (which prints it and exits 1) or
#   SIGHUP; JOURNAL_STREAM unset, or naming another stream: no prefix.
#   -v: the daemon's debug lines and no libbpf output; -vv: libbpf's too.
#   The CLI's errors and warnings and `ringsteerd --check`'s, as under
#   ExecReload= and ExecStartPre= (stdout and stderr one journal stream):
#   <3> before every error line, <4> before every warning line, FILE:LINE
#   kept; no prefix without JOURNAL_STREAM or with another stream named.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup jnl

e2e_conf_global
e2e_conf_web1
cat >>"$CONF" <<CONF
interval = 200ms

[backend web-2]
service = web
address = 127.0.0.1:8082
check = none
CONF
GOOD=$(cat "$CONF")

rs_bg_start be1 rs_in_edge build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_wait_ready be1


# start NAME JOURNAL_STREAM ARG...: the daemon with stderr in NAME.err and
# JOURNAL_STREAM set to the given value ("match": that file's dev:ino).
start() {
	local name=$1 stream=$2 err
	shift 2
	err=$(rs_bg_err "$name")
	: >"$err"
	[[ $stream == match ]] && stream=$(stat -c '%d:%i' "$err")
	if [[ -n $stream ]]; then
		rs_bg_start "$name" rs_in_edge env JOURNAL_STREAM="$stream" \
			build/ringsteerd -c "$CONF" "$@"
	else
		rs_bg_start "$name" rs_in_edge build/ringsteerd -c "$CONF" "$@"
	fi
	e2e_wait_for "$err" "control socket" 10
}

# bad_file: the good file with one bad value on a known line.
bad_file() {
	printf '%s\n' "$GOOD" | sed 's/^vnodes = 64$/vnodes = 0/' >"$CONF"
	grep -n '^vnodes = 0$' "$CONF" | cut -d: -f1
}

echo "# JOURNAL_STREAM = stderr's dev:ino, -v"
start j match -v
ERR=$(rs_bg_err j)
rsctl status >/dev/null
e2e_wait_for "$ERR" "check ok" 5 || true
e2e_check "info lines carry <6>" grep -q '^<6>info: ringsteerd .* sk_lookup link' "$ERR"
e2e_check "warnings carry <4> (web-2 has no socket)" \
	grep -q '^<4>warn: backend web-2: no usable socket' "$ERR"
e2e_check "-v: debug lines carry <7> (a control request)" \
	grep -q '^<7>debug: control: status request' "$ERR"
e2e_check "-v: debug lines of health checks" \
	grep -q '^<7>debug: backend web-1: check ok' "$ERR"
e2e_eq "every line has a priority prefix" \
	"$(grep -cv '^<[3467]>' "$ERR" || true)" 0
e2e_eq "-v: no libbpf output" "$(grep -c 'libbpf' "$ERR" || true)" 0

line=$(bad_file)
rc=0
rsctl reload >"$OUT/reload.out" 2>"$OUT/reload.err" || rc=$?
e2e_eq "ringsteer reload of a bad file exits 1" "$rc" 1
e2e_check "ringsteer reload prints the refusal with FILE:LINE" \
	grep -q "$CONF:$line: \[service web\] vnodes" "$OUT/reload.err"
e2e_check "the daemon logs it at <3> with FILE:LINE" \
	grep -q "^<3>error: .*$CONF:$line: \[service web\] vnodes" "$ERR"
kill -HUP "${RS_BG_PID[j]}"
e2e_wait_for "$ERR" "reload refused" 5
e2e_check "SIGHUP: the refusal at <3> with FILE:LINE" \
	grep -q "^<3>error: reload refused: nothing changed: $CONF:$line: \[service web\] vnodes" "$ERR"
printf '%s\n' "$GOOD" >"$CONF"
e2e_check "a good file reloads" rsctl reload
rs_bg_stop j

echo "# JOURNAL_STREAM unset"
start plain ""
ERR=$(rs_bg_err plain)
e2e_check "timestamped lines" grep -q '^20[0-9-]*T[0-9:.]*Z info: ringsteerd ' "$ERR"
e2e_eq "no priority prefix" "$(grep -c '^<[0-7]>' "$ERR" || true)" 0
e2e_eq "no debug lines without -v" "$(grep -c ' debug: ' "$ERR" || true)" 0
rs_bg_stop plain

echo "# JOURNAL_STREAM naming another stream, -vv"
start other "1:1" -vv
ERR=$(rs_bg_err other)
e2e_eq "no priority prefix" "$(grep -c '^<[0-7]>' "$ERR" || true)" 0
e2e_check "-vv: libbpf's own lines, at debug" grep -q ' debug: libbpf: ' "$ERR"
rs_bg_stop other

echo "# the CLI and --check, as systemd runs them"
# journal NAME CMD...: CMD with stdout and stderr in $OUT/NAME.log, one
# stream as systemd gives a unit, and JOURNAL_STREAM naming that file, or
# set to $JSTREAM when that is set (empty: unset). Leaves CMD's exit
# status in rc.
journal() {
	local log=$OUT/$1.log stream=${JSTREAM-match}
	shift
	: >"$log"
	[[ $stream == match ]] && stream=$(stat -c '%d:%i' "$log")
	rc=0
	if [[ -n $stream ]]; then
		JOURNAL_STREAM=$stream "$@" >>"$log" 2>&1 || rc=$?
	else
		env -u JOURNAL_STREAM "$@" >>"$log" 2>&1 || rc=$?
	fi
	sed 's/^/#   /' "$log"
}
start cli match
line=$(bad_file)
journal reload build/ringsteer -s "$SOCK" reload
e2e_eq "ringsteer reload of a bad file: exit 1" "$rc" 1
e2e_check "its error at <3>, FILE:LINE kept" \
	grep -q "^<3>ringsteer: .*$CONF:$line: \[service web\] vnodes" "$OUT/reload.log"
e2e_eq "every line at <3>" "$(grep -cv '^<3>' "$OUT/reload.log" || true)" 0
journal check build/ringsteerd --check -c "$CONF"
e2e_eq "ringsteerd --check of a bad file: exit 1" "$rc" 1
e2e_check "its errors at <3>, FILE:LINE kept" \
	grep -q "^<3>$CONF:$line: \[service web\] vnodes" "$OUT/check.log"
e2e_eq "every line at <3>" "$(grep -cv '^<3>' "$OUT/check.log" || true)" 0
printf '%s\n' "$GOOD" >"$CONF"
rs_bg_stop cli
journal gone build/ringsteer -s "$SOCK" services
e2e_check "ringsteer with no daemon: the error at <3>" \
	grep -qx "<3>ringsteer: cannot reach ringsteerd at $SOCK (-s): .*" "$OUT/gone.log"
{
	printf '%s\n' "$GOOD"
	printf '\n[service lonely]\nprotocol = tcp\nlisten = 198.18.0.20:80\n'
} >"$OUT/warn.conf"
journal warn build/ringsteerd --check -c "$OUT/warn.conf"
e2e_eq "ringsteerd --check with warnings: exit 0" "$rc" 0
e2e_check "a warning at <4>" grep -q '^<4>warning: service lonely has no backends' "$OUT/warn.log"
e2e_eq "every warning line at <4>" "$(grep -c '^warning:' "$OUT/warn.log" || true)" 0
e2e_check "the verdict as it was" grep -qx "ringsteerd: configuration file $OUT/warn.conf test is successful" "$OUT/warn.log"
for JSTREAM in "" 1:1; do
	journal "plain${JSTREAM:+-other}" build/ringsteer -s "$SOCK" services
	e2e_check "JOURNAL_STREAM '$JSTREAM': the error as it was" \
		grep -qx "ringsteer: cannot reach ringsteerd at $SOCK (-s): .*" "$OUT/plain${JSTREAM:+-other}.log"
	journal "warn${JSTREAM:+-other}" build/ringsteerd --check -c "$OUT/warn.conf"
	e2e_check "JOURNAL_STREAM '$JSTREAM': --check's warning as it was" \
		grep -q '^warning: service lonely has no backends' "$OUT/warn${JSTREAM:+-other}.log"
done
unset JSTREAM

e2e_summary

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

rsctl() { build/ringsteer -s "$SOCK" "$@"; }

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

e2e_summary

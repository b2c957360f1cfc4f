#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: ringsteerd speaking systemd's notify protocol to a unix
# datagram socket given as NOTIFY_SOCKET (build/tools/notify_listen, which
# looks at the pins the moment READY=1 arrives), with a real daemon in a
# namespace.
#   READY=1 only once the sk_lookup link is pinned and the control socket
#   is there, with a STATUS= line; WATCHDOG=1 at half of WATCHDOG_USEC and
#   just before each reload;
#   RELOADING=1 (with MONOTONIC_USEC) then READY=1 around `ringsteer
#   reload`, a refused one (the CLI exits 1, STATUS= has FILE:LINE) and
#   SIGHUP; STOPPING=1 at exit; a start that fails sends no READY=1 but
#   STATUS= and ERRNO=.
#   A reload flood (20 reloads, SIGHUPs among them): RELOADING=1 and
#   READY=1 strictly alternate. A manager that stops reading (its queue
#   full): the daemon still answers and reloads, and once read again the
#   queued messages arrive in order (libsystemd's sd_notify blocked the
#   event loop here). NOTIFY_SOCKET missing, a regular file, or not a
#   path: the daemon runs and warns once.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup ntf

e2e_conf_global
e2e_conf_web1
GOOD=$(cat "$CONF")
NSOCK=$OUT/notify.sock
NOUT=$(rs_bg_out notify)

rs_bg_start be1 rs_in_edge build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_wait_ready be1
rs_bg_start notify build/tools/notify_listen "$NSOCK" \
	"$BPFFS/steer_lookup_link" "$SOCK"
rs_bg_wait_ready notify

# count PATTERN: notify_listen lines matching PATTERN (ERE).
count() { grep -cE -- "$1" "$NOUT" || true; }
# wait_count PATTERN N: until at least N lines match (5 s at most).
wait_count() {
	local i
	for ((i = 0; i < 100; i++)); do
		(($(count "$1") >= $2)) && return 0
		sleep 0.05
	done
	return 1
}

echo "# start"
rs_bg_start daemon rs_in_edge env NOTIFY_SOCKET="$NSOCK" WATCHDOG_USEC=400000 \
	build/ringsteerd -c "$CONF"
e2e_check "READY=1 arrives" wait_count '^READY=1' 1
e2e_eq "one READY=1, the pins and control socket there when it came" \
	"$(grep -E '^READY=1' "$NOUT")" \
	"READY=1|STATUS=steering 1 services, 1/1 backends with a socket paths=ok"
e2e_check "the daemon had logged the attach" \
	grep -q 'attached sk_lookup link' "$(rs_bg_err daemon)"
e2e_check "WATCHDOG=1 repeated (3 within 5 s at 0.2 s)" wait_count '^WATCHDOG=1$' 3

echo "# ringsteer reload"
before=$(count '^RELOADING=1')
ready=$(count '^READY=1')
e2e_check "a good file reloads" rsctl reload
# The datagrams were sent before the reply; the listener may print later.
wait_count '^READY=1' $((ready + 1)) || true
e2e_check "RELOADING=1 with MONOTONIC_USEC" \
	grep -qE '^RELOADING=1\|STATUS=reloading .*\|MONOTONIC_USEC=[0-9]+$' "$NOUT"
# The notify lines without the watchdog's, last two: the pair, in order.
pair() { grep -vE '^WATCHDOG=1$' "$NOUT" | tail -2 | cut -d'|' -f1 | paste -sd' '; }
e2e_eq "RELOADING=1 then READY=1" "$(pair)" "RELOADING=1 READY=1"

printf '%s\n' "$GOOD" | sed 's/^vnodes = 64$/vnodes = 0/' >"$CONF"
line=$(grep -n '^vnodes = 0$' "$CONF" | cut -d: -f1)
rc=0
rsctl reload 2>"$OUT/reload.err" || rc=$?
wait_count '^READY=1' $((ready + 2)) || true
e2e_eq "a refused reload: ringsteer exits 1" "$rc" 1
e2e_check "and prints FILE:LINE" grep -q "$CONF:$line: " "$OUT/reload.err"
e2e_eq "RELOADING=1 then READY=1 around the refusal too" "$(pair)" "RELOADING=1 READY=1"
e2e_check "STATUS= says it was refused, with FILE:LINE" \
	grep -q "^READY=1|STATUS=reload refused, running the previous configuration: $CONF:$line: " "$NOUT"

echo "# SIGHUP"
printf '%s\n' "$GOOD" >"$CONF"
kill -HUP "${RS_BG_PID[daemon]}"
e2e_check "SIGHUP: another RELOADING=1" wait_count '^RELOADING=1' $((before + 3))
e2e_check "then READY=1" wait_count '^READY=1' $((ready + 3))
e2e_eq "RELOADING=1 then READY=1" "$(pair)" "RELOADING=1 READY=1"

e2e_eq "each reload begins with a watchdog ping (a whole period to build in)" \
	"$(grep -B1 '^RELOADING=1' "$NOUT" | grep -c '^WATCHDOG=1$')" "$(count '^RELOADING=1')"

echo "# a reload flood: 20 ringsteer reloads, SIGHUPs among them"
base=$(count '^RELOADING=1')
for ((i = 0; i < 20; i++)); do
	rsctl reload >/dev/null || true
	((i % 5)) || kill -HUP "${RS_BG_PID[daemon]}"
done
# Signals that arrive during a reload may fold into one: at least the 20.
e2e_check "at least 20 more RELOADING=1" wait_count '^RELOADING=1' $((base + 20))
# Every reload closed: one READY=1 more than RELOADING=1 (the start's).
closed() { (($(count '^READY=1') == $(count '^RELOADING=1') + 1)); }
e2e_check "every RELOADING=1 has its READY=1" rs_until 5 closed
# RELOADING=1 and READY=1 strictly alternate from the first READY=1 on.
seq=$(grep -oE '^(RELOADING|READY)=1' "$NOUT" | cut -d= -f1 | paste -sd' ')
e2e_check "RELOADING=1 and READY=1 alternate, each reload closed" \
	bash -c '[[ "$1" =~ ^READY( RELOADING READY)+$ ]]' _ "$seq"
e2e_check "the daemon still answers" rsctl status

echo "# systemd stops reading the notify socket (its queue fills)"
kill -STOP "${RS_BG_PID[notify]}"
# Watchdog pings every 0.2 s fill the socket's queue (net.unix.max_dgram_qlen
# datagrams, 10 by default) within seconds; the event loop must not block
# on it. A reload's two messages then wait in the daemon's own queue,
# which status shows (notify_queued).
queued() { (($(rsctl -j status | jq .notify_queued) > 0)); }
reload_until_queued() {
	rsctl reload >/dev/null || return 1
	queued
}
e2e_check "the socket's queue fills: the daemon queues its own" \
	rs_until 60 reload_until_queued
e2e_check "the daemon still answers status" timeout 5 build/ringsteer -s "$SOCK" status
e2e_check "and reloads" timeout 10 build/ringsteer -s "$SOCK" reload
kill -CONT "${RS_BG_PID[notify]}"
before=$(count '^WATCHDOG=1$')
e2e_check "once read again, watchdog pings resume" wait_count '^WATCHDOG=1$' $((before + 3))
e2e_check "the reload's pair arrived, in order, after the wait" \
	bash -c '[[ "$(grep -oE "^(RELOADING|READY)=1" "$1" | cut -d= -f1 | paste -sd" ")" =~ ^READY( RELOADING READY)+$ ]]' _ "$NOUT"

echo "# a second daemon on the same pins fails to start"
rs_bg_start notify2 build/tools/notify_listen "$OUT/notify2.sock"
rs_bg_wait_ready notify2
rc=0
rs_in_edge env NOTIFY_SOCKET="$OUT/notify2.sock" build/ringsteerd -c "$CONF" \
	2>"$OUT/second.err" || rc=$?
e2e_eq "it exits 1" "$rc" 1
N2=$(rs_bg_out notify2)
e2e_check "STATUS=failed to start, ERRNO=" bash -c "for i in {1..100}; do grep -qE '^STATUS=failed to start: .*\|ERRNO=[0-9]+' '$N2' && exit 0; sleep 0.05; done; exit 1"
e2e_eq "no READY=1" "$(grep -c READY=1 "$N2" || true)" 0
rs_bg_stop notify2

echo "# stop"
rs_bg_stop daemon
e2e_check "STOPPING=1" wait_count '^STOPPING=1' 1
e2e_check "the pins stay" test -e "$BPFFS/steer_lookup_link"

# NOTIFY_SOCKET that cannot be used: the daemon runs all the same, and
# says so once (not at every watchdog ping).
bad_notify() {
	local name=$1 value=$2 want=$3
	rs_bg_start "$name" rs_in_edge env NOTIFY_SOCKET="$value" WATCHDOG_USEC=100000 \
		build/ringsteerd -c "$CONF"
	e2e_check "$name: the daemon comes up and answers" \
		rs_until 10 rsctl status
	e2e_check "$name: a reload works" rsctl reload
	e2e_eq "$name: one warning naming NOTIFY_SOCKET" \
		"$(grep -c "systemd notify: .*$want" "$(rs_bg_err "$name")" || true)" 1
	rs_bg_stop "$name"
}
echo "# NOTIFY_SOCKET missing, not a socket, not a path"
bad_notify nomissing "$OUT/no-such.sock" "cannot connect to $OUT/no-such.sock: No such file"
bad_notify nofile "$CONF" "cannot connect to $CONF: Connection refused"
bad_notify nopath "relative.sock" "NOTIFY_SOCKET=relative.sock is not a unix socket path"

e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the systemd unit as `make install` writes it, without
# systemd running it (PID 1 here need not be systemd).
#   make install into a scratch PREFIX (unit included) and make uninstall
#   leaving nothing; systemd-analyze verify; `systemd-analyze security
#   --offline=true` exposure at most 4.0; every capability the unit keeps
#   explained in it; then the daemon run as the unit runs it: with exactly
#   the unit's CapabilityBoundingSet (setpriv), NoNewPrivileges and its
#   UMask, NOTIFY_SOCKET, steering clients to a backend of another user
#   (nobody) and adopting the pins across a restart. Without
#   CAP_SYS_PTRACE that backend's socket cannot be taken: the set is not
#   larger than it needs to be there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup unit
SCRATCH=$OUT/prefix
UNIT=$SCRATCH/unit/ringsteerd.service

echo "# make install, the unit"
make -s --no-print-directory install PREFIX="$SCRATCH" DESTDIR= \
	UNITDIR="$SCRATCH/unit" SYSCONFDIR="$SCRATCH/etc" >"$OUT/install.log" 2>&1 ||
	{ cat "$OUT/install.log"; exit 1; }
e2e_check "the unit runs the installed binaries" \
	grep -qx "ExecStart=$SCRATCH/sbin/ringsteerd -c /etc/ringsteer/ringsteer.conf" "$UNIT"
e2e_check "ExecReload is ringsteer reload (fails on a refused file)" \
	grep -qx "ExecReload=$SCRATCH/bin/ringsteer reload" "$UNIT"
e2e_check "Type=notify" grep -qx 'Type=notify' "$UNIT"
e2e_check "systemd-analyze verify" systemd-analyze verify --man=no "$UNIT"
systemd-analyze security --offline=true "$UNIT" >"$OUT/security.txt" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for ringsteerd.service: \([0-9.]*\).*/\1/p' "$OUT/security.txt")
echo "  systemd-analyze security: exposure $exposure"
e2e_check "exposure at most 4.0 ($exposure)" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 4.0) }'

caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
for c in $caps; do
	e2e_check "$c explained in the unit" grep -q "^#   $c " "$UNIT"
done
e2e_check "NoNewPrivileges" grep -qx 'NoNewPrivileges=yes' "$UNIT"
umask_unit=$(sed -n 's/^UMask=//p' "$UNIT")

# setpriv's form of the set: -all,+bpf,+perfmon,...
bounding() {
	local c out=-all
	for c in "$@"; do
		c=${c#CAP_}
		out+=",+${c,,}"
	done
	echo "$out"
}
# daemon NAME CAPS...: the daemon as the unit starts it.
daemon() {
	local name=$1
	shift
	rs_bg_start "$name" rs_in_edge env NOTIFY_SOCKET="$OUT/$name.sock" \
		setpriv --no-new-privs --inh-caps=-all --bounding-set="$(bounding "$@")" \
		-- bash -c "umask $umask_unit && exec build/ringsteerd -c '$CONF'"
}
# on_web1: a client reaches the backend of user nobody.
on_web1() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count 5 2>/dev/null >"$OUT/clients"
	[[ $(grep -c ' web-1$' "$OUT/clients") == 5 ]]
}

echo "# the daemon with the unit's capabilities only"
e2e_conf_global
e2e_conf_web1
rs_bg_start be1 rs_in_edge setpriv --reuid=65534 --regid=65534 --clear-groups \
	build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_wait_ready be1
e2e_eq "the backend runs as nobody" "$(stat -c %u "/proc/${RS_BG_PID[be1]}")" 65534

# shellcheck disable=SC2086 # one word per capability
for name in d1 d2; do
	rs_bg_start "n$name" build/tools/notify_listen "$OUT/$name.sock" "$BPFFS/steer_lookup_link"
	rs_bg_wait_ready "n$name"
	daemon "$name" $caps
	# READY=1 comes after the sockets are taken (or adopted) and logged.
	e2e_check "$name: READY=1 with the pins there" \
		e2e_wait_for "$(rs_bg_out "n$name")" '^READY=1.* paths=ok$' 10
	# The first start takes it from the backend; the restart finds it
	# in the pinned SOCKMAP.
	e2e_check "$name: nobody's socket taken or adopted" \
		grep -qE 'backend web-1: socket .* taken from pid|1/1 backends with a socket' \
		"$(rs_bg_err "$name")"
	e2e_check "$name: clients steered to it" on_web1
	e2e_eq "$name: no warning or error" \
		"$(grep -cE ' (warn|error): ' "$(rs_bg_err "$name")" || true)" 0
	rs_bg_stop "$name"
done
e2e_check "d1 took nobody's socket" grep -q 'backend web-1: socket .* taken from pid' "$(rs_bg_err d1)"
e2e_check "d2, the restart, adopted the pins" grep -q 'updated sk_lookup link' "$(rs_bg_err d2)"
build/ringsteerd -q --detach -c "$CONF"

echo "# one capability less, from scratch"
without=()
for c in $caps; do [[ $c == CAP_SYS_PTRACE ]] || without+=("$c"); done
daemon d3 "${without[@]}"
e2e_check "without CAP_SYS_PTRACE: nobody's socket cannot be taken" \
	e2e_wait_for "$(rs_bg_err d3)" 'backend web-1: no usable socket' 10
rs_bg_stop d3

echo "# make uninstall"
make -s --no-print-directory uninstall PREFIX="$SCRATCH" DESTDIR= \
	UNITDIR="$SCRATCH/unit" SYSCONFDIR="$SCRATCH/etc" >/dev/null
e2e_eq "nothing left behind" "$(find "$SCRATCH" ! -type d | wc -l)" 0

e2e_summary

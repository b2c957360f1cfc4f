#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: `ringsteer status` with ringsteerd stopped says what the
# pinned data plane, which goes on steering, holds: the sk_lookup link
# (the program id the daemon reported), the services, the backends by
# state and the sockets, from the pins alone, and exits 1. Checked against
# real clients still reaching the backends; with nothing pinned it says
# that nothing steers. Not root: the control socket is root's, and the
# pins cannot be read; each said as such, exit 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup sdn

e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 64

[service api]
protocol = tcp
listen = 198.18.0.11:80
vnodes = 64
CONF
for b in web-1:8081 web-2:8082 api-1:8083; do
	printf '\n[backend %s]\nservice = %s\naddress = 127.0.0.1:%s\ncheck = none\n' \
		"${b%%:*}" "${b%%-*}" "${b#*:}" >>"$CONF"
	rs_bg_start "${b%%:*}" rs_in_edge build/tools/rs_backend --name "${b%%:*}" \
		--tcp "127.0.0.1:${b#*:}"
	rs_bg_wait_ready "${b%%:*}"
done
rsctl() { build/ringsteer -c "$CONF" "$@"; }

echo "# nothing pinned"
rc=0
rsctl status >"$OUT/none.out" 2>"$OUT/none.err" || rc=$?
e2e_eq "exit 1" "$rc" 1
e2e_check "says it cannot reach the daemon" grep -q 'cannot reach ringsteerd' "$OUT/none.err"
e2e_check "and that nothing steers" grep -qx "ringsteerd is not running and nothing is pinned under $BPFFS: nothing steers" "$OUT/none.out"

echo "# the daemon ran, then stopped"
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10
rsctl backend drain web-2 >/dev/null
prog=$(rsctl -j status | jq '.programs[] | select(.attach == "sk_lookup") | .id')
# An operator without root: the file readable by all, its directory
# passable (the control socket stays 0600, the pins root's).
chmod 711 "$OUT"
chmod 644 "$CONF"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups build/ringsteer -c "$CONF" "$@"; }
rc=0
nobody status >"$OUT/nobody-up.out" 2>"$OUT/nobody-up.err" || rc=$?
e2e_eq "not root, daemon running: exit 1" "$rc" 1
e2e_check "says the control socket is root's (not 'is it running?')" \
	grep -q "cannot reach ringsteerd at $SOCK .*Permission denied: the control socket is root's; run ringsteer as root" "$OUT/nobody-up.err"
rs_bg_stop daemon

rc=0
rsctl status >"$OUT/down.out" 2>"$OUT/down.err" || rc=$?
cat "$OUT/down.err" "$OUT/down.out" | sed "s/^/#   /"
e2e_eq "exit 1 (the daemon is gone)" "$rc" 1
e2e_check "says the pinned data plane still steers" \
	grep -q "^ringsteerd is not running, but the data plane pinned under $BPFFS still steers" "$OUT/down.out"
e2e_check "the link's program id is the one the daemon reported ($prog)" \
	grep -q "^  sk_lookup link: program id $prog in netns " "$OUT/down.out"
e2e_check "the services" grep -qx '  2 services: web api' "$OUT/down.out"
e2e_check "the backends by state, the sockets" \
	grep -qx '  backends: 2 up, 1 draining, 0 down; 3 sockets in the SOCKMAP' "$OUT/down.out"
e2e_check "the pins" grep -q '^  pins: .*rs_backends.* steer_lookup_link' "$OUT/down.out"
rsctl -j status >"$OUT/down.json" 2>/dev/null || true
e2e_check "-j: the same, as JSON" jq -e '.ok == false and .daemon == "unreachable" and
	.pinned.link.prog_id == '"$prog"' and .pinned.services == ["web", "api"] and
	.pinned.backends == {"up": 2, "draining": 1, "down": 0} and .pinned.sockets == 3' "$OUT/down.json"

rc=0
nobody status >"$OUT/nobody-down.out" 2>/dev/null || rc=$?
e2e_eq "not root, daemon stopped: exit 1" "$rc" 1
e2e_check "says the pins cannot be read and to run as root" \
	grep -qx "ringsteerd is not running; the pins under $BPFFS cannot be read (Permission denied): run as root to see whether they still steer" "$OUT/nobody-down.out"

rs_in_client build/tools/rs_client --target 198.18.0.11:80 --src-base 198.18.1.1 \
	--count 20 2>/dev/null >"$OUT/clients"
e2e_eq "and it does steer: 20 clients on api-1" "$(grep -c ' api-1$' "$OUT/clients")" 20

echo "# detached"
build/ringsteerd -q --detach -c "$CONF"
rc=0
rsctl status >"$OUT/gone.out" 2>/dev/null || rc=$?
e2e_eq "exit 1" "$rc" 1
e2e_check "nothing steers" grep -q 'nothing is pinned' "$OUT/gone.out"

e2e_summary

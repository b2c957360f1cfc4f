#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: a listen address that is not local to the host (neither
# assigned nor under a `local` route) is warned about, never refused, with
# its FILE:LINE and the command that fixes it: by `ringsteerd --check`, in
# the log at start and at reload, by `ringsteer reload` and by `ringsteer
# status` (asked anew each time, so the warning goes when the address
# comes, as a VIP keepalived moves would). The warning's own command is
# then run and real clients, which timed out before, are steered.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup lcl

# The edge namespace routes 198.18.0.0/24 and 2001:db8::/64 locally
# (scripts/netns.sh); 198.18.3.0/24 and 2001:db8:5::/64 are not.
e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
listen = 198.18.3.10:80
listen = [2001:db8::10]:80
listen = [2001:db8:5::/64]:0
vnodes = 64

[backend web-1]
service = web
address = 127.0.0.1:8081
check = none
CONF
line_v4=$(grep -n '^listen = 198.18.3.10:80$' "$CONF" | cut -d: -f1)
line_v6=$(grep -n '^listen = \[2001:db8:5::/64\]:0$' "$CONF" | cut -d: -f1)
rs_bg_start be1 rs_in_edge build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_wait_ready be1
want_v4="$CONF:$line_v4: [service web] listen 198.18.3.10:80: 198.18.3.10 is not local to this host, so its clients will time out: add it (ip addr add 198.18.3.10/32 dev lo) or route it here (ip route add local 198.18.3.10/32 dev lo)"
want_v6="$CONF:$line_v6: [service web] listen [2001:db8:5::/64]:0: 2001:db8:5::/64 is not local to this host, so its clients will time out: route it here (ip -6 route add local 2001:db8:5::/64 dev lo)"

echo "# --check"
rc=0
rs_in_edge build/ringsteerd --check -c "$CONF" >"$OUT/check.out" || rc=$?
e2e_eq "accepted (exit 0)" "$rc" 0
e2e_check "warns of the IPv4 address, with FILE:LINE and the fix" grep -qxF "warning: $want_v4" "$OUT/check.out"
e2e_check "warns of the IPv6 prefix, with the fix" grep -qxF "warning: $want_v6" "$OUT/check.out"
e2e_eq "and of nothing local" "$(grep -c 'is not local' "$OUT/check.out")" 2

echo "# start, status"
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10
e2e_check "logged at start" grep -qF "warn: $want_v4" "$(rs_bg_err daemon)"
rsctl status >"$OUT/status.out"
e2e_check "status warns" grep -qxF "warning: $want_v4" "$OUT/status.out"
e2e_eq "status -j: listen_not_local" "$(rsctl -j status | jq '.listen_not_local | length')" 2

ip -n "$RS_NS_CLIENT" route add 198.18.3.0/24 via "$RS_EDGE_IP4"
clients() {
	rs_in_client build/tools/rs_client --target 198.18.3.10:80 --src-base 198.18.1.1 \
		--count 5 --timeout-ms 300 2>/dev/null >"$OUT/$1" || true
}
clients before
e2e_eq "its clients time out meanwhile" "$(grep -c ' ERR:' "$OUT/before")" 5

echo "# reload: warned, not refused"
sed -i "s/^listen = 198.18.0.10:80$/listen = 198.18.0.10:80\nlisten = 198.18.4.10:80/" "$CONF"
rc=0
rsctl reload >"$OUT/reload.out" 2>&1 || rc=$?
e2e_eq "the reload goes through (exit 0)" "$rc" 0
e2e_check "ringsteer reload prints the warning" grep -q '^warning: .*listen 198.18.4.10:80: 198.18.4.10 is not local' "$OUT/reload.out"
e2e_check "the daemon logs it" grep -q 'warn: .*listen 198.18.4.10:80: 198.18.4.10 is not local' "$(rs_bg_err daemon)"

echo "# the fix the warning gives"
fix=$(grep -o 'ip route add local 198.18.3.10/32 dev lo' "$OUT/status.out")
# shellcheck disable=SC2086 # the command, word by word
rs_in_edge $fix
e2e_check "status no longer warns of 198.18.3.10" \
	bash -c "! build/ringsteer -s '$SOCK' status | grep -q '198.18.3.10 is not local'"
e2e_eq "the others still warned" "$(rsctl -j status | jq '.listen_not_local | length')" 2
clients after
e2e_eq "its clients are steered" "$(grep -c ' web-1$' "$OUT/after")" 5

e2e_summary

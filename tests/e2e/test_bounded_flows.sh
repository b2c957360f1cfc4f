#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: bounded loads on a UDP service (issue 11). A UDP backend's
# load is its flows: affinity keys with a datagram within sticky_ttl (the
# live entries of the service's sticky table). Three real UDP backends on
# an uneven ring (vnodes = 1: three points, so one backend owns far more
# than a third of the keys), balance_factor = 1.25, 90 clients sending
# one datagram after another:
#   - the ring alone would give its largest owner more than the bound
#     allows (checked with `ringsteer lookup`, so the test can fail);
#   - with the bound, no backend ends with more than ceil(1.25 x 90 / 3)
#     flows, and every client keeps its backend for its later datagrams
#     (a flow never moves, even once its backend is at its bound);
#   - `active` equals each backend's flows, and returns to 0 when they
#     lapse (sticky_ttl, then the daemon's recount within a second).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup bfl

N=90
TTL=3
e2e_conf_global
cat >>"$CONF" <<CONF
[service dns]
protocol = udp
listen = 198.18.0.10:5353
vnodes = 1
sticky_ttl = $TTL
balance_factor = 1.25
CONF
for i in 1 2 3; do
	printf '\n[backend dns-%d]\nservice = dns\naddress = 127.0.0.%d:5353\ncheck = none\n' \
		"$i" "$i" >>"$CONF"
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "dns-$i" \
		--udp "127.0.0.$i:5353"
	rs_bg_wait_ready "be$i"
done
e2e_check "--check accepts balance_factor on a UDP service with sticky_ttl" \
	build/ringsteerd --check -c "$CONF"
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10

bound=$(((1250 * N + 2999) / 3000))
# Ring owners of the 90 clients (198.18.1.1 ..): the largest share.
owners=$(for ((i = 1; i <= N; i++)); do
	e2e_json lookup dns "198.18.1.$i" | jq -r .primary
done | sort | uniq -c | sort -rn)
top=$(awk 'NR == 1 { print $1 }' <<<"$owners")
echo "  ring owners: $(tr -s ' \n' ' ' <<<"$owners")"
e2e_check "the ring alone gives one backend more than the bound ($top > $bound)" \
	test "$top" -gt "$bound"

echo "# $N clients, one at a time, 3 datagrams each"
rs_in_client build/tools/rs_client --udp --target 198.18.0.10:5353 \
	--src-base 198.18.1.1 --count "$N" --rounds 3 --concurrency 1 \
	>"$OUT/flows" 2>/dev/null || true
e2e_eq "no datagram unanswered" "$(e2e_errors "$OUT/flows")" 0
e2e_eq "every client keeps its backend" "$(e2e_unstable "$OUT/flows")" 0
e2e_mapping "$OUT/flows" >"$OUT/map"
shares=$(e2e_shares "$OUT/map")
echo "  flows per backend: $(tr '\n' ' ' <<<"$shares")"
max=$(awk '$2 > m { m = $2 } END { print m + 0 }' <<<"$shares")
e2e_check "no backend above ceil(1.25 x $N / 3) = $bound flows ($max)" \
	test "$max" -le "$bound"
flows_match() {
	local i a want ok=1
	for i in 1 2 3; do
		a=$(e2e_active_of "dns-$i")
		want=$(awk -v b="dns-$i" '$1 == b { print $2 }' <<<"$shares")
		[[ $a == "${want:-0}" ]] || {
			echo "  dns-$i: active $a, flows ${want:-0}" >&2
			ok=0
		}
	done
	[[ $ok == 1 ]]
}
e2e_check "active equals each backend's flows" flows_match
e2e_eq "service active" "$(e2e_svc_active)" "$N"
# Lapsed at sticky_ttl after each client's last datagram, counted by the
# daemon's recount within a second after: TTL + 2 s at the most.
e2e_eq_within $((TTL + 2)) "flows lapsed after sticky_ttl: service active" 0 e2e_svc_active
e2e_eq "flows lapsed: sum of backends' active" \
	"$(e2e_json backends | jq '[.backends[].active] | add')" 0
rs_bg_stop d1
e2e_summary

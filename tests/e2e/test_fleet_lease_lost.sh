#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, fleet mode (issue 36, 2): a host whose lease is gone while
# it has a record to publish joins again. Three hosts behind ECMP and an
# etcd, made here, with a long lease (60 s: a keepalive every 20 s, so the
# put of the record comes before the keepalive that would also notice).
# host-1's lease is revoked through etcd (any member's etcd user may, as
# documented) and at once one of its backends is drained, which changes
# its record. Before, etcd's "requested lease not found" was taken for an
# outage: host-1 put the record again every round, never reached its
# keepalive and never came back, and the other hosts' tables dropped it.
# Now: host-1 says its lease is gone, joins with a new lease, its record
# (with the drain) is back, every host agrees on three members again, and
# 200 clients connect with no failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/fleet_lib.sh

e2e_fleet_setup fll
for i in 1 2 3; do
	host_conf "$i" | sed 's/^lease_ttl = .*/lease_ttl = 60s/' >"$OUT/h$i.conf"
	run_host "$i"
done
e2e_check "all three hosts agree on three members" \
	wait_members host-1,host-2,host-3 1 2 3

# lease_of NAME: the lease (decimal) of NAME's member key, "none" if absent.
lease_of() {
	etcd_call /v3/kv/range "{\"key\":\"$(b64 "$PREFIX/members/$1")\"}" |
		jq -r '.kvs[0].lease // "none"'
}
capacity_of() {
	etcd_get "$PREFIX/members/$1" 2>/dev/null | jq -r '.services.web.capacity // "none"' 2>/dev/null || echo none
}
capacity_is() { [[ $(capacity_of "$1") == "$2" ]]; }
e2e_check "host-1's record carries its capacity (2)" rs_until 10 capacity_is host-1 2
old=$(lease_of host-1)
e2e_check "host-1's member key has a lease ($old)" bash -c "[[ '$old' =~ ^[0-9]+\$ ]]"

echo "# host-1's lease revoked, and at once a record to publish"
etcd_call /v3/lease/revoke "{\"ID\":\"$old\"}" >/dev/null
ctl 1 backend drain h1-a >/dev/null
e2e_eq "the revoke took host-1's key with it" "$(lease_of host-1)" none
new_lease() { local l; l=$(lease_of host-1); [[ $l != none && $l != "$old" ]]; }
e2e_check "host-1 is back with a new lease" rs_until 20 new_lease
e2e_check "it said so" grep -q "fleet: lease .* is gone; joining again" "$(rs_bg_err d1)"
e2e_eq "fleet status shows the new lease" \
	"$(ctl 1 -j fleet status | jq -r .lease)" "$(printf '%x' "$(lease_of host-1)")"
e2e_check "its record carries the drain (capacity 1)" rs_until 10 capacity_is host-1 1
e2e_check "every host agrees on three members again" \
	wait_members host-1,host-2,host-3 1 2 3
clients after 200 1
e2e_eq "200 clients after it: none failed" "$(e2e_errors "$OUT/after")" 0
e2e_eq "and all 200 answered" "$(wc -l <"$OUT/after")" 200

e2e_summary

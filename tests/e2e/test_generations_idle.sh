#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the flow table under a flood that outlasts flow_idle (issue
# 38). A UDP service with generations, flow_table = 64, flow_idle = 10s,
# one backend d-1. 8 live flows (a datagram every 0.1 s each) are
# recorded first; a flood of 200 one-datagram sources fills the rest of
# the table and flows_full counts those left out (a full table records
# nothing and evicts nothing). The flood's entries go once idle (the
# sweep, every 5 s), the live flows' do not: a second process then binds
# beside the first, and the live flows still reach the first (their
# entries), while 20 new flows are recorded on the second and reach it.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup genidle
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'
e2e_conf_global "flow_table = 64"
e2e_conf_dns "generations = on" "flow_idle = 10s"
e2e_conf_dns_backend 1

backend() { # backend NAME: a process serving d-1 on both families
	rs_bg_start "$1" rs_in_edge build/tools/rs_backend --name "$1" \
		--udp 127.0.0.1:5353 --udp "[2001:db8::1:1]:5353"
	rs_bg_wait_ready "$1"
}
backend p1
rs_bg_start d rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d)" "sk_lookup link" 10
rs_bg_start live rs_in_client build/tools/flow_client --target 198.18.0.10:5353 \
	--src-base 198.18.1.1 --count 8 --port-base 40000
rs_bg_wait_ready live

# Entries per generation, as the last sweep counted them.
flows() { rsjson backends | jq -c '[.backends[] | select(.name == "d-1") | .sockets[0].generations[] | .flows]'; }
full() { rsjson services | jq '.services[] | select(.name == "dns") | .stats.flows_full'; }
e2e_eq_within 20 "the 8 live flows recorded" "[8]" flows

echo "# a flood of 200 sources, one datagram each"
rs_in_client build/tools/quic_client --target 198.18.0.10:5353 --src-base 198.18.2.1 \
	--port-base 41000 --count 200 --dcid 0102030405060708 >"$OUT/flood.out" 2>/dev/null || true
e2e_eq "the flood answered by p1 (new flows: the working socket)" "$(grep -c ' p1$' "$OUT/flood.out" || true)" 200
# The sweep counts every 5 s, the flood idles out after 10.
e2e_eq_within 10 "the table full" "[64]" flows
full0=$(full)
e2e_check "the table was full: flows_full counts the 144 left out ($full0)" test "$full0" -ge 144

echo "# the flood idle past flow_idle: its entries go, the live ones stay"
e2e_eq_within 30 "8 entries left: the live flows'" "[8]" flows
backend p2
e2e_eq_within 10 "a second generation, p2's: no flow on it yet" "[8,0]" flows
from=$(wc -l <"$(rs_bg_out live)")
# answered_since N K: each live flow answered K times since line N.
answered_since() {
	(($(sed -n "$(($1 + 1)),\$p" "$(rs_bg_out live)" | awk '$1 != "ready" { c[$1]++ }
		END { k = 0; for (f in c) if (c[f] >= '"$2"') k++; print k }') == 8))
}
e2e_check "each live flow answered 5 times with both processes up" rs_until 20 answered_since "$from" 5
e2e_eq "live flows answered by p2" "$(sed -n "$((from + 1)),\$p" "$(rs_bg_out live)" | awk '$2 == "p2"' | wc -l)" 0
rs_in_client build/tools/quic_client --target 198.18.0.10:5353 --src-base 198.18.1.100 \
	--port-base 42000 --count 20 --dcid 0102030405060708 >"$OUT/new.out" 2>/dev/null || true
e2e_eq "20 new flows answered by p2" "$(grep -c ' p2$' "$OUT/new.out" || true)" 20
e2e_eq "no flow left out since the flood" "$(full)" "$full0"
e2e_eq_within 20 "recorded on p2: the 20 new flows" "[8,20]" flows
e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: which connections steer_sockops counts (issue 21). Nothing
# is written at the SYN: the daemon names each backend's listening
# sockets in rs_listen, every accepted child inherits that (BPF_F_CLONE),
# and a child is counted and made sticky only when it dialled the
# service's own address. steer_sockops sits at the cgroup2 root (named
# here: the default follows the backends' cgroup) and sees the TCP
# connections of every network namespace on the host.
#   - another namespace (a container, say) completes a connection with the
#     very 4-tuple of one of ours, to a listener of its own: not counted,
#     no sticky entry;
#   - a client of the backend's own address (a health check, an operator's
#     curl): the child carries the listener's storage, but is not the
#     service's: not counted, no sticky entry;
#   - a client of ours through the service: counted, sticky;
#   - a backend whose two processes share the port with SO_REUSEPORT: the
#     kernel picks either socket after steer_lookup's choice, and the
#     children of both are counted (the daemon names every socket of the
#     group).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup sos
OTHER=rs-oth$$
RS_CLEANUP_HOOK+="; ip netns del $OTHER 2>/dev/null || true"

e2e_conf_global "sockops_cgroup = /"
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 600

[service rp]
protocol = tcp
listen = 198.18.0.11:80

[backend rp-1]
service = rp
address = 127.0.0.1:8091
check = none
CONF
e2e_held_backends web 1
for half in a b; do
	rs_bg_start "rp$half" rs_in_edge build/tools/rs_backend --name "rp-1$half" \
		--reuseport --tcp 127.0.0.1:8091 --hold
	rs_bg_wait_ready "rp$half"
done
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10
e2e_wait_for "$(rs_bg_err d1)" "steer_sockops attached" 10

e2e_check "status shows steer_sockops attached" bash -c \
	"build/ringsteer -s '$SOCK' -j status | jq -e '.programs[] | select(.name == \"steer_sockops\") | .attached and .id > 0'"
e2e_check "and says so in the table" bash -c \
	"build/ringsteer -s '$SOCK' status | grep -q '^program steer_sockops id [0-9]* attached'"
e2e_check "no per-SYN map is pinned (rs_handoff)" \
	test ! -e "$BPFFS/rs_handoff"

ip netns add "$OTHER"
ip -n "$OTHER" link set lo up
ip -n "$OTHER" addr add 198.18.0.10/32 dev lo
ip -n "$OTHER" addr add 198.18.1.1/32 dev lo
rs_bg_start oth ip netns exec "$OTHER" build/tools/rs_backend --name other \
	--tcp 198.18.0.10:80 --hold
rs_bg_wait_ready oth

echo "# the other namespace completes a connection with one of our 4-tuples"
# Held open until the test ends: socat reads the backend's greeting and
# then waits for more.
rs_bg_start cli ip netns exec "$OTHER" socat -u \
	TCP:198.18.0.10:80,bind=198.18.1.1:40001 STDOUT
established_there() {
	ip netns exec "$OTHER" ss -Htn state established |
		grep -q 198.18.1.1:40001
}
e2e_check "it is established there" rs_until 5 established_there
# No wait: the kernel runs steer_sockops (PASSIVE_ESTABLISHED_CB, in
# tcp_init_transfer) before it sets the accepted socket ESTABLISHED, the
# state the loop above saw; whatever the program did to the gauge or the
# sticky table for this connection is done by now.
e2e_eq "no load counted for web-1" "$(e2e_active_of web-1)" 0
e2e_eq "no sticky entry for 198.18.1.1" \
	"$(e2e_json lookup web 198.18.1.1 | jq -r .reason)" primary

echo "# a client of web-1's own address (127.0.0.1:8081)"
rs_bg_start direct rs_in_edge build/tools/rs_idle --tcp 127.0.0.1:8081 \
	--count 3 --serial
rs_bg_wait_ready direct
e2e_eq "its 3 connections are established on web-1" \
	"$(e2e_ss_of 1 127.0.0.1:8081)" 3
e2e_eq "and not counted for web-1" "$(e2e_active_of web-1)" 0
e2e_eq "no sticky entry for 127.0.0.1" \
	"$(e2e_json lookup web 127.0.0.1 | jq -r .reason)" primary
rs_bg_stop direct

echo "# a connection of our own, through the service"
rs_bg_start ours rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.1.7 --count 1
rs_bg_wait_ready ours
# Ready is the client's side; the backend's side is established (and
# counted) when the handshake's last ACK has been taken, a little later.
e2e_eq_within 5 "web-1 active" 1 e2e_active_of web-1
e2e_eq "its sticky entry written at establishment" \
	"$(e2e_json lookup web 198.18.1.7 | jq -r .reason)" sticky
rs_bg_stop ours

echo "# rp-1: two processes share 127.0.0.1:8091 (SO_REUSEPORT)"
rs_bg_start rpc rs_in_client build/tools/rs_idle --tcp 198.18.0.11:80 \
	--src 198.18.1.1 --sources 40 --step 1 --count 40 --serial
rs_bg_wait_ready rpc
in_proc() {
	rs_in_edge ss -Htnp state established src 198.18.0.11:80 |
		grep -c "pid=${RS_BG_PID[$1]}," || true
}
na=$(in_proc rpa) nb=$(in_proc rpb)
e2e_eq "all 40 established on rp-1's two processes" $((na + nb)) 40
e2e_check "both processes took some ($na and $nb)" \
	test "$na" -gt 0 -a "$nb" -gt 0
e2e_eq_within 5 "rp-1 active counts the children of both" 40 \
	e2e_active_of rp-1
rs_bg_stop rpc
e2e_eq_within 5 "and returns to 0 when they close" 0 e2e_active_of rp-1
rs_bg_stop cli
rs_bg_stop d1
e2e_summary

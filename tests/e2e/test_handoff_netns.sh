#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: steer_sockops sits at the cgroup2 root and sees the TCP
# connections of every network namespace on the host; a hand-off is only
# for a connection of the namespace steer_lookup steered it in. Here a
# hand-off is pending for 198.18.1.1:40001 -> 198.18.0.10:80, and another
# namespace (a container, say) completes a connection with exactly that
# 4-tuple to a listener of its own. It must not take the hand-off: no
# sticky entry, no load counted for the backend, the hand-off left as it
# was. A real client of ours is still counted.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup hnn
OTHER=rs-oth$$
RS_CLEANUP_HOOK+="; ip netns del $OTHER 2>/dev/null || true"

e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 600
CONF
e2e_held_backends web 1
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 10
e2e_wait_for "$(rs_bg_err d1)" "steer_sockops attached" 10

e2e_check "status shows steer_sockops attached" bash -c \
	"build/ringsteer -s '$SOCK' -j status | jq -e '.programs[] | select(.name == \"steer_sockops\") | .attached and .id > 0'"
e2e_check "and says so in the table" bash -c \
	"build/ringsteer -s '$SOCK' status | grep -q '^program steer_sockops id [0-9]* attached'"

ip netns add "$OTHER"
ip -n "$OTHER" link set lo up
ip -n "$OTHER" addr add 198.18.0.10/32 dev lo
ip -n "$OTHER" addr add 198.18.1.1/32 dev lo
rs_bg_start oth ip netns exec "$OTHER" build/tools/rs_backend --name other \
	--tcp 198.18.0.10:80 --hold
rs_bg_wait_ready oth

svc=$(e2e_json services | jq '.services[0].id')
be=$(e2e_json backends | jq '.backends[0].id')
u32() { printf '%02x %02x %02x %02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
	$(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
z12="00 00 00 00 00 00 00 00 00 00 00 00"
# struct rs_handoff_key: AF_INET, client port 40001 and service port 80
# (host order), client 198.18.1.1, service 198.18.0.10.
key="02 00 41 9c 50 00 00 00 c6 12 01 01 $z12 c6 12 00 0a $z12"
# struct rs_handoff: the sticky key {service, AF_INET, 198.18.1.1}, the
# backend, RS_HANDOFF_STICKY.
val="$(u32 "$svc") 02 00 00 00 c6 12 01 01 $z12 $(u32 "$be") 01 00 00 00"
# shellcheck disable=SC2086 # bpftool takes the bytes as words
bpftool map update pinned "$BPFFS/rs_handoff" key hex $key value hex $val
handoff_there() {
	# shellcheck disable=SC2086
	bpftool map lookup pinned "$BPFFS/rs_handoff" key hex $key >/dev/null 2>&1
}
e2e_check "a hand-off is pending for 198.18.1.1:40001 -> 198.18.0.10:80" \
	handoff_there

echo "# the other namespace completes a connection with that 4-tuple"
rs_bg_start cli ip netns exec "$OTHER" socat \
	TCP:198.18.0.10:80,bind=198.18.1.1:40001 SYSTEM:"sleep 60"
for ((i = 0; i < 50; i++)); do
	ip netns exec "$OTHER" ss -Htn state established \
		src 198.18.0.10:80 | grep -q 40001 && break
	sleep 0.1
done
e2e_check "it is established there" bash -c \
	"ip netns exec $OTHER ss -Htn state established | grep -q 198.18.1.1:40001"
# No wait: the kernel runs steer_sockops (PASSIVE_ESTABLISHED_CB, in
# tcp_init_transfer) before it sets the accepted socket ESTABLISHED, the
# state the loop above saw; whatever the program did to the hand-off, the
# gauge or the sticky table for this connection is done by now.
e2e_check "the hand-off is left alone" handoff_there
e2e_eq "no load counted for web-1" "$(e2e_active_of web-1)" 0
e2e_eq "no sticky entry for 198.18.1.1" \
	"$(e2e_json lookup web 198.18.1.1 | jq -r .reason)" primary

echo "# a connection of our own namespace is still counted"
rs_bg_start ours rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.1.7 --count 1
rs_bg_wait_ready ours
# Ready is the client's side; the backend's side is established (and
# counted) when the handshake's last ACK has been taken, a little later.
e2e_eq_within 5 "web-1 active" 1 e2e_active_of web-1
e2e_eq "its sticky entry written at establishment" \
	"$(e2e_json lookup web 198.18.1.7 | jq -r .reason)" sticky
rs_bg_stop ours
rs_bg_stop cli
rs_bg_stop d1
e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: QUIC connection IDs across fleet hosts (docs/fleet.md
# "QUIC"). A client, a router spreading the service address over three
# hosts by ECMP (L4 hash: every new source address or port of a client may
# enter at another host), three hosts each running ringsteerd and two UDP
# backends with server IDs of their own, and an etcd, in namespaces made
# here.
#   every client gets a backend for its Initial (by the fleet table), a
#   CID minted for that backend, then migrates: 1-RTT and Handshake
#   packets from 12 new addresses and ports each, spread over all hosts,
#   all reach the backend that issued the CID (forwarded by cookie);
#   `cid decode` names the owner host; a server ID published by two hosts
#   is a conflict (status, metric) and goes by the table; the owning host
#   drained: its QUIC clients keep reaching it, new ones do not; a host
#   killed: its CIDs go by the table once its lease expires, no datagram
#   lost, none to its (dead) backends, no daemon crashes.
# With FLEET_QUIC_KEY (a key file; test_fleet_quic_lb.sh) every host
# encrypts the CIDs with it (QUIC-LB, docs/quic.md "Encrypted CIDs"): the
# same, on decrypted server IDs.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/fleet_lib.sh

e2e_fleet_setup fq

NC=36 # clients
NM=12 # new addresses and ports per client and migration


# conf I [SID_OF_B]: host I's configuration; service q (UDP, QUIC
# cookies), backends h$I-a (server ID 0x0I01) and h$I-b (0x0I02 or
# SID_OF_B).
conf() {
	local i=$1 sidb=${2:-0x0${1}02}
	rs_fleet_conf_head "$i" "$BPFFS-h$i" "$OUT/h$i.sock" \
		"metrics = 127.0.0.1:9464"
	cat <<CONF

[service q]
protocol = udp
listen = 198.18.0.10:443
cookie = quic
quic_server_id_len = 2
quic_cid_len = 8
quic_config_id = 0
${FLEET_QUIC_KEY:+quic_key_file = $FLEET_QUIC_KEY}
fleet = on

[backend h$i-a]
service = q
address = 127.0.0.1:8081
server_id = 0x0${i}01

[backend h$i-b]
service = q
address = 127.0.0.1:8082
server_id = $sidb
CONF
}

start_host() {
	local i=$1
	conf "$i" >"$OUT/h$i.conf"
	RS_FLEET_BACKEND_PROTO=udp rs_fleet_start_host "$i" "$OUT/h$i.conf" \
		build/tools/rs_backend
	e2e_wait_for "$(rs_bg_err "d$i")" "sk_lookup link" 10
}

# conflicts I: server ID conflicts host I shows.
conflicts() { ctl "$1" -j fleet status | jq '.cid_conflicts | length'; }
wait_conflicts() { # wait_conflicts N I...
	local want=$1 i t ok
	shift
	for ((t = 0; t < 100; t++)); do
		ok=1
		for i in "$@"; do
			[[ $(conflicts "$i") == "$want" ]] || ok=""
		done
		[[ -n $ok ]] && return 0
		sleep 0.1
	done
	return 1
}

stat_sum() { # stat_sum FIELD I...: a packet counter summed over hosts
	local f=$1 i n=0
	shift
	for i in "$@"; do
		n=$((n + $(ctl "$i" -j fleet status | jq ".packets.$f")))
	done
	echo "$n"
}

# qc OUT SRC_BASE PORT_BASE COUNT [quic_client options]: "SRC PORT BACKEND".
qc() {
	local out=$1 base=$2 port=$3 n=$4
	shift 4
	rs_in_client build/tools/quic_client --target 198.18.0.10:443 \
		--src-base "$base" --port-base "$port" --count "$n" "$@" \
		>>"$OUT/$out" 2>/dev/null || true
}

# Each client c: an Initial from 198.18.1.c (the table picks its host, that
# host's ring its backend), then a CID minted for that backend by its host.
initials() { # initials NAME: backend of each client into $OUT/NAME
	local c
	: >"$OUT/$1"
	for ((c = 1; c <= NC; c++)); do
		qc "$1" "198.18.1.$c" $((30000 + c)) 1 --type initial --random-dcid
	done
}

# migrate NAME [TYPE] [CLIENTS]: every client (of the list in
# $OUT/CLIENTS, "c backend cid" lines) sends NM packets with its CID from
# 198.18.2.1.. and ports of its own; "c backend reply" lines in $OUT/NAME.
migrate() {
	local name=$1 type=${2:-short} list=${3:-cids} c be cid
	: >"$OUT/$name"
	while read -r c be cid; do
		: >"$OUT/one"
		qc one 198.18.2.1 $((20000 + 37 * c)) "$NM" --type "$type" --dcid "$cid"
		awk -v c="$c" -v b="$be" '{print c, b, $3}' "$OUT/one" >>"$OUT/$name"
	done <"$OUT/$list"
}
# wrong NAME: replies from another backend than the CID's, or none.
wrong() { awk '$2 != $3' "$OUT/$1" | wc -l; }

for i in 1 2 3; do start_host "$i"; done
e2e_check "ringsteerd --check accepts fleet = on with cookie = quic" \
	build/ringsteerd --check -c "$OUT/h1.conf"
e2e_check "all three hosts agree on three members" \
	wait_members host-1,host-2,host-3 1 2 3
e2e_eq "every host sees no server ID conflict" "$(($(conflicts 1) + $(conflicts 2) + $(conflicts 3)))" 0

echo "# $NC clients: Initial by the table, then a CID from that backend"
initials init
e2e_eq "every Initial answered" "$(awk '$3 !~ /^ERR/' "$OUT/init" | wc -l)" "$NC"
e2e_check "Initials reached all three hosts" \
	test "$(awk '{print substr($3, 1, 2)}' "$OUT/init" | sort -u | wc -l)" -eq 3
: >"$OUT/cids"
c=0
while read -r _ _ be; do
	c=$((c + 1))
	h=${be:1:1}
	echo "$c $be $(ctl "$h" cid q "$be")" >>"$OUT/cids"
done <"$OUT/init"
if [[ -n ${FLEET_QUIC_KEY:-} ]]; then
	read -r _ _ cid1 <"$OUT/cids"
	e2e_check "CIDs are encrypted, and another host decrypts them" \
		test "$(ctl 3 -j cid decode q "$cid1" | jq -r '[.encrypted, .reason] | join(" ")')" == "true routable"
fi

echo "# migration: $NM new addresses and ports per client, over all hosts"
fwd0=$(stat_sum cookie_forwarded 1 2 3)
migrate mig short
e2e_eq "1-RTT: $((NC * NM)) datagrams answered" "$(wc -l <"$OUT/mig")" $((NC * NM))
e2e_eq "1-RTT: every datagram reached the backend that issued its CID" \
	"$(wrong mig)" 0
fwd1=$(stat_sum cookie_forwarded 1 2 3)
e2e_check "1-RTT: datagrams that entered at other hosts were forwarded by cookie ($((fwd1 - fwd0)))" \
	test $((fwd1 - fwd0)) -gt $((NC * NM / 3))
migrate mighs handshake
e2e_eq "Handshake: every datagram reached the backend that issued its CID" \
	"$(wrong mighs)" 0
e2e_check "Handshake: forwarded by cookie too" \
	test "$(stat_sum cookie_forwarded 1 2 3)" -gt "$fwd1"

echo "# cid decode names the owner host"
read -r _ be2 cid2 < <(awk '$2 ~ /^h2-/' "$OUT/cids" | head -1)
e2e_check "cid decode at host-1: $cid2 is $be2's, on host-2" \
	test "$(ctl 1 -j cid decode q "$cid2" | jq -r .owner)" == host-2
e2e_check "cid decode (table) says where it goes" \
	sh -c "build/ringsteer -s '$OUT/h1.sock' cid decode q $cid2 | grep -q 'owner host *host-2: issued by another member'"
e2e_check "cid decode at host-2: this host" \
	test "$(ctl 2 -j cid decode q "$cid2" | jq -r .owner_is_this_host)" == true

echo "# a server ID two hosts publish: a conflict, by the table"
sid2=$(ctl 1 -j cid decode q "$cid2" | jq -r .server_id)
conf 3 "$sid2" >"$OUT/h3.conf"
e2e_check "host-3 reloaded with $be2's server ID $sid2 on h3-b" ctl 3 reload
e2e_check "every host shows one conflict" wait_conflicts 1 1 2 3
e2e_check "fleet status names the ID and both hosts" \
	sh -c "build/ringsteer -s '$OUT/h1.sock' fleet status | grep -q 'CONFLICT: service q server ID ${sid2#0x} is published by host-2 and host-3'"
e2e_check "metric ringsteer_fleet_cid_conflicts 1" \
	sh -c "nsenter --net=/run/netns/$(rs_fleet_ns 1) -- curl -sf http://127.0.0.1:9464/metrics | grep -qx 'ringsteer_fleet_cid_conflicts 1'"
e2e_eq "the conflict is logged once" \
	"$(grep -c "server ID ${sid2#0x} is published by host-2 and host-3" "$(rs_bg_err d1)")" 1
awk -v b="$be2" '$2 == b' "$OUT/cids" >"$OUT/cids2"
fwd0=$(stat_sum cookie_forwarded 1 2 3)
migrate conflict short cids2
e2e_eq "conflicting ID: every datagram answered" \
	"$(awk '$3 ~ /^ERR/' "$OUT/conflict" | wc -l)" 0
e2e_eq "conflicting ID: none forwarded by cookie" \
	"$(stat_sum cookie_forwarded 1 2 3)" "$fwd0"
conf 3 >"$OUT/h3.conf"
e2e_check "host-3 reloaded with its own server IDs" ctl 3 reload
e2e_check "the conflict is gone everywhere" wait_conflicts 0 1 2 3
migrate noconflict short cids2
e2e_eq "$be2's clients reach it again from everywhere" "$(wrong noconflict)" 0

echo "# host-2 drained: its QUIC clients keep reaching it, new ones do not"
e2e_check "ringsteer fleet drain host-2" ctl 1 fleet drain host-2
e2e_check "all hosts drop host-2 from their tables" \
	wait_members host-1,host-3 1 2 3
awk '$2 ~ /^h2-/' "$OUT/cids" >"$OUT/cids-h2"
e2e_check "some clients are host-2's ($(wc -l <"$OUT/cids-h2"))" \
	test -s "$OUT/cids-h2"
migrate drained short cids-h2
e2e_eq "drained: every datagram of host-2's clients reached its backend" \
	"$(wrong drained)" 0
initials init-drained
e2e_eq "drained: every new Initial answered" \
	"$(awk '$3 !~ /^ERR/' "$OUT/init-drained" | wc -l)" "$NC"
e2e_eq "drained: no new Initial reaches host-2" \
	"$(awk '$3 ~ /^h2-/' "$OUT/init-drained" | wc -l)" 0
e2e_check "ringsteer fleet undrain host-2" ctl 1 fleet undrain host-2
e2e_check "host-2 is back in every table" \
	wait_members host-1,host-2,host-3 1 2 3

echo "# host-3 killed and its path dropped: its CIDs go by the table"
rs_fleet_ecmp 1 2
for p in d3 be3a be3b; do rs_bg_stop "$p"; done
e2e_check "host-3 leaves every table after its lease" \
	wait_members host-1,host-2 1 2
awk '$2 ~ /^h3-/' "$OUT/cids" >"$OUT/cids-h3"
fwd0=$(stat_sum cookie_forwarded 1 2)
migrate killed short cids-h3
e2e_eq "killed: every datagram with host-3's CIDs answered" \
	"$(awk '$3 ~ /^ERR/' "$OUT/killed" | wc -l)" 0
e2e_eq "killed: none reached a host-3 backend" \
	"$(awk '$3 ~ /^h3-/' "$OUT/killed" | wc -l)" 0
e2e_eq "killed: none forwarded by cookie" "$(stat_sum cookie_forwarded 1 2)" "$fwd0"
awk '$2 !~ /^h3-/' "$OUT/cids" >"$OUT/cids-alive"
migrate alive short cids-alive
e2e_eq "killed: the other hosts' clients still reach their backends" \
	"$(wrong alive)" 0
for p in d1 d2; do
	e2e_check "ringsteerd $p still runs" kill -0 "${RS_BG_PID[$p]}"
done

e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, fleet mode with a fleet key (issue 20): three hosts sign
# their member records, each checks the others'.
#   - an unsigned record, one signed with another key, and host-1's
#     record copied under another name are rejected with their reason and
#     get no keys; no client fails;
#   - a packet to the fleet port from a member's own address without a
#     valid tag (what anyone who can spoof that address sends) is dropped
#     and counted as unauthenticated: its SYN never reaches a backend;
#   - the key is rotated under connection load as docs/fleet.md says
#     (the new key added as a second line on every host, moved first,
#     the old one removed, a reload per host per step): no connection
#     fails, the members never change, no host's record is rejected,
#     connections are forwarded between hosts all along and no host
#     drops a forwarded packet as unauthenticated. Then a second rotation
#     under the same load with a host's daemon killed (-9) and started
#     again after each step: the same.
#   - per-host identities (issue 36): with key_file alone, a fake member
#     signed with the fleet key (which host-1 holds) gets keys; the PoP
#     moves to identity_key/member_keys one reload at a time under load
#     (no connection fails, nobody moves); then fake members and a copy
#     signed with host-1's keys, and a record for host-2 signed with
#     host-1's key, are rejected by every host: no table swapped, host-2
#     keeps its address and place, no connection fails.
#   - addresses bound in member_keys (issue 36, 3a): --check warns while
#     none is, refuses an address listed for two names and a host whose
#     own address is not on its line; then, host-2 away (stopped, its
#     record gone), host-1 publishes its own record with host-2's
#     address: rejected by every host's reader, no table swapped; host-2
#     back is accepted at its address and place; no connection fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/fleet_lib.sh

e2e_fleet_setup fsg
OLD=00112233445566778899aabbccddeeff
NEW=f0e1d2c3b4a5968778695a4b3c2d1e0f
THIRD=0f1e2d3c4b5a69788796a5b4c3d2e1f0

# keys I LINE...: host I's key file.
keys() {
	local i=$1
	shift
	printf '%s\n' "# fleet keys: the first signs" "$@" >"$OUT/h$i.key"
	chmod 600 "$OUT/h$i.key"
}
for i in 1 2 3; do
	keys "$i" "$OLD"
	host_conf "$i" "metrics = 127.0.0.1:946$i" |
		sed "s|^prefix = .*|&\nkey_file = $OUT/h$i.key|" >"$OUT/h$i.conf"
	run_host "$i"
done
e2e_check "signed: all three hosts agree on three members" \
	wait_members host-1,host-2,host-3 1 2 3
e2e_check "host-1's record is signed" \
	bash -c "$(declare -f b64 etcd_call etcd_get); ETCD='$ETCD' RS_NS_EDGE='$RS_NS_EDGE' etcd_get '$PREFIX/members/host-1' | jq -e '.sig | length == 32' >/dev/null"
chmod 644 "$OUT/h1.key"
out=$(build/ringsteerd --check -c "$OUT/h1.conf" 2>&1 || true)
e2e_check "a key file others can read is refused, naming key_file" \
	grep -q "\[fleet\] key_file: .* (mode 0644)" <<<"$out"
chmod 600 "$OUT/h1.key"
# Hostile key files at a reload: a FIFO (an open would wait for a
# writer), a 1 TiB sparse file. Refused at once with the key named, the
# running keys and members kept, the daemon answering.
cp "$OUT/h1.conf" "$OUT/h1.conf.good"
for hostile in fifo sparse; do
	rm -f "$OUT/hostile.key"
	if [[ $hostile == fifo ]]; then mkfifo -m 600 "$OUT/hostile.key"; else
		truncate -s 1T "$OUT/hostile.key"
		chmod 600 "$OUT/hostile.key"
	fi
	sed -i "s|^key_file = .*|key_file = $OUT/hostile.key|" "$OUT/h1.conf"
	rc=0
	out=$(timeout 20 build/ringsteer -s "$OUT/h1.sock" reload 2>&1) || rc=$?
	e2e_check "a $hostile key file: the reload is refused, naming key_file ($out)" \
		grep -q "key_file" <<<"$out"
	e2e_check "a $hostile key file: refused at once (exit $rc, 124 = timed out)" \
		test "$rc" -ne 0 -a "$rc" -ne 124
	cp "$OUT/h1.conf.good" "$OUT/h1.conf"
done
rm -f "$OUT/hostile.key"
e2e_check "host-1 still answers, with its three members" wait_members host-1,host-2,host-3 1

echo "# records the fleet key does not vouch for"
lease=$(etcd_call /v3/lease/grant '{"TTL": 120}' | jq -r .ID)
etcd_put "$PREFIX/members/aa-unsigned" \
	'{"address":"198.18.77.1","services":{"web":{"capacity":2}}}' "$lease"
etcd_put "$PREFIX/members/aa-otherkey" \
	'{"address":"198.18.77.2","services":{"web":{"capacity":2}},"sig":"0123456789abcdef0123456789abcdef"}' "$lease"
# host-1's record word for word, under another name.
etcd_put "$PREFIX/members/aa-copy" "$(etcd_get "$PREFIX/members/host-1" |
	jq -c '.address = "198.18.77.3"')" "$lease"
etcd_put "$PREFIX/members/aa-copy2" "$(etcd_get "$PREFIX/members/host-2")" "$lease"
for k in aa-unsigned aa-otherkey aa-copy aa-copy2; do
	e2e_check "$k rejected by every host" wait_rejected "$k"
done
e2e_check "reason: unsigned" grep -q "^unsigned" <<<"$(rejected_of 2 aa-unsigned)"
e2e_check "reason: no fleet key matches" \
	grep -q "signature matches no fleet key" <<<"$(rejected_of 2 aa-otherkey)"
e2e_check "an altered copy fails its signature" \
	grep -q "signature matches no fleet key" <<<"$(rejected_of 3 aa-copy)"
e2e_check "an exact copy under another name fails too" \
	grep -q "signature matches no fleet key\|address is member host-2's" <<<"$(rejected_of 3 aa-copy2)"
e2e_check "members unchanged" wait_members host-1,host-2,host-3 1 2 3
clients base 200 2
e2e_eq "no failed connections" "$(e2e_errors "$OUT/base")" 0
etcd_call /v3/lease/revoke "{\"ID\":\"$lease\"}" >/dev/null

echo "# packets from a member's address without a valid tag"
# What a spoofer sends: our header, unsigned, around a SYN from
# 198.18.1.77, from host-2's own address (sent from host-2's namespace,
# as a spoofed source would arrive).
u0=$(stat_of 1 unauthenticated)
r0=$(stat_of 1 received)
send_encap "$(rs_fleet_ns 2)" 198.18.12.2 1
for ((t = 0; t < 50; t++)); do
	(($(stat_of 1 unauthenticated) > u0)) && break
	sleep 0.1
done
e2e_eq "an unsigned packet from host-2's address is dropped as unauthenticated" \
	"$(($(stat_of 1 unauthenticated) - u0))" 1
e2e_eq "it was not taken in" "$(($(stat_of 1 received) - r0))" 0
e2e_eq "its SYN reached no backend (no handshake from 198.18.1.77)" \
	"$(rs_in_host 1 ss -Htn state syn-recv '( src 198.18.1.77 or dst 198.18.1.77 )' | wc -l)" 0
e2e_check "fleet status shows the counter" \
	grep -q "unauthenticated 1" <<<"$(ctl 1 fleet status)"
e2e_eq "Prometheus shows it" \
	"$(metric_of 1 ringsteer_fleet_unauthenticated_packets_total)" 1

echo "# rotating the key under load"
fwd0=0
for i in 1 2 3; do fwd0=$((fwd0 + $(stat_of "$i" forwarded))); done
# A 3 s connect timeout: a SYN the kernel retransmits after its 1 s RTO
# (a loaded machine drops one now and then, with or without ringsteer)
# is not a failed connection; a host that refused the others' packets
# would fail every forwarded one, and the unauthenticated counters below
# say whether any packet was refused.
rs_bg_start load rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base 198.18.1.1 --count 200 --concurrency 8 --loop-seconds 600 \
	--timeout-ms 3000
# hosts_ok: every host has the three members, agreeing, at once; and
# within 5 s none of their records is rejected anywhere (a host re-signs
# its record just after its reload: until then a host that dropped the
# old key keeps its last valid record, so nobody moves meanwhile).
hosts_ok() {
	local i t n
	wait_members host-1,host-2,host-3 1 2 3 || return 1
	for ((t = 0; t < 50; t++)); do
		n=0
		for i in 1 2 3; do
			n=$((n + $(ctl "$i" -j fleet status | jq '[.rejected[] | select(.key | test("/members/host-"))] | length')))
		done
		((n == 0)) && return 0
		sleep 0.1
	done
	return 1
}
# step NAME LINE...: every host's key file, one reload at a time.
step() {
	local name=$1 i
	shift
	for i in 1 2 3; do
		keys "$i" "$@"
		ctl "$i" reload >/dev/null
		hosts_ok || {
			e2e_fail "$name: after host-$i's reload"
			return 0
		}
	done
	e2e_pass "$name: members kept, no host rejected"
}
step "the new key added second" "$OLD" "$NEW"
step "the new key moved first" "$NEW" "$OLD"
step "the old key removed" "$NEW"
e2e_check "records are signed with the new key now" bash -c \
	"$(declare -f b64 etcd_call etcd_get); ETCD='$ETCD' RS_NS_EDGE='$RS_NS_EDGE' etcd_get '$PREFIX/members/host-3' | jq -e .sig >/dev/null"
# A second rotation, each step followed by a host's daemon killed (-9)
# and started again with the key file it has then: the pinned keys steer
# meanwhile, and the new daemon adopts them and re-signs its record.
declare -A DNAME=([1]=d1 [2]=d2 [3]=d3)
restart_host() {
	local i=$1 n=$2 pid=${RS_BG_PID[${DNAME[$1]}]}
	kill -9 "$pid"
	rs_until 10 e2e_gone "$pid" || true
	DNAME[$i]=d$i-r$n
	rs_bg_start "${DNAME[$i]}" nsenter --net="/run/netns/$(rs_fleet_ns "$i")" -- \
		"$RS_DAEMON" -c "$OUT/h$i.conf"
	e2e_wait_for "$(rs_bg_err "${DNAME[$i]}")" "control socket" 15 &&
		hosts_ok
}
# The SipHash states each daemon keeps for its member pairs
# (rs_fleet_sip, in the half its table's number picks): one for signing to
# each other member and one per key (one now) for checking each: 2 x 2.
# The signing ones say wire version 3: every member's record says it
# takes it (fleet status shows it).
# sip_states I: host I's states for the table in force; read again when
# a table swap replaced the inner map between its dump and its lookup.
sip_states() {
	local t
	for ((t = 0; t < 20; t++)); do
		sip_states_once "$1" && return 0
		sleep 0.1
	done
	return 1
}
sip_states_once() {
	local root="$BPFFS-h$1" inner gen base
	inner=$(bpftool -j map dump pinned "$root/rs_fleet" |
		jq -r '.[0].value | map(.[2:]) | reverse | join("")') || return 1
	gen=$(bpftool -j map lookup id "$((16#$inner))" key 0 0 0 0 |
		jq '.formatted.value[""].hdr.gen') || return 1
	base=$(((gen % 2) * 64 * 2 * 9))
	bpftool -j map dump pinned "$root/rs_fleet_sip" |
		jq -r --argjson lo "$base" --argjson hi "$((base + 64 * 2 * 9))" \
			'[.[] | .formatted | select(.key >= $lo and .key < $hi and (.value.k0 != 0 or .value.k1 != 0))] |
			"\(length) states, \(map(select(.value.wire == 3)) | length) to sign in wire 3"'
}
step "a third key added second" "$NEW" "$THIRD"
e2e_eq "host-1's SipHash states grow with a second key (checking under both)" \
	"$(sip_states 1)" "6 states, 2 to sign in wire 3"
e2e_check "host-2 killed (-9) and started again: members kept" restart_host 2 1
step "the third key moved first" "$THIRD" "$NEW"
e2e_check "host-3 killed (-9) and started again: members kept" restart_host 3 1
step "the second key removed" "$THIRD"
e2e_check "host-1 killed (-9) and started again: members kept" restart_host 1 1
kill -USR1 "${RS_BG_PID[load]}"
wait "${RS_BG_PID[load]}" || true
e2e_check "connections made during the rotation" \
	test "$(sed -n 's/^attempts=\([0-9]*\).*/\1/p' "$(rs_bg_out load)")" -gt 100
e2e_eq "no failed connection during the rotation" \
	"$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$(rs_bg_out load)")" 0
e2e_check "host-1 said it had 2 keys" grep -q "fleet: 2 fleet keys" "$(rs_bg_err d1)"
fwd=0 unauth=0
for i in 1 2 3; do
	fwd=$((fwd + $(stat_of "$i" forwarded)))
	unauth=$((unauth + $(stat_of "$i" unauthenticated)))
done
e2e_check "connections were forwarded between hosts during the rotation ($((fwd - fwd0)) packets)" \
	test $((fwd - fwd0)) -gt 100
e2e_eq "no host dropped a member's packet as unauthenticated (the one spoofed above aside)" \
	"$unauth" 1

for i in 1 2 3; do
	e2e_eq "host-$i keeps the SipHash states of its member pairs" \
		"$(sip_states "$i")" "4 states, 2 to sign in wire 3"
done
e2e_check "status names steer_tc on a fleet-only host" \
	bash -c "build/ringsteer -s '$OUT/h1.sock' -j status | jq -e '[.programs[] | select(.name == \"steer_tc\" and .id > 0)] | length == 1'"
e2e_eq "members say they take wire version 3" \
	"$(ctl 1 -j fleet status | jq -c '[.members[].wire]')" "[3,3,3]"
echo "# per-host identities: what a compromised host-1 can sign"
: >"$OUT/members"
for i in 1 2 3; do
	openssl genpkey -algorithm ed25519 -out "$OUT/id$i.key" 2>/dev/null
	chmod 600 "$OUT/id$i.key"
	echo "host-$i $(openssl pkey -in "$OUT/id$i.key" -pubout | sed -n 2p)" >>"$OUT/members"
done
FLEET_KEY=$THIRD
# forge I NAME JSON: JSON as the record PREFIX/members/NAME, signed with
# what a compromised host-I holds: the fleet key and, for I > 0, its own
# identity key (docs/fleet.md: host_sig over the record without
# signatures, sig over it with host_sig). openssl, not our code, signs.
forge() {
	local i=$1 key=$PREFIX/members/$2 canon sig mac
	canon=$(jq -cS 'del(.sig, .host_sig)' <<<"$3")
	if ((i > 0)); then
		printf 'ringsteer fleet record ed25519 1\n%s\n%s' "$key" "$canon" >"$OUT/msg"
		sig=$(openssl pkeyutl -sign -rawin -inkey "$OUT/id$i.key" -in "$OUT/msg" |
			od -An -v -tx1 | tr -d ' \n')
		canon=$(jq -cS --arg s "$sig" '.host_sig = $s' <<<"$canon")
	fi
	mac=$(printf 'ringsteer fleet record 1\n%s\n%s' "$key" "$canon" |
		openssl mac -digest SHA256 -macopt "hexkey:$FLEET_KEY" HMAC | tr A-F a-f)
	jq -cS --arg m "${mac:0:32}" '.sig = $m' <<<"$canon"
}
swaps() { # swaps I...: table swaps of hosts I..., summed
	local i n=0
	for i in "$@"; do n=$((n + $(metric_of "$i" ringsteer_fleet_table_swaps_total))); done
	echo "$n"
}
fake() { echo "{\"address\":\"198.18.77.$1\",\"services\":{\"web\":{\"capacity\":2}},\"wire\":3}"; }
lease=$(etcd_call /v3/lease/grant '{"TTL": 600}' | jq -r .ID)
e2e_eq "fleet status: records need the fleet key" \
	"$(ctl 1 -j fleet status | jq -r .records.signed_by)" fleet_key
# The weaker mode first: this is what the attacks below would do today.
etcd_put "$PREFIX/members/aa-fake" "$(forge 0 aa-fake "$(fake 5)")" "$lease"
e2e_check "key_file alone (the weaker mode): a fake member signed with the fleet key host-1 holds gets keys" \
	wait_members aa-fake,host-1,host-2,host-3 1 2 3
etcd_del_prefix "$PREFIX/members/aa-"
e2e_check "the fake gone with its key" wait_members host-1,host-2,host-3 1 2 3

echo "# moving to identities, one reload per host, under load"
rs_bg_start load-id rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
	--src-base 198.18.1.1 --count 200 --concurrency 8 --loop-seconds 600 \
	--timeout-ms 3000
# believed_both_ways: host-1's record carries both signatures, and hosts
# 2 and 3 (the fleet key alone) have read it and believe it.
believed_both_ways() {
	local rev i
	rev=$(etcd_call /v3/kv/range "{\"key\":\"$(b64 "$PREFIX/members/host-1")\"}" |
		jq -r .header.revision)
	etcd_get "$PREFIX/members/host-1" | jq -e '.host_sig and .sig' >/dev/null || return 1
	for i in 2 3; do
		(($(ctl "$i" -j fleet status | jq .latest_revision) >= rev)) || return 1
		[[ -z $(rejected_of "$i" host-1) ]] || return 1
	done
}
bad=""
for i in 1 2 3; do
	sed -i "s|^key_file = .*|&\nidentity_key = $OUT/id$i.key\nmember_keys = $OUT/members|" "$OUT/h$i.conf"
	ctl "$i" reload >/dev/null || bad+=" host-$i's reload failed;"
	if ((i == 1)); then
		rs_until 5 believed_both_ways ||
			bad+=" hosts with the fleet key alone rejected host-1's record;"
	fi
	# Until every host signs with its key, the others keep its last
	# valid record: nobody moves.
	wait_members host-1,host-2,host-3 1 2 3 || bad+=" members changed after host-$i's;"
done
e2e_eq "each host reloaded with identity_key and member_keys, members kept; hosts not moved yet believe the moved ones" "$bad" ""
e2e_check "identities everywhere: no host's record is rejected anywhere" hosts_ok
e2e_eq "fleet status says whose signature a record needs" \
	"$(ctl 3 -j fleet status | jq -c .records)" '{"signed_by":"host","member_keys":3}'
e2e_check "host-2's record carries its own signature" bash -c \
	"$(declare -f b64 etcd_call etcd_get); ETCD='$ETCD' RS_NS_EDGE='$RS_NS_EDGE' etcd_get '$PREFIX/members/host-2' | jq -e '.host_sig | length == 128' >/dev/null"
e2e_check "a host with identities no longer warns that any member can sign for the others" \
	bash -c "! build/ringsteerd --check -c '$OUT/h1.conf' 2>&1 | grep -q 'has no member_keys'"

echo "# host-1's keys cannot add members"
sw0=$(swaps 1 2 3)
for n in 1 2 3; do
	etcd_put "$PREFIX/members/aa-fake$n" "$(forge 1 "aa-fake$n" "$(fake 1$n)")" "$lease"
done
# host-1's own record under another name, its own signatures kept.
etcd_put "$PREFIX/members/aa-copy" "$(etcd_get "$PREFIX/members/host-1")" "$lease"
for k in aa-fake1 aa-fake2 aa-fake3 aa-copy; do
	e2e_check "$k, signed with host-1's keys, rejected by every host" wait_rejected "$k"
done
e2e_check "reason: not a member the operator listed" \
	grep -q "^unknown member: no key for aa-fake2 in member_keys" <<<"$(rejected_of 3 aa-fake2)"
e2e_check "members unchanged" wait_members host-1,host-2,host-3 1 2 3
e2e_eq "no host swapped its table for them" "$(swaps 1 2 3)" "$sw0"
e2e_eq "host-3 logged the fake once" \
	"$(grep -c "record $PREFIX/members/aa-fake1 rejected" "$(rs_bg_err "${DNAME[3]}")")" 1
etcd_del_prefix "$PREFIX/members/aa-"

echo "# host-1's keys cannot change host-2's record"
# host-2's daemon stopped meanwhile (its data plane steers on), or it
# would put its own record back at once (docs/fleet.md: a host guards its
# own record) and the others might never read the forged one. Shorter
# than its lease (5 s): nothing here waits more than 3 s.
pid2=${RS_BG_PID[${DNAME[2]}]}
rec2=$(etcd_get "$PREFIX/members/host-2")
forged=$(forge 1 host-2 "$(jq -c '.address = "198.18.77.9"' <<<"$rec2")")
seen_forged() { [[ $(rejected_of 1 host-2) == *"signature is not host-2's own"* && $(rejected_of 3 host-2) == *"signature is not host-2's own"* ]]; }
addr_of_2() { ctl "$1" -j fleet status | jq -r '.members[] | select(.name == "host-2") | .address'; }
# Nothing here may end the script before host-2 runs again.
rc=0 addr1="" addr3="" members13=""
kill -STOP "$pid2"
{ etcd_put "$PREFIX/members/host-2" "$forged" "$lease" && rs_until 3 seen_forged; } || rc=$?
addr1=$(addr_of_2 1) || true
addr3=$(addr_of_2 3) || true
members13=$(members 1)/$(members 3) || true
kill -CONT "$pid2"
e2e_eq "a record for host-2 signed with host-1's key: rejected by hosts 1 and 3" "$rc" 0
e2e_eq "they keep host-2's own address" "$addr1 $addr3" "198.18.12.2 198.18.12.2"
e2e_eq "and its place" "$members13" "host-1,host-2,host-3/host-1,host-2,host-3"
e2e_check "host-2 puts its own record back" rs_until 5 bash -c \
	"$(declare -f b64 etcd_call etcd_get); ETCD='$ETCD' RS_NS_EDGE='$RS_NS_EDGE' etcd_get '$PREFIX/members/host-2' | jq -e '.address == \"198.18.12.2\"' >/dev/null"
e2e_check "then no host rejects anything of a member" hosts_ok
e2e_eq "no host swapped its table" "$(swaps 1 2 3)" "$sw0"
echo "# addresses bound in member_keys: host-1 cannot take host-2's while it is away"
A1=$(rs_fleet_addr 1) A2=$(rs_fleet_addr 2)
out=$(build/ringsteerd --check -c "$OUT/h1.conf" 2>&1 || true)
e2e_check "--check warns that member_keys binds no address" \
	grep -q "member_keys binds no address to a member" <<<"$out"
# Each host's address after its key (docs/fleet.md), then two mistakes.
for i in 1 2 3; do sed -i "s|^host-$i .*|& $(rs_fleet_addr "$i")|" "$OUT/members"; done
cp "$OUT/members" "$OUT/members.good"
sed -i "s|^host-3 .*|& $A2|" "$OUT/members"
out=$(build/ringsteerd --check -c "$OUT/h3.conf" 2>&1 || true)
e2e_check "an address listed for two names is refused at --check, with file:line" \
	grep -qF "$OUT/members:3: address $A2 is host-2's already (line 2)" <<<"$out"
sed "s|^\(host-1 [^ ]*\) .*|\1 198.18.11.9|" "$OUT/members.good" >"$OUT/members"
out=$(build/ringsteerd --check -c "$OUT/h1.conf" 2>&1 || true)
e2e_check "host-1's own address not on its line is refused, naming the line" \
	grep -qF "address $A1 is not host-1's in member_keys (its addresses: line 1)" <<<"$out"
cp "$OUT/members.good" "$OUT/members"
rc=0
out=$(build/ringsteerd --check -c "$OUT/h1.conf" 2>&1) || rc=$?
e2e_eq "with each host's address listed, --check passes without the warning" \
	"$rc $(grep -c "binds no address" <<<"$out" || true)" "0 0"
bad=""
for i in 1 2 3; do ctl "$i" reload >/dev/null || bad+=" host-$i"; done
e2e_eq "every host reloaded with the addresses" "$bad" ""
e2e_check "no host's record is rejected anywhere" hosts_ok
# host-2 away (its daemon stopped, its record gone as when its lease
# runs out); host-1's daemon stopped too while its claim is in etcd, or
# it would put its own record back before host-3 reads the claim (what a
# compromised host-1 would not do). Nothing here may end the script
# before both run again.
pid1=${RS_BG_PID[${DNAME[1]}]}
away() { [[ $(members 1) == host-1,host-3 && $(members 3) == host-1,host-3 ]]; }
claim_seen() { [[ $(rejected_of 3 host-1) == "address $A2 is host-2's in member_keys (line 2)"* ]]; }
back() { [[ $(members 3) == host-1,host-2,host-3 && $(addr_of_2 3) == "$A2" && -n $(rejected_of 2 host-1) ]]; }
addr_of_1() { ctl 3 -j fleet status | jq -r '.members[] | select(.name == "host-1") | .address'; }
rc_away=0 rc_seen=0 rc_back=0 sw3="" sw3b="" members3="" addr1=""
claim=$(forge 1 host-1 "$(etcd_get "$PREFIX/members/host-1" | jq -c --arg a "$A2" '.address = $a')")
kill -STOP "$pid2"
{ etcd_del_prefix "$PREFIX/members/host-2" && rs_until 5 away; } || rc_away=$?
sw3=$(swaps 3) || true
kill -STOP "$pid1"
{ etcd_put "$PREFIX/members/host-1" "$claim" "$lease" && rs_until 3 claim_seen; } || rc_seen=$?
members3=$(members 3) || true
addr1=$(addr_of_1) || true
sw3b=$(swaps 3) || true
kill -CONT "$pid2"
rs_until 5 back || rc_back=$?
kill -CONT "$pid1"
e2e_eq "host-2 away: hosts 1 and 3 take it out of their tables" "$rc_away" 0
e2e_eq "host-1's own record with host-2's address: rejected by host-3 (address bound to host-2)" "$rc_seen" 0
e2e_eq "host-3 keeps host-1 at its own address, host-2's place free" "$members3 $addr1" "host-1,host-3 $A1"
e2e_eq "host-3 swapped no table for the claim" "$sw3b" "$sw3"
e2e_eq "host-2 back: accepted at its address and in its place, host-1's claim rejected by host-2" "$rc_back" 0
e2e_check "host-1's reader rejects its own record's claim" rs_until 5 grep -qF \
	"record $PREFIX/members/host-1 rejected: address $A2 is host-2's in member_keys" "$(rs_bg_err "${DNAME[1]}")"
e2e_check "host-1 puts its own record back; then no host rejects anything of a member" hosts_ok
e2e_eq "and every host has host-2 at its address" "$(addr_of_2 1) $(addr_of_2 3)" "$A2 $A2"
etcd_call /v3/lease/revoke "{\"ID\":\"$lease\"}" >/dev/null
kill -USR1 "${RS_BG_PID[load-id]}"
wait "${RS_BG_PID[load-id]}" || true
e2e_check "connections made through the move and the attacks" \
	test "$(load_attempts load-id)" -gt 100
e2e_eq "no failed connection through the move and the attacks" "$(load_failed load-id)" 0
leaked=""
for i in 1 2 3; do
	grep -qF "$(sed -n 2p "$OUT/id$i.key")" "$RS_BG_DIR"/*.err "$RS_BG_DIR"/*.out &&
		leaked+=" host-$i"
done
e2e_eq "no identity key in any daemon's log" "$leaked" ""

# The reverse: fleet mode off at host-3 (a reload) leaves no key words in
# its map of states.
sed -i 's/^fleet = on$/fleet = off/' "$OUT/h3.conf"
e2e_check "host-3 reloaded with fleet = off" ctl 3 reload
e2e_eq "fleet mode off: no SipHash state left at host-3" \
	"$(bpftool -j map dump pinned "$BPFFS-h3/rs_fleet_sip" |
		jq '[.[] | .formatted.value | select(.k0 != 0 or .k1 != 0)] | length')" 0
e2e_summary

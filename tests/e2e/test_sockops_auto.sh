#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: `sockops_cgroup = auto`, the default (issue 21). The daemon
# attaches steer_sockops at the deepest cgroup that holds the backends'
# listeners, and follows them, so that no other TCP socket of the host
# runs it while nobody names a cgroup:
#   - web-1 starts in cgroup A: the daemon attaches at A and says so,
#     status says auto; web's connections are counted and sticky;
#   - 20 connections between processes outside A run the program 0 times;
#   - web-2 starts in cgroup B, a sibling of A: before anything is steered
#     to it the program moves up to their parent, and web-2's connections
#     are counted (each gauge equals ss);
#   - web-2 closes its listener with its connections open: the program
#     stays up (narrowing now would never count them down); once they
#     close it narrows back to A within seconds, and the connections
#     held open across both moves are counted down once;
#   - a kill -9 and a restart leave it where it is (swapped in, not moved);
#   - reversed and repeated under held connections, with a kill -9 and a
#     restart between: web-2 added by reload moves it up, removed by reload
#     while its process still listens moves it back, three times;
#   - a stray link such as a kill -9 in the middle of a move leaves (pinned
#     beside ours, attached elsewhere) is removed by the next start.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup sau
e2e_client_prefixes

TOP=rs-auto-$RUN
e2e_cgroup2 "$TOP"
e2e_cgroup2_sub "$TOP/a"
e2e_cgroup2_sub "$TOP/b"
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
RS_CLEANUP_HOOK+="; sysctl -qw kernel.bpf_stats_enabled=$STATS_WAS"

e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 600

[backend web-1]
service = web
address = 127.0.0.1:8081
check = none

[backend web-2]
service = web
address = 127.0.0.1:8082
check = none
CONF
e2e_check "the file leaves sockops_cgroup to its default" \
	bash -c "! grep -q sockops_cgroup '$CONF'"

e2e_in_cgroup be1 "$CG2/$TOP/a" build/tools/rs_backend --name web-1 \
	--tcp 127.0.0.1:8081 --hold
rs_bg_wait_ready be1

daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
}
prog_id() {
	e2e_json status |
		jq -r '.programs[] | select(.name == "steer_sockops") | .id'
}
sockops() {
	e2e_json status |
		jq -r ".programs[] | select(.name == \"steer_sockops\") | $1"
}
echo "# web-1 listens in $TOP/a: the program goes there"
daemon d1
e2e_check "the daemon attached steer_sockops at /$TOP/a, auto" grep -q \
	"steer_sockops attached at cgroup /$TOP/a (auto: the backends' listeners)" \
	"$(rs_bg_err d1)"
PROG=$(prog_id)
e2e_eq "status: cgroup /$TOP/a" "$(sockops .cgroup)" "/$TOP/a"
e2e_eq "status: auto" "$(sockops .auto)" true
e2e_check "the table says auto" bash -c \
	"build/ringsteer -s '$SOCK' status | grep -q 'sockops (cgroup /$TOP/a, auto)'"
e2e_check "bpftool shows it on $TOP/a" e2e_sockops_at "$CG2/$TOP/a"
e2e_check "and not at the root" e2e_sockops_not_at "$CG2"

rs_bg_start held1 rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.64.1 --sources 20 --step 256 --count 20 --serial
rs_bg_wait_ready held1
e2e_eq_within 5 "web counts its 20 connections" 20 e2e_svc_active
e2e_eq "a client of web has its sticky entry" \
	"$(e2e_json lookup web 198.18.64.1 | jq -r .reason)" sticky

echo "# other sockets of the host never run it"
rs_bg_start plain rs_in_edge build/tools/rs_backend --name plain \
	--tcp 127.0.0.1:9000 --hold
rs_bg_wait_ready plain
sysctl -qw kernel.bpf_stats_enabled=1
runs() { bpftool -j prog show id "$PROG" | jq '.run_cnt // 0'; }
r0=$(runs)
rs_bg_start o1 rs_in_edge build/tools/rs_idle --tcp 127.0.0.1:9000 \
	--count 20 --serial
rs_bg_wait_ready o1
rs_bg_stop o1
r1=$(runs)
e2e_eq "20 connections outside $TOP/a: steer_sockops ran 0 times" \
	$((r1 - r0)) 0
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
rs_bg_stop plain

echo "# web-2 starts in $TOP/b: the program moves up to $TOP first"
e2e_in_cgroup be2 "$CG2/$TOP/b" build/tools/rs_backend --name web-2 \
	--tcp 127.0.0.1:8082 --hold
rs_bg_wait_ready be2
e2e_wait_for "$(rs_bg_err d1)" "backend web-2: socket 127.0.0.1:8082" 10
e2e_check "it says it followed the listeners to /$TOP" grep -q \
	"follows the backends' listeners (sockops_cgroup = auto): cgroup /$TOP, was /$TOP/a" \
	"$(rs_bg_err d1)"
e2e_check "the move came before web-2 was taken" bash -c \
	"grep -n -e 'cgroup /$TOP, was' -e 'backend web-2: socket' '$(rs_bg_err d1)' | head -1 | grep -q 'cgroup /$TOP, was'"
e2e_check "bpftool shows it on $TOP" e2e_sockops_at "$CG2/$TOP"
e2e_check "and no longer on $TOP/a" e2e_sockops_not_at "$CG2/$TOP/a"
e2e_eq "status: cgroup /$TOP" "$(sockops .cgroup)" "/$TOP"
rs_bg_start held2 rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.100.1 --sources 20 --step 256 --count 20 --serial
rs_bg_wait_ready held2
e2e_eq_within 5 "web counts its 40 connections" 40 e2e_svc_active
e2e_check "web-2 has some of them" test "$(e2e_active_of web-2)" -gt 0
e2e_check "each backend's gauge equals ss" \
	e2e_gauge_matches web 2 198.18.0.10:80

echo "# web-2 closes its listener; its connections stay open"
passes() { e2e_json status | jq .load_check.passes; }
p0=$(passes)
kill -USR2 "${RS_BG_PID[be2]}"
e2e_wait_for "$(rs_bg_err d1)" "backend web-2: no usable socket" 10
passed() { (($(passes) > p0)) && echo yes; }
e2e_eq_within 10 "a reconciliation pass ran since" yes passed
e2e_eq "the program stays at /$TOP: web-2's connections are counted there" \
	"$(sockops .cgroup)" "/$TOP"
e2e_check "each backend's gauge equals ss" \
	e2e_gauge_matches web 2 198.18.0.10:80

echo "# they close: counted down, then back to $TOP/a"
rs_bg_stop held2
e2e_wait_for "$(rs_bg_err d1)" \
	"follows the backends' listeners (sockops_cgroup = auto): cgroup /$TOP/a, was /$TOP" 15
e2e_check "bpftool shows it on $TOP/a" e2e_sockops_at "$CG2/$TOP/a"
e2e_check "and no longer on $TOP" e2e_sockops_not_at "$CG2/$TOP"
e2e_eq "web-2's closed connections were counted down: 0" \
	"$(e2e_active_of web-2)" 0
e2e_eq "web-1's connections held across both moves: 20" \
	"$(e2e_svc_active)" 20
rs_bg_stop be2

echo "# kill -9 and a restart: it stays where it is"
kill -KILL "${RS_BG_PID[d1]}"
rs_bg_stop d1 || true
daemon d2
e2e_check "the new program is swapped in at /$TOP/a" grep -q \
	"steer_sockops swapped in at cgroup /$TOP/a (auto" "$(rs_bg_err d2)"
e2e_check "without a move" bash -c "! grep -q 'moved to cgroup' '$(rs_bg_err d2)'"
PROG=$(prog_id)
e2e_check "bpftool shows the new program on $TOP/a" e2e_sockops_at "$CG2/$TOP/a"
e2e_eq "web still counts its 20 held connections" "$(e2e_svc_active)" 20

echo "# reverse, repeated, with a restart between: web-2 added, then removed by reload while it listens"
cp "$CONF" "$OUT/with-web-2.conf"
# web-2 is the last section of the file.
sed '/^\[backend web-2\]/,$d' "$OUT/with-web-2.conf" >"$OUT/without-web-2.conf"
D=d2
# moves TO FROM: how many times the current daemon moved from FROM to TO.
moves() {
	grep -c "sockops_cgroup = auto): cgroup $1, was $2\$" "$(rs_bg_err "$D")" ||
		true
}
reload_with() {
	cp "$OUT/$1.conf" "$CONF"
	build/ringsteer -s "$SOCK" reload >/dev/null
}
# web-2 leaves the file before its listener comes: a listener named in the
# file would move the program up at the next pass, before round 1 counts
# (a race the emulator's slowness lost).
reload_with without-web-2
e2e_in_cgroup be2b "$CG2/$TOP/b" build/tools/rs_backend --name web-2 \
	--tcp 127.0.0.1:8082 --hold
rs_bg_wait_ready be2b
for round in 1 2 3; do
	up=$(moves "/$TOP" "/$TOP/a")
	down=$(moves "/$TOP/a" "/$TOP")
	reload_with with-web-2
	e2e_eq_within 10 "round $round: up to /$TOP for web-2" $((up + 1)) \
		moves "/$TOP" "/$TOP/a"
	reload_with without-web-2
	e2e_eq_within 10 "round $round: back to /$TOP/a, web-2 removed while it listens" \
		$((down + 1)) moves "/$TOP/a" "/$TOP"
	if ((round == 2)); then
		kill -KILL "${RS_BG_PID[$D]}"
		rs_bg_stop "$D" || true
		D=d3
		daemon "$D"
		PROG=$(prog_id)
	fi
done
e2e_check "web-2's process still listens" bash -c \
	"ip netns exec '$RS_NS_EDGE' ss -Htln src 127.0.0.1:8082 | grep -q ."
e2e_check "bpftool shows it on $TOP/a" e2e_sockops_at "$CG2/$TOP/a"
e2e_eq "web still counts its 20 held connections" "$(e2e_svc_active)" 20
rs_bg_stop be2b

echo "# a move cut short (kill -9 between its two pins): the next start removes the stray link"
# A stray link as such a kill leaves it: attached at $TOP/b, held by a pin
# next to ours alone. Another daemon (in the client namespace, its own
# pins) makes it; our pin takes it over; that daemon's --detach drops its own.
cat >"$OUT/other.conf" <<CONF
[global]
bpffs = $BPFFS-other
control_socket = $OUT/other.sock
sockops_cgroup = /$TOP/b

[service other]
protocol = tcp
listen = 198.18.0.99:80

[backend other-1]
service = other
address = 127.0.0.1:8099
check = none
CONF
RS_CLEANUP_HOOK+="; rm -rf '$BPFFS-other'"
rs_bg_start other rs_in_client build/ringsteerd -c "$OUT/other.conf"
e2e_wait_for "$(rs_bg_err other)" "sk_lookup link" 10
# Its output, not its exit status: trixie's bpftool 7.5 prints the link,
# then exits 255.
stray=$( (bpftool -j link show pinned "$BPFFS-other/steer_sockops_link" || true) | jq .id)
e2e_check "the other daemon's sockops link is pinned (id $stray)" \
	bash -c "[[ '$stray' =~ ^[0-9]+\$ ]]"
bpftool link pin id "$stray" "$BPFFS/steer_sockops_link_next"
rs_bg_stop other
rs_in_client build/ringsteerd --detach -c "$OUT/other.conf" >/dev/null 2>&1
e2e_check "the stray link is still attached at $TOP/b" bash -c \
	"bpftool -j link show id $stray | jq -e '.prog_id' >/dev/null"
kill -KILL "${RS_BG_PID[$D]}"
rs_bg_stop "$D" || true
D=d4
daemon "$D"
PROG=$(prog_id)
e2e_check "the start says it removed it" grep -q \
	"steer_sockops_link_next, a steer_sockops link left by a move" "$(rs_bg_err "$D")"
e2e_check "and it is gone" bash -c "! bpftool link show id $stray >/dev/null 2>&1"
e2e_check "ours is still on $TOP/a" e2e_sockops_at "$CG2/$TOP/a"
e2e_eq "web still counts its 20 held connections" "$(e2e_svc_active)" 20
rs_bg_stop held1
e2e_eq_within 5 "closed after two moves and a restart: counted down once, to 0" \
	0 e2e_svc_active
e2e_check "each backend's gauge equals ss" \
	e2e_gauge_matches web 1 198.18.0.10:80
rs_bg_stop "$D"
e2e_summary

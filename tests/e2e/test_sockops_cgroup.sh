#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: steer_sockops on the backends' cgroup only (issue 21,
# `[global] sockops_cgroup`). At the cgroup2 root every TCP socket of the
# host runs the program; attached at the cgroup the caches run in, only
# theirs do (an accepted connection has its listener's cgroup).
#   - web's two backends start in a cgroup the test makes; the daemon
#     attaches there, not at the root, and says where;
#   - their connections are counted and made sticky as at the root;
#   - with the kernel's run counts on, 20 connections between processes
#     outside that cgroup run the program 0 times (at the root: about 9
#     runs each), while web's run it;
#   - out-1, a backend whose listener is outside the cgroup, is named in
#     the log and by `ringsteer status`: its connections are not counted;
#   - a restart with the same key swaps the program in where it is;
#   - a reload may not change the key; a restart with "/" moves the
#     program to the root while connections are open, and the gauge
#     counts each of them down exactly once;
#   - a cgroup that does not exist: the root, with a warning, and status
#     says the root.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup soc
e2e_client_prefixes

CGNAME=rs-e2e-$RUN
e2e_cgroup2 "$CGNAME"
CG=$CG2/$CGNAME
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
RS_CLEANUP_HOOK+="; sysctl -qw kernel.bpf_stats_enabled=$STATS_WAS"

write_conf() {
	e2e_conf_global "$@"
	cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
sticky_ttl = 600

[service other]
protocol = tcp
listen = 198.18.0.11:80
sticky_ttl = 600

[backend web-1]
service = web
address = 127.0.0.1:8081
check = none

[backend web-2]
service = web
address = 127.0.0.1:8082
check = none

[backend out-1]
service = other
address = 127.0.0.1:8091
check = none
CONF
}
write_conf "sockops_cgroup = /$CGNAME"

for i in 1 2; do
	e2e_in_cgroup "be$i" "$CG" build/tools/rs_backend --name "web-$i" \
		--tcp "127.0.0.1:808$i" --hold
	rs_bg_wait_ready "be$i"
done
rs_bg_start out rs_in_edge build/tools/rs_backend --name out-1 \
	--tcp 127.0.0.1:8091 --hold
rs_bg_wait_ready out
e2e_check "web's backends run in $CGNAME" \
	grep -q "^0::/$CGNAME\$" "/proc/${RS_BG_PID[be1]}/cgroup"

# daemon NAME: ringsteerd on $CONF, once its sk_lookup link is in place.
daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
}
daemon d1
e2e_check "the daemon attached steer_sockops at /$CGNAME" \
	grep -q "steer_sockops attached at cgroup /$CGNAME " "$(rs_bg_err d1)"

prog_id() {
	e2e_json status |
		jq -r '.programs[] | select(.name == "steer_sockops") | .id'
}
PROG=$(prog_id)
e2e_check "status: attached, at cgroup /$CGNAME" bash -c \
	"build/ringsteer -s '$SOCK' -j status | jq -e '.programs[] | select(.name == \"steer_sockops\") | .attached and .cgroup == \"/$CGNAME\"'"
e2e_check "bpftool shows it on $CGNAME" e2e_sockops_at "$CG"
e2e_check "and not at the root" e2e_sockops_not_at "$CG2"

echo "# out-1 listens from outside the cgroup"
e2e_wait_for "$(rs_bg_err d1)" \
	"backend out-1: its listening socket was created outside sockops_cgroup /$CGNAME" 10
e2e_eq "status names it" \
	"$(e2e_json status | jq -c '.programs[] | select(.name == "steer_sockops") | .outside')" \
	'["out-1"]'
e2e_check "and the table warns" bash -c \
	"build/ringsteer -s '$SOCK' status | grep -q '^warning: backend out-1 listens from outside sockops_cgroup /$CGNAME'"

echo "# web's connections: counted and sticky, as at the root"
rs_bg_start held rs_in_client build/tools/rs_idle --tcp 198.18.0.10:80 \
	--src 198.18.64.1 --sources 20 --step 256 --count 20 --serial
rs_bg_wait_ready held
e2e_eq_within 5 "web counts its 20 connections" 20 e2e_svc_active
e2e_check "each backend's gauge equals ss" \
	e2e_gauge_matches web 2 198.18.0.10:80
e2e_eq "a client of web has its sticky entry" \
	"$(e2e_json lookup web 198.18.64.1 | jq -r .reason)" sticky

echo "# other sockets of the host never run it"
sysctl -qw kernel.bpf_stats_enabled=1
runs() { bpftool -j prog show id "$PROG" | jq '.run_cnt // 0'; }
# twenty NAME ADDR:PORT SRC: 20 connections from SRC, opened and closed.
twenty() {
	rs_bg_start "$1" rs_in_client build/tools/rs_idle --tcp "$2" \
		--src "$3" --count 20 --serial
	rs_bg_wait_ready "$1"
	rs_bg_stop "$1"
}
r0=$(runs)
twenty o1 198.18.0.11:80 198.18.65.1
r1=$(runs)
e2e_eq "20 connections to out-1 (outside): steer_sockops ran 0 times" \
	$((r1 - r0)) 0
twenty w1 198.18.0.10:80 198.18.66.1
r2=$(runs)
e2e_check "20 connections to web (inside): it ran ($((r2 - r1)) times)" \
	test $((r2 - r1)) -ge 20
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
e2e_eq "out-1 is not counted (outside the cgroup)" "$(e2e_active_of out-1)" 0
e2e_eq_within 5 "web counts its 20 held connections again" 20 e2e_svc_active

echo "# a restart with the same key keeps the link where it is"
rs_bg_stop d1
daemon d1b
e2e_check "the new program is swapped in at /$CGNAME" grep -q \
	"steer_sockops swapped in at cgroup /$CGNAME " "$(rs_bg_err d1b)"
PROG=$(prog_id)
e2e_check "bpftool shows the new program on $CGNAME" e2e_sockops_at "$CG"
e2e_eq "web still counts its 20 held connections" "$(e2e_svc_active)" 20

echo "# a reload may not change it"
write_conf "sockops_cgroup = /"
rc=0
said=$(build/ringsteer -s "$SOCK" reload 2>&1) || rc=$?
e2e_check "reload refused" test "$rc" -ne 0
e2e_check "naming the key" grep -q \
	'sockops_cgroup cannot change on reload' <<<"$said"

echo "# a restart with sockops_cgroup = / moves the program to the root"
rs_bg_stop d1b
daemon d2
e2e_check "it says it moved" grep -q "steer_sockops moved to cgroup / " \
	"$(rs_bg_err d2)"
PROG=$(prog_id)
e2e_check "bpftool shows it at the root" e2e_sockops_at "$CG2"
e2e_check "and no longer on $CGNAME" e2e_sockops_not_at "$CG"
e2e_eq "status: nobody outside now" \
	"$(e2e_json status | jq -c '.programs[] | select(.name == "steer_sockops") | .outside')" \
	'[]'
e2e_eq "web still counts its 20 held connections" "$(e2e_svc_active)" 20
rs_bg_stop held
e2e_eq_within 5 "closed under the moved program: counted down once, to 0" \
	0 e2e_svc_active
e2e_check "each backend's gauge equals ss" \
	e2e_gauge_matches web 2 198.18.0.10:80
rs_bg_stop d2

echo "# a cgroup that does not exist: the root, with a warning"
write_conf "sockops_cgroup = /rs-none-$RUN"
daemon d3
e2e_check "it warns, naming the cgroup" grep -q \
	"sockops_cgroup /rs-none-$RUN: No such file or directory under the cgroup2 root; steer_sockops goes to the root instead" \
	"$(rs_bg_err d3)"
e2e_eq "status says where it is: the root" \
	"$(e2e_json status | jq -r '.programs[] | select(.name == "steer_sockops") | .cgroup')" /
PROG=$(prog_id)
e2e_check "bpftool shows it at the root" e2e_sockops_at "$CG2"
rs_bg_stop d3
e2e_summary

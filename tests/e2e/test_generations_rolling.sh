#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: generations under load (issue 38). A UDP service on IPv4
# and IPv6 (2001:db8::10), three backends, generations = on and
# restart_grace = 20s. 200 established IPv4 flows and 100 IPv6 ones
# (each a fixed 4-tuple, a datagram every 0.1 s: about 3,000 a second)
# run while every backend in turn restarts gracefully (a rolling
# restart: the new process binds beside the old one with SO_REUSEPORT,
# the old one exits once the new one is the working socket), then while
# one backend is killed and started again at once (a hard restart within
# restart_grace). Checked: while both processes of a backend run, none
# of its established flows is answered by the new one; after the old one
# exits they all reach the new one; no flow is ever answered by another
# backend; after the hard restart every flow is back on its backend.
# GEN=off runs the same without generations: the overlap checks fail
# (the kernel's reuseport pick gives the new process a share of the old
# flows).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

GEN=${GEN:-on}
e2e_setup genroll
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'
N4=200 N6=100
e2e_conf_global "flow_table = 4096"
e2e_conf_dns "restart_grace = 20s" "generations = $GEN"
for i in 1 2 3; do e2e_conf_dns_backend "$i"; done

# backend I G: process bI-G serving d-I on both families (SO_REUSEPORT).
backend() {
	rs_bg_start "b$1-$2" rs_in_edge build/tools/rs_backend --name "b$1-$2" \
		--reuseport --udp "127.0.0.$1:5353" --udp "[2001:db8::1:$1]:5353"
	rs_bg_wait_ready "b$1-$2"
}
# Both flow clients' answers, one "FAMILY.FLOW PROCESS" a line, from
# line FROM4 / FROM6 on (0: all).
answers() {
	sed -n "$((${1:-0} + 1)),\$p" "$(rs_bg_out f4)" | awk '$1 != "ready" { print "4." $1, $2 }'
	sed -n "$((${2:-0} + 1)),\$p" "$(rs_bg_out f6)" | awk '$1 != "ready" { print "6." $1, $2 }'
}
marks() { echo "$(wc -l <"$(rs_bg_out f4)") $(wc -l <"$(rs_bg_out f6)")"; }
# each_answered FROM4 FROM6 K PROCESS FLOWS...: each of FLOWS answered K
# times by PROCESS since the marks.
each_answered() {
	local f4=$1 f6=$2 k=$3 p=$4
	shift 4
	[[ $(answers "$f4" "$f6" | awk -v p="$p" -v k="$k" -v fl="$*" '
		BEGIN { n = split(fl, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		$2 == p && ($1 in want) { c[$1]++ }
		END { m = 0; for (f in c) if (c[f] >= k) m++; print (m == n) }') == 1 ]]
}
# by FROM4 FROM6 TO4 TO6 PROCESS FLOWS...: answers by PROCESS to FLOWS.
by() {
	local a=$1 b=$2 c=$3 d=$4 p=$5
	shift 5
	{
		sed -n "$((a + 1)),${c}p" "$(rs_bg_out f4)" | awk '{ print "4." $1, $2 }'
		sed -n "$((b + 1)),${d}p" "$(rs_bg_out f6)" | awk '{ print "6." $1, $2 }'
	} | awk -v p="$p" -v fl="$*" '
		BEGIN { n = split(fl, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		$2 == p && ($1 in want) { k++ } END { print k + 0 }'
}
# Flows answered by more than one backend (bI of bI-G) over the whole run.
crossed() {
	answers | awk '{ split($2, p, "-"); if (!(($1, p[1]) in seen)) { seen[$1, p[1]] = 1; n[$1]++ } }
		END { k = 0; for (f in n) if (n[f] > 1) k++; print k }'
}

for i in 1 2 3; do backend "$i" 1; done
rs_bg_start d rs_in_edge build/ringsteerd -c "$CONF"
DLOG=$(rs_bg_err d)
e2e_wait_for "$DLOG" "sk_lookup link" 10
rs_bg_start f4 rs_in_client build/tools/flow_client --target 198.18.0.10:5353 \
	--src-base 198.18.1.1 --count "$N4" --port-base 40000
rs_bg_start f6 rs_in_client build/tools/flow_client --target "[2001:db8::10]:5353" \
	--src-base 2001:db8:1::100 --count "$N6" --port-base 42000
rs_bg_wait_ready f4
rs_bg_wait_ready f6
all_answered() { (($(answers | awk '{ c[$1]++ } END { k = 0; for (f in c) if (c[f] >= 3) k++; print k }') == N4 + N6)); }
e2e_check "every flow answered, IPv4 ($N4) and IPv6 ($N6)" rs_until 20 all_answered
# The flows of each backend, as FAMILY.FLOW words.
declare -A FLOWS
for i in 1 2 3; do
	FLOWS[$i]=$(answers | awk -v p="b$i-1" '$2 == p { print $1 }' | sort -u | xargs)
	e2e_check "backend $i has flows of both families" \
		bash -c "grep -q '4\\.' <<<'${FLOWS[$i]}' && grep -q '6\\.' <<<'${FLOWS[$i]}'"
done

echo "# a rolling restart: each backend's new process beside the old one"
for i in 1 2 3; do
	w=$(grep -c "backend d-$i: socket .* is the working one" "$DLOG" || true)
	backend "$i" 2
	if [[ $GEN == on ]]; then
		e2e_check "b$i-2's sockets are the working ones" rs_until 10 bash -c \
			"(( \$(grep -c 'backend d-$i: socket .* is the working one' '$DLOG') >= $w + 2 ))"
	fi
	read -r m4 m6 <<<"$(marks)"
	# Both processes up for a while: each of backend i's flows answered 5 times.
	rs_until 10 each_answered "$m4" "$m6" 5 "b$i-1" ${FLOWS[$i]} || true
	read -r e4 e6 <<<"$(marks)"
	e2e_eq "overlap $i: backend $i's flows answered by b$i-2" \
		"$(by "$m4" "$m6" "$e4" "$e6" "b$i-2" ${FLOWS[$i]})" 0
	e2e_check "overlap $i: backend $i's flows answered by b$i-1" \
		test "$(by "$m4" "$m6" "$e4" "$e6" "b$i-1" ${FLOWS[$i]})" -gt 0
	rs_bg_stop "b$i-1"
	read -r m4 m6 <<<"$(marks)"
	e2e_check "after b$i-1 exits, all of backend $i's flows reach b$i-2" \
		rs_until 10 each_answered "$m4" "$m6" 3 "b$i-2" ${FLOWS[$i]}
done
e2e_eq "rolling: no flow answered by another backend" "$(crossed)" 0

echo "# hard restart within restart_grace: b1-2 killed, b1-3 started at once"
kill -KILL "${RS_BG_PID[b1-2]}"
backend 1 3
read -r m4 m6 <<<"$(marks)"
e2e_check "backend 1's flows reach b1-3" \
	rs_until 20 each_answered "$m4" "$m6" 3 b1-3 ${FLOWS[1]}
e2e_eq "hard restart: no flow answered by another backend" "$(crossed)" 0
# The log says both ends of a gap, as it does without generations: each
# "socket gone" of d-1 (said once) is followed by a "back after" (one an
# address). A watch pass that runs after b1-3 has bound sees no gap at
# all: the new socket simply takes over, and neither line is written.
gone=$(grep -c "backend d-1: socket gone; its flows wait for it up to 20 s (restart_grace)" "$DLOG" || true)
e2e_check "log: each of d-1's gaps ($gone) said to end" \
	rs_until 10 bash -c "(( \$(grep -c 'backend d-1: socket .* back after [0-9]* ms' '$DLOG') >= $gone ))"
read -r m4 m6 <<<"$(marks)"
e2e_check "every flow answered on" rs_until 10 bash -c \
	"(( \$(sed -n '$((m4 + 1)),\$p' '$(rs_bg_out f4)' | awk '{ print \$1 }' | sort -u | wc -l) == $N4 ))"
rsjson services | jq -c '.services[] | {name, stats: (.stats | {lookups, held, gen_handovers, gen_draining, flows_full})}' | sed 's/^/  /'
e2e_summary

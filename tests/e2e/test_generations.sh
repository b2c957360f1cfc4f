#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: generations per backend (issue 38). A QUIC cookie service
# and a plain UDP service, two backends each, generations = on. Twenty
# established flows per service (fixed source address and port, a
# datagram every 0.1 s) run while backend 1 restarts gracefully: a new
# process binds next to the old one (SO_REUSEPORT, then again with
# SO_REUSEADDR alone), the old one keeps answering, then exits.
# Every established flow of backend 1 is answered by the OLD process
# until it exits, none by the new one; flows started once the new process
# is the working one are answered by it alone; after the old one exits
# the established flows reach the new process; no flow ever reaches the
# other backend. Before generations (GEN=off runs the same with them
# off), about a third of the established QUIC flows went to the new
# process as soon as it bound.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

GEN=${GEN:-on}
e2e_setup gen
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'
N=20
e2e_conf_global "interfaces = rs-e" "flow_table = 4096"
cat >>"$CONF" <<CONF
[service dns]
protocol = udp
listen = 198.18.0.10:5353
generations = $GEN
$([[ $GEN == on ]] && echo "flow_idle = 60s")
CONF
e2e_conf_quic "generations = $GEN"
for i in 1 2; do
	cat >>"$CONF" <<CONF

[backend d-$i]
service = dns
address = 127.0.0.$i:5353
check = none
CONF
	e2e_conf_quic_backend "$i" "check = none"
done

# backend TAG N NAME [--reuseport]: a process serving d-N and q-N.
backend() {
	rs_bg_start "$1" rs_in_edge build/tools/rs_backend --name "$3" ${4:+"$4"} \
		--udp "127.0.0.$2:5353" --udp "127.0.0.$2:443"
	rs_bg_wait_ready "$1"
}
# flows TAG SRC PORT [CID]: N established flows from SRC+i, PORT+i.
flows() {
	local target=198.18.0.10:5353
	[[ -n ${4:-} ]] && target=198.18.0.10:443
	rs_bg_start "$1" rs_in_client build/tools/flow_client --target "$target" \
		--src-base "$2" --count "$N" --port-base "$3" ${4:+--dcid "$4"}
	rs_bg_wait_ready "$1"
}
lines() { wc -l <"$(rs_bg_out "$1")"; }
# answers TAG FROM [TO]: the answers of output lines FROM+1..TO (all).
answers() { sed -n "$(($2 + 1)),${3:-\$}p" "$(rs_bg_out "$1")" | grep -v '^ready$' || true; }
# each_answered TAG FROM K [NAME]: every flow answered K times since FROM.
each_answered() {
	[[ $(answers "$1" "$2" | awk -v n="${4:-}" 'n == "" || $2 == n { c[$1]++ }
		END { k = 0; for (f in c) if (c[f] >= '"$3"') k++; print k }') -ge ${5:-$N} ]]
}
# by TAG FROM TO NAME [FLOWS]: answers by NAME in the range (to FLOWS).
by() {
	answers "$1" "$2" "$3" | awk -v n="$4" -v fl="${5:-}" '
		BEGIN { split(fl, a, " "); for (i in a) want[a[i]] = 1 }
		$2 == n && (fl == "" || ($1 in want)) { k++ } END { print k + 0 }'
}

backend p1 1 b1-a --reuseport
backend p2 2 two --reuseport
rs_bg_start d rs_in_edge build/ringsteerd -c "$CONF"
DLOG=$(rs_bg_err d)
e2e_wait_for "$DLOG" "sk_lookup link" 10
CID1=$(rsctl cid quic q-1)
flows dns 198.18.1.1 40000
flows quic 198.18.2.1 41000 "$CID1"
e2e_check "every flow answered" rs_until 10 each_answered dns 0 3
e2e_check "every QUIC flow answered by b1-a" rs_until 10 each_answered quic 0 3 b1-a
# The dns flows of backend 1 (the rest are backend 2's).
VICTIMS=$(answers dns 0 | awk '$2 == "b1-a" { print $1 }' | sort -un | xargs)
NV=$(wc -w <<<"$VICTIMS")
e2e_check "backend 1 has dns flows ($NV)" test "$NV" -gt 0

# restart OLD NEW TAG [--reuseport]: a graceful restart of backend 1.
restart() {
	local old=$1 new=$2 tag=$3 d0 q0 w1 w2 d1 q1 nd nq d2 q2 nd2 nq2 q3
	echo "# graceful restart: $new binds beside $old ${4:-(SO_REUSEADDR only)}"
	w1=$(grep -c "backend d-1: socket .* is the working one" "$DLOG" || true)
	w2=$(grep -c "backend q-1: socket .* is the working one" "$DLOG" || true)
	backend "$tag" 1 "$new" ${4:-}
	d0=$(lines dns) q0=$(lines quic)
	if [[ $GEN == on ]]; then
		e2e_check "$new's sockets are the working ones" rs_until 10 bash -c \
			"[[ \$(grep -c 'backend d-1: socket .* is the working one' '$DLOG') -gt $w1 && \$(grep -c 'backend q-1: socket .* is the working one' '$DLOG') -gt $w2 ]]"
	fi
	flows "nd$tag" "198.18.1.$((${tag#r} * 40 + 60))" "4${tag#r}000"
	flows "nq$tag" "198.18.2.$((${tag#r} * 40 + 60))" "4${tag#r}500" "$CID1"
	e2e_check "the new flows answered" rs_until 10 each_answered "nq$tag" 1 3
	# Both processes up for a while: each old flow answered 10 times more.
	e2e_check "old flows answered on" rs_until 10 each_answered quic "$q0" 10
	rs_until 10 each_answered dns "$d0" 10 || true
	d1=$(lines dns) q1=$(lines quic) nd=$(lines "nd$tag") nq=$(lines "nq$tag")
	e2e_eq "overlap, QUIC: established flows answered by $new" "$(by quic "$q0" "$q1" "$new")" 0
	e2e_eq "overlap, dns: backend 1's flows answered by $new" "$(by dns "$d0" "$d1" "$new" "$VICTIMS")" 0
	e2e_check "overlap, dns: backend 1's flows answered by $old" \
		test "$(by dns "$d0" "$d1" "$old" "$VICTIMS")" -gt 0
	if [[ $GEN == on ]]; then
		rsjson backends >"$OUT/$tag.json"
		e2e_check "backends -j: q-1 has $old draining, $new working" jq -e \
			--argjson o "${RS_BG_PID[$5]}" --argjson n "${RS_BG_PID[$tag]}" \
			'.backends[] | select(.name == "q-1") | .sockets[0].generations |
			length == 2 and .[0].pid == $o and .[0].state == "draining" and
			.[1].pid == $n and .[1].state == "working"' "$OUT/$tag.json"
		rsctl backends >"$OUT/$tag.txt"
		e2e_check "backends: its generations, one a line, numbered" \
			grep -q "^  generation $6: cookie [0-9]* pid ${RS_BG_PID[$tag]} working" "$OUT/$tag.txt"
		grep -A2 "^q-1 " "$OUT/$tag.txt" | sed 's/^/  /'
		trace_generations "$tag" "${RS_BG_PID[$5]}" "${RS_BG_PID[$tag]}" "$6"
	fi
	e2e_eq "overlap, QUIC: new flows answered by $old" "$(by "nq$tag" 1 "$nq" "$old")" 0
	e2e_eq "overlap, dns: new flows answered by $old" "$(by "nd$tag" 1 "$nd" "$old")" 0
	rs_bg_stop "$5"
	d2=$(lines dns) q2=$(lines quic)
	e2e_check "after $old exits, QUIC flows reach $new" rs_until 10 each_answered quic "$q2" 3 "$new"
	e2e_check "after $old exits, dns flows of backend 1 reach $new" \
		rs_until 10 each_answered dns "$d2" 3 "$new" "$NV"
	q3=$(lines quic) nd2=$(lines "nd$tag") nq2=$(lines "nq$tag")
	e2e_eq "after, QUIC: answered by another process" \
		"$(answers quic "$q2" "$q3" | awk -v n="$new" '$2 != n' | wc -l)" 0
	e2e_eq "new flows: every answer from $new" \
		"$(cat <(answers "nd$tag" 1 "$nd2") <(answers "nq$tag" 1 "$nq2") |
			awk -v n="$new" '$2 != n && $2 != "two"' | wc -l)" 0
	rs_bg_stop "nd$tag"
	rs_bg_stop "nq$tag"
}
# trace_generations TAG OLDPID NEWPID N: `ringsteer trace` names, for each
# QUIC datagram of q-1 while both run, the generation it went to: the
# established flows' old one (N-1, OLDPID), the new flows' working one
# (N, NEWPID).
trace_generations() {
	local t="$OUT/trace-$1.json" new_src="198.18.2.$((${1#r} * 40 + 60))"
	timeout 20 build/ringsteer -s "$SOCK" -j trace quic --hook lookup \
		--backend q-1 --count 200 >"$t" 2>/dev/null || true
	jq -sc 'group_by(.socket.state) | .[] | .[0] | {client, backend, reason, socket}' "$t" | sed 's/^/  /'
	e2e_check "trace: the established flows' datagrams on generation $(($4 - 1)) (old, pid $2)" jq -se \
		--argjson p "$2" --argjson g "$(($4 - 1))" --arg n "${new_src%.*}" \
		'[.[] | select((.client | split(".") | .[3] | tonumber) <= 20)] |
		length > 0 and all(.socket.state == "old" and .socket.pid == $p and .socket.generation == $g and .socket.cookie > 0)' "$t"
	e2e_check "trace: the new flows' datagrams on generation $4 (working, pid $3)" jq -se \
		--argjson p "$3" --argjson g "$4" \
		'[.[] | select((.client | split(".") | .[3] | tonumber) > 20)] |
		length > 0 and all(.socket.state == "working" and .socket.pid == $p and .socket.generation == $g)' "$t"
}

restart b1-a b1-b r1 --reuseport p1 2
restart b1-b b1-c r2 "" r1 3
e2e_eq "QUIC: no flow ever reached backend 2" "$(by quic 0 "$(lines quic)" two)" 0
e2e_eq "dns: backend 1's flows never reached backend 2" \
	"$(by dns 0 "$(lines dns)" two "$VICTIMS")" 0
if [[ $GEN == on ]]; then
	quic_flows() { (($(rsjson backends | jq '[.backends[] | select(.name == "q-1") | .sockets[0].generations[] | select(.state == "working") | .flows] | add') >= N)); }
	e2e_check "backends -j: the QUIC flows counted on the working generation" rs_until 10 quic_flows
	rsctl backends | sed 's/^/  /'
fi
rsjson services >"$OUT/services.json"
if [[ $GEN == on ]]; then
	e2e_check "handovers counted" jq -e \
		'[.services[] | .stats.gen_handovers] | add > 0' "$OUT/services.json"
fi

echo "# a reload cannot resize the flow table"
sed -i 's/^flow_table = 4096$/flow_table = 8192/' "$CONF"
rc=0
rsctl reload >"$OUT/reload.out" 2>&1 || rc=$?
e2e_check "the reload fails" test "$rc" -ne 0
e2e_check "it says a restart resizes the table" \
	grep -q "flow_table 8192 needs the generations' flow table of that size, which this data plane was started with 4096 entries.*restart ringsteerd" "$OUT/reload.out"

echo "# a tcp service refuses generations"
cat >"$OUT/tcp.conf" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
generations = on

[backend web-1]
service = web
address = 127.0.0.1:8081
CONF
e2e_check "--check refuses it" bash -c "! build/ringsteerd --check -c '$OUT/tcp.conf' 2>'$OUT/tcp.err'"
e2e_check "naming the file, line and why" \
	grep -q "tcp.conf:4: .*generations is for UDP services" "$OUT/tcp.err"
e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, chaos: a seeded random sequence of operator actions, reloads
# (every key parameter, weights, backends taken out of the file and put
# back), ring rebuilds, daemon SIGKILLs and restarts, and backend deaths,
# all under
# a continuous load of new connections from many clients. Every few
# actions:
#   1. no connection of the load failed since the last check;
#   2. `ringsteer lookup` names the backend real connections reach, for a
#      random sample of clients;
#   3. every restart of the daemon came up;
#   4. a restart moved nobody (the sample just before the SIGKILL and just
#      after the new daemon answers reach the same backends; a client the
#      kernel now sends by the ring because the load evicted its sticky
#      entry from a sticky_max smaller than the load is counted apart).
# An action that would leave no backend able to take a new connection is
# tried too, and must be refused (the daemon's no-silent-all-out rule);
# the test never forces one. A backend death resets the connections still
# in the dying listener's accept queue (the kernel's doing, and no
# steering can hand them elsewhere): those resets are counted apart, up to
# a queue's worth per death; any other failure then is a failure.
#
# Knobs: E2E_CHAOS_SEED (default random), E2E_CHAOS_ACTIONS (default 40,
# about 2 minutes), E2E_CHAOS_CHECK_EVERY (default 5). `make chaos` runs a
# long one. The seed and a replay command are printed; every action goes
# to $OUT/chaos-actions.log, printed (its tail) on failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

# make test runs one fixed seed (391369, clean on this code) so that CI
# is reproducible; E2E_CHAOS_SEED=random draws one (make chaos does).
SEED=${E2E_CHAOS_SEED:-391369}
[[ $SEED == random ]] && SEED=$(((($(od -An -N4 -tu4 /dev/urandom)) % 1000000) + 1))
ACTIONS=${E2E_CHAOS_ACTIONS:-40}
CHECK_EVERY=${E2E_CHAOS_CHECK_EVERY:-5}
[[ $SEED =~ ^[0-9]+$ && $ACTIONS =~ ^[0-9]+$ && $CHECK_EVERY =~ ^[1-9][0-9]*$ ]] || {
	echo "E2E_CHAOS_SEED and E2E_CHAOS_ACTIONS must be numbers, E2E_CHAOS_CHECK_EVERY >= 1" >&2
	exit 2
}
NB=4             # backends web-1..web-4
SAMPLE=64        # IPv4 clients sampled per check
POINTS_MAX=900000 # keep vnodes * weights under the ring's 2^20 points
REPLAY="E2E_CHAOS_SEED=$SEED E2E_CHAOS_ACTIONS=$ACTIONS E2E_CHAOS_CHECK_EVERY=$CHECK_EVERY tests/e2e/test_chaos.sh"
echo "# chaos: seed $SEED, $ACTIONS actions, a check every $CHECK_EVERY"
echo "# replay: $REPLAY"

e2e_setup chs
e2e_client_prefixes
ALOG=$OUT/chaos-actions.log
: >"$ALOG"

# Totals.
T_ACTIONS=0 T_CONNS=0 T_FAILED=0 T_MISMATCH=0 T_RESTART_FAILED=0
DEATH_RESETS_MAX=64
T_DEATH_OVER=0
T_MOVED=0 T_EVICTED=0 T_REFUSED=0 T_ALLOUT=0 T_ALLOUT_REFUSED=0 T_RESTARTS=0 T_DEATHS=0 T_DEATH_RESETS=0 T_REACQUIRE=0
T_CHECKS=0

# ---- the model: what the test asked for ----
# File weight, effective weight, operator override (as the daemon keeps it:
# until the file changes that backend's weight), operator state, process
# alive, and the largest weight the ring may have been built for since the
# last change of vnodes (for the point budget).
# IN: the backend is in the file (a reload may take it out and put it
# back: out, it has no points and no operator state).
declare -a FW W OVR OP ALIVE HW IN
VNODES=200 TTL=0 SMAX=65536 P4=32 HSEED=0
for ((i = 1; i <= NB; i++)); do
	FW[i]=1 W[i]=1 OVR[i]=0 OP[i]=up ALIVE[i]=1 HW[i]=1 IN[i]=1
done
BE_GEN=0 D_GEN=0 L_GEN=0
DAEMON=""

log() { echo "[$SECONDS] $*" >>"$ALOG"; }

# A random number 0..N-1 in R; never in a subshell, or replays diverge.
R=0
rnd() { R=$((RANDOM % $1)); }

# takers [I VAL...]: backends that can take a new connection, with the
# effective weight of I replaced by VAL (or its op state, or alive).
takers() {
	local n=0 j w op al
	for ((j = 1; j <= NB; j++)); do
		w=${W[j]} op=${OP[j]} al=${ALIVE[j]}
		if [[ ${1:-} == "$j" ]]; then
			case $2 in
			w) w=$3 ;;
			op) op=$3 ;;
			alive) al=$3 ;;
			esac
		fi
		[[ ${IN[j]} == 1 && $al == 1 && $op == up && $w -gt 0 ]] && n=$((n + 1))
	done
	echo "$n"
}
# in_file: a random backend of the file, in R (there is always one: the
# daemon refuses a file that would leave nobody taking connections).
in_file() {
	local k
	for ((k = 0; k < 100; k++)); do
		rnd NB
		((IN[R + 1])) && break
	done
	R=$((R + 1))
}
alive_count() {
	local n=0 j
	for ((j = 1; j <= NB; j++)); do ((ALIVE[j])) && n=$((n + 1)); done
	echo "$n"
}
hw_sum() {
	local s=0 j
	for ((j = 1; j <= NB; j++)); do s=$((s + HW[j])); done
	echo "$s"
}

write_conf() {
	local j
	{
		cat <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK

[service web]
protocol = tcp
listen = 198.18.0.10:80
listen = [2001:db8::10]:80
vnodes = $VNODES
seed = $HSEED
prefix4 = $P4
sticky_ttl = $TTL
sticky_max = $SMAX
CONF
		for ((j = 1; j <= NB; j++)); do
			((IN[j])) || continue
			cat <<CONF

[backend web-$j]
service = web
address = 127.0.0.1:808$j
address = [::1]:808$j
weight = ${FW[j]}
check = none
CONF
		done
	} >"$CONF"
}


# ---- processes ----
start_backend() {
	BE_GEN=$((BE_GEN + 1))
	rs_bg_start "be$1-$BE_GEN" rs_in_edge build/tools/rs_backend --name "web-$1" \
		--tcp "127.0.0.1:808$1" --tcp "[::1]:808$1"
	rs_bg_wait_ready "be$1-$BE_GEN"
	BE_NAME[$1]=be$1-$BE_GEN
}
declare -a BE_NAME

# has_socket_is I true|false: the daemon shows backend I with(out) sockets.
has_socket_is() {
	[[ $(rsjson backends web 2>/dev/null |
		jq -r ".backends[] | select(.name == \"web-$1\") | .has_socket") == "$2" ]]
}
wait_has_socket() {
	local k
	for ((k = 0; k < 100; k++)); do
		has_socket_is "$1" "$2" && return 0
		sleep 0.05
	done
	return 1
}

# start_daemon: a fresh ringsteerd; 0 once it answers `status`, 1 if it
# exits or does not answer within 15 s.
start_daemon() {
	local k pid
	D_GEN=$((D_GEN + 1))
	DAEMON=d$D_GEN
	rs_bg_start "$DAEMON" rs_in_edge build/ringsteerd -c "$CONF"
	pid=$RS_BG_LAST_PID
	for ((k = 0; k < 300; k++)); do
		rsctl status >/dev/null 2>&1 && return 0
		_rs_alive "$pid" || break
		sleep 0.05
	done
	# One last try: it may have come up just now.
	rsctl status >/dev/null 2>&1 && return 0
	return 1
}

# A load client has SIGUSR1 handled once its SigCgt shows bit 10.
usr1_caught() {
	local l
	l=$(grep '^SigCgt:' "/proc/$1/status" 2>/dev/null) || return 1
	(((0x${l##*[[:space:]]} >> 9) & 1))
}

# Load: new connections as fast as they go from 16,000 IPv4 clients
# (63 /24s) and 50 IPv6 ones, niced so that the checks still get the CPU.
LOADS=()
load_start() {
	local n pid k
	L_GEN=$((L_GEN + 1))
	LOADS=()
	rs_bg_start "load4-$L_GEN" rs_in_client nice -n 10 build/tools/rs_client \
		--target 198.18.0.10:80 --src-base 198.18.64.1 --count 16000 \
		--concurrency 4 --timeout-ms 3000 --loop-seconds 86400
	LOADS+=("load4-$L_GEN")
	rs_bg_start "load6-$L_GEN" rs_in_client nice -n 10 build/tools/rs_client \
		--target "[2001:db8::10]:80" --src-base 2001:db8:1::1 --count 50 \
		--concurrency 2 --timeout-ms 3000 --loop-seconds 86400
	LOADS+=("load6-$L_GEN")
	for n in "${LOADS[@]}"; do
		pid=${RS_BG_PID[$n]}
		for ((k = 0; k < 200; k++)); do
			usr1_caught "$pid" && break
			sleep 0.01
		done
	done
}

# load_stop [NAME...]: end the load clients (default: the current ones);
# LOAD_CONNS and LOAD_FAILED for them.
load_stop() {
	local n pid a f r
	LOAD_CONNS=0 LOAD_FAILED=0 LOAD_ERRS="" LOAD_RESETS=0
	(($#)) || set -- "${LOADS[@]}"
	for n in "$@"; do
		pid=${RS_BG_PID[$n]}
		kill -USR1 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		a=$(sed -n 's/^attempts=\([0-9]*\).*/\1/p' "$(rs_bg_out "$n")")
		f=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$(rs_bg_out "$n")")
		if [[ -z $a || -z $f ]]; then
			echo "  $n: no summary; stderr:" >&2
			sed 's/^/    /' "$(rs_bg_err "$n")" >&2
			a=0 f=1
		fi
		LOAD_CONNS=$((LOAD_CONNS + a))
		LOAD_FAILED=$((LOAD_FAILED + f))
		# Accepted, then reset before the backend read it.
		r=$(sed -n 's/^error ECONNRESET=\([0-9]*\)$/\1/p' "$(rs_bg_out "$n")")
		LOAD_RESETS=$((LOAD_RESETS + ${r:-0}))
		((f)) && LOAD_ERRS+="$n: $(grep "^error" "$(rs_bg_out "$n")" | tr "\n" " " || true) "
		rs_bg_stop "$n"
	done
}

# load_rotate: new load clients, then the old ones end: no gap in the load.
load_rotate() {
	local old=("${LOADS[@]}")
	load_start
	load_stop "${old[@]}"
}

# connect_from FILE SRC...: one connection from each SRC, in parallel;
# "SRC BACKEND|ERR:..." lines in FILE, in the order given. One rs_client
# per family (--src-list), not one process per client: a check samples 65
# clients, and a restart samples them twice.
# wait_done DIR N: until DIR holds the N markers 0.done..N-1.done that
# short background jobs leave when they end (at most 30 s). Not `wait
# PID`: over thousands of jobs the kernel reuses PIDs, and a PID whose
# job bash has reaped and forgotten can be a long-running child's by then
# (a load client), which that wait would wait for (a hang seen in a long
# run).
wait_done() {
	local dir=$1 n=$2 t k missing
	for ((t = 0; t < 600; t++)); do
		missing=0
		for ((k = 0; k < n; k++)); do
			[[ -e $dir/$k.done ]] || {
				missing=1
				break
			}
		done
		((missing)) || return 0
		sleep 0.05
	done
	return 1
}

connect_from() {
	local out=$1 s
	local -a v4=() v6=()
	shift
	for s in "$@"; do
		if [[ $s == *:* ]]; then v6+=("$s"); else v4+=("$s"); fi
	done
	: >"$OUT/c.out"
	if ((${#v4[@]})); then
		printf '%s\n' "${v4[@]}" >"$OUT/c4.src"
		rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
			--src-list "$OUT/c4.src" --concurrency 128 --timeout-ms 3000 \
			>>"$OUT/c.out" 2>/dev/null || true
	fi
	if ((${#v6[@]})); then
		printf '%s\n' "${v6[@]}" >"$OUT/c6.src"
		rs_in_client build/tools/rs_client --target "[2001:db8::10]:80" \
			--src-list "$OUT/c6.src" --concurrency 128 --timeout-ms 3000 \
			>>"$OUT/c.out" 2>/dev/null || true
	fi
	# In the order given; a source without a line failed without one.
	printf '%s\n' "$@" | awk 'FILENAME != "-" { r[$1] = $3; next }
		{ print $1, ($1 in r ? r[$1] : "ERR:no-result") }' "$OUT/c.out" - >"$out"
}

# sample FILE: one connection from each of SAMPLE random IPv4 clients (a
# random /24 of 198.18.64.0/18 each) and one IPv6 client.
sample() {
	local srcs=() s
	local -A seen=()
	while ((${#srcs[@]} < SAMPLE)); do
		rnd 64
		s=198.18.$((64 + R))
		rnd 254
		s+=.$((R + 1))
		[[ -n ${seen[$s]:-} ]] && continue
		seen[$s]=1
		srcs+=("$s")
	done
	rnd 50
	srcs+=("2001:db8:1::$((R + 1))")
	connect_from "$1" "${srcs[@]}"
}

# resample FILE OLD: the clients of OLD again.
resample() {
	local s _ srcs=()
	while read -r s _; do srcs+=("$s"); done <"$2"
	connect_from "$1" "${srcs[@]}"
}

# lookup_one SRC: "BACKEND JSON" from `ringsteer -j lookup web SRC`.
lookup_one() {
	local r
	r=$(build/ringsteer -s "$SOCK" -j lookup web "$1" 2>&1) || true
	echo "$(jq -r '.backend // "none"' <<<"$r" 2>/dev/null || echo '?') $(jq -c . <<<"$r" 2>/dev/null || echo "$r" | tr '\n' ' ')"
}

# lookups FILE: lookup_one for each client of FILE, 16 at a time (the
# control socket serves 32 clients at once); "BACKEND JSON" lines in the
# order of FILE.
lookups() {
	local s _ k=0
	mkdir -p "$OUT/l"
	rm -f "$OUT"/l/*
	while read -r s _; do
		{
			lookup_one "$s" >"$OUT/l/$k"
			: >"$OUT/l/$k.done"
		} &
		k=$((k + 1))
		((k % 16 == 0)) && { wait_done "$OUT/l" "$k" || true; }
	done <"$1"
	wait_done "$OUT/l" "$k" || true
	for ((k = 0; k < $(wc -l <"$1"); k++)); do cat "$OUT/l/$k"; done
}

fail_note() {
	echo "  FAIL - $*"
	log "  FAIL: $*"
	FAILED_ANY=1
}
FAILED_ANY=0

# ---- checks ----
check() {
	local what=$1 s got reply errs
	T_CHECKS=$((T_CHECKS + 1))
	load_rotate
	T_CONNS=$((T_CONNS + LOAD_CONNS))
	T_FAILED=$((T_FAILED + LOAD_FAILED))
	log "check $T_CHECKS ($what): load $LOAD_CONNS connections, $LOAD_FAILED failed"
	if ((LOAD_FAILED)); then
		fail_note "check $T_CHECKS ($what): $LOAD_FAILED of $LOAD_CONNS connections failed: $LOAD_ERRS"
	fi
	if [[ -n $DAEMON ]]; then
		sample "$OUT/sample"
		errs=$(awk '$2 ~ /^ERR/' "$OUT/sample" | wc -l)
		T_CONNS=$((T_CONNS + $(wc -l <"$OUT/sample")))
		if ((errs)); then
			T_FAILED=$((T_FAILED + errs))
			fail_note "check $T_CHECKS: $errs sampled connections failed: $(awk '$2 ~ /^ERR/' "$OUT/sample" | head -3 | tr '\n' ' ')"
		fi
		local bad
		lookups "$OUT/sample" >"$OUT/lookups"
		# "SRC REACHED LOOKUP JSON" for each client that got a reply.
		paste -d' ' "$OUT/sample" "$OUT/lookups" |
			awk '$2 !~ /^ERR/ && $2 != $3' >"$OUT/mismatch"
		bad=$(wc -l <"$OUT/mismatch")
		while read -r s got _ reply; do
			fail_note "check $T_CHECKS: lookup mismatch: client $s reached $got, lookup says $reply"
		done < <(head -5 "$OUT/mismatch")
		T_MISMATCH=$((T_MISMATCH + bad))
		log "  sample: $(wc -l <"$OUT/sample") clients, $bad lookup mismatches"
		((bad > 5)) && fail_note "check $T_CHECKS: $bad lookup mismatches in all"
	fi
	return 0
}

# ---- actions ----
# act DESCRIPTION CMD...: run a control command, log it; on refusal count
# it, show why and take the daemon's view back into the model.
act() {
	local what=$1 out
	shift
	log "$T_ACTIONS: $what"
	if ! out=$("$@" 2>&1); then
		T_REFUSED=$((T_REFUSED + 1))
		fail_note "action $T_ACTIONS ($what) refused: $out"
		resync
		return 1
	fi
	return 0
}

# expect_refused DESCRIPTION CMD...: an action that would leave the
# service with no backend taking new connections: the daemon must refuse
# it, saying so, and change nothing (the model stays as it is).
expect_refused() {
	local what=$1 out
	shift
	log "$T_ACTIONS: $what (would leave nobody taking new connections: must be refused)"
	if out=$("$@" 2>&1); then
		T_ALLOUT=$((T_ALLOUT + 1))
		fail_note "action $T_ACTIONS ($what) left no backend taking new connections and was accepted"
		resync
		return 0
	fi
	if [[ $out != *"no backend that takes new connections"* ]]; then
		T_ALLOUT=$((T_ALLOUT + 1))
		fail_note "action $T_ACTIONS ($what) refused for another reason: $out"
		resync
		return 0
	fi
	T_ALLOUT_REFUSED=$((T_ALLOUT_REFUSED + 1))
	log "  refused: $out"
}

# resync: weights and operator states as the daemon has them.
resync() {
	local j js
	js=$(rsjson backends web 2>/dev/null) || return 0
	for ((j = 1; j <= NB; j++)); do
		((IN[j])) || continue
		W[j]=$(jq -r ".backends[] | select(.name == \"web-$j\") | .weight" <<<"$js")
		OVR[j]=$(jq -r ".backends[] | select(.name == \"web-$j\") | if .weight_override then 1 else 0 end" <<<"$js")
		OP[j]=$(jq -r ".backends[] | select(.name == \"web-$j\") | .op" <<<"$js")
		((W[j] > HW[j])) && HW[j]=${W[j]}
	done
	return 0
}

a_weight() {
	local i w cap
	in_file
	i=$R
	cap=$((POINTS_MAX / VNODES - $(hw_sum) + HW[i]))
	((cap > 256)) && cap=256
	((cap < 0)) && cap=0
	rnd 4
	if ((R == 0)); then w=0; elif ((R == 1)); then w=$cap; else
		rnd $((cap + 1))
		w=$R
	fi
	((w < 0)) && w=0
	if (($(takers "$i" w "$w") == 0)); then
		(($(takers) == 0)) && return 1
		expect_refused "backend weight web-$i $w" rsctl backend weight "web-$i" "$w"
		return 0
	fi
	act "backend weight web-$i $w" rsctl backend weight "web-$i" "$w" || return 0
	W[i]=$w
	OVR[i]=$((w != FW[i]))
	((w > HW[i])) && HW[i]=$w
	return 0
}

a_op() {
	local i new cmd
	in_file
	i=$R
	rnd 4
	case $R in
	0) cmd=drain new=drain ;;
	1) cmd=undrain new=up ;;
	2) cmd=down new=down ;;
	*) cmd=up new=up ;;
	esac
	if (($(takers "$i" op "$new") == 0)); then
		(($(takers) == 0)) && return 1
		expect_refused "backend $cmd web-$i" rsctl backend "$cmd" "web-$i"
		return 0
	fi
	act "backend $cmd web-$i" rsctl backend "$cmd" "web-$i" || return 0
	OP[i]=$new
}

a_reload() {
	local k n j what="" nfw=() nin=() nv=$VNODES s members=0
	local was=("$TTL" "$SMAX" "$P4" "$HSEED")
	for ((j = 1; j <= NB; j++)); do nfw[j]=${FW[j]} nin[j]=${IN[j]}; done
	rnd 3
	n=$((R + 1))
	for ((k = 0; k < n; k++)); do
		rnd 7
		case $R in
		5)
			# A backend out of the file, or back in it.
			rnd NB
			j=$((R + 1))
			nin[j]=$((1 - nin[j]))
			members=1
			if ((nin[j])); then what+=" +web-$j"; else what+=" -web-$j"; fi
			;;
		0)
			rnd 3951
			nv=$((R + 50))
			what+=" vnodes=$nv"
			;;
		1)
			TTL=$((TTL ? 0 : 30))
			what+=" sticky_ttl=$TTL"
			;;
		2)
			SMAX=$((SMAX == 1000 ? 65536 : 1000))
			what+=" sticky_max=$SMAX"
			;;
		3)
			P4=$((P4 == 32 ? 24 : 32))
			what+=" prefix4=$P4"
			;;
		4)
			rnd 32768
			HSEED=$R
			what+=" seed=$HSEED"
			;;
		*)
			rnd NB
			j=$((R + 1))
			rnd 3
			if ((R == 0)); then nfw[j]=0; elif ((R == 1)); then nfw[j]=1; else
				rnd 256
				nfw[j]=$((R + 1))
			fi
			what+=" weight(web-$j)=${nfw[j]}"
			;;
		esac
	done
	# What the daemon will make of it (backends_carry): an operator's
	# weight lasts until the file changes that backend's weight.
	local nw=() nov=() nhw=() nop=() sum=0 t=0
	for ((j = 1; j <= NB; j++)); do
		nop[j]=${OP[j]}
		if ((!nin[j])); then
			nw[j]=0 nov[j]=0
		elif ((!IN[j])); then
			# Back in the file: a new backend, as the file says.
			nw[j]=${nfw[j]} nov[j]=0 nop[j]=up
		elif ((OVR[j])) && [[ ${nfw[j]} == "${FW[j]}" ]]; then
			nw[j]=${W[j]} nov[j]=1
		else
			nw[j]=${nfw[j]} nov[j]=0
		fi
		[[ ${nin[j]} == 1 && ${ALIVE[j]} == 1 && ${nop[j]} == up && ${nw[j]} -gt 0 ]] && t=$((t + 1))
	done
	# Taking out the last backend that takes connections: the daemon must
	# refuse the file (and the file goes back as it was at once, or the
	# next start would read it).
	if ((t == 0 && members)); then
		local sin=() sfw=() sv=$VNODES
		for ((j = 1; j <= NB; j++)); do
			sin[j]=${IN[j]} sfw[j]=${FW[j]}
			IN[j]=${nin[j]} FW[j]=${nfw[j]}
		done
		VNODES=$nv
		write_conf
		for ((j = 1; j <= NB; j++)); do IN[j]=${sin[j]} FW[j]=${sfw[j]}; done
		VNODES=$sv
		TTL=${was[0]} SMAX=${was[1]} P4=${was[2]} HSEED=${was[3]}
		expect_refused "reload:$what" rsctl reload
		write_conf
		return 0
	fi
	# Nobody left to take clients: give one a weight in the file.
	if ((t == 0)); then
		for ((j = 1; j <= NB; j++)); do
			if [[ ${nin[j]} == 1 && ${ALIVE[j]} == 1 && ${nop[j]} == up ]]; then
				nfw[j]=$((FW[j] == 1 ? 2 : 1))
				nw[j]=${nfw[j]} nov[j]=0
				what+=" (weight(web-$j)=${nfw[j]} to keep a backend)"
				break
			fi
		done
	fi
	for ((j = 1; j <= NB; j++)); do
		if ((nv != VNODES)); then nhw[j]=${nw[j]}; else
			nhw[j]=$((nw[j] > HW[j] ? nw[j] : HW[j]))
		fi
		sum=$((sum + nhw[j]))
	done
	# Too many points: fewer vnodes. The file's weights count too: the
	# configuration check refuses a file whose own ring would be too big.
	local fsum=0
	for ((j = 1; j <= NB; j++)); do ((nin[j])) && fsum=$((fsum + nfw[j])); done
	((fsum > sum)) && sum=$fsum
	if ((sum * nv > POINTS_MAX)); then
		nv=$((POINTS_MAX / sum))
		what+=" (vnodes capped to $nv)"
	fi
	for ((j = 1; j <= NB; j++)); do
		FW[j]=${nfw[j]} W[j]=${nw[j]} OVR[j]=${nov[j]} HW[j]=${nhw[j]}
		IN[j]=${nin[j]} OP[j]=${nop[j]}
	done
	VNODES=$nv
	write_conf
	s=$(sed -n '/^\[service web\]/,/^$/p' "$CONF" | grep -E '^(vnodes|seed|prefix4|sticky)' | tr '\n' ' ')
	act "reload:$what -> $s weights ${FW[*]:1} in file ${IN[*]:1}" rsctl reload || return 0
	# A backend back in the file: check the model against the daemon.
	if ((members)); then
		local before="${W[*]:1} / ${OP[*]:1}"
		resync
		[[ "${W[*]:1} / ${OP[*]:1}" == "$before" ]] ||
			log "  model after the reload ($before) differs from the daemon (${W[*]:1} / ${OP[*]:1}); the daemon's taken"
	fi
}

a_rebuild() {
	act "ring rebuild web" rsctl ring rebuild web || return 0
}

# kill -9 of the daemon, a fresh start, and no client moved.
a_restart() {
	local pid moved errs
	sample "$OUT/before"
	pid=${RS_BG_PID[$DAEMON]}
	log "$T_ACTIONS: kill -9 ringsteerd ($DAEMON) and start a new one"
	kill -KILL "$pid"
	rs_bg_stop "$DAEMON"
	T_RESTARTS=$((T_RESTARTS + 1))
	if ! start_daemon; then
		T_RESTART_FAILED=$((T_RESTART_FAILED + 1))
		fail_note "action $T_ACTIONS: FAILED RESTART ($DAEMON); its log:"
		sed 's/^/    /' "$(rs_bg_err "$DAEMON")" | tail -20 | tee -a "$ALOG"
		DAEMON=""
		return 0
	fi
	resample "$OUT/after" "$OUT/before"
	# Failed attempts are failed connections, not moves.
	errs=$(cat "$OUT/before" "$OUT/after" | awk '$2 ~ /^ERR/' | wc -l)
	T_CONNS=$((T_CONNS + $(cat "$OUT/before" "$OUT/after" | wc -l)))
	if ((errs)); then
		T_FAILED=$((T_FAILED + errs))
		fail_note "action $T_ACTIONS: $errs sampled connections around the restart failed"
	fi
	join <(sort "$OUT/before") <(sort "$OUT/after") |
		awk '$2 != $3 && $2 !~ /^ERR/ && $3 !~ /^ERR/' >"$OUT/moved"
	evicted_apart "$OUT/moved"
	moved=$(wc -l <"$OUT/moved")
	T_MOVED=$((T_MOVED + moved))
	log "  restart: $moved of $(wc -l <"$OUT/before") sampled clients moved"
	if ((moved)); then
		fail_note "action $T_ACTIONS: the restart moved $moved clients: $(head -5 "$OUT/moved" | tr '\n' ';')"
	fi
}

# evicted_apart FILE: of the moved clients in FILE ("SRC BEFORE AFTER"),
# take out those whose sticky entry the load may have evicted meanwhile,
# counted in T_EVICTED. The load has 16,050 clients: with sticky_ttl on
# and a sticky_max below that, the LRU map evicts entries all the time,
# restart or not, and a client held by its entry away from the ring's
# choice (a drained backend, a changed weight) goes back to that choice
# when its entry goes. Such a client is taken out only if the kernel now
# has no entry for it and sends it where the ring says (`lookup` answers
# by the ring and names the backend it reached); with room for every key
# nothing is taken out.
evicted_apart() {
	local f=$1 s before after r keep=()
	((TTL > 0 && SMAX < 16050)) || return 0
	while read -r s before after; do
		r=$(lookup_one "$s")
		if [[ ${r%% *} == "$after" && $r != *'"reason":"sticky"'* ]]; then
			T_EVICTED=$((T_EVICTED + 1))
			log "  $s: $before -> $after after its sticky entry went (sticky_max $SMAX < the load's keys): $r"
		else
			keep+=("$s $before $after")
		fi
	done <"$f"
	if ((${#keep[@]})); then printf '%s\n' "${keep[@]}"; fi >"$f"
}

# A backend process dies (SIGTERM: it closes its listeners and exits),
# or a dead one comes back. A death has a load window of its own: a
# listener that closes resets the connections in its accept queue, which
# the kernel does whatever the steering; those are counted apart.
a_death() {
	local i dead=() j
	for ((j = 1; j <= NB; j++)); do ((ALIVE[j])) || dead+=("$j"); done
	rnd 2
	if ((${#dead[@]} && (R == 0 || $(alive_count) == 1))); then
		rnd ${#dead[@]}
		i=${dead[R]}
		log "$T_ACTIONS: backend process web-$i starts again"
		start_backend "$i"
		ALIVE[i]=1
		if ((IN[i])) && ! wait_has_socket "$i" true; then
			T_REACQUIRE=$((T_REACQUIRE + 1))
			fail_note "action $T_ACTIONS: the daemon did not take web-$i's new socket within 5 s"
		fi
		return 0
	fi
	rnd NB
	i=$((R + 1))
	((ALIVE[i])) || return 1
	(($(alive_count) > 1)) || return 1
	(($(takers "$i" alive 0) > 0)) || return 1
	check "before web-$i dies"
	log "$T_ACTIONS: backend process web-$i dies (SIGTERM)"
	T_DEATHS=$((T_DEATHS + 1))
	rs_bg_stop "${BE_NAME[i]}"
	ALIVE[i]=0
	if ((IN[i])) && ! wait_has_socket "$i" false; then
		fail_note "action $T_ACTIONS: the daemon still shows web-$i with a socket 5 s after it died"
	fi
	load_rotate
	T_CONNS=$((T_CONNS + LOAD_CONNS))
	# A dying listener resets the connections still in its accept queue
	# (the kernel's inet_csk_listen_stop(): nothing outside the backend
	# can hand them elsewhere), so in this window a reset after connect
	# is the backend's death, not steering, and is counted apart, up to a
	# queue's worth. Anything else (refused, timeout) is a failure: the
	# data plane sent a SYN where no socket took it.
	T_DEATH_RESETS=$((T_DEATH_RESETS + LOAD_RESETS))
	T_FAILED=$((T_FAILED + LOAD_FAILED - LOAD_RESETS))
	((LOAD_RESETS > DEATH_RESETS_MAX)) && T_DEATH_OVER=$((T_DEATH_OVER + 1))
	((LOAD_FAILED > LOAD_RESETS)) &&
		fail_note "action $T_ACTIONS: $((LOAD_FAILED - LOAD_RESETS)) connections failed otherwise than by a reset while web-$i died: $LOAD_ERRS"
	log "  death window: $LOAD_CONNS connections, $LOAD_FAILED failed, $LOAD_RESETS of them reset in the accept queue (${LOAD_ERRS:-none})"
}

# ---- run ----
for ((i = 1; i <= NB; i++)); do start_backend "$i"; done
write_conf
start_daemon || {
	sed 's/^/  /' "$(rs_bg_err "$DAEMON")"
	e2e_fail "the first daemon came up"
	e2e_summary
}
e2e_pass "ringsteerd up with $NB backends"
log "seed $SEED: start, vnodes $VNODES, weights ${FW[*]:1}"
RANDOM=$SEED
load_start
START=$(date +%s)

# The weights of the draw: weight 20, op 15, reload 25, rebuild 8,
# restart 12, backend death/revival 20.
since=0
while ((T_ACTIONS < ACTIONS)) && [[ -n $DAEMON ]]; do
	rnd 100
	T_ACTIONS=$((T_ACTIONS + 1))
	if ((R < 20)); then a_weight || T_ACTIONS=$((T_ACTIONS - 1))
	elif ((R < 35)); then a_op || T_ACTIONS=$((T_ACTIONS - 1))
	elif ((R < 60)); then a_reload
	elif ((R < 68)); then a_rebuild
	elif ((R < 80)); then a_restart
	else a_death || T_ACTIONS=$((T_ACTIONS - 1)); fi
	since=$((since + 1))
	if ((since >= CHECK_EVERY)); then
		check "after action $T_ACTIONS"
		since=0
	fi
done
check "at the end"
load_stop
T_CONNS=$((T_CONNS + LOAD_CONNS))
T_FAILED=$((T_FAILED + LOAD_FAILED))
((LOAD_FAILED)) && fail_note "final load: $LOAD_FAILED failed"

echo "# $(($(date +%s) - START))s: $T_ACTIONS actions ($T_RESTARTS restarts, $T_DEATHS backend deaths), $T_CHECKS checks"
echo "# connections made: $T_CONNS"
e2e_eq "failed connections" "$T_FAILED" 0
e2e_eq "lookup mismatches" "$T_MISMATCH" 0
e2e_eq "failed restarts" "$T_RESTART_FAILED" 0
e2e_eq "clients moved by restarts" "$T_MOVED" 0
echo "# clients back on the ring after the load evicted their sticky entry (sticky_max under the load's keys), restart or not: $T_EVICTED"
e2e_eq "actions refused" "$T_REFUSED" 0
echo "# all-out actions tried and refused: $T_ALLOUT_REFUSED"
e2e_eq "all-out actions accepted (or refused for another reason)" "$T_ALLOUT" 0
e2e_eq "sockets not re-acquired" "$T_REACQUIRE" 0
echo "# connections reset in a dying backend's accept queue: $T_DEATH_RESETS (at $T_DEATHS deaths; the kernel's, not steering's)"
e2e_eq "deaths with more resets than an accept queue ($DEATH_RESETS_MAX)" "$T_DEATH_OVER" 0
e2e_check "every action ran ($ACTIONS)" test "$T_ACTIONS" -ge "$ACTIONS"
if ((E2E_FAIL || FAILED_ANY)); then
	echo "# replay: $REPLAY"
	echo "# action log ($ALOG), last 60 lines:"
	tail -60 "$ALOG" | sed 's/^/#   /'
fi
e2e_summary

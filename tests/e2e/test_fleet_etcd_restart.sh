#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, fleet mode (issue 20): etcd never stalls steering, and an
# etcd restart does not expire the fleet's leases. Three hosts behind
# ECMP and an etcd, made here, with the DEFAULT lease_ttl (10 s: a
# keepalive every 3.3 s). Under a continuous connection load, etcd goes
# away twice and comes back on the same data dir:
#   - stopped (SIGTERM) and started again: away longer than a keepalive
#     interval, well inside the lease;
#   - killed (SIGKILL) and away longer than the lease TTL itself (etcd
#     gives every lease its whole TTL again when it is back;
#     docs/fleet.md, "Leases and etcd restarts").
# Each time: every host says etcd is down while it is away and up once it
# is back; every host keeps steering meanwhile (200 clients reach all six
# backends, every host forwards and receives, the control socket answers
# at once); no host's member list ever changes; `fleet ready` holds while
# a host's lease surely lives (the whole short outage) and, in the long
# one, fails once that has passed and holds again when etcd is back;
# afterwards every member key still has the lease it had before (same
# lease id, same creation and modification revision: no lease expired,
# no host joined again or wrote its record again) and each lease lives
# with the default TTL. Over the whole run no connection of the load
# fails, every host joined once and none swapped a table.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. scripts/fleet-netns.sh
. tests/e2e/lib.sh
. tests/e2e/fleet_lib.sh

e2e_fleet_setup fer
DEFAULT_TTL=10 # RS_DEFAULT_FLEET_LEASE_TTL

for i in 1 2 3; do
	# No lease_ttl line: the default is what this suite is about.
	rs_fleet_conf "$i" "$BPFFS-h$i" "$OUT/h$i.sock" "metrics = 127.0.0.1:946$i" |
		sed '/^lease_ttl = /d' >"$OUT/h$i.conf"
	rs_fleet_start_host "$i" "$OUT/h$i.conf" build/tools/rs_backend --hold
	e2e_wait_for "$(rs_bg_err "d$i")" "sk_lookup link" 10
done
e2e_check "all three hosts agree on three members" \
	wait_members host-1,host-2,host-3 1 2 3
for i in 1 2 3; do
	e2e_check "host-$i joined with the default lease ttl (${DEFAULT_TTL}s)" \
		grep -q "joined as host-$i with lease .* (ttl ${DEFAULT_TTL}s)" "$(rs_bg_err "d$i")"
done

# member_kv NAME: "LEASE CREATE_REVISION MOD_REVISION" of its member key
# as etcd has it (the lease in decimal, as the gateway writes it).
member_kv() {
	etcd_call /v3/kv/range "{\"key\":\"$(b64 "$PREFIX/members/$1")\"}" |
		jq -r '.kvs[0] // {} | "\(.lease // "none") \(.create_revision // "none") \(.mod_revision // "none")"'
}
members_kv() {
	local i
	for i in 1 2 3; do echo "host-$i $(member_kv "host-$i")"; done
}
# lease_ttl_of LEASE: "TTL GRANTED_TTL" of a lease, as etcd has it now.
lease_ttl_of() {
	etcd_call /v3/lease/timetolive "{\"ID\":\"$1\"}" |
		jq -r '"\(.TTL // "none") \(.grantedTTL // "none")"'
}
# Each host's record is final once it carries both backends' capacity:
# from then on nothing should write it again.
records_final() {
	local i
	for i in 1 2 3; do
		etcd_get "$PREFIX/members/host-$i" |
			jq -e '.services.web.capacity == 2' >/dev/null || return 1
	done
}
wait_records_final() {
	local t
	for ((t = 0; t < 100; t++)); do
		records_final && return 0
		sleep 0.1
	done
	return 1
}
e2e_check "every host's record carries its capacity" wait_records_final
members_kv >"$OUT/kv.before"
cat "$OUT/kv.before"
for i in 1 2 3; do
	read -r _ lease _ _ < <(grep "^host-$i " "$OUT/kv.before")
	e2e_eq "host-$i's record has the lease fleet status shows" \
		"$(printf '%x' "$lease")" "$(ctl "$i" -j fleet status | jq -r .lease)"
done
swaps() { # swaps I: tables host I has swapped in so far (its metrics)
	rs_in_host "$1" curl -sf "http://127.0.0.1:946$1/metrics" |
		awk '$1 == "ringsteer_fleet_table_swaps_total" { print $2 }'
}
for i in 1 2 3; do swaps "$i" >"$OUT/swaps$i.before"; done

# Connections from 50 clients all along, whatever the outages take
# (ended by SIGUSR1 at the end).
rs_bg_start load rs_in_client build/tools/rs_client \
	--target 198.18.0.10:80 --src-base 198.18.1.1 --count 50 \
	--loop-seconds 600 --concurrency 2

# The members that own keys in a fleet status (as fleet_lib's members).
MEMBERS='[.members[] | select((.drained | not) and .capacity > 0 and .keys_share > 0) | .name] | join(",")'
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
etcd_state() { # etcd_state I: "up" or "down", as host I says
	ctl "$1" -j fleet status | jq -r .etcd
}
wait_etcd() { # wait_etcd STATE SECONDS: until every host says STATE
	local t end=$(($(now_ms) + $2 * 1000))
	while (($(now_ms) < end)); do
		t=1
		for i in 1 2 3; do [[ $(etcd_state "$i") == "$1" ]] || t=""; done
		[[ -n $t ]] && return 0
		sleep 0.1
	done
	return 1
}
fwd() { # fwd I: packets host I forwarded and received so far
	echo "$(stat_of "$1" forwarded) $(stat_of "$1" received)"
}

# leases_fresh SECONDS: every host's lease surely lives SECONDS more (its
# last keepalive was recent): tried for one keepalive interval at most,
# for the short outage to start with the most of each lease window left
# (the hosts keep their leases alive each at its own time).
leases_fresh() {
	local end=$(($(now_ms) + KA + 500)) min
	while (($(now_ms) < end)); do
		min=$(for i in 1 2 3; do ctl "$i" -j fleet status | jq .lease_left; done |
			sort -g | head -1)
		awk -v m="$min" -v w="$1" 'BEGIN { exit !(m >= w) }' && return 0
		sleep 0.05
	done
	return 1
}

# outage N SIGNAL MS LAPSE: etcd (the process e2e_fleet_setup started for
# N = 1, etcdN after) ended with SIGNAL and started again on the same
# data dir (as etcd(N+1)) MS milliseconds later; meanwhile 200 clients
# connect and every host is watched. LAPSE 1: etcd stays away past every
# host's lease window, so each must say not ready once it has passed.
outage() {
	local n=$1 sig=$2 ms=$3 lapse=$4 name=etcd pid t0 t end polls=0
	local changed=0 slow=0 bad=0 a b left ready why f0=() f1=() down=()
	local lapsed=() left0=() running=0
	((n > 1)) && name=etcd$n
	pid=${RS_BG_PID[$name]}
	for i in 1 2 3; do
		read -r a b < <(fwd "$i") && f0[i]=$a && f1[i]=$b
		left0[i]=$(ctl "$i" -j fleet status | jq .lease_left)
	done
	echo "  lease left before: ${left0[1]} s, ${left0[2]} s, ${left0[3]} s"
	t0=$(now_ms)
	kill "-$sig" "$pid"
	# Reaped (SIGTERM first; a SIGKILLed etcd is gone already, and bash
	# would say "Killed").
	rs_bg_stop "$name" 2>/dev/null
	rs_bg_start "clients$n" rs_in_client build/tools/rs_client \
		--target 198.18.0.10:80 --src-base 198.18.1.1 --count 200 \
		--rounds 1 --concurrency 16
	# Watched until MS have passed and every host has said etcd is down
	# (at most 5 s for that).
	end=$((t0 + ms))
	while t=$(now_ms) && ((t < end)) ||
		{ [[ ${#down[@]} != 3 ]] && ((t < t0 + 5000)); }; do
		for i in 1 2 3; do
			t=$(now_ms)
			ctl "$i" -j fleet status >"$OUT/st" 2>/dev/null || true
			t=$(($(now_ms) - t))
			((t > slow)) && slow=$t
			[[ $(jq -r "$MEMBERS" "$OUT/st") == host-1,host-2,host-3 ]] ||
				changed=$((changed + 1))
			# No answer leaves them empty: not ready, no reason.
			a="" ready="" left="" why=""
			read -r a ready left why < <(jq -r \
				'"\(.etcd) \(.ready) \(.lease_left) \(.not_ready)"' "$OUT/st") || true
			t=$(($(now_ms) - t0))
			[[ $a == down && -z ${down[i]:-} ]] && down[i]=$t
			[[ $ready == true ]] && continue
			if [[ $why == "etcd unreachable for longer than this host's lease"* &&
				$left == 0 ]]; then
				[[ -z ${lapsed[i]:-} ]] && lapsed[i]=$t &&
					echo "  host-$i: not ready after ${t} ms: $why"
			else
				bad=$((bad + 1))
				echo "  host-$i: not ready after ${t} ms: $why (lease left $left)"
			fi
		done
		polls=$((polls + 1))
		sleep 0.2
	done
	# What happened while etcd was away, read before it comes back.
	wait "${RS_BG_PID[clients$n]}" || true
	for i in 1 2 3; do
		read -r a b < <(fwd "$i")
		f0[i]=$((a - f0[i])) f1[i]=$((b - f1[i]))
	done
	_rs_alive "${RS_BG_PID[load]}" && running=1
	ctl 1 fleet status >"$OUT/human$n"
	rs_fleet_etcd_start "etcd$((n + 1))" "$OUT/etcd"
	t=$(now_ms)
	AWAY=$((t - t0))
	echo "  etcd away for $((AWAY / 1000)).$((AWAY % 1000 / 100)) s"
	e2e_eq "etcd stopped ($sig): every host says etcd is down (after ${down[*]} ms)" \
		"${#down[@]}" 3
	e2e_eq "etcd away: every host's members stay the same ($polls polls)" \
		"$changed" 0
	e2e_eq "etcd away: every host is ready while its lease surely lives" \
		"$bad" 0
	if [[ $lapse == 1 ]]; then
		e2e_eq "etcd away past the lease: every host says not ready once its lease could have expired (after ${lapsed[*]} ms)" \
			"${#lapsed[@]}" 3
	else
		e2e_eq "etcd away less than the lease: every host stays ready" \
			"${#lapsed[@]}" 0
		e2e_check "etcd away: fleet status says so" grep -q \
			"^ready for traffic while this host's lease surely lives ([0-9.]* s more without etcd)" \
			"$OUT/human$n"
	fi
	e2e_check "etcd away: the control socket answers at once (slowest ${slow} ms)" \
		test "$slow" -lt 1000
	e2e_eq "etcd away: 200 clients, no failed connections" \
		"$(e2e_errors "$(rs_bg_out "clients$n")")" 0
	e2e_eq "etcd away: all six backends (every host) answer" \
		"$(awk '$3 !~ /^ERR/ {print $3}' "$(rs_bg_out "clients$n")" | sort -u | wc -l)" 6
	for i in 1 2 3; do
		e2e_check "etcd away: host-$i forwarded (${f0[i]}) and received (${f1[i]}) packets" \
			test "${f0[i]}" -gt 0 -a "${f1[i]}" -gt 0
	done
	e2e_eq "etcd away: the connection load was running" "$running" 1
	e2e_check "etcd back: every host says etcd is up" wait_etcd up 15
	for i in 1 2 3; do
		e2e_check "etcd back: host-$i is ready" ctl "$i" fleet ready 15
	done
	e2e_check "etcd back: every host agrees on three members" \
		wait_members host-1,host-2,host-3 1 2 3
	echo "  every host up, ready and agreeing $(($(now_ms) - t)) ms after etcd answered"
	members_kv >"$OUT/kv.after$n"
	e2e_check "etcd back: every record has its lease, revisions unchanged" \
		diff "$OUT/kv.before" "$OUT/kv.after$n"
	while read -r h lease _ _; do
		read -r a b < <(lease_ttl_of "$lease")
		e2e_check "etcd back: $h's lease $(printf '%x' "$lease") lives (ttl $a of $b s)" \
			test "$b" = "$DEFAULT_TTL" -a "$a" -gt 0
	done <"$OUT/kv.before"
}

KA=$((DEFAULT_TTL * 1000 / 3)) # ms between keepalives
echo "# etcd stopped and started again (a keepalive interval is $KA ms)"
# Away a bit longer than a keepalive interval (the watch alone lasts
# that long; starting etcd again adds 0.5 to 2 s, less on a fast
# machine), well inside the lease window of every host (at least 2/3 of
# the TTL when it stops; a little less on a busy machine, so the stop
# waits for fresh keepalives).
leases_fresh 7.5 || echo "  (some lease had less than 7.5 s left)"
outage 1 TERM $((KA + 100)) 0
e2e_check "etcd was away longer than a keepalive interval ($AWAY ms)" \
	test "$AWAY" -gt "$KA"
echo "# etcd killed for longer than the lease (${DEFAULT_TTL} s)"
outage 2 KILL 12000 1
e2e_check "etcd was away longer than the lease ttl ($AWAY ms)" \
	test "$AWAY" -gt $((DEFAULT_TTL * 1000))

kill -USR1 "${RS_BG_PID[load]}"
wait "${RS_BG_PID[load]}" || true
echo "  load: $(head -1 "$(rs_bg_out load)")"
e2e_eq "load through both outages: no failed connections" "$(load_failed load)" 0
e2e_check "load through both outages: connections were made" \
	test "$(load_attempts load)" -gt 1000
for i in 1 2 3; do
	e2e_eq "host-$i joined once (no lease expired, no second join)" \
		"$(grep -c "joined as host-$i" "$(rs_bg_err "d$i")")" 1
	e2e_eq "host-$i swapped no table through the outages" \
		"$(swaps "$i")" "$(cat "$OUT/swaps$i.before")"
done

e2e_summary

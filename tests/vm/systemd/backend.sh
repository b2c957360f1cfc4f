#!/bin/bash
# SPDX-License-Identifier: MIT
# rs-backend@X: the minimal sample's backend cache-X on 808N (a: 8081,
# b: 8082, c: 8083), on both families; q1..q3: the QUIC service's UDP
# backend q-N on 127.0.1.N:4433 (a port a DynamicUser may bind).
#
# The QUIC backends run master-worker, as HAProxy or a QUIC server's
# graceful reload does under systemd: this script stays the unit's main
# process; `systemctl reload` (SIGHUP) starts a new worker beside the
# running one, which keeps its flows until SIGUSR1 tells the master its
# drain is over and the old workers go. Worker G > 1 answers as "q-N.G",
# so a client sees which process served it. Both bind with SO_REUSEADDR
# (rs_backend always sets it), not SO_REUSEPORT: Debian 12's 6.1 refuses
# a SO_REUSEPORT socket to bpf_sk_assign at TC, and the QUIC cookies
# would fall back to IP affinity (docs/quic.md).
T=/opt/ringsteer-vmtest
case $1 in
a) port=8081 ;;
b) port=8082 ;;
c) port=8083 ;;
q[123]) ;;
*) echo "no backend $1" >&2 && exit 2 ;;
esac
[[ $1 != q* ]] && exec "$T/rs_backend" --name "cache-$1" --tcp "127.0.0.1:$port" --tcp "[::1]:$port"

n=${1#q}
gen=1
old=()
"$T/rs_backend" --name "q-$n" --udp "127.0.1.$n:4433" &
worker=$!
hup=0 usr1=0
trap 'hup=1' HUP
trap 'usr1=1' USR1
trap 'kill "$worker" "${old[@]}" 2>/dev/null; wait; exit 0' TERM INT
while :; do
	if ((hup)); then
		hup=0
		gen=$((gen + 1))
		old+=("$worker")
		"$T/rs_backend" --name "q-$n.$gen" --udp "127.0.1.$n:4433" &
		worker=$!
		echo "worker $gen: pid $worker; draining: ${old[*]}"
	elif ((usr1)); then
		usr1=0
		if ((${#old[@]})); then
			kill "${old[@]}" 2>/dev/null
			wait "${old[@]}"
			echo "drained: ${old[*]}"
		fi
		old=()
	fi
	# A trapped signal ends the wait early; a worker's end does not.
	wait "$worker"
	rc=$?
	if ! kill -0 "$worker" 2>/dev/null; then
		# The working worker died on its own: the unit fails and
		# systemd starts it again (Restart=always).
		echo "worker $gen (pid $worker) exited: $rc" >&2
		exit 1
	fi
done

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `make demo`: four real memcached instances on an edge namespace, ringsteerd
# steering 300 clients of one service address to them by client address.
# Each client stores its own key, then reads it back over a fresh
# connection; then one memcached is killed and we see who moved.
# Everything (namespaces, processes, pins) is removed on exit or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/netns.sh

CONF=configs/demo.conf
SERVICE=198.18.0.10:11211
NCLIENTS=300

if [[ $(id -u) -ne 0 ]]; then
	echo "demo: run as root (it creates network namespaces and loads BPF)" >&2
	exit 1
fi
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
# A previous demo killed hard may have left its pins.
build/ringsteerd -q --detach -c "$CONF" || true

rs_install_cleanup
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
RS_CLEANUP_HOOK='build/ringsteerd -q --detach -c "$CONF"'
rs_ns_setup "demo$$"
OUT=$RS_BG_DIR

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "edge namespace $RS_NS_EDGE: starting 4 memcached on 127.0.0.1:11211-11214"
for i in 1 2 3 4; do
	rs_bg_start "mc$i" rs_in_edge memcached -u root -l 127.0.0.1 \
		-p "1121$i" -U 0 -m 16 -t 1 -c 4096
done
for i in 1 2 3 4; do
	for _ in $(seq 50); do
		rs_in_edge bash -c "exec 3<>/dev/tcp/127.0.0.1/1121$i" 2>/dev/null && break
		sleep 0.1
	done
	# Each instance knows its own name, so a client can ask who served it.
	rs_in_edge bash -c "exec 3<>/dev/tcp/127.0.0.1/1121$i
		printf 'set whoami 0 0 7\r\ncache-$i\r\n' >&3; read -r r <&3; [[ \$r == STORED* ]]"
done

say "ringsteerd -c $CONF"
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
for _ in $(seq 100); do
	grep -q "sk_lookup link" "$(rs_bg_err daemon)" && break
	sleep 0.1
done
sed 's/^/  /' "$(rs_bg_err daemon)"
SOCK=$(awk -F' *= *' '$1 == "control_socket" { print $2 }' "$CONF")
echo
echo "  \$ ringsteer backends"
build/ringsteer -s "$SOCK" backends | sed 's/^/  /'

# mc CLIENTS-OUT PHASE: all clients, from 198.18.1.1 and 198.18.2.1 up.
mc() {
	local half=$((NCLIENTS / 2))
	{
		rs_in_client build/tools/mc_client --target "$SERVICE" \
			--src-base 198.18.1.1 --count "$half" --phase "$2" || true
		rs_in_client build/tools/mc_client --target "$SERVICE" \
			--src-base 198.18.2.1 --count "$((NCLIENTS - half))" --phase "$2" || true
	} >"$OUT/$1"
}

# table GET-OUT: per backend, clients and hit rate.
table() {
	awk '{ n[$2]++; t++; if ($3 == "hit") { h[$2]++; th++ } }
	END {
		printf "  %-10s %8s %8s %9s\n", "backend", "clients", "share", "hit rate"
		for (b in n) printf "  %-10s %8d %7.1f%% %8.1f%%\n", b, n[b], 100 * n[b] / t, 100 * h[b] / n[b]
		printf "  %-10s %8d %7.1f%% %8.1f%%\n", "all", t, 100, 100 * th / t
	}' "$1" | { read -r head; echo "$head"; sort; }
}

say "$NCLIENTS clients (198.18.1.x, 198.18.2.x) each store a key via $SERVICE"
mc set.out set
echo "  stored: $(grep -c ' stored$' "$OUT/set.out") of $NCLIENTS"

say "each client reads its key back over a new connection"
mc get1.out get
table "$OUT/get1.out"

say "killing memcached cache-3 (PID ${RS_BG_PID[mc3]})"
rs_bg_stop mc3
# The kernel dropped its socket from the SOCKMAP as it closed; ringsteerd
# notices within a second and its health check soon after: the table is
# shown once it says so.
cache3_out() {
	build/ringsteer -s "$SOCK" -j backends |
		jq -e '.backends[] | select(.name == "cache-3") | .serving | not'
}
rs_until 10 cache3_out || {
	echo "demo: ringsteerd still shows cache-3 serving after 10 s" >&2
	exit 1
}
echo "  \$ ringsteer backends"
build/ringsteer -s "$SOCK" backends | sed 's/^/  /'
echo
mc get2.out get
table "$OUT/get2.out"

join <(awk '{print $1, $2}' "$OUT/get1.out" | sort) \
	<(awk '{print $1, $2}' "$OUT/get2.out" | sort) >"$OUT/moves"
awk -v total="$NCLIENTS" '
	$2 != $3 { moved++; from[$2]++ }
	$2 == "cache-3" { had++ }
	$2 != "cache-3" && $2 != $3 { wrong++ }
	END {
		printf "\n  clients that moved: %d of %d (%.1f%%); cache-3 had %d (%.1f%%)\n",
			moved, total, 100 * moved / total, had, 100 * had / total
		printf "  moved from a live backend: %d (consistent hashing: only the dead one'"'"'s clients move)\n", wrong + 0
	}' "$OUT/moves"

say "moved clients store their key again on their new backend; read back"
mc set2.out set
mc get3.out get
table "$OUT/get3.out"

say "done; cleaning up namespaces, processes and pins"

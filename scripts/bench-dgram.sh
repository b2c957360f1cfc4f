#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Datagrams end to end (docs/benchmarks.md, section 2b), sourced by
# scripts/bench.sh: its helpers (log, median, kv, verdict), its knobs
# (ROUNDS, SECS, WARMUP, RES, BPFFS, B) and its cleanup.
#
# One backend (bench_backend --udp, echoing every datagram) in the edge
# namespace; the load generator (bench_dgram) in the client namespace
# sends DNS-like queries to a plain UDP service and QUIC 1-RTT datagrams
# with many connection IDs to a cookie = quic service, through ringsteer
# (steer_tc at the edge veth's ingress, steer_lookup at the socket lookup)
# and direct to the backend's own address, in alternating runs.
#
#   BENCH_DGRAM_FLOWS    flows (client sockets, QUIC connection IDs) of the
#                        saturated load [64]
#   BENCH_DGRAM_QSIZE    QUIC datagram bytes [100: an ACK-sized packet,
#                        where the per-datagram cost weighs most]

DGRAM_FLOWS=${BENCH_DGRAM_FLOWS:-64}
DGRAM_QSIZE=${BENCH_DGRAM_QSIZE:-100}
DGRAM_DNS=198.18.0.10:53
DGRAM_QUIC=198.18.0.10:443
DGRAM_BE_DNS=198.18.0.21:53
DGRAM_BE_QUIC=198.18.0.21:443
# The backends listen on the services' ports: a reply leaves from the port
# the datagram came to, and the client's connected socket takes only replies
# from the address and port it sent to.
DGRAM_RUN=0

# dgram_conf DIR [CHECK_LINE]: the configuration on stdout
dgram_conf() {
	local d=$1 check=${2:-}

	cat <<EOF
[global]
bpffs = $BPFFS
control_socket = $d/ringsteerd-dgram.sock
interfaces = $RS_IF_EDGE

[service dns]
protocol = udp
listen = $DGRAM_DNS

[service quic]
protocol = udp
listen = $DGRAM_QUIC
cookie = quic
quic_server_id_len = 2
quic_cid_len = 8
quic_config_id = 1

[backend d1]
service = dns
address = $DGRAM_BE_DNS
$check

[backend q1]
service = quic
address = $DGRAM_BE_QUIC
server_id = 0x0001
$check
EOF
}

# dgram_load TARGET FLOWS [bench_dgram options]: one run, prints its line
dgram_load() {
	local target=$1 flows=$2
	shift 2
	rs_in_client "$B/bench_dgram" --target "$target" --src-base 198.18.1.1 \
		--sources 500 --flows "$flows" "$@"
}

# dgram_probe TARGET [options]: until a short run gets every reply
dgram_probe() {
	local line="" i

	for ((i = 0; i < 50; i++)); do
		line=$(dgram_load "$1" 4 "${@:2}" --warmup 0 --duration 0.2 \
			--timeout-ms 100 || true)
		if [[ $(kv "$line" dgrams) -gt 0 && $(kv "$line" timeouts) == 0 &&
			$(kv "$line" errors) == 0 ]]; then
			return 0
		fi
		sleep 0.2
	done
	log "no clean replies from $1: $line"
	return 1
}

dgram_up() {
	local name=dgramd$((++DGRAM_RUN)) err i

	rs_bg_start "$name" rs_in_edge build/ringsteerd -c "$DGRAM_CONF"
	DGRAM_RSD=$name
	err=$(rs_bg_err "$name")
	for ((i = 0; i < 100; i++)); do
		grep -q "sk_lookup link" "$err" 2>/dev/null && break
		sleep 0.1
	done
	dgram_probe "$DGRAM_DNS" &&
		dgram_probe "$DGRAM_QUIC" --cids "$DGRAM_CIDS" --size "$DGRAM_QSIZE"
}

dgram_down() {
	rs_bg_stop "$DGRAM_RSD"
	rs_in_edge build/ringsteerd -q --detach -c "$DGRAM_CONF"
}

# dgram_prog_stats: "TC_RUNS TC_NS LOOKUP_RUNS LOOKUP_NS" now (steer_tc's
# id from the running daemon's log, steer_lookup's from its pinned link)
dgram_prog_stats() {
	local tc lk id out

	tc=$(sed -n 's/.*tc: attached steer_tc id \([0-9]*\) .*/\1/p' \
		"$(rs_bg_err "$DGRAM_RSD")" | tail -1)
	lk=$(bpftool -j link show pinned "$BPFFS/steer_lookup_link" 2>/dev/null |
		jq -r '.prog_id // empty')
	for id in "$tc" "$lk"; do
		if [[ -n $id ]] && out=$(bpftool -j prog show id "$id" 2>/dev/null); then
			jq -r '"\(.run_cnt // 0) \(.run_time_ns // 0)"' <<<"$out"
		else
			echo "0 0"
		fi
	done | tr '\n' ' '
}

# dgram_variant KIND MODE ROUND VARIANT FLOWS: one run, a row of dgram.tsv
# (ROUND "stats": a row of dgram-bpfstats.tsv instead)
dgram_variant() {
	local kind=$1 mode=$2 r=$3 v=$4 flows=$5 target opts=() line s0="" s1 k
	local warm=$WARMUP

	if [[ $kind == dns ]]; then
		target=$DGRAM_DNS
		[[ $v == direct ]] && target=$DGRAM_BE_DNS
	else
		target=$DGRAM_QUIC
		[[ $v == direct ]] && target=$DGRAM_BE_QUIC
		opts=(--cids "$DGRAM_CIDS" --size "$DGRAM_QSIZE")
	fi
	[[ $v == ringsteer ]] && dgram_up
	# The stats run counts every datagram: no warm-up outside the count.
	[[ $r == stats ]] && s0=$(dgram_prog_stats) warm=0
	line=$(dgram_load "$target" "$flows" "${opts[@]}" --warmup "$warm" \
		--duration "$SECS")
	if [[ $r == stats ]]; then
		s1=$(dgram_prog_stats)
		# kind mode dgrams, then the deltas of tc runs/ns, lookup runs/ns
		printf '%s\t%s\t%s\t%s\n' "$kind" "$mode" "$(kv "$line" dgrams)" \
			"$(paste -d' ' <(tr ' ' '\n' <<<"$s1" | sed '/^$/d') \
				<(tr ' ' '\n' <<<"$s0" | sed '/^$/d') |
				awk '{ printf "%s%d", (NR > 1 ? "\t" : ""), $1 - $2 }')" \
			>>"$RES/dgram-bpfstats.tsv"
	fi
	[[ $v == ringsteer ]] && dgram_down
	log "  dgram $kind $mode round $r $v: $line"
	[[ $r == stats ]] && return 0
	printf '%s\t%s\t%s\t%s' "$kind" "$mode" "$r" "$v" >>"$RES/dgram.tsv"
	for k in rate p50_us p99_us p999_us timeouts errors; do
		printf '\t%s' "$(kv "$line" "$k")" >>"$RES/dgram.tsv"
	done
	printf '\n' >>"$RES/dgram.tsv"
}

# dgram_cids: one connection ID per flow, minted by the daemon for the
# backend: every flow is a QUIC connection steered by its own CID.
dgram_cids() {
	local i

	DGRAM_CIDS=$DGRAM_DIR/cids
	rs_bg_start dgcid rs_in_edge build/ringsteerd -c "$DGRAM_CONF"
	for ((i = 0; i < 100; i++)); do
		build/ringsteer -s "$DGRAM_DIR/ringsteerd-dgram.sock" cid quic q1 \
			"$DGRAM_FLOWS" >"$DGRAM_CIDS" 2>/dev/null && break
		sleep 0.1
	done
	rs_bg_stop dgcid
	rs_in_edge build/ringsteerd -q --detach -c "$DGRAM_CONF"
	if [[ ! -s $DGRAM_CIDS ]]; then
		log "ringsteer cid gave nothing"
		return 1
	fi
}

section_dgram() {
	local i r k m v stats_was t0=$SECONDS own_ns=""
	local variants=(direct ringsteer)

	DGRAM_DIR=$RES/dgram-run
	mkdir -p "$DGRAM_DIR"
	# With section e2e in the same run its namespaces serve: its
	# backends use other ports, its ringsteerd runs only in its own runs.
	if [[ -z $RS_NS_CLIENT ]]; then
		# shellcheck disable=SC2034 # scripts/netns.sh's
		RS_BG_DIR=$DGRAM_DIR
		rs_ns_setup "bdg$$"
		own_ns=1
	fi
	rs_bg_start dgbe rs_in_edge "$B/bench_backend" --name be1 \
		--udp "$DGRAM_BE_DNS" --udp "$DGRAM_BE_QUIC"
	rs_bg_wait_ready dgbe
	DGRAM_CONF=$DGRAM_DIR/ringsteer-dgram.conf
	# shellcheck disable=SC2034 # bench_detach's (scripts/bench.sh), on failure
	CONF=$DGRAM_CONF
	dgram_conf "$DGRAM_DIR" "check = none" >"$DGRAM_CONF"
	if ! build/ringsteerd --check -c "$DGRAM_CONF" >/dev/null 2>&1; then
		dgram_conf "$DGRAM_DIR" >"$DGRAM_CONF"
		build/ringsteerd --check -c "$DGRAM_CONF" >/dev/null
	fi
	dgram_cids
	dgram_probe "$DGRAM_BE_DNS"
	dgram_probe "$DGRAM_BE_QUIC" --cids "$DGRAM_CIDS" --size "$DGRAM_QSIZE"

	printf 'kind\tmode\tround\tvariant\trate\tp50_us\tp99_us\tp999_us\ttimeouts\terrors\n' \
		>"$RES/dgram.tsv"
	printf 'kind\tmode\tdgrams\ttc_runs\ttc_ns\tlookup_runs\tlookup_ns\n' \
		>"$RES/dgram-bpfstats.tsv"
	for m in "saturated:$DGRAM_FLOWS" "serial:1"; do
		log "dgram ${m%%:*}: $ROUNDS rounds x (dns, quic) x (direct, ringsteer), ${SECS}s each"
		for ((r = 1; r <= ROUNDS; r++)); do
			for k in dns quic; do
				# Alternate which variant goes first.
				for ((i = 0; i < 2; i++)); do
					v=${variants[$(((i + r) % 2))]}
					dgram_variant "$k" "${m%%:*}" "$r" "$v" "${m#*:}"
				done
			done
		done
	done
	# One more ringsteer run of each with the kernel's run counts on:
	# two clock reads per program run, which would tilt the rounds.
	stats_was=$(sysctl -n kernel.bpf_stats_enabled)
	RS_CLEANUP_HOOK+="; sysctl -qw kernel.bpf_stats_enabled=$stats_was"
	sysctl -qw kernel.bpf_stats_enabled=1
	for k in dns quic; do
		dgram_variant "$k" saturated stats ringsteer "$DGRAM_FLOWS"
	done
	sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	cp "$DGRAM_CONF" "$RES/"
	rs_bg_stop dgbe
	[[ -n $own_ns ]] && rs_ns_teardown
	# shellcheck disable=SC2034 # bench_detach's: nothing left attached
	CONF=""
	echo $((SECONDS - t0)) >"$RES/dgram-secs"
}

# dgram_ratios KIND MODE COLUMN: ringsteer / direct, round by round
dgram_ratios() {
	awk -F'\t' -v k="$1" -v m="$2" -v c="$3" '
		$1 == k && $2 == m && $4 == "ringsteer" { x[$3] = $c }
		$1 == k && $2 == m && $4 == "direct" { d[$3] = $c }
		END { for (r in x) if (d[r] > 0) print x[r] / d[r] }' \
		"$RES/dgram.tsv"
}

dgram_ratio() {
	dgram_ratios "$@" | median
}

# dgram_range KIND MODE COLUMN: min-max of the per-round ratios
dgram_range() {
	dgram_ratios "$@" | sort -g |
		awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'
}

# dgram_cell KIND MODE VARIANT COLUMN: "median (min-max)" over rounds
dgram_cell() {
	awk -F'\t' -v k="$1" -v m="$2" -v v="$3" -v c="$4" \
		'$1 == k && $2 == m && $4 == v { print $c }' "$RES/dgram.tsv" |
		sort -g | awk '{ a[NR] = $1 } END {
			med = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			printf "%.0f (%.0f-%.0f)", med, a[1], a[NR] }'
}

# dgram_summary: the rows of the targets table
dgram_summary() {
	local k m r p worst

	[[ -s $RES/dgram.tsv ]] || return 0
	for m in saturated serial; do
		r=""
		p=""
		for k in dns quic; do
			r+="$k $(printf '%.2f' "$(dgram_ratio $k $m 5)")x ($(dgram_range $k $m 5)), "
			p+="$k $(printf '%.2f' "$(dgram_ratio $k $m 7)")x ($(dgram_range $k $m 7)), "
		done
		worst=$(for k in dns quic; do dgram_ratio $k $m 5; done | sort -g | head -1)
		printf '| datagrams/s through ringsteer >= 0.97x direct (%s; median of rounds, their range; section 2b) | %s | %s |\n' \
			"$m" "${r%, }" "$(verdict "$worst" ">=" 0.97)"
		worst=$(for k in dns quic; do dgram_ratio $k $m 7; done | sort -g | tail -1)
		printf '| datagram p99 through ringsteer <= 1.1x direct (%s) | %s | %s |\n' \
			"$m" "${p%, }" "$(verdict "$worst" "<=" 1.1)"
	done
}

dgram_table() {
	local k m v

	echo "| datagrams | load | variant | datagrams/s (range) | x direct (range) | p50 µs | p99 µs (range) | p99 x direct (range) | p99.9 µs | timeouts + errors |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
	for k in dns quic; do
		for m in saturated serial; do
			for v in direct ringsteer; do
				printf '| %s | %s | %s | %s' "$k" "$m" "$v" \
					"$(dgram_cell $k $m $v 5)"
				if [[ $v == direct ]]; then
					printf ' | 1'
				else
					printf ' | %.2f (%s)' "$(dgram_ratio $k $m 5)" \
						"$(dgram_range $k $m 5)"
				fi
				printf ' | %s | %s' "$(dgram_cell $k $m $v 6 | cut -d' ' -f1)" \
					"$(dgram_cell $k $m $v 7)"
				if [[ $v == direct ]]; then
					printf ' | 1'
				else
					printf ' | %.2f (%s)' "$(dgram_ratio $k $m 7)" \
						"$(dgram_range $k $m 7)"
				fi
				printf ' | %s | %s |\n' \
					"$(dgram_cell $k $m $v 8 | cut -d' ' -f1)" \
					"$(awk -F'\t' -v k=$k -v m=$m -v v=$v \
						'$1 == k && $2 == m && $4 == v { n += $9 + $10 }
						END { print n + 0 }' "$RES/dgram.tsv")"
			done
		done
	done
}

dgram_bpfstats() {
	[[ -s $RES/dgram-bpfstats.tsv ]] || return 0
	cat <<'EOF'
What the programs cost on the real path (one more saturated ringsteer
run of each with `kernel.bpf_stats_enabled = 1`, restored after; the two
clock reads per run that it adds are inside the ns per run). Runs per
datagram count the requests only (the replies arrive in the client's
namespace, where nothing is attached).

| datagrams | requests answered | steer_tc runs per datagram | steer_tc ns/run | steer_lookup runs per datagram | steer_lookup ns/run |
|---|---:|---:|---:|---:|---:|
EOF
	awk -F'\t' 'NR > 1 && $3 > 0 {
		printf "| %s | %d | %.2f | %.0f | %.2f | %.0f |\n", $1, $3,
			$4 / $3, ($4 ? $5 / $4 : 0), $6 / $3, ($6 ? $7 / $6 : 0) }' \
		"$RES/dgram-bpfstats.tsv"
	echo
}

# dgram_notes: what a steered request costs over a direct one, serial
dgram_notes() {
	local k d r tc lk

	[[ -s $RES/dgram.tsv ]] || return 0
	echo "Reading it: at saturation every process shares the 2 vCPUs and"
	echo "the rates of one variant swing from run to run by more than any"
	echo "difference between the variants; the serial rows, one request in"
	echo "flight, show a per-datagram cost best, in their p50:"
	echo
	for k in dns quic; do
		d=$(awk -F'\t' -v k=$k '$1 == k && $2 == "serial" && $4 == "direct" { print $6 }' \
			"$RES/dgram.tsv" | median)
		r=$(awk -F'\t' -v k=$k '$1 == k && $2 == "serial" && $4 == "ringsteer" { print $6 }' \
			"$RES/dgram.tsv" | median)
		read -r tc lk < <(awk -F'\t' -v k=$k '$1 == k && $3 > 0 {
			printf "%.0f %.0f\n", $5 / $3, $7 / $3 }' "$RES/dgram-bpfstats.tsv")
		printf -- '- **%s**: p50 %.1f µs direct, %.1f µs through ringsteer (medians of the rounds): %+.0f ns per request and reply. The programs take %s ns of it per request on the real path (steer_tc %s ns, steer_lookup %s ns per datagram, bpf_stats run above).\n' \
			"$k" "$d" "$r" "$(awk -v a="$r" -v b="$d" 'BEGIN { print 1000 * (a - b) }')" \
			"$((${tc:-0} + ${lk:-0}))" "${tc:-0}" "${lk:-0}"
	done
	echo
	cat <<'EOT'
What the rest is made of, as far as this machine lets it be taken apart:

- **The programs cost more on the real path than in section 1b's hot
  loop** (steer_tc on the plaintext 1-RTT datagram: about 230 ns under
  `BPF_PROG_TEST_RUN`, about 600-700 ns per run here). There
  `bpf_sk_assign` succeeds (a reference on the socket, the skb's
  destructor), which under `BPF_PROG_TEST_RUN` it never does; the maps
  are cold in the cache after the client, the kernel's UDP path and the
  backend ran on the same two CPUs in between; and `bpf_stats` adds its
  two clock reads to every run. Section 1b's per-step table says where
  the hot-loop time goes: the cookie step is most of it, and reading the
  headers with `bpf_skb_load_bytes` doubles the floor.
- **The hooks themselves**: with `steer_tc` attached every datagram on
  the interface goes through the clsact ingress hook, which the kernel
  skips entirely when nothing is attached; a plain UDP datagram also
  runs the sk_lookup hook's program array. That dispatch is outside
  the programs' run time and was not separated here.
- A `perf record -a` of serial runs (as `make bench-profile` does for
  TCP) was tried on 2026-12-03 and was not conclusive: other engineers'
  tests ran on the machine at the time, their own BPF programs and
  processes showed up in the direct runs' samples, and the idle time
  per request differed more between rounds of one variant than between
  the variants.

History: an earlier run of this section the same day (20:35 UTC, the
same settings) measured saturated 1.00x (dns) and
1.01x (quic) of direct's rate, serial 0.79x and 0.92x, serial p99 1.19x
and 1.08x, serial p50 +1.4 µs (dns) and +1.0 µs (quic): the verdicts of
the targets flip between runs of this machine, the p50 difference of
the serial rows (about +0.7 to +1.4 µs per request) is the steadier
figure.

EOT
}

dgram_report() {
	[[ -s $RES/dgram.tsv ]] || return 0
	cat <<EOF
## 2b. Datagrams end to end (DNS-like and QUIC 1-RTT)

The namespaces of section 2. One backend (\`build/bench/bench_backend
--udp\`, one thread, epoll, \`recvmmsg\`/\`sendmmsg\`: every datagram is
sent back as it came) listens on $DGRAM_BE_DNS and $DGRAM_BE_QUIC. The load
generator \`build/bench/bench_dgram\` (C, epoll, one thread) runs in the
client namespace: F flows, each a connected UDP socket from one of 500
client addresses, each with one request in flight (closed loop: the reply
starts the next request). Latency is from \`send()\` to the reply's
\`recv()\`; a request unanswered for 200 ms counts as a timeout.

- **dns**: 40-byte DNS-like queries to the plain UDP service $DGRAM_DNS
  (steered by steer_lookup at every datagram's socket lookup; steer_tc
  sees each one too and lets it pass: no cookie).
- **quic**: $DGRAM_QSIZE-byte QUIC 1-RTT datagrams (short header) to the
  \`cookie = quic\` service $DGRAM_QUIC (plaintext QUIC-LB, 2-byte server
  IDs in 8-byte CIDs), one connection ID per flow, minted by
  \`ringsteer cid quic q1 $DGRAM_FLOWS\`: steer_tc decodes each CID and
  assigns the datagram at TC ingress, so the socket lookup (and
  steer_lookup) is skipped.

**direct** sends to the backend's own addresses, **ringsteer** to the
service address with \`ringsteerd\` running (\`interfaces = $RS_IF_EDGE\`),
started before and \`--detach\`ed after each of its runs (the direct runs
have no program attached). Same backend both ways. Loads: **saturated**,
$DGRAM_FLOWS flows; **serial**, one flow. $ROUNDS rounds, in each one run of
each variant in alternating order, ${WARMUP} s warm-up + ${SECS} s measured.
"x direct" is the median of the per-round ratios; ranges are min-max over
rounds. Everything shares the $(nproc) vCPUs, and other engineers' tests
ran on the machine at the same time: read the ranges.

EOF
	dgram_table
	echo
	dgram_bpfstats
	dgram_notes
	if [[ -s $RES/dgram-secs ]]; then
		echo "This section took $(cat "$RES/dgram-secs") s of \`make bench\`."
		echo
	fi
}

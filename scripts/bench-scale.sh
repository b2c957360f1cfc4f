#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The daemon at scale (issue 39): one TCP service with N backends (one
# rs_backend process listens on all N ports, health checks by TCP connect
# every BENCH_SCALE_INTERVAL), for each N of BENCH_SCALE_SIZES and
# BENCH_SCALE_RUNS runs each, measures from ringsteerd's own log (-v,
# millisecond stamps):
#   start     launch of a cold start (empty pins) to its "control socket"
#             line: BPF loaded, every ring built, answering
#   unchanged "SIGHUP: reloading" to "reload: done" for a reload of the
#             same file (the loop is busy for all of it)
#   weight    the same for a reload that changes one backend's weight
#   gap       the longest time between two health checks of one backend
#             whose interval spans a reload (the schedule says INTERVAL)
#   swaps     rings swapped by the unchanged reloads ("ring generation"
#             lines; 0 is the goal)
# Writes BENCH_RESULTS/scale.tsv (one line per measurement) and prints a
# Markdown table of median, min and max per size. Run by scripts/bench.sh
# (section "scale") or alone, as root after `make build`.
#
# Knobs: BENCH_SCALE_SIZES [64 200 1000], BENCH_SCALE_RUNS [3],
# BENCH_SCALE_RELOADS reloads of each kind per run [3],
# BENCH_SCALE_INTERVAL health-check interval [1s], BENCH_SCALE_DAEMON
# the ringsteerd to measure [build/ringsteerd] (old and new builds
# alternately on a shared machine), BENCH_RESULTS,
# BENCH_SCALE_OUT the section for docs/benchmarks.md [docs/bench-scale.md],
# BENCH_REPORT_ONLY=1 rewrites the section from BENCH_RESULTS/scale.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/netns.sh

SIZES=${BENCH_SCALE_SIZES:-64 200 1000}
RUNS=${BENCH_SCALE_RUNS:-3}
RELOADS=${BENCH_SCALE_RELOADS:-3}
INTERVAL=${BENCH_SCALE_INTERVAL:-1s}
DAEMON=${BENCH_SCALE_DAEMON:-build/ringsteerd}
RES=$(realpath -m "${BENCH_RESULTS:-build/bench/results}")
DOC=${BENCH_SCALE_OUT:-docs/bench-scale.md}
BPFFS=""
CONF=""
TSV=$RES/scale.tsv

log() { echo "bench-scale: $*" >&2; }

mkdir -p "$RES"
if [[ -z ${BENCH_REPORT_ONLY:-} ]]; then
	# Detach whatever the current run pinned, then the namespaces.
	rs_install_cleanup
	# shellcheck disable=SC2016,SC2034 # expanded when netns.sh's trap runs it
	RS_CLEANUP_HOOK='if [[ -n $CONF && -f $CONF ]]; then "$DAEMON" -q --detach -c "$CONF"; fi; if [[ -n $BPFFS ]]; then rm -rf "$BPFFS"; fi'
	rs_ns_setup "scale$$"
fi

# write_conf N WEIGHT0: service s, N backends, the first at WEIGHT0; the
# default vnodes (4096) where the ring's 2^20 points allow, else 1024.
write_conf() {
	local n=$1 w0=$2 i vnodes=4096
	((n * 4096 + 4096 * 4 <= 1 << 20)) || vnodes=1024
	{
		printf '[global]\nbpffs = %s\ncontrol_socket = %s\n\n' \
			"$BPFFS" "$RS_BG_DIR/ctl.sock"
		printf '[service s]\nprotocol = tcp\nlisten = 198.18.0.10:80\nvnodes = %d\n' "$vnodes"
		for ((i = 0; i < n; i++)); do
			printf '\n[backend b%d]\nservice = s\naddress = 127.0.0.1:%d\ninterval = %s\n' \
				"$i" $((20000 + i)) "$INTERVAL"
			if ((i == 0)); then printf 'weight = %d\n' "$w0"; fi
		done
	} >"$CONF.new"
	mv "$CONF.new" "$CONF"
}

# The log's stamps (2026-12-03T20:23:52.124Z) as ms since the start of
# the month, in awk: runs never span a month's end.
STAMP_AWK='function ms(t) { return ((substr(t, 9, 2) * 24 + substr(t, 12, 2)) * 60 + substr(t, 15, 2)) * 60000 + substr(t, 18, 6) * 1000 }'

# stamp_ms LINE: the log line's stamp in ms.
stamp_ms() { awk "$STAMP_AWK"' { printf "%.0f\n", ms($1) }' <<<"$1"; }

# reload_ms LOG: HUP the daemon, wait for the next "reload: done"; sets
# MS to the loop time from the log's stamps, adds the window to WINDOWS.
reload_ms() {
	local logf=$1 before a b i
	before=$(grep -c 'reload: done' "$logf" || true)
	kill -HUP "$DPID"
	for ((i = 0; i < 1200; i++)); do
		(($(grep -c 'reload: done' "$logf" || true) > before)) && break
		sleep 0.05
	done
	a=$(stamp_ms "$(grep 'SIGHUP: reloading' "$logf" | tail -1)")
	b=$(stamp_ms "$(grep 'reload: done' "$logf" | tail -1)")
	WINDOWS+="$a $b "
	MS=$((b - a))
	# Every backend checked once more before the next reload: a gap
	# between two checks then spans one reload only.
	rs_until 30 checks_at_least "$logf" \
		$(($(grep -c ': check ok in ' "$logf" || true) + 2 * N_NOW))
}

# checks_at_least LOG N: the log holds N health-check results.
checks_at_least() { (($(grep -c ': check ok in ' "$1" || true) >= $2)); }

# longest_gap LOG WINDOWS...: the longest interval between two checks of
# one backend that overlaps one of the windows (ms).
longest_gap() {
	local logf=$1
	shift
	grep -E ': check .* in [0-9.]+ ms$' "$logf" | awk -v w="$*" "$STAMP_AWK"'
		BEGIN { n = split(w, a, " ") }
		{
			t = ms($1); b = $4
			if (b in last) {
				for (i = 1; i < n; i += 2)
					if (last[b] <= a[i + 1] && t >= a[i] &&
					    t - last[b] > max)
						max = t - last[b]
			}
			last[b] = t
		}
		END { printf "%.0f\n", max }'
}

# one_run N RUN: a cold start, RELOADS unchanged reloads, RELOADS weight
# changes; appends to $TSV.
one_run() {
	local n=$1 run=$2 ports=() i t0 ms logf k gen0 gen1 nbe=0
	local unchanged_windows
	N_NOW=$n
	BPFFS=/sys/fs/bpf/rs-bench-scale-$$-$n-$run
	CONF=$RS_BG_DIR/scale-$n.conf
	# rs_backend listens on up to 64 ports.
	for ((i = 0; i < n; i++)); do
		ports+=(--tcp "127.0.0.1:$((20000 + i))")
		if ((${#ports[@]} == 128 || i == n - 1)); then
			nbe=$((nbe + 1))
			rs_bg_start "be$n-$run-$nbe" rs_in_edge \
				build/tools/rs_backend --name "many$nbe" "${ports[@]}"
			rs_bg_wait_ready "be$n-$run-$nbe" 30
			ports=()
		fi
	done
	write_conf "$n" 1
	t0=$(stamp_ms "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)")
	rs_bg_start "d$n-$run" rs_in_edge prlimit --nofile=8192 \
		"$DAEMON" -v -c "$CONF"
	DPID=$RS_BG_LAST_PID
	logf=$(rs_bg_err "d$n-$run")
	rs_until 120 grep -q 'control socket' "$logf"
	ms=$(($(stamp_ms "$(grep 'control socket' "$logf")") - t0))
	printf '%s\t%s\tstart\t%s\n' "$n" "$run" "$ms" >>"$TSV"
	# Of that, taking the backends' sockets (sources/sockets.c).
	ms=$(($(stamp_ms "$(grep ': 1 listening socket(s) named' "$logf" | tail -1)") - \
		$(stamp_ms "$(grep 'taken from pid' "$logf" | head -1)")))
	printf '%s\t%s\tsockets\t%s\n' "$n" "$run" "$ms" >>"$TSV"
	# A few checks of every backend before the first reload.
	rs_until 60 checks_at_least "$logf" $((3 * n))
	WINDOWS=""
	gen0=$(grep -c 'ring generation' "$logf" || true)
	for ((k = 0; k < RELOADS; k++)); do
		reload_ms "$logf"
		printf '%s\t%s\tunchanged\t%s\n' "$n" "$run" "$MS" >>"$TSV"
	done
	unchanged_windows=$WINDOWS
	WINDOWS=""
	gen1=$(grep -c 'ring generation' "$logf" || true)
	printf '%s\t%s\tswaps\t%s\n' "$n" "$run" $((gen1 - gen0)) >>"$TSV"
	for ((k = 0; k < RELOADS; k++)); do
		write_conf "$n" $((2 + k))
		reload_ms "$logf"
		printf '%s\t%s\tweight\t%s\n' "$n" "$run" "$MS" >>"$TSV"
	done
	# The checks due after the last reload, then the gaps.
	rs_until 10 checks_at_least "$logf" \
		$(($(grep -c ': check ok in ' "$logf") + 2 * n))
	# shellcheck disable=SC2086 # the windows are words
	ms=$(longest_gap "$logf" $unchanged_windows)
	printf '%s\t%s\tgap\t%s\n' "$n" "$run" "$ms" >>"$TSV"
	# shellcheck disable=SC2086 # the windows are words
	ms=$(longest_gap "$logf" $WINDOWS)
	printf '%s\t%s\tgapw\t%s\n' "$n" "$run" "$ms" >>"$TSV"
	cp "$logf" "$RES/scale-$n-$run.log"
	rs_bg_stop "d$n-$run"
	"$DAEMON" -q --detach -c "$CONF"
	rm -rf "$BPFFS"
	for ((i = 1; i <= nbe; i++)); do rs_bg_stop "be$n-$run-$i"; done
}

if [[ -z ${BENCH_REPORT_ONLY:-} ]]; then
	echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- userspace scripts || echo " plus uncommitted changes"), scripts/bench-scale.sh; $RUNS runs per size, $RELOADS reloads of each kind per run; load average $(cut -d' ' -f1 /proc/loadavg) at its start (2 vCPUs shared with other runs)." >"$RES/scale.run"
	: >"$TSV"
	for n in $SIZES; do
		for ((r = 1; r <= RUNS; r++)); do
			log "$n backends, run $r/$RUNS"
			one_run "$n" "$r"
		done
	done
fi

# Median, min and max of the values under each key (k: size SUBSEP
# measurement, or a measurement), for both awk programs below.
STATS_AWK='
function med(k,   m, i, j, t, v) {
	m = cnt[k]
	for (i = 1; i <= m; i++) v[i] = val[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
		if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
function add(k, x) {
	cnt[k]++; val[k, cnt[k]] = x
	if (cnt[k] == 1 || x < lo[k]) lo[k] = x
	if (cnt[k] == 1 || x > hi[k]) hi[k] = x
}'

# The table: median [min-max] per size and measurement.
awk -F'\t' "$STATS_AWK"'
function cell(k, unit) {
	if (!cnt[k]) return "–"
	return sprintf("%g%s [%g–%g]", med(k), unit, lo[k], hi[k])
}
{
	add($1 SUBSEP $3, $4)
	if (!($1 in seen)) { seen[$1] = 1; order[++ns] = $1 }
}
END {
	print "| backends | start | of it, sockets taken | unchanged reload | one weight change | longest check gap, unchanged reloads | longest check gap, weight changes | rings swapped by unchanged reloads |"
	print "|---:|---:|---:|---:|---:|---:|---:|---:|"
	for (i = 1; i <= ns; i++) {
		n = order[i]
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", n,
			cell(n SUBSEP "start", " ms"),
			cell(n SUBSEP "sockets", " ms"),
			cell(n SUBSEP "unchanged", " ms"),
			cell(n SUBSEP "weight", " ms"),
			cell(n SUBSEP "gap", " ms"),
			cell(n SUBSEP "gapw", " ms"),
			cell(n SUBSEP "swaps", "")
	}
}' "$TSV" >"$RES/scale.md"
cat "$RES/scale.md"

# targets: issue 39's targets at 200 backends against the medians (and
# the whole range, worst first) of $TSV.
targets() {
	awk -F'\t' -v iv="$INTERVAL" "$STATS_AWK"'
	function row(what, k, limit,   m) {
		if (!cnt[k]) return
		m = med(k)
		printf "| %s | median %g ms, %g–%g | %s |\n", what, m, lo[k], hi[k],
			m <= limit ? (hi[k] <= limit ? "met" : "met by the median") : "**not met**"
	}
	$1 == 200 { add($3, $4) }
	END {
		if (!cnt["start"]) exit
		ivms = iv ~ /ms$/ ? iv + 0 : iv * 1000
		print "| target (200 backends) | measured | |"
		print "|---|---|---|"
		row("reload of an unchanged file <= 50 ms of loop time", "unchanged", 50)
		printf "| an unchanged reload swaps no ring | %d swapped in %d runs | %s |\n",
			hi["swaps"], cnt["swaps"], hi["swaps"] == 0 ? "met" : "**not met**"
		row("one weight change <= 100 ms", "weight", 100)
		row("start <= 2 s", "start", 2000)
		row("checks keep their schedule across an unchanged reload (gap <= interval + 50 ms)", "gap", ivms + 50)
	}' "$TSV"
}

# The section of docs/benchmarks.md (scripts/bench.sh appends it).
{
	cat <<EOF
## 6. The daemon at scale (make bench, section scale)

$(cat "$RES/scale.run")

One TCP service, N backends (rs_backend processes listening on all N
ports, health checks by TCP connect every $INTERVAL), default vnodes
(4,096 points per unit of weight: 819,200 points at 200 backends; at
1,000 backends 1,024, as a ring holds at most 2^20 points). All
figures come from ringsteerd's own log (\`-v\`, millisecond stamps):
*start* is a cold start (empty pins) from launch to "control socket",
*of it, sockets taken* the span of taking the backends' listening
sockets; a reload's time is "SIGHUP: reloading" to "reload: done", all
of it on the event loop; *longest check gap* is the longest time
between two health checks of one backend whose interval spans a reload
(the schedule says $INTERVAL). Median [min–max] over every measurement;
the machine (2 vCPUs) is shared with other test runs, so the spreads
are wide.

EOF
	targets
	echo
	cat "$RES/scale.md"
	cat <<'EOF'

**What changed (issue 39).** A full ring was hashed and sorted with a
comparison sort twice per reload, changed or not (the writer's pipeline
builds it, then checks the walk on it). Now `ring_build` sorts by radix
(linear; tests/unit/ring/test_ring.c checks it against the comparison sort
point for point), and each service id keeps the last full ring with the
members it was built from (userspace/core/ring/ring_cache.c): the same
members find it as it is, changed members (a weight, a backend added or
removed) merge their points into it. The ring is the one `ring_build`
makes (tests/unit/ring/test_ring_cache.c, every kind of change).

**Then (ABI 11, commit 856b944)** a new ring is written into its map
through mmap(): ring maps and the inner-map template of `rs_rings` are
`BPF_F_MMAPABLE` (`RS_RING_MAP_FLAGS`), the daemon maps the new map,
copies the points in with one memcpy and writes the flat table straight
into its slots, unmaps it and swaps it in with one update of `rs_rings`,
the commit point as before (docs/architecture.md "Atomic ring swap").
Until then `bpf_map_update_batch` copied and stored the ring slot by
slot. The flat table is computed in one pass over the points, and the
ring cache merges into a buffer it holds when the ring fits (no fresh
13 MB buffer, 3,300 page faults, per weight change). Old and new build
run alternately at 200 backends (3 runs each, 3 weight changes a run,
load average 7-11 on the 2 vCPUs): **one weight change 1558 ms [1113–2287]
before, 301 ms [240–813] after**; in a quieter hour, 2 runs each, 429 ms
[391–520] before, 128 ms [104–181] after. At 64 backends (262,144
points) a weight change now takes 44 ms [37–67] (was 508).

Before the ring cache (commit 944a41e, one run at 200 backends, checks
every 500 ms): an unchanged reload 671–779 ms, one weight change
1151–1243 ms, start 2321 ms, the longest check gap across a reload
1298 ms.

**Then (commits 90fd398, 00d8c97)** a reload leaves alone every service
whose installed ring was made from the ring its cache holds, with the
same members, seed and key, and whose backends' words do not change: no
copy, trim or compare of its ring (`ring_unchanged()` in
userspace/ringsteerd/apply/rings.c); a failed reload never touched such
a service, and its rollback leaves it the same way. rs_binds and
rs_cookies are written only when their entries differ from the last
write. The cache hands out the ring it holds instead of a copy (a merge
writes into the previous ring's buffer and the two trade places), the
old and the new state pass rings to each other instead of copying
them, a trim that would drop nothing is not made, and a ring made from
the cached one with as many points is known to be it without a
compare. The installed ring is copied once, when it is swapped in. A
reload says what it did; for an unchanged file "reload: full rings 0
built, 0 merged from the last, 0 reused unchanged; 0 rings swapped; 1
of 1 services' rings untouched; 0 lookup tables written"
(tests/e2e/test_swap.sh asserts it). The build before (commit 633ba18)
and this one run in turns on the same machine, 2 runs of each at every
size per turn (5 turns before, 3 after, load average 3.6 to 17 at their
starts): at 200 backends **an unchanged reload 149.5 ms [70–530]
before, 6.5 ms [4–34] after; one weight change 251 ms [126–1902]
before, 168 ms [80–433] after**; at 1,000 backends an unchanged reload
232 ms [64–1184] before, 69 ms [23–493] after. In the quietest turn
(load average 3.6–4.6, the first of the two commits): an unchanged
reload 99.5 ms [73–141] before, 6.5 ms [4–23] after, one weight change
180.5 ms [163–289] before, 100.5 ms [87–170] after.

**What the remaining time is made of.**

- *An unchanged reload* is now the file parsed and compared with the
  one in force, the 1,024 backend words and load gauges read for the
  snapshot and the ids, the backends' runtime state carried, and one
  pass over the service's backends to see that nothing changed:
  4–7 ms at 200 backends in most reloads, up to 34 ms when other runs
  held the CPUs. At 1,000 backends the ring is not looked at either;
  what grows there is per-backend work (words, checks carried, sockets
  reconciled), not broken down here.
- *One weight change* at 200 backends (823,296 points, 1,347,586
  slots, 21.6 MB), from the log's stamps of one run: parsing and
  comparing the file 4–11 ms, then 80–160 ms to the swap, then 3–7 ms
  to "reload: done". Of the middle, writing the ring map is about 30 ms
  on a quiet machine (measured before this change, its code unchanged):
  creating the map 4.6–5.1 ms (the kernel allocates and zeroes it),
  mapping and writing it 15.0–18.7 ms, the update of `rs_rings`
  10.4–11.4 ms (synchronize_rcu(), which makes the swap the commit
  point). The rest is the merge of the changed backend's points into
  the ring (about 10 ms quiet), the one copy of the 13 MB ring that
  becomes the installed one (fresh pages: about 3,300 page faults), and
  three passes that read the ring (is a trim needed before, after, the
  walk check). With the load average at 4.6 the median was 100.5 ms
  [87–170] (the first commit alone); at 8, 150–186 ms per turn. Going
  further needs the installed ring not to be a second 13 MB buffer (the
  map written from the cache's ring), or the map write off the loop;
  fewer points (`vnodes`) shrink all of it in proportion.
- *Start* (not met by these runs' median: it was 1631 ms [1417–2274]
  at 01:29, and the build before measured 2961.5 ms [2056–4533] in the
  same turns as the table; this change does not touch what a start
  does beyond handing the first ring out of the cache instead of a
  copy) is mostly taking the sockets at 1,000 backends (the column
  beside it). A reconciliation pass walks /proc once: its first scan
  indexes every socket of the host and the others answer from the
  index (`socket_holders_batch_begin()`, tests/unit/daemon/test_socket_holders.c).
  What is left at 1,000 is a sock_diag dump per address, each of every
  socket of the host: one dump per pass would remove that too. The
  rings' share of a start is tens of ms; a restart that adopts the
  pinned ring reads its points with one copy through mmap() too (was
  one lookup per point).
- *Health checks* keep their schedule across a reload that leaves them
  alone (each starts again when its next probe was due; tests/e2e/
  test_reload_checks.sh). The loop still does a reload in one go: a
  probe due during it runs after it, so the gap across one is the
  interval plus that reload. An unchanged reload now takes well under
  the 50 ms of slack at 200 backends, so the loop is not split between
  services' ring writes; a weight change delays a due probe by its own
  length (the weight-change gap column), and with one service there is
  no point between two ring writes to run it at. The worst gap across
  an unchanged reload at 200, 1132 ms, came in a run whose reloads
  took 5–34 ms: the rest is the loop's other work on loaded CPUs, not
  the reload.
EOF
} >"$DOC"
log "wrote $DOC"

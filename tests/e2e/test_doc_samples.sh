#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the sample output in README.md and docs/*.md against a real
# daemon, for what can be compared mechanically, so that the next change
# of output fails here rather than leaving a stale sample:
#   the pin listings (`ls` of the pin directory, the `pins:` line of
#   `status` with the daemon down) name exactly the pins a daemon creates;
#   every ABI number a sample shows (`(abi N)`, `(commit C, abi N)`,
#   `"abi_version": N`,
#   `this build is ABI N`, and README's `this one is ABI N`) is
#   RS_ABI_VERSION, and so is the daemon's;
#   the `ringsteerd --check` sample of configs/ringsteer.conf has the
#   real output's lines, in its format, with the same ring sizes;
#   the tables of `status`, `services` and `backends` samples have the
#   real headers, and a whole `status` sample has its kernel, trace and
#   sk_lookup programs lines; the JSON keys shown for `-j backend` and for `-j status` with
#   the daemon down are the real ones.
#   every whole configuration a doc shows (a code block with a [service]
#   and a [backend]) passes `ringsteerd --check`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

DOCS=(README.md docs/*.md)
ABI=$(awk '$1 == "#define" && $2 == "RS_ABI_VERSION" { print $3 }' include/ringsteer/abi.h)

e2e_setup doc
e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 2
sticky_ttl = 300

[backend cache-a]
service = web
address = 127.0.0.1:8081
check = none
CONF
rs_bg_start be1 rs_in_edge build/tools/rs_backend --name cache-a --tcp 127.0.0.1:8081
rs_bg_wait_ready be1
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10

# sample CMD: the sample blocks of CMD in the docs, each line of output
# prefixed by "FILE:LINE:", blocks separated by "--". A sample is a line
# "$ CMD" (exactly, or followed by arguments when CMD ends with a space)
# and the lines after it up to the next "$ " line or code fence.
sample() {
	awk -v cmd="$1" '
		function stop() { if (on) print "--"; on = 0 }
		/^```/ || /^\$ / { stop() }
		/^\$ / && (substr($0, 3) == cmd ||
			(cmd ~ / $/ && index(substr($0, 3), cmd) == 1)) { on = 1; next }
		on { print FILENAME ":" FNR ":" $0 }
		ENDFILE { stop() }
	' "${DOCS[@]}"
}
text() { sed -E 's/^[^:]*:[0-9]+://'; }
norm() { tr -s ' \t' ' ' | sed -E 's/ $//'; }

echo "# pins"
ls "$BPFFS" | sort >"$OUT/pins.real"
e2e_check "the daemon pinned something" test -s "$OUT/pins.real"
sample "ls /sys/fs/bpf/ringsteer" >"$OUT/ls.doc"
e2e_check "docs have an ls sample of the pin directory" test -s "$OUT/ls.doc"
n=0
while read -r block; do
	n=$((n + 1))
	e2e_eq "ls sample $n names the pins the daemon creates" \
		"$(tr ',' '\n' <<<"$block" | sort | paste -sd' ')" "$(paste -sd' ' "$OUT/pins.real")"
done < <(text <"$OUT/ls.doc" | paste -sd, | sed 's/,--,\?/\n/g; s/,$//' | grep .)
grep -Hn '^  pins: ' "${DOCS[@]}" >"$OUT/pinlines.doc" || true
e2e_check "docs have a pins: line (status, daemon down)" test -s "$OUT/pinlines.doc"
while IFS= read -r line; do
	e2e_eq "${line%%:  pins:*}: pins: line names the pins the daemon creates" \
		"$(sed 's/.*  pins: //' <<<"$line" | tr ' ' '\n' | grep . | sort | paste -sd' ')" \
		"$(paste -sd' ' "$OUT/pins.real")"
done <"$OUT/pinlines.doc"

echo "# ABI $ABI"
e2e_check "ringsteer version says abi $ABI" \
	bash -c "build/ringsteer -s '$SOCK' version | grep -q ', abi $ABI)\$'"
grep -HnoE '(\(|, )abi [0-9]+\)|"abi_version": [0-9]+|this (build|one) is ABI [0-9]+' \
	"${DOCS[@]}" >"$OUT/abi.doc" || true
e2e_check "docs show the ABI somewhere" test -s "$OUT/abi.doc"
while IFS= read -r hit; do
	e2e_eq "$(cut -d: -f1,2 <<<"$hit"): ABI in the sample ($(cut -d: -f3- <<<"$hit"))" \
		"$(grep -oE '[0-9]+' <<<"$hit" | tail -1)" "$ABI"
done <"$OUT/abi.doc"

echo "# ringsteerd --check"
build/ringsteerd --check -c configs/ringsteer.conf 2>&1 |
	grep -E '^(service |data plane: |kernel memory: |ring changes: |ringsteerd: )' >"$OUT/check.real"
sample "ringsteerd --check -c configs/ringsteer.conf" | text |
	grep -E '^(service |data plane: |kernel memory: |ring changes: |ringsteerd: )' >"$OUT/check.doc" || true
e2e_check "docs have the --check sample of configs/ringsteer.conf" test -s "$OUT/check.doc"
svc='^service [a-z0-9_-]+: ring [0-9,]+ points \([0-9.]+ [KMG]?i?B\), (no sticky table|sticky [0-9,]+ entries \(~[0-9.]+ [KMG]?i?B\))$'
mem='^kernel memory: ~[0-9.]+ [KMG]?i?B \([0-9]+ bytes\) pinned by a start: the data plane.s maps and ~[0-9.]+ [KMG]?i?B for [0-9]+ services? \(memory_max [0-9]+ [KMG]?i?B\)$'
spare='^ring changes: after its first one, each service keeps the ring map a change replaced to write the next ring into: ~[0-9.]+ [KMG]?i?B \([0-9]+ bytes\) more for these rings \(at most twice that after weights fall\), ~[0-9.]+ [KMG]?i?B in all$'
for f in real doc; do
	e2e_check "--check ($f): every service line is in the format" \
		awk -v re="$svc" '/^service / && $0 !~ re { bad = 1 } END { exit bad }' "$OUT/check.$f"
	e2e_check "--check ($f): a kernel memory line in the format" grep -qE "$mem" "$OUT/check.$f"
	e2e_check "--check ($f): a ring changes line in the format" grep -qE "$spare" "$OUT/check.$f"
done
e2e_eq "--check: the sample's spare rings are the real ones" \
	"$(grep -oE '^ring changes: .* \([0-9]+ bytes\) more' "$OUT/check.doc")" \
	"$(grep -oE '^ring changes: .* \([0-9]+ bytes\) more' "$OUT/check.real")"
e2e_eq "--check: the sample's lines are the real ones (kind and order)" \
	"$(cut -d: -f1 "$OUT/check.doc" | paste -sd' ')" "$(cut -d: -f1 "$OUT/check.real" | paste -sd' ')"
e2e_eq "--check: the sample's rings are the real ones" \
	"$(grep -oE '^service [^:]*: ring [0-9,]+ points \([^)]*\)' "$OUT/check.doc" | paste -sd' ')" \
	"$(grep -oE '^service [^:]*: ring [0-9,]+ points \([^)]*\)' "$OUT/check.real" | paste -sd' ')"

echo "# table headers"
header() { # CMD: the first header line of the real output of CMD
	# shellcheck disable=SC2086 # CMD is words
	rsctl $1 | grep -m1 -E '^(SERVICE|BACKEND) ' | norm
}
for cmd in status services backends; do
	want=$(header "$cmd")
	sample "ringsteer $cmd" >"$OUT/$cmd.doc"
	sample "ringsteer $cmd " >>"$OUT/$cmd.doc"
	# The first header of each block (a block that has one).
	awk -F: '$0 == "--" { seen = 0; next }
		!seen && $3 ~ /^(SERVICE|BACKEND) / { print; seen = 1 }' "$OUT/$cmd.doc" >"$OUT/$cmd.hdr"
	e2e_check "docs have a $cmd sample with a table" test -s "$OUT/$cmd.hdr"
	while IFS= read -r line; do
		e2e_eq "$(cut -d: -f1,2 <<<"$line"): $cmd header" "$(text <<<"$line" | norm)" "$want"
	done <"$OUT/$cmd.hdr"
done
# A status sample shown whole (no "..." left out) has the kernel and
# trace lines the daemon prints.
awk -F: '
	$0 == "--" { if (on && !cut) print f "\t" k + t + l; on = cut = k = t = l = 0; next }
	{ line = $0; sub(/^[^:]*:[0-9]+:/, "", line) }
	line ~ /^ringsteerd [0-9.]+, pid / { on = 1; f = $1 ":" $2 }
	on && line == "..." { cut = 1 }
	on && line ~ /^kernel .* sk_lookup / { k = 1 }
	on && line ~ /^trace (off|on)/ { t = 1 }
	on && line ~ /^sk_lookup programs in this netns: / { l = 1 }' "$OUT/status.doc" >"$OUT/status.whole"
rsctl status >"$OUT/status.real"
e2e_check "real status has a kernel line" grep -q '^kernel .* sk_lookup ' "$OUT/status.real"
e2e_check "real status has a trace line" grep -qE '^trace (off|on)' "$OUT/status.real"
e2e_check "real status lists the netns' sk_lookup programs" \
	grep -qE '^sk_lookup programs in this netns: 1 ' "$OUT/status.real"
while IFS=$'\t' read -r where n; do
	e2e_eq "$where: whole status sample has the kernel, trace and sk_lookup lines" "$n" 3
done <"$OUT/status.whole"

echo "# JSON keys"
# The JSON object after "$ ringsteer -j backend ..." in the docs.
sample "ringsteer -j backend " | text | awk '/^\{/ { on = 1 } on { print } /^\}/ { exit }' >"$OUT/backend.doc.json"
e2e_check "docs have a -j backend sample" jq -e 'type == "object"' "$OUT/backend.doc.json"
rsctl -j backend weight cache-a 1 >"$OUT/backend.real.json"
e2e_eq "-j backend: the sample's keys are the real ones" \
	"$(jq -c 'keys' "$OUT/backend.doc.json")" "$(jq -c 'keys' "$OUT/backend.real.json")"
e2e_check "-j status has load_check (docs/operations.md: jq .load_check)" \
	bash -c "build/ringsteer -s '$SOCK' -j status | jq -e 'has(\"load_check\")'"

echo "# status with the daemon down"
rs_bg_stop daemon
rc=0
build/ringsteer -c "$CONF" -j status >"$OUT/down.json" 2>/dev/null || rc=$?
e2e_eq "exit 1" "$rc" 1
# The keys the docs name for it: the quoted words of the "With `-j`"
# paragraph of docs/operations.md.
awk '/^With `-j` the same comes as/ { on = 1 } on && /^$/ { exit } on' docs/operations.md |
	grep -oE '"[a-z_]+"' | tr -d '"' | sort -u >"$OUT/down.keys.doc"
jq -r '[paths | .[] | strings] | unique | .[]' "$OUT/down.json" | sort -u >"$OUT/down.keys.real"
e2e_check "docs name the keys of status -j with the daemon down" test -s "$OUT/down.keys.doc"
e2e_eq "status -j (daemon down): every key the docs name is in the real output" \
	"$(comm -23 "$OUT/down.keys.doc" "$OUT/down.keys.real" | grep -vx -e unreachable | paste -sd' ')" ""
e2e_eq "status (daemon down): pins listed are the real pins" \
	"$(jq -r '.pinned.pins | sort | join(" ")' "$OUT/down.json")" "$(paste -sd' ' "$OUT/pins.real")"


echo "# whole configurations in the docs"
# Fragments (a [backend] alone, a [fleet] naming key files) are left out:
# only a block a reader could save as ringsteer.conf is checked.
awk -v dir="$OUT" '
	function flush() { if (svc && be) { n++; f = dir "/docconf." n; printf "%s", buf > f; close(f)
		print FILENAME ":" start > (dir "/docconf." n ".from") ; close(dir "/docconf." n ".from") } }
	/^[ \t]*```/ { if (on) { flush(); on = 0 } else { on = 1; buf = ""; svc = be = 0; start = FNR + 1 } next }
	on { buf = buf $0 "\n"; if ($0 ~ /^\[service /) svc = 1; if ($0 ~ /^\[backend /) be = 1 }
' "${DOCS[@]}"
confs=0
for f in "$OUT"/docconf.[0-9]*; do
	[[ $f == *.from ]] && continue
	[[ -e $f ]] || continue
	confs=$((confs + 1))
	e2e_check "$(cat "$f.from"): the configuration passes ringsteerd --check" \
		build/ringsteerd --check -c "$f"
done
e2e_check "docs show whole configurations ($confs)" test "$confs" -ge 3

e2e_summary

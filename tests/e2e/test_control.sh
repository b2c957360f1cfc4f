#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the `ringsteer` CLI and the control socket against a running
# ringsteerd in a namespace, with real backends and clients.
#   every command in table and JSON form (JSON checked with jq), `lookup`
#   against the kernel's choice, `sim` against the moves then observed,
#   root-only access, malformed/oversized requests, Prometheus metrics
#   against the traffic sent, reload and detach.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup ctl
NCLIENTS=300

write_conf() {
	cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK
metrics = 127.0.0.1:9464

[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 160
CONF
	for i in "$@"; do
		cat >>"$CONF" <<CONF

[backend web-$i]
service = web
address = 127.0.0.1:808$i
interval = 500ms
CONF
	done
}


# clients FILE: one connection from each of NCLIENTS addresses, "SRC BACKEND".
clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count "$NCLIENTS" 2>/dev/null |
		awk '{ print $1, $3 }' | sort >"$OUT/$1"
}

moved() { join "$OUT/$1" "$OUT/$2" | awk '$2 != $3' | wc -l; }
on_backend() { awk -v b="$2" '$2 == b' "$OUT/$1" | wc -l; }

metric_sum() { # FILE NAME: sum of a metric over its series
	awk -v n="$2" '$1 ~ "^" n "({|$)" { s += $NF } END { printf "%d\n", s }' "$1"
}

for i in 1 2 3 4 5; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "127.0.0.1:808$i"
	rs_bg_wait_ready "be$i"
done
write_conf 1 2 3 4
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "metrics on" 10

echo "# version, status, services, backends"
# The release of debian/changelog's top entry, the commit the build saw.
VERSION=$(scripts/version.sh --version)
COMMIT=$(sed -n 's/^#define RS_COMMIT "\(.*\)"/\1/p' build/gen/ringsteer/version_gen.h)
ABI=$(sed -n 's/^#define RS_ABI_VERSION \([0-9]*\).*/\1/p' include/ringsteer/abi.h)
rsctl version >"$OUT/version.txt"
e2e_eq "version (table): the CLI's and the daemon's, with commit and abi" \
	"$(cat "$OUT/version.txt")" \
	"ringsteer $VERSION (commit $COMMIT, abi $ABI)
ringsteerd $VERSION (commit $COMMIT, abi $ABI)"
e2e_eq "version (json)" "$(rsjson version | jq -c '[.version, .commit, .abi]')" \
	"[\"$VERSION\",\"$COMMIT\",$ABI]"
rsjson status >"$OUT/status.json"
e2e_eq "status: service web" "$(jq -r '.services[0].name' "$OUT/status.json")" web
e2e_check "status: program id and generation" \
	jq -ne 'input | .programs[0].id > 0 and .programs[0].attach == "sk_lookup" and .services[0].generation >= 1' "$OUT/status.json"
e2e_check "status (table)" bash -c "build/ringsteer -s '$SOCK' status | grep -q 'program steer_lookup'"
e2e_check "services (json)" bash -c "build/ringsteer -s '$SOCK' -j services |
	jq -ne 'input | .services | length == 1 and .[0].listen[0] == \"198.18.0.10:80\" and .[0].vnodes == 160'"
e2e_eq "services (table): header + 1 row" "$(rsctl services | wc -l)" 2
rsjson backends >"$OUT/backends.json"
e2e_check "backends (json): 4 UP with sockets, shares sum to 1" jq -ne 'input | 
	(.backends | length == 4) and all(.backends[]; .state == "UP" and .has_socket)
	and ((([.backends[].share] | add) - 1 | fabs) < 1e-6)' "$OUT/backends.json"
e2e_eq "backends web (table): header + 4 rows" "$(rsctl backends web | wc -l)" 5
e2e_check "backends of an unknown service fails" bash -c "! build/ringsteer -s '$SOCK' backends nope 2>/dev/null"

echo "# lookup agrees with the kernel for $NCLIENTS clients"
curl_metrics() { rs_in_edge curl -sf http://127.0.0.1:9464/metrics; }
curl_metrics >"$OUT/m0"
clients base
agree=0
while read -r src got; do
	want=$(rsjson lookup web "$src" | jq -r .backend)
	[[ ${want/web-/cache-} == "$got" ]] && agree=$((agree + 1))
done <"$OUT/base"
e2e_eq "lookup == kernel's choice" "$agree" "$NCLIENTS"
e2e_check "lookup (table) names backend and reason" bash -c \
	"build/ringsteer -s '$SOCK' lookup web 198.18.1.1 1234 | grep -Eq '^web-[1-4]  \((primary|spill)'"
e2e_check "lookup of a bad address fails with one line" bash -c \
	"out=\$(build/ringsteer -s '$SOCK' lookup web nope 2>&1); [[ \$? -ne 0 && \$(echo \"\$out\" | wc -l) -eq 1 && \$out == *'bad client address'* ]]"

echo "# metrics match the traffic"
curl_metrics >"$OUT/m1"
e2e_check "exposition parses (HELP/TYPE/sample lines only)" awk '
	/^# (HELP|TYPE) [a-z_]+ / { next }
	/^[a-z_]+(\{([a-z_]+="[^"]*",?)*\})? -?[0-9.e+-]+$/ { n++; next }
	{ print "bad line: " $0; bad = 1 }
	END { exit bad || n < 20 }' "$OUT/m1"
e2e_check "build_info: version, commit, abi" grep -qxF \
	"ringsteer_build_info{version=\"$VERSION\",commit=\"$COMMIT\",abi=\"$ABI\"} 1" "$OUT/m1"
e2e_check "build_info: HELP and TYPE" bash -c "grep -q '^# HELP ringsteer_build_info ' '$OUT/m1' &&
	grep -qx '# TYPE ringsteer_build_info gauge' '$OUT/m1'"
sent=$(($(metric_sum "$OUT/m1" ringsteer_backend_assigned_total) - $(metric_sum "$OUT/m0" ringsteer_backend_assigned_total)))
e2e_eq "assigned_total grew by the connections sent" "$sent" "$NCLIENTS"
for i in 1 2 3 4; do
	c0=$(awk -v b="web-$i" '$1 ~ "^ringsteer_backend_assigned_total" && $1 ~ "\"" b "\"" { print $2 }' "$OUT/m0")
	c1=$(awk -v b="web-$i" '$1 ~ "^ringsteer_backend_assigned_total" && $1 ~ "\"" b "\"" { print $2 }' "$OUT/m1")
	e2e_eq "web-$i counter == clients seen on cache-$i" "$((c1 - c0))" "$(awk -v b="cache-$i" '$2 == b' "$OUT/base" | wc -l)"
done
e2e_eq "lookups counted per service" \
	"$(($(metric_sum "$OUT/m1" ringsteer_service_lookups_total) - $(metric_sum "$OUT/m0" ringsteer_service_lookups_total)))" "$NCLIENTS"
e2e_check "ring generation and health exported" bash -c \
	"grep -q '^ringsteer_ring_generation{service=\"web\"} [1-9]' '$OUT/m1' && grep -q '^ringsteer_backend_health{service=\"web\",backend=\"web-1\"} 1' '$OUT/m1'"

echo "# lookup --kernel: the loaded program asked beside the replica"
kagree=0 kright=0
while read -r src got; do
	rsjson lookup web "$src" --kernel >"$OUT/lk.json"
	[[ $(jq -r .kernel.agrees "$OUT/lk.json") == true ]] && kagree=$((kagree + 1))
	[[ $(jq -r .kernel.backend "$OUT/lk.json") == "${got/cache-/web-}" ]] && kright=$((kright + 1))
done < <(head -40 "$OUT/base")
e2e_eq "--kernel agrees with the replica (40 clients)" "$kagree" 40
e2e_eq "--kernel names the backend a real connection reached" "$kright" 40
# web-1's word made DOWN behind the daemon's back: the two differ.
src1=$(awk '$2 == "cache-1" { print $1; exit }' "$OUT/base")
id1=$(rsjson backends | jq '.backends[] | select(.name == "web-1") | .id')
word=$(bpftool -j map lookup pinned "$BPFFS/rs_backends" key "$id1" 0 0 0 | jq -r '.value | join(" ")')
# shellcheck disable=SC2086 # the bytes after the state, one argument each
bpftool map update pinned "$BPFFS/rs_backends" key "$id1" 0 0 0 \
	value 0 0 0 0 ${word#* * * * }
rsjson lookup web "$src1" --kernel >"$OUT/lk.json"
e2e_check "a word changed behind the daemon: the replica still says web-1" \
	jq -e '.backend == "web-1"' "$OUT/lk.json"
e2e_check "... the kernel another backend, and they differ" \
	jq -e '.kernel.backend != "web-1" and .kernel.backend != null and .kernel.agrees == false' "$OUT/lk.json"
e2e_check "... which the table says" bash -c \
	"build/ringsteer -s '$SOCK' lookup web $src1 --kernel | grep -q '^kernel: web-[2-4] (pass), DIFFERS from the replica above'"
# shellcheck disable=SC2086 # the word's bytes, one argument each
bpftool map update pinned "$BPFFS/rs_backends" key "$id1" 0 0 0 value $word
e2e_check "the word put back: they agree again" bash -c \
	"build/ringsteer -s '$SOCK' -j lookup web $src1 --kernel | jq -e '.kernel.agrees'"

echo "# sim predicts the moves then observed"
p=$(rsjson sim web remove web-2 | jq .moved_fraction)
rsctl backend down web-2 >/dev/null
clients down2
q=$(echo "$(moved base down2) $NCLIENTS" | awk '{ print $1 / $2 }')
e2e_check "sim remove web-2 ($p) ~ observed with web-2 down ($q)" \
	awk -v p="$p" -v q="$q" 'BEGIN { d = p - q; exit !(d < 0.08 && d > -0.08 && p > 0) }'
e2e_eq "only web-2's clients moved" \
	"$(join "$OUT/base" "$OUT/down2" | awk '$2 != $3 && $2 != "cache-2"' | wc -l)" 0
rsctl backend up web-2 >/dev/null
clients up2
e2e_eq "web-2 up again: everyone back" "$(moved base up2)" 0

p=$(rsjson sim web weight web-3 3 | jq .moved_fraction)
e2e_check "backend weight (table)" bash -c "build/ringsteer -s '$SOCK' backend weight web-3 3 | grep -q 'weight 3'"
clients w3
q=$(echo "$(moved base w3) $NCLIENTS" | awk '{ print $1 / $2 }')
e2e_check "sim weight web-3 3 ($p) ~ observed ($q)" \
	awk -v p="$p" -v q="$q" 'BEGIN { d = p - q; exit !(d < 0.08 && d > -0.08 && p > 0) }'
e2e_eq "every mover went to web-3" \
	"$(join "$OUT/base" "$OUT/w3" | awk '$2 != $3 && $3 != "cache-3"' | wc -l)" 0
rsctl backend weight web-3 1 >/dev/null
clients w1
e2e_eq "weight back to 1: mapping as before" "$(moved base w1)" 0

p=$(rsjson sim web add web-5:1 | jq .moved_fraction)
write_conf 1 2 3 4 5
e2e_check "reload (table) ok" bash -c "build/ringsteer -s '$SOCK' reload | grep -qx ok"
# The observed moves count only once web-5 takes clients: UP, its socket in.
web5_serving() {
	rsjson backends | jq -e '.backends[] | select(.name == "web-5") |
		.state == "UP" and .serving' >/dev/null
}
e2e_check "web-5 serving after the reload" rs_until 5 web5_serving
clients add5
q=$(echo "$(moved base add5) $NCLIENTS" | awk '{ print $1 / $2 }')
e2e_check "sim add web-5 ($p) ~ observed after reload ($q)" \
	awk -v p="$p" -v q="$q" 'BEGIN { d = p - q; exit !(d < 0.08 && d > -0.08 && p > 0) }'
e2e_eq "every mover went to web-5" \
	"$(join "$OUT/base" "$OUT/add5" | awk '$2 != $3 && $3 != "cache-5"' | wc -l)" 0

echo "# a backend moves to another address on reload"
rs_bg_start be1b rs_in_edge build/tools/rs_backend --name cache-1b --tcp 127.0.0.1:8091
rs_bg_wait_ready be1b
sed -i 's/^address = 127.0.0.1:8081$/address = 127.0.0.1:8091/' "$CONF"
e2e_check "reload with web-1's new address" build/ringsteer -s "$SOCK" reload
clients moved1
e2e_eq "web-1's clients reach its new socket" \
	"$(join "$OUT/add5" "$OUT/moved1" | awk '$2 == "cache-1" && $3 != "cache-1b"' | wc -l)" 0
e2e_eq "nobody else moved" \
	"$(join "$OUT/add5" "$OUT/moved1" | awk '$2 != "cache-1" && $2 != $3' | wc -l)" 0
e2e_eq "the old socket is out of the map" "$(on_backend moved1 cache-1)" 0

echo "# what is bound at start stays until a restart, and a reload says so"
cp "$CONF" "$OUT/conf.keep"
sed -i "s|^metrics = 127.0.0.1:9464\$|metrics = 127.0.0.1:9465|; s|^control_socket = .*|control_socket = $OUT/other.sock|" "$CONF"
e2e_check "reload moving the metrics port and control socket" build/ringsteer -s "$SOCK" reload
e2e_check "the metrics move is logged as waiting for a restart" \
	grep -q "metrics and metrics_clients_max take effect at the next restart" "$(rs_bg_err daemon)"
e2e_check "the control socket move too" \
	grep -q "control_socket $OUT/other.sock takes effect at the next restart" "$(rs_bg_err daemon)"
e2e_check "metrics still served where they were" curl_metrics
e2e_check "the control socket still answers where it was" build/ringsteer -s "$SOCK" status
cp "$OUT/conf.keep" "$CONF"
build/ringsteer -s "$SOCK" reload >/dev/null

echo "# operator states, ring show/stats"
e2e_eq "drain (json)" "$(rsjson backend drain web-1 | jq -r .state)" DRAIN
e2e_eq "undrain (json)" "$(rsjson backend undrain web-1 | jq -r .state)" UP
e2e_check "down (table)" bash -c "build/ringsteer -s '$SOCK' backend down web-1 | grep -q 'state DOWN (operator down'"
e2e_check "up (table)" bash -c "build/ringsteer -s '$SOCK' backend up web-1 | grep -q 'state UP'"
e2e_check "unknown backend fails" bash -c "! build/ringsteer -s '$SOCK' backend drain nope 2>/dev/null"
e2e_check "bad weight refused" bash -c "! build/ringsteer -s '$SOCK' backend weight web-1 999 2>/dev/null"
# The operator's state as the commands that set it (what a rollback to a
# release that cannot read these maps replays): the drain and the
# operator's weight (web-3 was built at 3: 2 grows no ring), nothing else.
rsctl backend drain web-1 >/dev/null
rsctl backend weight web-3 2 >/dev/null
e2e_eq "backends --commands: the drain and the weight" \
	"$(rsctl backends --commands | tr '\n' ';')" \
	"backend drain web-1 --force;backend weight web-3 2 --force;"
rsctl backend undrain web-1 >/dev/null
rsctl backend weight web-3 1 >/dev/null
e2e_eq "backends --commands: undrained, the file's weight again: nothing" \
	"$(rsctl backends --commands)" ""
rsjson ring show web >"$OUT/ring.json"
# 5 backends at 160 points, web-3 built at weight 3 (lowered since).
e2e_check "ring show (json): points sorted, count == points" jq -ne 'input | 
	(.ring | length) == .points and .points == 4 * 160 + 480
	and ([.ring[].pos] == ([.ring[].pos] | sort))' "$OUT/ring.json"
e2e_eq "ring show (table): 2 header lines + 1120 points" "$(rsctl ring show web | wc -l)" 1122
rsjson ring stats web >"$OUT/stats.json"
e2e_check "ring stats (json): 5 backends, shares sum to 1, cv and max/mean" jq -ne 'input | 
	(.backends | length == 5) and ((([.backends[].share] | add) - 1 | fabs) < 1e-6)
	and .cv > 0 and .cv < 0.5 and .max_mean >= 1' "$OUT/stats.json"
e2e_check "ring stats (table)" bash -c "build/ringsteer -s '$SOCK' ring stats web | grep -q 'CV'"
for c in status services backends backend ring lookup sim reload detach version; do
	e2e_check "$c --help" bash -c "build/ringsteer $c --help | grep -q '^Usage: ringsteer'"
done

echo "# access control and bad requests"
e2e_check "socket is mode 0600" test "$(stat -c %a "$SOCK")" = 600
e2e_check "non-root caller cannot connect" bash -c \
	"! setpriv --reuid=65534 --regid=65534 --clear-groups build/ringsteer -s '$SOCK' status 2>/dev/null"
# Past the file mode, SO_PEERCRED still refuses anyone but root.
chmod 0711 "$RS_BG_DIR"
chmod 0666 "$SOCK"
reply=$(setpriv --reuid=65534 --regid=65534 --clear-groups build/ringsteer -s "$SOCK" -j status 2>&1 || true)
e2e_check "non-root caller refused by SO_PEERCRED" bash -c \
	"jq -ne 'input | .ok == false and (.error | test(\"root only\"))' <<<'$reply'"
chmod 0600 "$SOCK"
chmod 0700 "$RS_BG_DIR"
raw() { socat -t 5 - "UNIX-CONNECT:$SOCK"; }
e2e_check "malformed request: error reply" bash -c \
	"printf 'this is not json\n' | socat -t 5 - 'UNIX-CONNECT:$SOCK' | jq -ne 'input | .ok == false and (.error | test(\"malformed\"))' >/dev/null"
e2e_check "oversized request: error reply" bash -c \
	"head -c 100000 /dev/zero | tr '\\0' 'a' | socat -t 5 - 'UNIX-CONNECT:$SOCK' | jq -ne 'input | .ok == false and (.error | test(\"larger than\"))' >/dev/null"
e2e_check "unknown command: error reply" bash -c \
	"echo '{\"cmd\":\"nope\"}' | socat -t 5 - 'UNIX-CONNECT:$SOCK' | jq -ne 'input | .ok == false and (.error | test(\"unknown command\"))' >/dev/null"
e2e_check "non-object request: error reply" bash -c \
	"echo '[1,2]' | socat -t 5 - 'UNIX-CONNECT:$SOCK' | jq -ne 'input | .ok == false' >/dev/null"
e2e_eq "daemon still serves" "$(rsjson status | jq -r .ok)" true
clients after
e2e_eq "and still steers" "$(awk '$2 !~ /^cache-/' "$OUT/after" | wc -l)" 0

echo "# detach"
e2e_check "detach (table) ok" bash -c "build/ringsteer -s '$SOCK' detach | grep -qx ok"
for _ in $(seq 50); do [[ -e $BPFFS ]] || break; sleep 0.1; done
e2e_check "pins removed" test ! -e "$BPFFS"
e2e_check "control socket removed" test ! -e "$SOCK"
e2e_summary

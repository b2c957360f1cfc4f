#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: a running ringsteerd refuses reloads of files that would hurt
# the host or stop steering (issue 9), and keeps steering through them:
#   the config path turned into /dev/zero, a FIFO without a writer, a
#   sparse file over the size limit, a file without services, a listen
#   covering the backends' own addresses, a sticky table over the memory
#   budget, 10,000 bad backends with an escape sequence in a name (issue
#   36: at most 31 lines, shown as \xNN, JSON reply valid). After each: the reload is refused with its reason, the daemon
#   still answers, real clients still connect to the same backends and the
#   ring generation has not moved. The daemon runs under an address-space
#   limit, so a reader that grows without bound fails this test instead of
#   the host; `ringsteerd --check` says the same and reports memory.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup cfr
NCLIENTS=100
# Far above what ringsteerd needs, far below what /dev/zero would take.
AS_LIMIT=$((2 << 30))
LINK=$OUT/current.conf

# write_conf FILE [EXTRA SERVICE LINES...]
write_conf() {
	local file=$1
	shift
	{
		printf '[global]\nbpffs = %s\ncontrol_socket = %s\n\n' "$BPFFS" "$SOCK"
		printf '[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n'
		printf '%s\n' "$@"
		for i in 1 2 3; do
			printf '\n[backend web-%s]\nservice = web\naddress = 198.18.0.2%s:8080\ninterval = 300ms\n' "$i" "$i"
		done
	} >"$file"
}


# clients FILE: one connection from each of NCLIENTS addresses, "SRC BACKEND".
clients() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count "$NCLIENTS" --timeout-ms 1000 \
		2>/dev/null | awk '{ print $1, $3 }' | sort >"$OUT/$1"
}

generation() { timeout 5 build/ringsteer -s "$SOCK" -j status | jq -r '.services[0].generation'; }

for i in 1 2 3; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "cache-$i" \
		--tcp "198.18.0.2$i:8080"
	rs_bg_wait_ready "be$i"
done
write_conf "$OUT/good.conf"
ln -sfn "$OUT/good.conf" "$LINK"
# shellcheck disable=SC2034 # read by the cleanup hook (--detach)
CONF=$OUT/good.conf
rs_bg_start daemon rs_in_edge prlimit --as="$AS_LIMIT" -- \
	build/ringsteerd -c "$LINK"
DAEMON=$RS_BG_LAST_PID
e2e_wait_for "$(rs_bg_err daemon)" "backends with a socket" 10
# Health checks bring the backends UP within a few intervals.
for _ in $(seq 50); do
	clients base
	[[ $(grep -c cache- "$OUT/base") -eq $NCLIENTS ]] && break
	sleep 0.2
done
e2e_eq "baseline: every client connects" "$(grep -c cache- "$OUT/base")" "$NCLIENTS"
GEN=$(generation)

# refused NAME WANT: a reload of $LINK is refused, saying WANT, and nothing
# changes for clients.
refused() {
	local name=$1 want=$2 rc=0
	timeout 10 build/ringsteer -s "$SOCK" reload >"$OUT/$name.reload" 2>&1 || rc=$?
	if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -qF -- "$want" "$OUT/$name.reload"; then
		e2e_pass "$name: reload refused ($want)"
	else
		e2e_fail "$name: reload rc=$rc, want refusal with '$want': $(head -c 300 "$OUT/$name.reload")"
	fi
	e2e_check "$name: daemon still running" kill -0 "$DAEMON"
	e2e_check "$name: control socket answers" timeout 5 build/ringsteer -s "$SOCK" status
	clients "$name.clients"
	e2e_eq "$name: clients on the same backends" \
		"$(join "$OUT/base" "$OUT/$name.clients" | awk '$2 == $3' | wc -l)" "$NCLIENTS"
	e2e_eq "$name: ring generation unchanged" "$(generation)" "$GEN"
}

# checked NAME WANT: `ringsteerd --check` of $LINK fails, saying WANT.
checked() {
	local rc=0
	timeout 10 prlimit --as="$AS_LIMIT" -- build/ringsteerd --check -c "$LINK" \
		>"$OUT/$1.check" 2>&1 || rc=$?
	if [[ $rc -eq 1 ]] && grep -qF -- "$2" "$OUT/$1.check" &&
		! grep -q "successful" "$OUT/$1.check"; then
		e2e_pass "$1: --check refuses"
	else
		e2e_fail "$1: --check rc=$rc: $(head -c 300 "$OUT/$1.check")"
	fi
}

echo "# /dev/zero"
ln -sfn /dev/zero "$LINK"
checked zero "current.conf: not a regular file (a character device)"
refused zero "current.conf: not a regular file (a character device)"

echo "# a FIFO nobody writes to"
mkfifo "$OUT/fifo"
ln -sfn "$OUT/fifo" "$LINK"
checked fifo "current.conf: not a regular file (a FIFO)"
refused fifo "current.conf: not a regular file (a FIFO)"

echo "# a file over the size limit"
write_conf "$OUT/big.conf"
truncate -s $(((16 << 20) + 1)) "$OUT/big.conf"
ln -sfn "$OUT/big.conf" "$LINK"
checked big "current.conf: too large (limit 16777216 bytes)"
refused big "current.conf: too large (limit 16777216 bytes)"
rm -f "$OUT/big.conf"

echo "# no services"
printf '[global]\nbpffs = %s\ncontrol_socket = %s\n' "$BPFFS" "$SOCK" >"$OUT/empty.conf"
ln -sfn "$OUT/empty.conf" "$LINK"
checked empty "no [service] section"
refused empty "to stop steering, run \`ringsteer detach\`"

echo "# a listen over the backends' own addresses"
write_conf "$OUT/cover.conf" "listen = 198.18.0.0/24:0"
ln -sfn "$OUT/cover.conf" "$LINK"
checked cover "current.conf:8: [service web] listen: tcp 198.18.0.0/24:0 covers 198.18.0.21:8080"
refused cover "current.conf:8: [service web] listen: tcp 198.18.0.0/24:0 covers 198.18.0.21:8080"

echo "# a sticky table over the memory budget"
write_conf "$OUT/sticky.conf" "sticky_ttl = 60" "sticky_max = 8388608"
ln -sfn "$OUT/sticky.conf" "$LINK"
checked sticky "current.conf:9: [service web] sticky_max: needs ~832.8 MiB"
refused sticky "over memory_max 256 MiB"

echo "# 10,000 bad backends and an escape sequence: a short refusal, no raw bytes"
write_conf "$OUT/huge.conf"
{
	printf '\n[service w\033[31mx\007]\nprotocol = tcp\n'
	for ((i = 0; i < 10000; i++)); do
		printf '\n[backend b%s]\nservice = web\naddress = 198.18.0.21:8080\nweight = x\n' "$i"
	done
} >>"$OUT/huge.conf"
ln -sfn "$OUT/huge.conf" "$LINK"
checked huge "more errors not shown"
refused huge "more errors not shown"
e2e_check "huge: --check prints at most 31 lines ($(wc -l <"$OUT/huge.check"))" \
	test "$(wc -l <"$OUT/huge.check")" -le 31
e2e_check "huge: the bad name is shown escaped" \
	grep -qF 'bad service name '"'"'w\x1b[31mx\x07'"'" "$OUT/huge.check"
for f in "$OUT/huge.check" "$OUT/huge.reload" "$(rs_bg_err daemon)"; do
	e2e_check "huge: no control byte in $(basename "$f")" \
		bash -c '! LC_ALL=C grep -q "[[:cntrl:]]" <(tr -d "\n\t" <"$1")' - "$f"
done
e2e_check "huge: the reload's JSON reply is valid" \
	bash -c "build/ringsteer -s '$SOCK' -j reload 2>/dev/null | jq -e '.ok == false' >/dev/null"

echo "# a service without backends: all-out, refused unless forced, and said so"
printf '[global]\nbpffs = %s\ncontrol_socket = %s\n\n[service web]\nprotocol = tcp\nlisten = 198.18.0.10:80\n' \
	"$BPFFS" "$SOCK" >"$OUT/nobackend.conf"
ln -sfn "$OUT/nobackend.conf" "$LINK"
build/ringsteerd --check -c "$LINK" >"$OUT/nobackend.check" || true
e2e_check "--check warns of a service without backends" \
	grep -q "warning: service web has no backends: every client of it gets fallback = pass" "$OUT/nobackend.check"
# Its backends took connections: a file that takes them all out empties
# the service as a weight 0 on each would (docs/operations.md).
rc=0
build/ringsteer -s "$SOCK" reload >"$OUT/nobackend.out" 2>&1 || rc=$?
e2e_eq "reload of it is refused (all-out)" "$rc" 1
e2e_check "naming the service, no backend in the file, and --force" \
	grep -q "service web would have no backend that takes new connections (no backend in the file); refused, nothing changed (.ringsteer reload --force. does it anyway)" "$OUT/nobackend.out"
e2e_check "reload --force of it goes through" bash -c "build/ringsteer -s '$SOCK' reload --force | grep -qx ok"
e2e_check "and the daemon says so in its log" \
	grep -q "warn: service web has no backends" "$(rs_bg_err daemon)"
e2e_check "with the forced all-out" \
	grep -q "warn: service web: ALL OUT, forced by the operator (reload --force)" "$(rs_bg_err daemon)"

echo "# the good file: --check reports memory, reload goes through"
ln -sfn "$OUT/good.conf" "$LINK"
build/ringsteerd --check -c "$LINK" >"$OUT/good.check"
e2e_check "--check reports the service's memory" \
	grep -qx "service web: ring 12,288 points (756 KiB), no sticky table" "$OUT/good.check"
e2e_check "--check then says successful" grep -q "test is successful" "$OUT/good.check"
e2e_check "reload of the good file" bash -c "build/ringsteer -s '$SOCK' reload | grep -qx ok"
clients after
e2e_eq "after: clients on the same backends" \
	"$(join "$OUT/base" "$OUT/after" | awk '$2 == $3' | wc -l)" "$NCLIENTS"

e2e_summary

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The systemd guest's test (scripts/vmtest-systemd.sh boots it): runs as
# rs-vmtest.service on a Debian guest whose PID 1 is systemd, as root, and
# lives the package's life as an operator would: apt install, a
# configuration from the minimal sample, enable --now, reloads good and
# broken, restart, kill -9 and the watchdog under load, an upgrade to a
# newer package under load, a rollback to the previous release (built from
# git: an earlier ABI) and the upgrade back from it under load with an
# operator's drain and weight, a reboot, remove and purge. A QUIC service
# (quic.conf, cookie = quic) has established flows sending datagrams
# through the rollback and the upgrade back while its backend q-1
# restarts, a reload and a daemon restart interleave; a user the test
# creates squats stopped backends' addresses under `owner =`; a reload
# of hostile names is refused; the daemon becomes fleet member edge-1
# beside a hostile edge-2 (Debian's etcd, TLS, a role per host, identity
# keys) and is restarted and reloaded under load while edge-2 forges. The backends (rs-backend@a, @b, @c and
# @q1..@q3) run as DynamicUser services: sockets of another user, taken
# across the sandbox. Every line for the host starts "VMTEST:"; the
# last is VMTEST-RESULT: PASS or FAIL, then the guest powers off. The phase
# survives the reboot in /var/lib/rs-vmtest.
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
T=/opt/ringsteer-vmtest
STATE=/var/lib/rs-vmtest
CONF=/etc/ringsteer/ringsteer.conf
mkdir -p "$STATE"
# What this boot says, for the next one to quote.
[[ -e $STATE/log ]] && mv "$STATE/log" "$STATE/log.prev"
phase=$(cat "$STATE/phase" 2>/dev/null || echo 1)
boots=$(($(cat "$STATE/boots" 2>/dev/null || echo 0) + 1))
echo "$boots" >"$STATE/boots"
pass=$(cat "$STATE/pass" 2>/dev/null || echo 0)
fail=$(cat "$STATE/fail" 2>/dev/null || echo 0)

say() { echo "VMTEST: $*" | tee -a "$STATE/log"; }
ok() {
	pass=$((pass + 1))
	echo "$pass" >"$STATE/pass"
	say "ok   - $*"
}
bad() {
	fail=$((fail + 1))
	echo "$fail" >"$STATE/fail"
	say "FAIL - $*"
	echo "VMTEST: FAIL - $*" >>"$STATE/failures"
}
check() { # NAME CMD...
	local what=$1
	shift
	if "$@" >"$STATE/last.out" 2>&1; then
		ok "$what"
	else
		bad "$what"
		sed 's/^/VMTEST:      | /' "$STATE/last.out" | tail -n 15
	fi
}
eq() { # NAME GOT WANT
	if [[ $2 == "$3" ]]; then ok "$1 ($2)"; else bad "$1: got '$2', want '$3'"; fi
}
# wait_for SECONDS CMD...: poll until CMD succeeds. The limits are wide:
# they end a wait only when the condition will not come; a guest under
# TCG on a loaded host took 15 s for a start that takes 3 s on a quiet one.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < end)) || return 1
		sleep 0.5
	done
}
finish() {
	if ((fail)) || (($1)); then
		say "--- journal of ringsteerd"
		journalctl -u ringsteerd --no-pager -n 60 | sed 's/^/VMTEST:      | /'
		# The host's log may show only its tail: the failures again, last.
		say "--- the checks that failed"
		cat "$STATE/failures"
		echo "VMTEST-RESULT: FAIL ($fail of $((pass + fail)) checks failed)"
	else
		echo "VMTEST-RESULT: PASS ($pass checks)"
	fi
	sync
	systemctl poweroff
	exit 0
}
prop() { systemctl show -P "$1" ringsteerd.service; }
mainpid() { prop MainPID; }
active() { [[ $(systemctl is-active ringsteerd.service) == active ]]; }
# A new daemon, started and ready: its MainPID is not $1 and it is active.
restarted_from() {
	local p
	p=$(mainpid)
	[[ $p != 0 && $p != "$1" ]] && active
}

# steers: 12 client addresses reach a backend each, and each the one that
# `ringsteer lookup` names.
steers() {
	local out src backend want
	out=$("$T/rs_client" --target 198.18.0.10:80 --src-base 198.18.1.1 \
		--count 12 --timeout-ms 3000) || {
		echo "$out"
		return 1
	}
	while read -r src _ backend; do
		want=$(ringsteer -j lookup web "$src" | jq -r .backend) || return 1
		[[ $backend == "$want" ]] || {
			echo "$src reached $backend, lookup says $want"
			return 1
		}
	done <<<"$out"
}
# answered: 12 client addresses reach a backend each (no CLI needed).
answered() {
	"$T/rs_client" --target 198.18.0.10:80 --src-base 198.18.1.1 --count 12 \
		--timeout-ms 3000
}

# Connections the guest's TCP has accepted so far (Tcp PassiveOpens): it
# grows with the load whatever runs the backends, the CLI gone included.
passive_opens() {
	awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "PassiveOpens") c = i; h = 1 } else print $c }' /proc/net/snmp
}
# flowing: the load has been accepted 50 more times since $OPENS.
flowing() { (($(passive_opens) >= OPENS + 50)); }
load_flows() { # wait until the load flows (again), from now
	OPENS=$(passive_opens)
	wait_for 120 flowing || bad "no load accepted within 120 s (PassiveOpens $(passive_opens), was $OPENS)"
}
# journal_mark: where ringsteerd's journal ends now; errors_since_mark prints
# its -p err lines after it (no second-granular --since, no sleep).
journal_mark() {
	MARK=$(journalctl -u ringsteerd -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p')
}
errors_since_mark() {
	journalctl -u ringsteerd -p err --no-pager ${MARK:+--after-cursor="$MARK"}
}

# Load from 40 client addresses, 4 at a time, until load_stop.
LOAD_PID=""
load_start() {
	"$T/rs_client" --target 198.18.0.10:80 --src-base 198.18.2.1 --count 40 \
		--concurrency 4 --loop-seconds 3600 --timeout-ms 5000 \
		>"$STATE/load.out" 2>&1 &
	LOAD_PID=$!
}
# load_stop NAME: no attempt failed while it ran, and some were made.
load_stop() {
	kill -USR1 "$LOAD_PID"
	wait "$LOAD_PID"
	local rc=$? attempts failed
	attempts=$(sed -n 's/^attempts=\([0-9]*\) .*/\1/p' "$STATE/load.out")
	failed=$(sed -n 's/.* failed=\([0-9]*\)$/\1/p' "$STATE/load.out")
	if ((rc == 0)) && [[ $failed == 0 && ${attempts:-0} -gt 0 ]]; then
		ok "$1: $attempts connections, 0 failed"
	else
		bad "$1: $(tr '\n' ' ' <"$STATE/load.out") (rc $rc)"
	fi
}

# The netns's sk_lookup links: one per data plane.
sk_lookup_links() {
	bpftool -j link show | jq '[.[] | select(.type == "netns" and .attach_type == "sk_lookup")] | length'
}

# The QUIC service's established flows: 4 per backend q-N, each a fixed
# source (198.18.3.(10N+i), port 400(10N+i)) and the connection ID that
# names q-N by its server ID (made once, by this release's CLI, and kept
# through the rollback: a client's CID does not change with the release).
CID=()
quic_cids() {
	local i
	for i in 1 2 3; do
		CID[i]=$(ringsteer cid quic "q-$i") || return 1
	done
}
# quic_flows N [PORTS]: one datagram on each of q-N's flows (4 tries
# each); "SRC PORT NAME" lines, the tries' summary on stderr. A check
# beside the load gives other source ports (PORTS 1000): two sockets
# cannot hold one source address and port.
quic_flows() {
	"$T/quic_client" --target 198.18.0.10:4433 --src-base "198.18.3.$((10 * $1))" \
		--port-base $((40000 + ${2:-0} + 10 * $1)) --count 4 --dcid "${CID[$1]}"
}
# quic_home N: each of q-N's flows is answered by q-N; quic_all_home: all.
quic_home() {
	local out
	out=$(quic_flows "$1" 1000 2>/dev/null) || return 1
	[[ $(awk -v b="q-$1" '{ sub(/\.[0-9]+$/, "", $3) } $3 == b' <<<"$out" | wc -l) == 4 ]]
}
quic_all_home() { quic_home 1 && quic_home 2 && quic_home 3; }
# The QUIC load: every flow sends a datagram, round after round, until
# qload_stop. qload_start DISTURBED: the backend this window restarts or
# stops (or ""): its flows go by IP affinity while it has no socket.
QLOAD_PID=""
qload_start() {
	QDIST=$1
	rm -f "$STATE/quic.stop" "$STATE/quic.wrong"
	: >"$STATE/quic.err"
	(
		while [[ ! -e $STATE/quic.stop ]]; do
			echo "@ $(date +%T.%N)" # when the round began, for a wrong answer
			for i in 1 2 3; do quic_flows "$i" 2>>"$STATE/quic.err"; done
		done
	) >"$STATE/quic.out" &
	QLOAD_PID=$!
}
# qrounds: the QUIC load's rounds begun so far; qrounds_past R K: K
# more than R.
qrounds() { grep -c '^@' "$STATE/quic.out"; }
qrounds_past() { (($(qrounds) >= $1 + $2)); }
# qload_stop NAME: no datagram was answered by a backend its CID does not
# name (the disturbed backend's flows aside) or by anyone else; the counts
# go to the log.
qload_stop() {
	touch "$STATE/quic.stop"
	wait "$QLOAD_PID"
	local c tries
	c=$(awk -v d="$QDIST" -v w="$STATE/quic.wrong" '
		$1 == "@" { at = $2; rounds++; next }
		{ n++; split($1, o, "."); want = "q-" int(o[4] / 10); b = $3; sub(/\.[0-9]+$/, "", b) }
		b == want { home++; next }
		b ~ /^q-[123]$/ && want == d { moved++; next }
		{ print "round of " at ": " $0 " (its CID names " want ")" >w }
		$3 ~ /^ERR/ { lost++; next }
		b ~ /^q-[123]$/ { wrong++; next }
		{ foreign++ }
		END { printf "%d %d %d %d %d %d %d", n, home, moved, wrong, foreign, lost, rounds }' \
		"$STATE/quic.out")
	local n home moved wrong foreign lost rounds
	read -r n home moved wrong foreign lost rounds <<<"$c"
	tries=$(awk -F'sent=' 'NF > 1 { s += $2 } END { print s + 0 }' "$STATE/quic.err")
	((wrong || foreign || lost)) && head -n 8 "$STATE/quic.wrong" | sed 's/^/VMTEST:      | /'
	say "  quic $1: $rounds rounds, $n flow datagrams, $home answered by the backend their CID names, ${QDIST:-no backend} disturbed: $moved of its flows answered elsewhere; $wrong by a wrong backend, $foreign by no backend of ours, $lost lost after 4 tries, $((tries - n)) sent again"
	if ((home > 0 && wrong == 0 && foreign == 0)); then
		ok "$1: quic flows, 0 of $n answered by a wrong backend ($lost lost)"
	else
		bad "$1: quic flows: $home of $n answered at home, $wrong by a wrong backend, $foreign by another process"
		journalctl -u ringsteerd -o short-precise --no-pager ${MARK:+--after-cursor="$MARK"} |
			head -n 50 | sed "s/^/VMTEST:      | journal: /"
	fi
}
# Our steer_tc filters on lo's ingress, and the program of the one there.
tc_ours() { tc filter show dev lo ingress | grep -c 'handle 0x5253 .*steer_tc'; }
tc_prog() { tc filter show dev lo ingress | sed -n 's/.*handle 0x5253 .*steer_tc.* id \([0-9]*\) .*/\1/p'; }
no_raw_control() { ! grep -q $'[\x1b\x07]' "$1"; }
tc_replaced() { # the program there is not $1
	local p
	p=$(tc_prog)
	[[ -n $p && $p != "$1" ]]
}
# uid_of UNIT: the user its main process runs as (a DynamicUser's uid).
uid_of() { ps -o uid= -p "$(systemctl show -P MainPID "$1")" | tr -d ' '; }
# A backend's field in this release's JSON.
be_json() { ringsteer -j backends | jq -r --arg b "$1" ".backends[] | select(.name == \$b) | $2"; }

# The fleet member beside a hostile one (issue 36). The unit's daemon is
# edge-1 of a two-host fleet set up as docs/fleet.md tells an operator:
# Debian's etcd over TLS with client certificates (no CN), one etcd role
# per host (read the prefix, write its own two keys), a shared key_file,
# an Ed25519 identity_key per host and member_keys binding each name to
# its addresses. edge-2 is listed but hostile: the test holds its
# identity key, its etcd user and certificate, and the key_file. Its
# honest record says capacity 0 (no client is sent to a host that does
# not exist); everything else it does is an attack.
E=/etc/ringsteer
PKI=$STATE/pki
EP=https://127.0.0.1:2379
PFX=/ringsteer
A1=198.18.5.1 A2=198.18.5.2
ossl() { openssl "$@" 2>>"$STATE/openssl.log"; }
# cert NAME SUBJECT [SAN]: a key and a certificate of the test's CA.
cert() {
	ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
		-keyout "$PKI/$1.key" -out "$PKI/$1.csr" || return 1
	if [[ -n ${3:-} ]]; then
		printf 'subjectAltName = %s\nextendedKeyUsage = serverAuth,clientAuth\n' "$3"
	else
		printf 'extendedKeyUsage = clientAuth\n'
	fi >"$PKI/$1.ext"
	ossl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
		-CAcreateserial -days 2 -extfile "$PKI/$1.ext" -out "$PKI/$1.pem"
}
# ectl USER ARGS...: etcdctl over TLS with USER's certificate, as etcd
# user USER (root, edge-2); "-" before auth is enabled (root's cert).
ectl() {
	local u=$1 c=$1 a=()
	shift
	[[ $u == - ]] && c=root || a=(--user "$u:$(cat "$PKI/$u.pw")")
	etcdctl --endpoints="$EP" --cacert "$PKI/ca.pem" --cert "$PKI/$c.pem" \
		--key "$PKI/$c.key" --command-timeout=30s "${a[@]}" "$@"
}
# forge NAME JSON: the record PREFIX/members/NAME as edge-2 can sign it:
# host_sig with edge-2's identity key, sig with the shared key_file
# (docs/fleet.md, "The signature"). openssl signs, not our code.
forge() {
	local key=$PFX/members/$1 canon sig mac
	canon=$(jq -cS 'del(.sig, .host_sig)' <<<"$2")
	printf 'ringsteer fleet record ed25519 1\n%s\n%s' "$key" "$canon" >"$PKI/msg"
	sig=$(openssl pkeyutl -sign -rawin -inkey "$PKI/id-edge-2.key" -in "$PKI/msg" |
		od -An -v -tx1 | tr -d ' \n')
	canon=$(jq -cS --arg s "$sig" '.host_sig = $s' <<<"$canon")
	mac=$(printf 'ringsteer fleet record 1\n%s\n%s' "$key" "$canon" |
		openssl mac -digest SHA256 -macopt "hexkey:$(cat "$PKI/fleet.key")" HMAC | tr A-F a-f)
	jq -cS --arg m "${mac:0:32}" '.sig = $m' <<<"$canon"
}
record() { # ADDRESS ADDRESS6 CAPACITY
	echo "{\"address\":\"$1\",\"address6\":\"$2\",\"services\":{\"web\":{\"capacity\":$3}},\"wire\":3}"
}
# edge-1's lease, in the hex etcdctl takes.
lease_of_edge1() {
	local l
	# Not through jq: a lease ID is an int64, jq's numbers are doubles.
	l=$(ectl root get "$PFX/members/edge-1" -w json | grep -o '"lease":[0-9]*') || return 1
	printf '%x\n' "${l#*:}"
}
fleet_json() { ringsteer -j fleet status; }
# What edge-1 believes: its members and their addresses, "edge-1=A1 edge-2=A2".
believed() { fleet_json | jq -r '[.members[] | "\(.name)=\(.address)"] | join(" ")'; }
believes() { [[ $(believed) == "$1" ]]; }
lease_changed() { # edge-1's record is there, under another lease than $1
	local l
	l=$(lease_of_edge1) && [[ $l != "$1" ]]
}
edge1_own() { ectl root get "$PFX/members/edge-1" --print-value-only | jq -e --arg a "$A1" '.address == $a'; }
rejected_of() { fleet_json | jq -r --arg k "$PFX/members/$1" '.rejected[] | select(.key == $k) | .reason'; }

# etcd as the docs set it up, the daemon's files, the [fleet] section.
fleet_setup() {
	local u
	rm -rf "$PKI"
	mkdir -m 0700 "$PKI"
	ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/O=vmtest CA" -keyout "$PKI/ca.key" -out "$PKI/ca.pem" || return 1
	cert etcd "/O=vmtest etcd" "IP:127.0.0.1" || return 1
	for u in root edge-1 edge-2; do
		cert "$u" "/O=ringsteer" || return 1
		openssl rand -hex 12 >"$PKI/$u.pw"
	done
	# The guest has no /etc/hosts: etcd's default peer URL (localhost)
	# would need DNS. A one-member cluster on 127.0.0.1, from scratch.
	[[ -e /etc/hosts ]] || printf '127.0.0.1 localhost\n::1 localhost\n' >/etc/hosts
	systemctl stop etcd.service
	rm -rf /var/lib/etcd/default
	install -d -o etcd -g etcd -m 0700 /etc/etcd-tls
	install -o etcd -g etcd -m 0600 "$PKI/etcd.pem" "$PKI/etcd.key" "$PKI/ca.pem" /etc/etcd-tls/
	cat >>/etc/default/etcd <<-'EOF'
		ETCD_LISTEN_CLIENT_URLS=https://127.0.0.1:2379
		ETCD_ADVERTISE_CLIENT_URLS=https://127.0.0.1:2379
		ETCD_CERT_FILE=/etc/etcd-tls/etcd.pem
		ETCD_KEY_FILE=/etc/etcd-tls/etcd.key
		ETCD_TRUSTED_CA_FILE=/etc/etcd-tls/ca.pem
		ETCD_CLIENT_CERT_AUTH=true
	EOF
	# Enabled as an operator would: the guest's disk has it disabled (its
	# default configuration fails at boot), and edge-1 rejoins after the
	# reboot only with etcd back.
	if ! systemctl enable etcd.service || ! systemctl restart etcd.service ||
		! wait_for 120 ectl - endpoint health; then
		journalctl -u etcd.service --no-pager -n 40
		return 1
	fi
	ectl - user add root --new-user-password="$(cat "$PKI/root.pw")" &&
		ectl - user grant-role root root || return 1
	for u in edge-1 edge-2; do
		ectl - role add "$u" &&
			ectl - role grant-permission "$u" read "$PFX/" --prefix=true &&
			ectl - role grant-permission "$u" readwrite "$PFX/members/$u" &&
			ectl - role grant-permission "$u" readwrite "$PFX/drain/$u" &&
			ectl - user add "$u" --new-user-password="$(cat "$PKI/$u.pw")" &&
			ectl - user grant-role "$u" "$u" || return 1
	done
	ectl - auth enable || return 1
	(
		umask 077
		install -m 0644 "$PKI/ca.pem" "$E/etcd-ca.pem"
		install -m 0644 "$PKI/edge-1.pem" "$E/edge-1.pem"
		install -m 0600 "$PKI/edge-1.key" "$E/edge-1.key"
		install -m 0600 "$PKI/edge-1.pw" "$E/etcd.pw"
		openssl rand -hex 16 >"$E/fleet.key"
		cp "$E/fleet.key" "$PKI/fleet.key"
		openssl genpkey -algorithm ed25519 -out "$E/fleet-id.key"
		openssl genpkey -algorithm ed25519 -out "$PKI/id-edge-2.key"
	) || return 1
	{
		echo "# name  Ed25519 public key  addresses"
		echo "edge-1 $(openssl pkey -in "$E/fleet-id.key" -pubout | sed -n 2p) $A1 2001:db8:5::1"
		echo "edge-2 $(openssl pkey -in "$PKI/id-edge-2.key" -pubout | sed -n 2p) $A2 2001:db8:5::2"
	} >"$E/fleet-members"
	chmod 0644 "$E/fleet-members"
	ip addr replace "$A1/32" dev lo && ip -6 addr replace 2001:db8:5::1/128 dev lo nodad || return 1
	sed -i '/^\[service web\]$/a fleet = on' "$CONF"
	cat >>"$CONF" <<-EOF

		[fleet]
		etcd = $EP
		etcd_ca = $E/etcd-ca.pem
		etcd_cert = $E/edge-1.pem
		etcd_key = $E/edge-1.key
		etcd_user = edge-1
		etcd_password_file = $E/etcd.pw
		name = edge-1
		address = $A1
		address6 = 2001:db8:5::1
		lease_ttl = 5s
		key_file = $E/fleet.key
		identity_key = $E/fleet-id.key
		member_keys = $E/fleet-members
	EOF
}

# edge-2's attacks are each written and checked in turn, not paced from a
# background loop: under TCG one etcdctl over TLS took over 30 s while the
# daemon restarted, and such a loop once wrote nothing in the whole window.
# Each write is sent again until etcd has taken it (the same key and value:
# nothing doubles). What edge-1 believes is read meanwhile by a loop of its
# own that asks only the CLI.
FORGED='' CLAIM='' RLEASE='' E2LEASE=''
# denied ARGS...: etcdctl as ARGS answered "permission denied" (a timeout
# is not a refusal: it fails, and wait_for asks again).
denied() {
	local out
	out=$(ectl "$@" 2>&1)
	grep -q "permission denied" <<<"$out"
}
# grant USER: a lease of USER's for the rest of the test, its hex ID.
grant() {
	local l
	l=$(ectl "$1" lease grant 1800 | sed -n 's/^lease \([0-9a-f]*\) granted.*/\1/p')
	[[ -n $l ]] && echo "$l"
}
# out_of SECONDS CMD...: CMD's output once it succeeds (wait_for's poll;
# CMD runs once per try, so a lease is granted once).
out_of() {
	local secs=$1
	shift
	wait_for "$secs" output_to "$STATE/out_of" "$@" && cat "$STATE/out_of"
}
output_to() { # FILE CMD...: CMD's stdout into FILE, its stderr dropped
	local f=$1
	shift
	"$@" >"$f" 2>/dev/null
}
# As etcd's root (what edge-2's own user could do on an etcd set up as
# earlier versions of the docs said): a record for edge-1 at an address
# nobody serves, signed with edge-2's identity key and the key_file.
forge_edge1() { ectl root put --lease="$RLEASE" "$PFX/members/edge-1" "$FORGED"; }
# As edge-2's user, its own record claiming edge-1's address.
claim_a1() { ectl edge-2 put --lease="$E2LEASE" "$PFX/members/edge-2" "$CLAIM"; }
put_backs() { journalctl -a -o cat -u ringsteerd --no-pager --after-cursor="$1" | grep -c "this host's record $PFX/members/edge-1 was changed in etcd; putting it back"; }
more_put_backs() { (($(put_backs "$1") > $2)); }
claim_rejected() { rejected_of edge-2 | grep -q "^address $A1 is \(this host's (edge-1)\|edge-1's in member_keys\)"; }
# The CLI's view, every half second until $STATE/watch.stop: "seen wrong
# away". The half second is a sampler's pace, not a wait for a condition.
watch_believed() {
	local seen=0 wrong=0 away=0 b
	while [[ ! -e $STATE/watch.stop ]]; do
		if b=$(believed 2>/dev/null) && [[ -n $b ]]; then
			seen=$((seen + 1))
			# edge-1 missing is its restart (its record goes with its
			# lease and is put back once the new daemon has its table).
			[[ " $b " == *" edge-1=$A1 "* ]] || away=$((away + 1))
			[[ -z $(tr ' ' '\n' <<<"$b" | grep -vx -e "edge-1=$A1" -e "edge-2=$A2") ]] || {
				wrong=$((wrong + 1))
				echo "$b" >>"$STATE/watch.wrong"
			}
		fi
		sleep 0.5
	done
	echo "$seen $wrong $away" >"$STATE/watch.out"
}
# forge_round NAME: root's forgery written, then edge-1's own record back
# in etcd, with a "putting it back" more in the journal since $fmark.
forge_round() {
	local n
	n=$(put_backs "$fmark")
	check "$1: root's forged edge-1 record written" wait_for 120 forge_edge1
	check "$1: edge-1's own record back in etcd" wait_for 120 edge1_own
	check "$1: the journal says it put it back" wait_for 60 more_put_backs "$fmark" "$n"
}

fleet_member() {
	say "# fleet member edge-1 beside a hostile edge-2 (etcd over TLS, RBAC per host, identities)"
	local fleet_start=$SECONDS
	check "etcd (Debian's, under systemd) over TLS with client certificates, a role per host" fleet_setup
	check "ringsteerd --check of the fleet configuration" ringsteerd --check -c "$CONF"
	check "no warning that one member could speak for the others" bash -c \
		"! ringsteerd --check -c '$CONF' 2>&1 | grep -q 'binds no address\|has no member_keys\|trusts the network'"
	check "systemctl restart ringsteerd (fleet = on for web)" systemctl restart ringsteerd.service
	check "ringsteer fleet ready (edge-1 alone)" ringsteer fleet ready 120
	E2LEASE=$(out_of 120 grant edge-2)
	RLEASE=$(out_of 120 grant root)
	check "leases for edge-2 and for etcd's root" test -n "$E2LEASE" -a -n "$RLEASE"
	local honest
	honest=$(forge edge-2 "$(record "$A2" 2001:db8:5::2 0)")
	check "edge-2's honest record (capacity 0), its own lease and keys" \
		wait_for 120 ectl edge-2 put --lease="$E2LEASE" "$PFX/members/edge-2" "$honest"
	check "edge-1 believes both, each at its address" wait_for 120 believes "edge-1=$A1 edge-2=$A2"
	check "steers" steers

	say "# edge-2's junk: 200 keys under $PFX/members/ (sorting first) (the fleet part at $((SECONDS - fleet_start)) s)"
	check "as edge-2's user: refused by RBAC" wait_for 120 denied edge-2 put "$PFX/members/aa-junk-0000" x
	check "elsewhere under the prefix too" wait_for 120 denied edge-2 put "$PFX/zz-junk" x
	# As root, in transactions of 100 (etcd's --max-txn-ops is 128): what
	# an etcd without the per-host roles would let edge-2 write.
	# A transaction that timed out under the guest's load is sent again
	# (its puts are the same keys: nothing doubles).
	junk_txn() {
		local i
		{
			echo
			for ((i = 0; i < 100; i++)); do printf 'put %s/members/aa-junk-%04d x\n' "$PFX" $(($1 * 100 + i)); done
			printf '\n\n'
		} | ectl root txn >/dev/null
	}
	local t i
	for ((t = 0; t < 2; t++)); do
		wait_for 120 junk_txn "$t" || break
	done
	eq "as etcd's root: junk keys written" "$(ectl root get "$PFX/members/aa-junk" --prefix --keys-only | grep -c junk)" 200
	# Three fake members signed with edge-2's keys, under a lease of
	# root's (attached to edge-2's, they would stop edge-2's own user from
	# using it: etcd lets a user attach a key to a lease only if it may
	# write every key on it).
	for i in 1 2 3; do
		wait_for 120 ectl root put --lease="$RLEASE" "$PFX/members/aa-fake-$i" \
			"$(forge "aa-fake-$i" "$(record "198.18.77.1$i" "2001:db8:77::1$i" 2)")"
	done
	check "edge-1 rejects them all, keeps its table, stays ready" wait_for 120 bash -c \
		"ringsteer -j fleet status | jq -e '.rejected_total >= 203 and .ready'"
	eq "its members" "$(believed)" "edge-1=$A1 edge-2=$A2"
	check "a fake: unknown member" grep -q "^unknown member: no key for aa-fake-2 in member_keys" <<<"$(rejected_of aa-fake-2)"
	check "a junk key: no lease" grep -q "^no lease" <<<"$(rejected_of aa-junk-0001)"
	# The junk goes before the windows below: each change under the
	# prefix has edge-1 read it all again, in pages of 32 over TLS (2,000
	# keys took minutes of the guest's two vCPUs under TCG).
	check "as etcd's root: the junk deleted" wait_for 120 ectl root del "$PFX/members/aa-junk" --prefix

	say "# the unit's daemon restarted and reloaded under load, while edge-2 attacks (the fleet part at $((SECONDS - fleet_start)) s)"
	FORGED=$(forge edge-1 "$(record 198.18.77.1 2001:db8:77::1 2)")
	CLAIM=$(forge edge-2 "$(record "$A1" 2001:db8:5::2 0)")
	rm -f "$STATE/watch.stop" "$STATE/watch.wrong"
	journal_mark
	local fmark=$MARK
	watch_believed &
	local wpid=$!
	load_start
	load_flows
	check "as edge-2's user, a record for edge-1: refused by RBAC" wait_for 120 denied edge-2 put "$PFX/members/edge-1" "$FORGED"
	forge_round "before a restart"
	check "edge-2's claim of edge-1's address written" wait_for 120 claim_a1
	check "edge-2's claim rejected: address $A1 is edge-1's" wait_for 60 claim_rejected
	pid=$(mainpid)
	check "systemctl restart" systemctl restart ringsteerd.service
	# At once, while the new daemon starts: it reads the forgery before
	# it has put its own record back, or finds it over its own.
	check "while the new daemon starts, root's forged edge-1 record written" wait_for 120 forge_edge1
	check "a new daemon, active" restarted_from "$pid"
	check "ringsteer fleet ready after the restart" ringsteer fleet ready 120
	check "after the restart, edge-1's own record back in etcd" wait_for 120 edge1_own
	load_flows
	pid=$(mainpid)
	check "systemctl reload" systemctl reload ringsteerd.service
	eq "the same daemon runs" "$(mainpid)" "$pid"
	forge_round "after a reload"
	load_flows
	touch "$STATE/watch.stop"
	wait "$wpid"
	load_stop "fleet member under attack: restart, reload"
	local seen wrong away
	read -r seen wrong away <"$STATE/watch.out"
	say "  edge-1's CLI answered $seen times: $wrong times with a wrong member, $away times without edge-1 (its restart)"
	[[ -s $STATE/watch.wrong ]] && head -n 5 "$STATE/watch.wrong" | sed 's/^/VMTEST:      | /'
	check "edge-1's CLI was asked while edge-2 attacked ($seen answers)" test "$seen" -gt 0
	eq "answers in which edge-1 believed a member but edge-1=$A1, edge-2=$A2" "$wrong" 0
	check "ringsteer fleet ready" ringsteer fleet ready 60
	check "active" active
	local b
	b=$(believed)
	check "edge-1 at its own address, no member but edge-1 and edge-2 at theirs ($b)" \
		bash -c "[[ ' $b ' == *' edge-1=$A1 '* ]] && ! tr ' ' '\\n' <<<'$b' | grep -vx -e 'edge-1=$A1' -e 'edge-2=$A2'"
	journalctl -a -o cat -u ringsteerd --no-pager --after-cursor="$fmark" >"$STATE/fleet.journal"
	say "  journal: $(grep -c 'rejected' "$STATE/fleet.journal") lines of rejections, $(grep -c 'putting it back' "$STATE/fleet.journal") put back, $(wc -l <"$STATE/fleet.journal") lines in all"
	check "journal: the claim rejected" grep -q "record $PFX/members/edge-2 rejected: address $A1 is \\(this host's (edge-1)\\|edge-1's\\)" "$STATE/fleet.journal"
	local secrets=0 s
	for s in "$(cat "$E/fleet.key")" "$(sed -n 2p "$E/fleet-id.key")" "$(sed -n 2p "$PKI/id-edge-2.key")" \
		"$(cat "$PKI/edge-1.pw")" "$(cat "$PKI/edge-2.pw")" "$(sed -n 2p "$E/edge-1.key")"; do
		grep -qF -- "$s" <(journalctl -a -o cat -u ringsteerd --no-pager) && secrets=$((secrets + 1))
	done
	eq "secrets (fleet key, identity keys, passwords, TLS key) in the journal" "$secrets" 0

	say "# edge-2 revokes edge-1's lease (the fleet part at $((SECONDS - fleet_start)) s)"
	local l1
	l1=$(out_of 60 lease_of_edge1)
	check "as edge-2's user: refused by RBAC" wait_for 120 denied edge-2 lease revoke "$l1"
	# edge-1's lease as read a moment ago (one it gave up since is not
	# found: read again).
	revoke_edge1() { l1=$(lease_of_edge1) && ectl root lease revoke "$l1"; }
	check "as etcd's root: revoked" wait_for 60 revoke_edge1
	check "edge-1's record back under a new lease" wait_for 120 lease_changed "$l1"
	check "ringsteer fleet ready" ringsteer fleet ready 120
	# What is left for the reboot: edge-2's honest record, no fake.
	wait_for 120 ectl root del "$PFX/members/aa-" --prefix
	wait_for 120 ectl edge-2 put --lease="$E2LEASE" "$PFX/members/edge-2" "$honest"
	check "edge-1's members, edge-2's honest record back" wait_for 60 believes "edge-1=$A1 edge-2=$A2"
	check "steers" steers
	say "  the fleet part took $((SECONDS - fleet_start)) s"
}

say "boot $boots, phase $phase: $(uname -r), $(systemctl --version | head -n 1), $(. /etc/os-release && echo "$PRETTY_NAME")"
say "up $(cut -d' ' -f1 /proc/uptime) s; the slowest units: $(systemd-analyze blame 2>/dev/null | head -n 3 | tr -s ' ' | tr '\n' ',')"
# Phase 1 runs on the first boot, phase 2 on the second (the test's own
# reboot). Anything else is a reboot that was not ours (a panic reboots at
# once, panic=-1): say what the boot before it logged, then stop.
if ((boots != phase)); then
	bad "boot $boots in phase $phase: a reboot that was not ours"
	say "--- the previous boot's last lines (kernel and units, warnings and worse)"
	journalctl -b -1 -p warning --no-pager -n 40 2>&1 | sed 's/^/VMTEST:      | /'
	say "--- the previous boot's last lines of the test"
	tail -n 15 "$STATE/log.prev" 2>&1 | sed 's/^/VMTEST:      | /'
	finish 1
fi

if [[ $phase == 1 ]]; then
	say "# apt install, as an operator"
	v1=$(dpkg-deb -f "$T"/ringsteer_v1.deb Version)
	v2=$(dpkg-deb -f "$T"/ringsteer_v2.deb Version)
	vp=$(dpkg-deb -f "$T"/ringsteer_prev.deb Version)
	check "apt-get install ./ringsteer ($v1)" \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y "$T/ringsteer_v1.deb"
	eq "the unit is installed disabled" "$(systemctl is-enabled ringsteerd.service)" disabled
	eq "and not started" "$(systemctl is-active ringsteerd.service)" inactive
	check "ringsteerd --version names the package's version" \
		grep -q "^ringsteerd ${v1%-*}" <(ringsteerd --version)
	systemd-analyze security ringsteerd.service >"$STATE/security" 2>&1
	exposure=$(sed -n 's/.*Overall exposure level for ringsteerd.service: \([0-9.]*\).*/\1/p' "$STATE/security")
	check "systemd-analyze security: exposure $exposure, at most 4.0" \
		awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 4.0) }'

	say "# the configuration from the minimal sample and a QUIC service, enable --now"
	cat /etc/ringsteer/ringsteer.conf.minimal "$T/quic.conf" >"$CONF"
	check "ringsteerd --check of it" ringsteerd --check -c "$CONF"
	check "systemctl enable --now ringsteerd" systemctl enable --now ringsteerd.service
	check "active once start returns (Type=notify: READY=1)" active
	check "status text says it steers" bash -c "systemctl show -P StatusText ringsteerd | grep -qi steer"
	check "the five backends' sockets taken (DynamicUser processes, TCP and UDP)" \
		wait_for 120 bash -c "[[ \$(ringsteer -j backends | jq '[.backends[] | select(.has_socket)] | length') == 5 ]]"
	check "12 clients steered, each where lookup says" wait_for 120 steers
	check "ringsteer cid names each QUIC backend" quic_cids
	say "  connection IDs: q-1 ${CID[1]}, q-2 ${CID[2]}, q-3 ${CID[3]}"
	eq "steer_tc at lo's ingress" "$(tc_ours)" 1
	check "12 QUIC flows, each answered by the backend its CID names" wait_for 120 quic_all_home
	quic_all_home || for i in 1 2 3; do quic_flows "$i" 2>&1 | sed 's/^/VMTEST:      | /'; done
	check "steer_sockops attached below the root, where the backends are (auto)" \
		bash -c "ringsteer -j status | jq -e '.. | objects | select(.name? == \"steer_sockops\") | select(.attached and .auto and .cgroup != \"/\")'"

	say "# systemctl reload"
	cat >>"$CONF" <<'CONFEOF'

[backend cache-c]
service = web
address = 127.0.0.1:8083
address = [::1]:8083
weight = 1
CONFEOF
	pid=$(mainpid)
	check "systemctl reload of a good file" systemctl reload ringsteerd.service
	check "it applied: cache-c is a backend" bash -c "ringsteer -j backends | jq -e '.backends[] | select(.name == \"cache-c\")'"
	cp "$CONF" "$STATE/good.conf"
	echo "this line has no equals sign" >>"$CONF"
	bad_line=$(wc -l <"$CONF")
	journal_mark
	check "systemctl reload of a broken file fails" bash -c "! systemctl reload ringsteerd.service"
	check "journalctl -p err names $CONF:$bad_line" \
		grep -q "$CONF:$bad_line" <(errors_since_mark)
	check "the old state is kept (cache-c still there)" \
		bash -c "ringsteer -j backends | jq -e '.backends[] | select(.name == \"cache-c\")'"
	eq "the same daemon runs" "$(mainpid)" "$pid"
	check "and steers" steers

	say "# a restart with the broken file: --check refuses it, steering goes on"
	journal_mark
	check "systemctl restart with a broken file fails" bash -c "! systemctl restart ringsteerd.service"
	check "journalctl -p err names $CONF:$bad_line (ExecStartPre's --check)" \
		grep -q "$CONF:$bad_line" <(errors_since_mark)
	check "12 clients answered with no daemon" answered
	cp "$STATE/good.conf" "$CONF"
	systemctl reset-failed ringsteerd.service 2>/dev/null
	check "the file mended, systemctl restart" systemctl restart ringsteerd.service
	check "steers again" wait_for 120 steers

	say "# hostile names in a reload: refused, the state kept, no raw escape byte logged"
	n=$(printf 'x%.0s' {1..200})
	printf '\n[backend %s]\nservice = web\naddress = 127.0.0.1:8089\n\n[backend evil\033[2J\033]0;owned\007]\nservice = web\naddress = 127.0.0.1:8090\n' "$n" >>"$CONF"
	pid=$(mainpid)
	journal_mark
	check "systemctl reload of a 200-character name and escape sequences fails" \
		bash -c "! systemctl reload ringsteerd.service"
	journalctl -a -o cat -u ringsteerd --no-pager --after-cursor="$MARK" >"$STATE/hostile.journal"
	check "journalctl names the long name's refusal" grep -q "bad backend name 'xxxx" "$STATE/hostile.journal"
	check "and the escapes, escaped (\\x1b)" grep -qF 'evil\x1b[2J\x1b' "$STATE/hostile.journal"
	check "no raw escape or bell byte in the journal ($(wc -l <"$STATE/hostile.journal") lines)" \
		no_raw_control "$STATE/hostile.journal"
	eq "the same daemon runs" "$(mainpid)" "$pid"
	eq "the backends are the running ones" "$(ringsteer -j backends | jq -c '[.backends[].name] | sort')" \
		'["cache-a","cache-b","cache-c","q-1","q-2","q-3"]'
	check "and steers" steers
	cp "$STATE/good.conf" "$CONF"

	say "# restart, kill -9 and the watchdog, each under load"
	eq "the unit's watchdog" "$(prop WatchdogUSec)" 1min
	# 20 s instead of the unit's 60 s for this part: the same mechanism
	# (the daemon pings at half of WATCHDOG_USEC), 40 s less of waiting
	# for the SIGSTOP round. The restart below starts the daemon with it.
	mkdir -p /run/systemd/system/ringsteerd.service.d
	printf '[Service]\nWatchdogSec=20s\n' >/run/systemd/system/ringsteerd.service.d/vmtest-watchdog.conf
	systemctl daemon-reload
	load_start
	load_flows
	pid=$(mainpid)
	check "systemctl restart" systemctl restart ringsteerd.service
	check "a new daemon, active" restarted_from "$pid"
	load_flows
	load_stop "systemctl restart"
	load_start
	load_flows
	pid=$(mainpid)
	kill -9 "$pid"
	check "kill -9: systemd starts it again (Restart=on-failure)" wait_for 120 restarted_from "$pid"
	load_flows
	load_stop "kill -9"
	load_start
	load_flows
	pid=$(mainpid)
	kill -STOP "$pid"
	start=$SECONDS
	check "SIGSTOP: the watchdog kills and restarts it (WatchdogSec=20, a drop-in)" wait_for 240 restarted_from "$pid"
	say "  restarted after $((SECONDS - start)) s"
	load_flows
	load_stop "watchdog"
	rm -r /run/systemd/system/ringsteerd.service.d
	systemctl daemon-reload
	check "steers after the restarts" steers

	say "# a package upgrade ($v1 -> $v2) under load"
	load_start
	qload_start ""
	load_flows
	pid=$(mainpid)
	check "apt-get install ./ringsteer ($v2)" \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y "$T/ringsteer_v2.deb"
	eq "installed version" "$(dpkg-query -W -f '${Version}' ringsteer)" "$v2"
	check "the upgrade restarted the daemon" wait_for 120 restarted_from "$pid"
	check "steers after the upgrade" steers
	load_stop "upgrade"
	qload_stop "upgrade"
	check "the configuration survived the upgrade" cmp "$CONF" "$STATE/good.conf"

	say "# a rollback to the previous release ($vp, an earlier ABI) under load"
	check "drain cache-b" ringsteer backend drain cache-b
	check "weight cache-a 3" ringsteer backend weight cache-a 3
	load_start
	qload_start q-1
	load_flows
	pid=$(mainpid)
	tc_before=$(tc_prog)
	journal_mark
	start=$SECONDS
	# rs-backend@q1 restarts in the rollback's gap: this data plane moved
	# aside and steering with no daemon, the earlier one not started yet
	# (the prerm's drop-in is there until that one is ready).
	dropin=/run/systemd/system/ringsteerd.service.d/50-ringsteer-rollback.conf
	(wait_for 300 test -e "$dropin" && systemctl restart rs-backend@q1.service &&
		say "  rs-backend@q1 restarted at $(date +%T.%N)") &
	q1pid=$!
	check "apt-get install --allow-downgrades ./ringsteer ($vp)" \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades "$T/ringsteer_prev.deb"
	check "rs-backend@q1 restarted while the retiring data plane steered alone" wait "$q1pid"
	eq "installed version" "$(dpkg-query -W -f '${Version}' ringsteer)" "$vp"
	check "the earlier release's daemon started (not a restart loop)" wait_for 120 restarted_from "$pid"
	say "  active $((SECONDS - start)) s after apt-get began"
	check "it steers, each client where its lookup says" wait_for 120 steers
	check "q-1 has its flows back" wait_for 120 quic_home 1
	load_stop "rollback to $vp"
	qload_stop "rollback to $vp"
	check "its journal: the rollback's retire step ran" \
		grep -q "ringsteer rollback: the data plane of ABI [0-9]* is retired" \
		<(journalctl -u ringsteerd --no-pager --after-cursor="$MARK")
	# 0.2.0 takes no filter whose program is not its own, and retries
	# until the place is free: the retire step puts its program in place
	# of the retired one (removing ours left lo without a steer_tc until
	# the retry: 2 and 5 datagrams on a wrong backend in two runs).
	check "its journal: the retired steer_tc on lo handed to $vp's program in place" \
		grep -q "ringsteer rollback: steer_tc on lo handed to $vp's program in place" \
		<(journalctl -u ringsteerd --no-pager --after-cursor="$MARK")
	eq "one steer_tc filter on lo" "$(tc_ours)" 1
	check "it is $vp's program, not the retired one ($tc_before)" tc_replaced "$tc_before"
	eq "the drain was carried back" "$(ringsteer -j backends | jq -r '.backends[] | select(.name == "cache-b") | .op')" drain
	eq "the weight was carried back" "$(ringsteer -j backends | jq -c '.backends[] | select(.name == "cache-a") | [.weight, .weight_override]')" "[3,true]"
	eq "one sk_lookup program in the netns" "$(sk_lookup_links)" 1
	check "nothing left pinned aside" bash -c "! ls -d /sys/fs/bpf/ringsteer-abi* 2>/dev/null"
	check "the rollback's drop-in is gone" test ! -e /run/systemd/system/ringsteerd.service.d/50-ringsteer-rollback.conf

	say "# the upgrade from the previous release ($vp) to this one, across the ABI, under load"
	load_start
	qload_start q-1
	load_flows
	pid=$(mainpid)
	tc_before=$(tc_prog)
	journal_mark
	# rs-backend@q1 restarts as the earlier daemon goes and this one
	# builds its data plane beside the earlier one.
	(wait_for 300 bash -c "[[ \$(systemctl show -P MainPID ringsteerd) != $pid ]]" &&
		systemctl restart rs-backend@q1.service &&
		say "  rs-backend@q1 restarted at $(date +%T.%N)") &
	q1pid=$!
	check "apt-get install ./ringsteer ($v2)" \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y "$T/ringsteer_v2.deb"
	check "rs-backend@q1 restarted as the daemons changed hands" wait "$q1pid"
	eq "installed version" "$(dpkg-query -W -f '${Version}' ringsteer)" "$v2"
	check "the upgrade restarted the daemon" wait_for 120 restarted_from "$pid"
	check "its journal: the earlier data plane retired" \
		wait_for 120 bash -c "journalctl -u ringsteerd --no-pager --after-cursor='$MARK' | grep -q 'upgrade: from ABI [0-9]* done'"
	check "steers after the upgrade" steers
	eq "one steer_tc filter on lo" "$(tc_ours)" 1
	check "it is this release's program, not $vp's ($tc_before)" tc_replaced "$tc_before"
	check "q-1 has its flows back" wait_for 120 quic_home 1
	say "# still under load: a reload of a changed weight while rs-backend@q1 restarts, then a daemon restart"
	sed -i '/^\[backend cache-c\]$/,/^\[/ s/^weight = 1$/weight = 2/' "$CONF"
	systemctl restart rs-backend@q1.service &
	q1pid=$!
	check "systemctl reload (cache-c: weight 2)" systemctl reload ringsteerd.service
	check "rs-backend@q1 restarted beside it" wait "$q1pid"
	eq "cache-c's weight" "$(be_json cache-c .weight)" 2
	pid=$(mainpid)
	check "systemctl restart ringsteerd" systemctl restart ringsteerd.service
	check "a new daemon, active" restarted_from "$pid"
	check "q-1 has its flows back" wait_for 120 quic_home 1
	check "every QUIC flow at home" quic_all_home
	load_stop "upgrade from $vp"
	qload_stop "upgrade from $vp, reload, restarts"
	eq "the drain was carried" "$(ringsteer -j backends | jq -r '.backends[] | select(.name == "cache-b") | .op')" drain
	eq "the weight was carried" "$(ringsteer -j backends | jq -c '.backends[] | select(.name == "cache-a") | [.weight, .weight_override]')" "[3,true]"
	eq "one sk_lookup program in the netns" "$(sk_lookup_links)" 1
	check "nothing left pinned aside" bash -c "! ls -d /sys/fs/bpf/ringsteer-abi* 2>/dev/null"
	check "undrain cache-b" ringsteer backend undrain cache-b

	say "# QUIC backends' restarts under load: q-1 gracefully (generations), q-3 hard (restart_grace)"
	# A worker G > 1 answers as q-N.G (backend.sh): the load's check
	# counts those answers at home, these checks tell the processes apart.
	sed -i '/^\[service quic\]$/a generations = on\nrestart_grace = 15s' "$CONF"
	cp "$CONF" "$STATE/gen.conf"
	pid=$(mainpid)
	journal_mark
	check "systemctl reload turning generations on is refused (the flow table is made at start)" \
		bash -c "! systemctl reload ringsteerd.service"
	check "journalctl -p err says to restart ringsteerd" grep -q "restart ringsteerd" <(errors_since_mark)
	eq "the same daemon runs" "$(mainpid)" "$pid"
	check "systemctl restart ringsteerd" systemctl restart ringsteerd.service
	check "a new daemon, active" restarted_from "$pid"
	eq "the quic service: generations, restart_grace" \
		"$(ringsteer -j services | jq -c '.services[] | select(.name == "quic") | [.generations, .restart_grace_ms]')" "[true,15000]"
	check "every QUIC flow at home" wait_for 120 quic_all_home
	load_start
	qload_start ""
	load_flows
	# Each of q-1's flows is recorded on the first worker before the
	# second one binds: two whole rounds of the load first.
	check "two rounds of the QUIC load" wait_for 120 qrounds_past 0 2
	check "systemctl reload rs-backend@q1: a second worker binds beside the first" \
		systemctl reload rs-backend@q1.service
	check "q-1: generation 2 working, generation 1 draining" wait_for 120 bash -c \
		"ringsteer -j backends | jq -e '.backends[] | select(.name == \"q-1\") | .sockets[0].generations | length == 2 and .[0].state == \"draining\" and .[1].state == \"working\"'"
	ringsteer backends | grep -A3 '^q-1 ' | sed 's/^/VMTEST:      | /'
	from=$(wc -l <"$STATE/quic.out")
	r0=$(qrounds)
	check "three rounds of the load with both workers up" wait_for 120 qrounds_past "$r0" 3
	"$T/quic_client" --target 198.18.0.10:4433 --src-base 198.18.3.200 --port-base 45000 \
		--count 4 --dcid "${CID[1]}" >"$STATE/newflows.out" 2>/dev/null
	eq "new flows of q-1 during the overlap: answered by worker 2" \
		"$(awk '$3 == "q-1.2"' "$STATE/newflows.out" | wc -l)" 4
	check "q-1: generation 1 still draining" bash -c \
		"ringsteer -j backends | jq -e '.backends[] | select(.name == \"q-1\") | .sockets[0].generations[0].state == \"draining\"'"
	to=$(wc -l <"$STATE/quic.out")
	overlap=$(sed -n "$((from + 1)),${to}p" "$STATE/quic.out")
	eq "overlap: q-1's established flows answered by worker 2" \
		"$(awk '$1 ~ /^198\.18\.3\.1[0-9]$/ && $3 == "q-1.2"' <<<"$overlap" | wc -l)" 0
	check "overlap: and by worker 1 ($(awk '$1 ~ /^198\.18\.3\.1[0-9]$/ && $3 == "q-1"' <<<"$overlap" | wc -l) answers)" \
		test "$(awk '$1 ~ /^198\.18\.3\.1[0-9]$/ && $3 == "q-1"' <<<"$overlap" | wc -l)" -gt 0
	check "systemctl kill -s USR1 rs-backend@q1: the drain is over, worker 1 exits" \
		systemctl kill -s USR1 --kill-whom=main rs-backend@q1.service
	check "q-1: one generation left" wait_for 120 bash -c \
		"ringsteer -j backends | jq -e '.backends[] | select(.name == \"q-1\") | .sockets[0].generations | length == 1'"
	r0=$(qrounds)
	check "two rounds of the load after" wait_for 120 qrounds_past "$r0" 2
	out=$(quic_flows 1 1000 2>/dev/null)
	eq "q-1's established flows now answered by worker 2" "$(awk '$3 == "q-1.2"' <<<"$out" | wc -l)" 4
	q3=$(be_json q-3 '.sockets[0].cookie')
	check "systemctl restart rs-backend@q3 (a hard restart: no socket for a while)" \
		systemctl restart rs-backend@q3.service
	check "q-3: its new socket taken (not cookie $q3)" wait_for 120 bash -c \
		"ringsteer -j backends | jq -e '.backends[] | select(.name == \"q-3\") | .has_socket and .sockets[0].cookie != $q3'"
	r0=$(qrounds)
	check "two rounds of the load after" wait_for 120 qrounds_past "$r0" 2
	say "  quic service: $(ringsteer -j services | jq -c '.services[] | select(.name == "quic") | .stats | {held, gen_handovers, flows_full, cookie_down}')"
	load_stop "generations"
	qload_stop "graceful restart of q-1, hard restart of q-3"
	journalctl -u ringsteerd -o cat --no-pager --after-cursor="$MARK" >"$STATE/gen.journal"
	check "journal: q-3's socket gone, its flows held (restart_grace)" \
		grep -q "backend q-3: socket gone; its flows wait for it up to 15 s (restart_grace)" "$STATE/gen.journal"
	check "journal: and back" grep -q "backend q-3: socket .* back after [0-9]* ms" "$STATE/gen.journal"
	# The squatter below stops q-2 for good: no grace for it.
	sed -i '/^restart_grace = 15s$/d' "$CONF"
	check "systemctl reload (restart_grace off for the squatter)" systemctl reload ringsteerd.service

	say "# a local user squats stopped backends' addresses (TCP and UDP): owner = their uids"
	ub=$(uid_of rs-backend@b.service)
	uq=$(uid_of rs-backend@q2.service)
	check "the backends' DynamicUser uids ($ub, $uq)" test -n "$ub" -a -n "$uq"
	sed -i -e "/^\[backend cache-b\]\$/a owner = $ub" -e "/^\[backend q-2\]\$/a owner = $uq" "$CONF"
	check "systemctl reload (owner = for cache-b and q-2)" systemctl reload ringsteerd.service
	eq "cache-b's owner, from the file" "$(be_json cache-b '.owner | "\(.uid) \(.from)"')" "$ub owner"
	eq "q-2's owner, from the file" "$(be_json q-2 '.owner | "\(.uid) \(.from)"')" "$uq owner"
	check "useradd rs-squatter (a plain user)" useradd -M -s /usr/sbin/nologin rs-squatter
	us=$(id -u rs-squatter)
	check "systemctl stop rs-backend@b rs-backend@q2" systemctl stop rs-backend@b.service rs-backend@q2.service
	load_start
	qload_start q-2
	load_flows
	setpriv --reuid=rs-squatter --regid=rs-squatter --init-groups -- "$T/rs_backend" --name squatter \
		--tcp 127.0.0.1:8082 --tcp "[::1]:8082" --udp 127.0.1.2:4433 >"$STATE/squatter.out" 2>&1 &
	squatter=$!
	check "the squatter's sockets refused (cache-b: both families, q-2)" wait_for 120 bash -c \
		"ringsteer -j backends | jq -e '[.backends[] | select((.name == \"cache-b\" and .owner.refused >= 2) or (.name == \"q-2\" and .owner.refused >= 1)) | select(.owner.refused_uid == $us)] | length == 2'"
	check "the squatter listens (uid $us)" bash -c "ss -Htlnp 'sport = 8082' | grep -q 'pid=$squatter,'"
	"$T/rs_client" --target 198.18.0.10:80 --src-base 198.18.4.1 --count 40 --timeout-ms 3000 >"$STATE/squat.tcp" 2>&1
	eq "40 TCP clients answered" "$(awk '$3 ~ /^cache-/' "$STATE/squat.tcp" | wc -l)" 40
	eq "TCP clients that reached the squatter" "$(awk '$3 == "squatter"' "$STATE/squat.tcp" | wc -l)" 0
	quic_flows 2 1000 >"$STATE/squat.quic" 2>/dev/null
	eq "q-2's 4 flows answered" "$(awk '$3 !~ /^ERR/' "$STATE/squat.quic" | wc -l)" 4
	eq "q-2's flows that reached the squatter" "$(awk '$3 == "squatter"' "$STATE/squat.quic" | wc -l)" 0
	load_stop "squatted"
	qload_stop "squatted"
	check "journal: the refusal names the squatter's uid" \
		grep -q "belongs to uid $us" <(journalctl -u ringsteerd --no-pager -n 200)
	kill "$squatter"
	wait "$squatter"
	check "systemctl start rs-backend@b rs-backend@q2" systemctl start rs-backend@b.service rs-backend@q2.service
	check "their own sockets taken again" wait_for 120 bash -c \
		"[[ \$(ringsteer -j backends | jq '[.backends[] | select(.has_socket)] | length') == 6 ]]"
	check "q-2 has its flows back" wait_for 120 quic_home 2
	check "steers" steers

	fleet_member

	say "# reboot (up $(cut -d' ' -f1 /proc/uptime) s)"
	echo 2 >"$STATE/phase"
	sync
	systemctl reboot
	exit 0
fi

if [[ $phase == 2 ]]; then
	check "after the reboot: ringsteerd is active" wait_for 120 active
	check "and steers" wait_for 120 steers
	check "edge-1 rejoined its fleet: ringsteer fleet ready" ringsteer fleet ready 120

	say "# apt remove: the daemon stops, steering goes on"
	load_start
	load_flows
	check "apt-get remove ringsteer" \
		env DEBIAN_FRONTEND=noninteractive apt-get remove -y ringsteer
	eq "the daemon is stopped" "$(systemctl is-active ringsteerd.service)" inactive
	check "the binaries are gone" test ! -e /usr/sbin/ringsteerd -a ! -e /usr/bin/ringsteer
	check "the configuration stays" test -s "$CONF"
	check "the pins stay" test -e /sys/fs/bpf/ringsteer/steer_lookup_link
	check "12 clients still answered" answered
	load_stop "remove"

	say "# apt purge: the data plane and the configuration go"
	check "apt-get purge ringsteer" \
		env DEBIAN_FRONTEND=noninteractive apt-get purge -y ringsteer
	check "the pins are gone" test ! -e /sys/fs/bpf/ringsteer
	check "no sk_lookup link is left" bash -c "out=\$(bpftool link show) && ! grep -q sk_lookup <<<\"\$out\""
	check "the configuration is gone" test ! -e "$CONF"
	check "nothing is steered: 198.18.0.10:80 refuses" bash -c "! $T/rs_client --target 198.18.0.10:80 --src-base 198.18.1.1 --count 1 --timeout-ms 2000"
	finish 0
fi
bad "unknown phase $phase"
finish 1

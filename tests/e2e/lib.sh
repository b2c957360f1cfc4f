# shellcheck shell=bash
# Variables are set here for the scripts that source this file.
# shellcheck disable=SC2034
# SPDX-License-Identifier: MIT
# Assertions and helpers shared by the end-to-end suites. Source after
# scripts/netns.sh.

E2E_PASS=0
E2E_FAIL=0
E2E_NAME=$(basename "$0" .sh)

e2e_pass() {
	E2E_PASS=$((E2E_PASS + 1))
	echo "  ok   - $*"
}

e2e_fail() {
	E2E_FAIL=$((E2E_FAIL + 1))
	echo "  FAIL - $*"
}

# e2e_check DESCRIPTION CMD...: pass if CMD succeeds.
e2e_check() {
	local what=$1
	shift
	if "$@" >/dev/null; then
		e2e_pass "$what"
	else
		e2e_fail "$what"
	fi
}

# e2e_eq DESCRIPTION GOT WANT
e2e_eq() {
	if [[ "$2" == "$3" ]]; then
		e2e_pass "$1 ($2)"
	else
		e2e_fail "$1: got '$2', want '$3'"
	fi
}

# e2e_summary: print the suite's result; returns non-zero on any failure.
e2e_summary() {
	echo "$E2E_NAME: $E2E_PASS passed, $E2E_FAIL failed"
	[[ $E2E_FAIL -eq 0 && $E2E_PASS -gt 0 ]]
}

# rs_client output is "SRC ROUND BACKEND|ERR:..." per attempt.
# e2e_errors FILE: number of failed attempts.
e2e_errors() {
	awk '$3 ~ /^ERR/ { n++ } END { print n + 0 }' "$1"
}

# e2e_unstable FILE: sources that reached more than one backend.
e2e_unstable() {
	awk '$3 !~ /^ERR/ { seen[$1 " " $3] = 1 }
	     END { for (k in seen) { split(k, a, " "); n[a[1]]++ }
		   for (s in n) if (n[s] > 1) bad++; print bad + 0 }' "$1"
}

# e2e_mapping FILE: "SRC BACKEND" for round 0, sorted.
e2e_mapping() {
	awk '$2 == 0 && $3 !~ /^ERR/ { print $1, $3 }' "$1" | sort
}

# e2e_shares MAPPING_FILE: "BACKEND COUNT" lines.
e2e_shares() {
	awk '{ n[$2]++ } END { for (b in n) print b, n[b] }' "$1" | sort
}

# e2e_wait_for FILE PATTERN [TIMEOUT_S]: wait for a line matching PATTERN,
# TIMEOUT_S times E2E_SLOW (4 under make vmtest's TCG, where loading
# steer_tc alone takes seconds).
e2e_wait_for() {
	local file=$1 pattern=$2 timeout=$((${3:-10} * ${E2E_SLOW:-1})) i
	for ((i = 0; i < timeout * 20; i++)); do
		grep -q -- "$pattern" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "timed out waiting for '$pattern' in $file; its end:" >&2
	tail -n 15 "$file" 2>/dev/null | sed 's/^/    /' >&2
	return 1
}

# e2e_gone PID: the process PID, which this suite started, has exited.
e2e_gone() { ! _rs_alive "$1"; }

# e2e_eq_within TIMEOUT_S DESCRIPTION WANT CMD...: e2e_eq of CMD's output
# and WANT, as soon as they agree or else after TIMEOUT_S seconds.
e2e_eq_within() {
	local timeout=$1 what=$2 want=$3 i got
	shift 3
	for ((i = 0; ; i++)); do
		got=$("$@" 2>/dev/null) || true
		[[ $got == "$want" ]] && break
		((i < timeout * 10)) || break
		sleep 0.1
	done
	e2e_eq "$what" "$got" "$want"
}

# e2e_setup PREFIX: namespaces for this run, cleanup on exit (processes,
# the daemon's pins via --detach, namespaces), and the paths every suite
# uses: CONF, OUT (logs and results), SOCK (control socket), BPFFS.
e2e_setup() {
	RUN=$1$$
	BPFFS=/sys/fs/bpf/rs-e2e-$RUN
	rs_install_cleanup
	# shellcheck disable=SC2016 # expanded when the hook runs
	RS_CLEANUP_HOOK='[[ -f $CONF ]] && build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'
	rs_ns_setup "$RUN"
	CONF=$RS_BG_DIR/ringsteer.conf
	OUT=$RS_BG_DIR
	SOCK=$RS_BG_DIR/ctl.sock
}

# e2e_conf_global [LINE...]: start $CONF with the [global] section of the
# run (its bpffs and control socket) and any further global LINEs.
e2e_conf_global() {
	{
		echo "[global]"
		echo "bpffs = $BPFFS"
		echo "control_socket = $SOCK"
		(($#)) && printf '%s\n' "$@"
		echo
	} >"$CONF"
}

# e2e_conf_section HEADER [LINE...]: a section [HEADER] with LINEs
# (key = value), appended to $CONF.
e2e_conf_section() {
	printf '\n[%s]\n' "$1" >>"$CONF"
	shift
	if (($#)); then printf '%s\n' "$@" >>"$CONF"; fi
}

# e2e_conf_quic [LINE...]: a service quic (QUIC cookies: a 2-byte server ID
# in an 8-byte connection ID) on 198.18.0.10:443, with LINEs added.
e2e_conf_quic() {
	e2e_conf_section "service quic" "protocol = udp" "listen = 198.18.0.10:443" \
		"cookie = quic" "quic_server_id_len = 2" "quic_cid_len = 8" "$@"
}

# e2e_conf_quic_backend I [LINE...]: backend q-I of service quic on
# 127.0.0.I:443, server ID I, with LINEs added.
e2e_conf_quic_backend() {
	e2e_conf_section "backend q-$1" "service = quic" "address = 127.0.0.$1:443" \
		"$(printf 'server_id = 0x%04x' "$1")" "${@:2}"
}

# e2e_conf_dns [LINE...]: a service dns on 198.18.0.10:5353 and
# [2001:db8::10]:5353 (IPv6 clients keyed by their whole address), with
# LINEs added.
e2e_conf_dns() {
	e2e_conf_section "service dns" "protocol = udp" "listen = 198.18.0.10:5353" \
		"listen = [2001:db8::10]:5353" "prefix6 = 128" "$@"
}

# e2e_conf_dns_backend I [LINE...]: backend d-I of service dns on
# 127.0.0.I:5353 and [2001:db8::1:I]:5353, no health check, with LINEs
# added.
e2e_conf_dns_backend() {
	e2e_conf_section "backend d-$1" "service = dns" "address = 127.0.0.$1:5353" \
		"address = [2001:db8::1:$1]:5353" "check = none" "${@:2}"
}

# e2e_conf_web1: a service web on 198.18.0.10:80 (vnodes 64) with one
# backend web-1 on 127.0.0.1:8081, appended to $CONF: the smallest steered
# setup, for suites about the daemon itself rather than the steering.
e2e_conf_web1() {
	cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 64

[backend web-1]
service = web
address = 127.0.0.1:8081
CONF
}

# e2e_start_web1 [LINE...]: $CONF with the run's [global] (and LINEs in
# it) and e2e_conf_web1, then its backend web-1 (be1) and ringsteerd
# (daemon; its PID in DAEMON) started and answering: for suites about the
# daemon and the CLI.
e2e_start_web1() {
	e2e_conf_global "$@"
	e2e_conf_web1
	rs_bg_start be1 rs_in_edge build/tools/rs_backend --name web-1 \
		--tcp 127.0.0.1:8081
	rs_bg_wait_ready be1
	rs_bg_start daemon rs_in_edge "$RS_DAEMON" -c "$CONF"
	DAEMON=$RS_BG_LAST_PID
	e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10
}

# e2e_held_backends SERVICE N [ARG...]: backends SERVICE-1..N on
# 127.0.0.1:8081.., each a real process holding every connection open
# (rs_backend --hold ARG...), started as be1..beN and appended to $CONF
# without health checks.
e2e_held_backends() {
	local svc=$1 n=$2 i
	shift 2
	for ((i = 1; i <= n; i++)); do
		printf '\n[backend %s-%d]\nservice = %s\naddress = 127.0.0.1:808%d\ncheck = none\n' \
			"$svc" "$i" "$svc" "$i" >>"$CONF"
		rs_bg_start "be$i" rs_in_edge build/tools/rs_backend \
			--name "$svc-$i" --tcp "127.0.0.1:808$i" --hold "$@"
		rs_bg_wait_ready "be$i"
	done
}

# The load gauge as the CLI reports it, and as ss counts it.
# The CLI on this run's daemon: tables, and JSON (e2e_json is its older
# name).
rsctl() { build/ringsteer -s "$SOCK" "$@"; }
rsjson() { build/ringsteer -s "$SOCK" -j "$@"; }
e2e_json() { rsjson "$@"; }
e2e_active_of() {
	e2e_json backends | jq ".backends[] | select(.name == \"$1\") | .active"
}
e2e_svc_active() { e2e_json services | jq '.services[0].active'; }
# e2e_ss_of N ADDR:PORT: established connections to ADDR:PORT held by
# backend process beN.
e2e_ss_of() {
	local pid=${RS_BG_PID[be$1]}
	rs_in_edge ss -Htnp state established src "$2" |
		grep -c "pid=$pid," || true
}
# e2e_gauge_matches SERVICE N ADDR:PORT: every backend's `active` equals
# ss's count for its process.
e2e_gauge_matches() {
	local i a s ok=1
	for ((i = 1; i <= $2; i++)); do
		a=$(e2e_active_of "$1-$i")
		s=$(e2e_ss_of "$i" "$3")
		[[ $a == "$s" ]] || {
			echo "  $1-$i: active $a, ss $s" >&2
			ok=0
		}
	done
	[[ $ok == 1 ]]
}

# e2e_client_prefixes: 64 client /24 prefixes of our own, 198.18.64.0/18,
# routed locally in the client namespace and back to it from the edge
# (rs_idle --src picks one /24 per affinity key from there).
e2e_client_prefixes() {
	ip -n "$RS_NS_CLIENT" route add local 198.18.64.0/18 dev lo
	ip -n "$RS_NS_EDGE" route add 198.18.64.0/18 via "$RS_CLIENT_IP4"
}

# e2e_cgroup2 NAME: make the cgroup NAME at the top of the cgroup2
# hierarchy, through the host's mount or, where there is none or it is
# read-only (a container's), one of our own; CG2 is that mount. Removed
# at cleanup after the processes in it (and below: e2e_cgroup2_sub).
e2e_cgroup2() {
	# findmnt fails where nothing is mounted (a guest without systemd).
	CG2=$(findmnt -rn -t cgroup2 -o TARGET | head -1 || true)
	if [[ -z $CG2 ]] || ! mkdir "$CG2/$1" 2>/dev/null; then
		CG2=$OUT/cgroup2
		mkdir -p "$CG2"
		mount -t cgroup2 cgroup2 "$CG2"
		mkdir "$CG2/$1"
	fi
	E2E_CGROUPS=("$CG2/$1")
	RS_CLEANUP_HOOK+="; e2e_cgroup2_remove"
	# Our own mount goes after the cgroups in it.
	[[ $CG2 == "$OUT/cgroup2" ]] &&
		RS_CLEANUP_HOOK+="; umount -l '$CG2' 2>/dev/null || true"
	return 0
}
# e2e_cgroup2_sub PATH: a cgroup below the one e2e_cgroup2 made.
e2e_cgroup2_sub() {
	mkdir "$CG2/$1"
	E2E_CGROUPS=("$CG2/$1" "${E2E_CGROUPS[@]}")
}
e2e_cgroup2_remove() {
	rs_until 2 rmdir "${E2E_CGROUPS[@]}" || true
}
# e2e_in_cgroup NAME DIR CMD...: start CMD in the edge namespace, in the
# cgroup DIR.
e2e_in_cgroup() {
	local name=$1 dir=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner shell
	rs_bg_start "$name" sh -c 'echo $$ >"$1/cgroup.procs" && shift &&
		exec "$@"' sh "$dir" nsenter --net="/run/netns/$RS_NS_EDGE" -- "$@"
}
# e2e_sockops_at DIR: our steer_sockops (by its id, $PROG: another test's
# daemon may sit at the root) is attached at the cgroup DIR. (bpftool
# names the attach type sock_ops or cgroup_sock_ops by version.)
e2e_sockops_at() {
	local progs
	progs=$(bpftool -j cgroup show "$1" 2>/dev/null) || progs='[]'
	jq -e --argjson id "$PROG" 'map(select(.id == $id and
		(.attach_type | test("sock_ops$")))) | length == 1' \
		<<<"${progs:-[]}" >/dev/null
}
e2e_sockops_not_at() { ! e2e_sockops_at "$1"; }

# shellcheck shell=bash
# Variables are set here for the scripts that source this file.
# shellcheck disable=SC2034
# SPDX-License-Identifier: MIT
#
# Network namespace helpers for the ringsteer end-to-end tests and the demo.
# Source this file; it defines functions and RS_* variables only.
#
# Topology made by rs_ns_setup RUNID:
#
#   rsc-RUNID (client)                      rse-RUNID (edge)
#   rs-c 198.18.254.2/24  <--- veth --->    rs-e 198.18.254.1/24
#        2001:db8:254::2/64                      2001:db8:254::1/64
#   local 198.18.1.0/24, 198.18.2.0/24,     local 198.18.0.0/24,
#         2001:db8:1::/64 (client sources)        2001:db8::/64 (services)
#
# Client source and service addresses are made local with "local" routes
# rather than assigned, so any number of them exist without configuration;
# sockets bind them with IP_FREEBIND. There is no default route anywhere,
# so nothing sent inside these namespaces can leave them.
#
# Typical use:
#   . scripts/netns.sh
#   rs_install_cleanup
#   rs_ns_setup "$$"
#   rs_bg_start web1 rs_in_edge build/tools/rs_backend --name web1 --tcp ...
#   rs_bg_wait_ready web1
#   rs_in_client build/tools/rs_client --target 198.18.0.10:80 ...

if [[ -n ${_RS_NETNS_SH_LOADED:-} ]]; then
	return 0
fi
_RS_NETNS_SH_LOADED=1

# Set by rs_ns_setup.
RS_NS_CLIENT=""
RS_NS_EDGE=""
RS_RUNID=""

RS_IF_CLIENT=rs-c
RS_IF_EDGE=rs-e
RS_EDGE_IP4=198.18.254.1
RS_CLIENT_IP4=198.18.254.2
RS_EDGE_IP6=2001:db8:254::1
RS_CLIENT_IP6=2001:db8:254::2

# Background processes: PIDs in start order, and name -> PID.
RS_BG_PIDS=()
declare -gA RS_BG_PID=()
RS_BG_LAST_PID=""
# Where rs_bg_start puts NAME.out / NAME.err. Set it before rs_ns_setup to
# keep logs somewhere specific; otherwise rs_ns_setup makes a temporary
# directory, which a successful cleanup removes.
RS_BG_DIR=${RS_BG_DIR:-}
_RS_BG_DIR_AUTO=""
# The ringsteerd that suites and demos run (`make tsan` points it at
# build-tsan/ringsteerd); --check and --detach stay build/ringsteerd's.
RS_DAEMON=${RS_DAEMON:-build/ringsteerd}

# Extra cleanup, eval'ed by rs_cleanup_on_exit after the background
# processes are stopped but before the namespaces are deleted.
RS_CLEANUP_HOOK=${RS_CLEANUP_HOOK:-}
_RS_CLEANUP_DONE=""

_rs_err() {
	echo "${FUNCNAME[1]}: $*" >&2
}

# Runs a setup step, naming it if it fails.
_rs_step() {
	if ! "$@"; then
		echo "rs_ns_setup: failed: $*" >&2
		return 1
	fi
}

_rs_need_ns() {
	if [[ -z $RS_NS_CLIENT || -z $RS_NS_EDGE ]]; then
		echo "${FUNCNAME[1]}: no namespaces; call rs_ns_setup first" >&2
		return 1
	fi
}

_rs_ns_link() {
	local c=$RS_NS_CLIENT e=$RS_NS_EDGE

	# Created inside the namespaces so names never clash on the host.
	_rs_step ip -n "$c" link add "$RS_IF_CLIENT" type veth \
		peer name "$RS_IF_EDGE" netns "$e" || return 1
	_rs_step ip -n "$c" link set lo up || return 1
	_rs_step ip -n "$e" link set lo up || return 1
	# Neighbour solicitations for packets from non-assigned sources (the
	# service and client addresses) are sent from the link-local address;
	# while DAD keeps it tentative (~1 s) they are not sent at all and the
	# first packets of a test are lost. nodad does not cover link-local.
	_rs_step nsenter --net="/run/netns/$c" -- \
		sysctl -qw "net.ipv6.conf.$RS_IF_CLIENT.accept_dad=0" || return 1
	_rs_step nsenter --net="/run/netns/$e" -- \
		sysctl -qw "net.ipv6.conf.$RS_IF_EDGE.accept_dad=0" || return 1
	# Up before addressing: IPv6 "via" routes need a usable on-link
	# prefix route.
	_rs_step ip -n "$c" link set "$RS_IF_CLIENT" up || return 1
	_rs_step ip -n "$e" link set "$RS_IF_EDGE" up || return 1
	_rs_step ip -n "$c" addr add "$RS_CLIENT_IP4/24" dev "$RS_IF_CLIENT" ||
		return 1
	_rs_step ip -n "$e" addr add "$RS_EDGE_IP4/24" dev "$RS_IF_EDGE" ||
		return 1
	_rs_step ip -n "$c" -6 addr add "$RS_CLIENT_IP6/64" \
		dev "$RS_IF_CLIENT" nodad || return 1
	_rs_step ip -n "$e" -6 addr add "$RS_EDGE_IP6/64" \
		dev "$RS_IF_EDGE" nodad || return 1
}

_rs_ns_routes() {
	local c=$RS_NS_CLIENT e=$RS_NS_EDGE

	_rs_step ip -n "$c" route add 198.18.0.0/24 via "$RS_EDGE_IP4" ||
		return 1
	_rs_step ip -n "$c" -6 route add 2001:db8::/64 via "$RS_EDGE_IP6" ||
		return 1
	_rs_step ip -n "$c" route add local 198.18.1.0/24 dev lo || return 1
	_rs_step ip -n "$c" route add local 198.18.2.0/24 dev lo || return 1
	_rs_step ip -n "$c" -6 route add local 2001:db8:1::/64 dev lo ||
		return 1

	_rs_step ip -n "$e" route add 198.18.1.0/24 via "$RS_CLIENT_IP4" ||
		return 1
	_rs_step ip -n "$e" route add 198.18.2.0/24 via "$RS_CLIENT_IP4" ||
		return 1
	_rs_step ip -n "$e" -6 route add 2001:db8:1::/64 via "$RS_CLIENT_IP6" ||
		return 1
	_rs_step ip -n "$e" route add local 198.18.0.0/24 dev lo || return 1
	_rs_step ip -n "$e" -6 route add local 2001:db8::/64 dev lo || return 1
}

# rs_ns_setup RUNID: create the client and edge namespaces (see above) and
# set RS_NS_CLIENT / RS_NS_EDGE. On failure nothing is left behind.
rs_ns_setup() {
	local runid=${1:-}

	if [[ ! $runid =~ ^[A-Za-z0-9_.-]+$ ]]; then
		_rs_err "usage: rs_ns_setup RUNID (letters, digits, _ . -)"
		return 1
	fi
	if [[ -n $RS_NS_CLIENT ]]; then
		_rs_err "namespaces $RS_NS_CLIENT/$RS_NS_EDGE already set up"
		return 1
	fi
	if [[ -e /run/netns/rsc-$runid || -e /run/netns/rse-$runid ]]; then
		_rs_err "namespace rsc-$runid or rse-$runid already exists"
		return 1
	fi
	RS_RUNID=$runid
	RS_NS_CLIENT=rsc-$runid
	RS_NS_EDGE=rse-$runid
	# Made now so callers can put paths under $RS_BG_DIR in commands.
	if ! _rs_bg_dir || ! _rs_step ip netns add "$RS_NS_CLIENT" ||
		! _rs_step ip netns add "$RS_NS_EDGE" ||
		! _rs_ns_link || ! _rs_ns_routes; then
		rs_ns_teardown
		return 1
	fi
}

# rs_ns_teardown: delete both namespaces; safe to call repeatedly.
rs_ns_teardown() {
	local ns

	for ns in "$RS_NS_CLIENT" "$RS_NS_EDGE"; do
		if [[ -n $ns && -e /run/netns/$ns ]]; then
			ip netns del "$ns" ||
				echo "rs_ns_teardown: cannot delete $ns" >&2
		fi
	done
	RS_NS_CLIENT=""
	RS_NS_EDGE=""
}

# nsenter rather than "ip netns exec": the latter remounts /sys in a new
# mount namespace, which hides the host's bpffs at /sys/fs/bpf.
rs_in_client() {
	_rs_need_ns || return 1
	nsenter --net="/run/netns/$RS_NS_CLIENT" -- "$@"
}

rs_in_edge() {
	_rs_need_ns || return 1
	nsenter --net="/run/netns/$RS_NS_EDGE" -- "$@"
}

_rs_bg_dir() {
	if [[ -z $RS_BG_DIR ]]; then
		RS_BG_DIR=$(mktemp -d /tmp/rs-bg.XXXXXX) || return 1
		_RS_BG_DIR_AUTO=$RS_BG_DIR
	fi
	mkdir -p "$RS_BG_DIR"
}

# rs_bg_start NAME CMD...: run CMD in the background with stdout in
# $RS_BG_DIR/NAME.out and stderr in $RS_BG_DIR/NAME.err; the PID is
# recorded (and left in RS_BG_LAST_PID). CMD must be a program, or
# rs_in_client / rs_in_edge followed by a program: those are turned into
# nsenter, which execs, so the recorded PID is the program itself.
rs_bg_start() {
	local name=${1:-} pid

	shift || true
	if [[ ! $name =~ ^[A-Za-z0-9_.-]+$ || $# -eq 0 ]]; then
		_rs_err "usage: rs_bg_start NAME CMD..."
		return 1
	fi
	if [[ -n ${RS_BG_PID[$name]:-} ]]; then
		_rs_err "name '$name' is already in use"
		return 1
	fi
	case $1 in
	rs_in_client | rs_in_edge)
		_rs_need_ns || return 1
		local ns=$RS_NS_EDGE
		[[ $1 == rs_in_client ]] && ns=$RS_NS_CLIENT
		shift
		set -- nsenter --net="/run/netns/$ns" -- "$@"
		;;
	esac
	if declare -F "$1" >/dev/null; then
		_rs_err "'$1' is a shell function; its PID could not be stopped"
		return 1
	fi
	_rs_bg_dir || return 1
	"$@" >"$RS_BG_DIR/$name.out" 2>"$RS_BG_DIR/$name.err" </dev/null &
	pid=$!
	RS_BG_PIDS+=("$pid")
	RS_BG_PID[$name]=$pid
	RS_BG_LAST_PID=$pid
}

# rs_bg_out NAME / rs_bg_err NAME: print the path of that output file.
rs_bg_out() {
	echo "$RS_BG_DIR/$1.out"
}

rs_bg_err() {
	echo "$RS_BG_DIR/$1.err"
}

# True while PID is one of our children and not a zombie; the parent check
# guards against signalling an unrelated process that reused the PID.
_rs_alive() {
	local stat state ppid

	# Not $(<file): a failed open there aborts a shell running with -e.
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	read -r state ppid _ <<<"${stat##*) }"
	[[ $state != Z && $ppid == "$$" ]]
}

# TERM, up to 2 s grace, then KILL; reaps everything.
_rs_stop_pids() {
	local pid i alive

	for pid in "$@"; do
		if _rs_alive "$pid"; then
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	for ((i = 0; i < 20; i++)); do
		alive=""
		for pid in "$@"; do
			_rs_alive "$pid" && alive=1 && break
		done
		[[ -z $alive ]] && break
		sleep 0.1
	done
	for pid in "$@"; do
		if _rs_alive "$pid"; then
			echo "rs: PID $pid ignored SIGTERM; sending SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	for pid in "$@"; do
		wait "$pid" 2>/dev/null || true
	done
	return 0
}

# rs_bg_stop NAME: stop one background process started as NAME.
rs_bg_stop() {
	local name=${1:-} pid i

	pid=${RS_BG_PID[$name]:-}
	if [[ -z $pid ]]; then
		_rs_err "no background process named '$name'"
		return 1
	fi
	_rs_stop_pids "$pid"
	unset "RS_BG_PID[$name]"
	for i in "${!RS_BG_PIDS[@]}"; do
		[[ ${RS_BG_PIDS[$i]} == "$pid" ]] && unset "RS_BG_PIDS[$i]"
	done
	RS_BG_PIDS=("${RS_BG_PIDS[@]}")
}

# rs_bg_stop_all: stop every process started by rs_bg_start, newest first.
rs_bg_stop_all() {
	local i pids=()

	for ((i = ${#RS_BG_PIDS[@]} - 1; i >= 0; i--)); do
		pids+=("${RS_BG_PIDS[$i]}")
	done
	((${#pids[@]})) && _rs_stop_pids "${pids[@]}"
	RS_BG_PIDS=()
	RS_BG_PID=()
}

# rs_until TIMEOUT_S CMD...: run CMD every 0.1 s until it succeeds, for up
# to TIMEOUT_S seconds; returns its last status. For what follows an action
# a little later (a gauge, a log, a pin, a table): the caller waits as long
# as that takes, not a guessed time, and still fails if it never comes.
rs_until() {
	local timeout=$1 i
	shift
	for ((i = 0; i < timeout * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	"$@" >/dev/null
}

# rs_wait_ready FILE [TIMEOUT_S]: wait (default 10 s) for a line "ready".
rs_wait_ready() {
	local file=${1:-} timeout=${2:-10} i

	for ((i = 0; i < timeout * 20; i++)); do
		grep -qx ready "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	_rs_err "no 'ready' in $file after ${timeout}s"
	return 1
}

# rs_bg_wait_ready NAME [TIMEOUT_S]: like rs_wait_ready on NAME's stdout,
# but fails at once (showing its stderr) if the process exits first.
rs_bg_wait_ready() {
	local name=${1:-} timeout=${2:-10} pid out i

	pid=${RS_BG_PID[$name]:-}
	if [[ -z $pid ]]; then
		_rs_err "no background process named '$name'"
		return 1
	fi
	out=$(rs_bg_out "$name")
	for ((i = 0; i < timeout * 20; i++)); do
		grep -qx ready "$out" 2>/dev/null && return 0
		if ! _rs_alive "$pid"; then
			_rs_err "'$name' (PID $pid) exited before ready:"
			sed 's/^/  /' "$(rs_bg_err "$name")" >&2
			return 1
		fi
		sleep 0.05
	done
	_rs_err "no 'ready' from '$name' after ${timeout}s"
	return 1
}

# rs_cleanup_on_exit [SIGNAL]: stop background processes, run
# RS_CLEANUP_HOOK, delete the namespaces. Runs once. With a SIGNAL name
# (INT, TERM) it exits 128+signal afterwards, so a trapped signal ends the
# script instead of resuming it. Install it with rs_install_cleanup, or
# yourself: trap rs_cleanup_on_exit EXIT; trap 'rs_cleanup_on_exit INT' INT
rs_cleanup_on_exit() {
	local rc=$? sig=${1:-}

	# The caller's errexit must not cut the cleanup short.
	set +e
	if [[ -z $_RS_CLEANUP_DONE ]]; then
		_RS_CLEANUP_DONE=1
		rs_bg_stop_all
		if [[ -n $RS_CLEANUP_HOOK ]]; then
			eval "$RS_CLEANUP_HOOK" ||
				echo "rs: cleanup hook failed" >&2
		fi
		rs_ns_teardown
		if [[ -n $_RS_BG_DIR_AUTO && -d $_RS_BG_DIR_AUTO ]]; then
			if [[ $rc -eq 0 && -z $sig ]]; then
				rm -rf -- "$_RS_BG_DIR_AUTO"
			else
				echo "rs: process logs kept in $_RS_BG_DIR_AUTO" >&2
			fi
		fi
	fi
	if [[ -n $sig ]]; then
		trap - EXIT "$sig"
		exit $((128 + $(kill -l "$sig")))
	fi
	return "$rc"
}

# rs_install_cleanup: trap EXIT, INT and TERM with rs_cleanup_on_exit.
rs_install_cleanup() {
	trap rs_cleanup_on_exit EXIT
	trap 'rs_cleanup_on_exit INT' INT
	trap 'rs_cleanup_on_exit TERM' TERM
}

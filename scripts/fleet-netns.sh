# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# A PoP in network namespaces, for tests/e2e/test_fleet.sh and make
# demo-fleet. Source after scripts/netns.sh; call rs_ns_setup first (its
# client namespace is the client, its edge namespace becomes the router).
#
#   client rsc-RUN ── router rse-RUN ──┬── host rsh1-RUN  198.18.11.2 (rh)
#   198.18.1.0/24      ECMP 198.18.0.10 ├── host rsh2-RUN  198.18.12.2
#   2001:db8:1::/64    and 2001:db8::10 └── host rsh3-RUN  198.18.13.2
#   sources            over the hosts,       (2001:db8:1I::2 for host I)
#                      L4 hash (policy 1, both families); etcd on
#                      198.18.250.1:2379
#
# Each host has the service addresses 198.18.0.0/24 and 2001:db8::/64
# local and default routes to the router only; the router has no default
# route, so nothing leaves these namespaces. RS_FLEET_IPV6=1 before
# rs_fleet_conf: the service listens on [2001:db8::10]:80 too and each
# host publishes its address6.

RS_FLEET_HOSTS=()
RS_FLEET_ETCD_IP=198.18.250.1
# RS_FLEET_LAN=1 (set before rs_fleet_router): the hosts share one LAN
# with the router instead, a bridge in the router namespace (198.18.10.0/24,
# host I at 198.18.10.1I and 2001:db8:10::1I), as in a rack behind its switch: packets from host
# to host are then switched, not routed (make bench-fleet).
RS_FLEET_LAN=${RS_FLEET_LAN:-0}

# rs_fleet_addr I: host I's own (forwarding) address.
rs_fleet_addr() {
	if [[ $RS_FLEET_LAN == 1 ]]; then
		echo "198.18.10.1$1"
	else
		echo "198.18.1$1.2"
	fi
}

# rs_fleet_addr6 I: host I's own IPv6 (forwarding) address.
rs_fleet_addr6() {
	if [[ $RS_FLEET_LAN == 1 ]]; then
		echo "2001:db8:10::1$1"
	else
		echo "2001:db8:1$1::2"
	fi
}

rs_fleet_ns() {
	echo "rsh$1-$RS_RUNID"
}

# rs_in_host I CMD...: run CMD in host I's namespace.
rs_in_host() {
	local i=$1
	shift
	nsenter --net="/run/netns/$(rs_fleet_ns "$i")" -- "$@"
}

# rs_fleet_router: the edge namespace turned into the PoP's router.
rs_fleet_router() {
	local e=$RS_NS_EDGE
	ip -n "$e" route del local 198.18.0.0/24 dev lo table local || return 1
	ip -n "$e" -6 route del local 2001:db8::/64 dev lo table local 2>/dev/null
	ip -n "$e" addr add "$RS_FLEET_ETCD_IP/32" dev lo || return 1
	nsenter --net="/run/netns/$e" -- sh -c '
		sysctl -qw net.ipv4.ip_forward=1 &&
		sysctl -qw net.ipv4.fib_multipath_hash_policy=1 &&
		sysctl -qw net.ipv4.conf.all.rp_filter=0 &&
		sysctl -qw net.ipv4.conf.default.rp_filter=0 &&
		sysctl -qw net.ipv6.conf.all.forwarding=1 &&
		sysctl -qw net.ipv6.fib_multipath_hash_policy=1' || return 1
	if [[ $RS_FLEET_LAN == 1 ]]; then
		ip -n "$e" link add lan type bridge || return 1
		ip -n "$e" addr add 198.18.10.1/24 dev lan || return 1
		ip -n "$e" -6 addr add 2001:db8:10::1/64 dev lan nodad || return 1
		ip -n "$e" link set lan up || return 1
	fi
}

# rs_fleet_add_host I: host I (1..9) on its own link to the router.
rs_fleet_add_host() {
	local i=$1 h e=$RS_NS_EDGE
	h=$(rs_fleet_ns "$i")
	ip netns add "$h" || return 1
	RS_FLEET_HOSTS+=("$h")
	ip -n "$e" link add "r$i" type veth peer name rh netns "$h" || return 1
	ip -n "$h" link set lo up || return 1
	if [[ $RS_FLEET_LAN == 1 ]]; then
		ip -n "$e" link set "r$i" master lan || return 1
		ip -n "$h" addr add "$(rs_fleet_addr "$i")/24" dev rh || return 1
	else
		ip -n "$e" addr add "198.18.1$i.1/24" dev "r$i" || return 1
		ip -n "$h" addr add "$(rs_fleet_addr "$i")/24" dev rh || return 1
	fi
	ip -n "$e" link set "r$i" up || return 1
	ip -n "$h" link set rh up || return 1
	nsenter --net="/run/netns/$e" -- sysctl -qw "net.ipv4.conf.r$i.rp_filter=0"
	if [[ $RS_FLEET_LAN == 1 ]]; then
		ip -n "$h" route add default via 198.18.10.1 || return 1
	else
		ip -n "$h" route add default via "198.18.1$i.1" || return 1
	fi
	ip -n "$h" route add local 198.18.0.0/24 dev lo || return 1
	# IPv6 (nodad: usable at once).
	ip -n "$h" -6 addr add "$(rs_fleet_addr6 "$i")/64" dev rh nodad || return 1
	if [[ $RS_FLEET_LAN == 1 ]]; then
		ip -n "$h" -6 route add default via 2001:db8:10::1 || return 1
	else
		ip -n "$e" -6 addr add "2001:db8:1$i::1/64" dev "r$i" nodad || return 1
		ip -n "$h" -6 route add default via "2001:db8:1$i::1" || return 1
	fi
	ip -n "$h" -6 route add local 2001:db8::/64 dev lo || return 1
}

# rs_fleet_ecmp I...: the service address routed over hosts I... (equal).
rs_fleet_ecmp() {
	local hops=() i
	for i in "$@"; do
		if [[ $RS_FLEET_LAN == 1 ]]; then
			hops+=(nexthop via "$(rs_fleet_addr "$i")" dev lan weight 1)
		else
			hops+=(nexthop via "$(rs_fleet_addr "$i")" dev "r$i" weight 1)
		fi
	done
	ip -n "$RS_NS_EDGE" route replace 198.18.0.10/32 "${hops[@]}"
}

# rs_fleet_ecmp6 I...: the IPv6 service address routed over hosts I...
rs_fleet_ecmp6() {
	local hops=() i
	for i in "$@"; do
		if [[ $RS_FLEET_LAN == 1 ]]; then
			hops+=(nexthop via "$(rs_fleet_addr6 "$i")" dev lan weight 1)
		else
			hops+=(nexthop via "$(rs_fleet_addr6 "$i")" dev "r$i" weight 1)
		fi
	done
	ip -n "$RS_NS_EDGE" -6 route replace 2001:db8::10/128 "${hops[@]}"
}

# rs_fleet_teardown: delete the host namespaces.
rs_fleet_teardown() {
	local h
	for h in "${RS_FLEET_HOSTS[@]}"; do
		[[ -e /run/netns/$h ]] && ip netns del "$h"
	done
	RS_FLEET_HOSTS=()
}

# rs_fleet_etcd_start NAME DIR: etcd in the router namespace.
rs_fleet_etcd_start() {
	local name=$1 dir=$2 u=http://$RS_FLEET_ETCD_IP
	rs_bg_start "$name" nsenter --net="/run/netns/$RS_NS_EDGE" -- \
		etcd --name fleet --data-dir "$dir" \
		--listen-client-urls "$u:2379" --advertise-client-urls "$u:2379" \
		--listen-peer-urls "$u:2380" \
		--initial-advertise-peer-urls "$u:2380" \
		--initial-cluster "fleet=$u:2380" --log-level error
	local i
	for ((i = 0; i < 100; i++)); do
		nsenter --net="/run/netns/$RS_NS_EDGE" -- curl -sf -m 1 \
			-X POST -d '{}' "$u:2379/v3/maintenance/status" \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "etcd did not start:" >&2
	cat "$(rs_bg_err "$name")" >&2
	return 1
}

# rs_fleet_start_host I CONF BACKEND_CMD...: host I's two backends, h$I-a
# on 127.0.0.1:8081 and [::1]:8081, h$I-b on :8082 (BACKEND_CMD --name
# NAME --tcp ADDR:PORT --tcp ADDR:PORT, which prints "ready"; --udp with
# RS_FLEET_BACKEND_PROTO=udp), then ringsteerd -c CONF. Processes are
# beI{a,b} and dI for rs_bg_stop.
rs_fleet_start_host() {
	local i=$1 conf=$2 ns b port
	shift 2
	ns=/run/netns/$(rs_fleet_ns "$i")
	for b in a b; do
		port=8081
		[[ $b == b ]] && port=8082
		rs_bg_start "be$i$b" nsenter --net="$ns" -- \
			"$@" --name "h$i-$b" "--${RS_FLEET_BACKEND_PROTO:-tcp}" \
			"127.0.0.1:$port" "--${RS_FLEET_BACKEND_PROTO:-tcp}" \
			"[::1]:$port" || return 1
		rs_bg_wait_ready "be$i$b" || return 1
	done
	rs_bg_start "d$i" nsenter --net="$ns" -- "$RS_DAEMON" -c "$conf"
}

# rs_fleet_conf_head I BPFFS SOCK [GLOBAL_LINE...]: host I's [global] and
# [fleet] sections (with RS_FLEET_IPV6=1 its address6 too).
rs_fleet_conf_head() {
	local i=$1 bpffs=$2 sock=$3 a6=""
	shift 3
	[[ ${RS_FLEET_IPV6:-} == 1 ]] && a6="address6 = $(rs_fleet_addr6 "$i")"
	cat <<CONF
[global]
bpffs = $bpffs
control_socket = $sock
interfaces = rh
CONF
	(($#)) && printf '%s\n' "$@"
	cat <<CONF

[fleet]
etcd = http://$RS_FLEET_ETCD_IP:2379
name = host-$i
address = $(rs_fleet_addr "$i")
$a6
lease_ttl = 5s
prefix = /ringsteer-$RS_RUNID
CONF
}

# rs_fleet_conf I BPFFS SOCK: host I's configuration (web: two backends;
# with RS_FLEET_IPV6=1 IPv6 too, one key per client address).
rs_fleet_conf() {
	local i=$1 l6="" b6a="" b6b=""
	if [[ ${RS_FLEET_IPV6:-} == 1 ]]; then
		l6=$'listen = [2001:db8::10]:80\nprefix6 = 128'
		b6a="address = [::1]:8081"
		b6b="address = [::1]:8082"
	fi
	rs_fleet_conf_head "$@"
	cat <<CONF

[service web]
protocol = tcp
listen = 198.18.0.10:80
$l6
fleet = on

[backend h$i-a]
service = web
address = 127.0.0.1:8081
$b6a

[backend h$i-b]
service = web
address = 127.0.0.1:8082
$b6b
CONF
}

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: a backend's socket has an owner. A local user (one this
# suite creates) who listens on a backend's address while the backend is
# down gets none of its clients: the daemon refuses a socket of another
# user than the one it first took there (or than `owner =`), says so once,
# counts it in `ringsteer backends` and takes the backend's own socket again
# when it is back. `owner = USER` names the user outright (a root socket
# there is refused too), and a user that does not exist is FILE:LINE.
# The service's own address, with no backend available, is not covered
# by the owner check: fallback = drop keeps that user's listener from
# getting its clients.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup sow

# The unprivileged user, and a copy of the backend tool it can run (the
# tree may sit under a directory it cannot enter).
USER_NAME=rsq$$
useradd --system --no-create-home --home-dir /nonexistent \
	--shell /usr/sbin/nologin "$USER_NAME"
RS_CLEANUP_HOOK+="; userdel '$USER_NAME' 2>/dev/null; rm -rf '$OUT/tool'"
USER_UID=$(id -u "$USER_NAME")
USER_GID=$(id -g "$USER_NAME")
mkdir -p "$OUT/tool"
install -m 0755 build/tools/rs_backend "$OUT/tool/rs_backend"
chmod 755 "$OUT" "$OUT/tool"
as_user() { setpriv --reuid="$USER_UID" --regid="$USER_GID" --clear-groups "$@"; }

e2e_conf_global
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 64

[backend web-1]
service = web
address = 127.0.0.1:8081
check = none

[backend web-2]
service = web
address = 127.0.0.1:8082
check = none

[backend web-3]
service = web
address = 127.0.0.1:8083
check = none
owner = $USER_NAME

[service alt]
protocol = tcp
listen = 198.18.0.10:8080
vnodes = 64

[backend alt-1]
service = alt
address = 127.0.0.1:8084
check = none
CONF
# A UDP service with generations: a socket beside the backend's is a new
# generation, the working one, unless its user is refused.
e2e_conf_section "service dns" "protocol = udp" "listen = 198.18.0.10:5353" "generations = on"
e2e_conf_section "backend d-1" "service = dns" "address = 127.0.0.1:5353" "check = none"
USER_AS=(setpriv --reuid="$USER_UID" --regid="$USER_GID" --clear-groups)
rs_bg_start web-1 rs_in_edge build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_start web-2 rs_in_edge build/tools/rs_backend --name web-2 --tcp 127.0.0.1:8082
rs_bg_start web-3 rs_in_edge "${USER_AS[@]}" "$OUT/tool/rs_backend" --name web-3 \
	--tcp 127.0.0.1:8083
for b in web-1 web-2 web-3; do rs_bg_wait_ready "$b"; done

echo "# a user that does not exist is the file's error"
sed "s/^owner = $USER_NAME\$/owner = rs-no-such-user/" "$CONF" >"$OUT/nouser.conf"
line=$(grep -n '^owner = rs-no-such-user$' "$OUT/nouser.conf" | cut -d: -f1)
rc=0
build/ringsteerd --check -c "$OUT/nouser.conf" >"$OUT/nouser.out" 2>&1 || rc=$?
e2e_check "--check refuses it (exit $rc)" test "$rc" -ne 0
e2e_check "naming $OUT/nouser.conf:$line and the user" \
	grep -q "nouser.conf:$line.*owner.*no such user" "$OUT/nouser.out"

rs_bg_start daemon rs_in_edge "$RS_DAEMON" -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10
sockets() { rsjson backends | jq -c '[.backends[] | select(.service != "dns") | .has_socket]'; }
e2e_eq_within 10 "every backend's socket taken" '[true,true,true,false]' sockets
owner() { rsjson backends | jq -c --arg b "$1" '.backends[] | select(.name == $b) | .owner'; }
e2e_eq "web-2's owner: root, from its first socket" "$(owner web-2)" \
	'{"uid":0,"from":"first socket","refused":0,"refused_uid":null}'
e2e_eq "web-3's owner: $USER_NAME, from the file" "$(owner web-3)" \
	"{\"uid\":$USER_UID,\"from\":\"owner\",\"refused\":0,\"refused_uid\":null}"
e2e_check "the first socket's user is said" \
	grep -q "backend web-2: uid 0 (root) serves on 127.0.0.1:8082: only its sockets are taken there" "$(rs_bg_err daemon)"

# reached PATTERN...: 40 clients, each line "SRC ... BACKEND"; prints them.
reached() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:80 \
		--src-base 198.18.1.1 --count 40 --timeout-ms 3000 2>/dev/null || true
}

echo "# web-2 is down; $USER_NAME listens on its address"
rs_bg_stop web-2
e2e_eq_within 10 "web-2 has no socket" '[true,false,true,false]' sockets
rs_bg_start squat rs_in_edge "${USER_AS[@]}" "$OUT/tool/rs_backend" --name squatter \
	--tcp 127.0.0.1:8082
rs_bg_wait_ready squat
refused() { owner "$1" | jq -r .refused; }
e2e_eq_within 10 "the squatter's socket refused once" 1 refused web-2
e2e_eq "its user named" "$(owner web-2 | jq .refused_uid)" "$USER_UID"
e2e_check "the daemon says whose socket it refused, and whose it wants" \
	grep -q "backend web-2: the socket on 127.0.0.1:8082 belongs to uid $USER_UID ($USER_NAME), not to uid 0 (root) (the user it was first taken from): refused" "$(rs_bg_err daemon)"
e2e_eq "and still no socket for web-2" "$(sockets)" '[true,false,true,false]'
reached >"$OUT/squat.clients"
e2e_eq "40 clients answered" "$(wc -l <"$OUT/squat.clients")" 40
e2e_eq "none by the squatter" "$(grep -c ' squatter$' "$OUT/squat.clients" || true)" 0
e2e_eq "refused once, not once a pass" "$(refused web-2)" 1
e2e_check "ringsteer backends says so" \
	grep -q "^web-2 .*(no socket: uid $USER_UID's refused, not the owner's)" <(rsctl backends)

echo "# web-2 back, the squatter gone"
rs_bg_stop squat
rs_bg_start web-2b rs_in_edge build/tools/rs_backend --name web-2 --tcp 127.0.0.1:8082
rs_bg_wait_ready web-2b
e2e_eq_within 10 "web-2's own socket taken again" '[true,true,true,false]' sockets
reached >"$OUT/back.clients"
e2e_check "clients reach web-2 again" grep -q ' web-2$' "$OUT/back.clients"

echo "# owner = $USER_NAME: root's socket is refused there"
rs_bg_stop web-3
e2e_eq_within 10 "web-3 has no socket" '[true,true,false,false]' sockets
rs_bg_start root3 rs_in_edge build/tools/rs_backend --name root-3 --tcp 127.0.0.1:8083
rs_bg_wait_ready root3
e2e_eq_within 10 "root's socket refused" 1 refused web-3
e2e_eq "its user named: 0" "$(owner web-3 | jq .refused_uid)" 0
e2e_check "said, naming the owner" \
	grep -q "backend web-3: the socket on 127.0.0.1:8083 belongs to uid 0 (root), not to uid $USER_UID ($USER_NAME) (owner): refused" "$(rs_bg_err daemon)"
reached >"$OUT/root3.clients"
e2e_eq "none of 40 clients on root's socket" "$(grep -c ' root-3$' "$OUT/root3.clients" || true)" 0
rs_bg_stop root3
rs_bg_start web-3b rs_in_edge "${USER_AS[@]}" "$OUT/tool/rs_backend" --name web-3 \
	--tcp 127.0.0.1:8083
rs_bg_wait_ready web-3b
e2e_eq_within 10 "$USER_NAME's socket taken again" '[true,true,true,false]' sockets

echo "# no backend of alt available: what listens on its address gets its clients"
# The owner check covers backends' addresses, not the service's own: with
# the default fallback = pass, a user's wildcard listener on the service
# port (8080: no privilege needed) takes every client; fallback = drop
# closes it (docs/operations.md, "Whose socket a backend takes").
rs_bg_start squat8080 rs_in_edge "${USER_AS[@]}" "$OUT/tool/rs_backend" \
	--name squatter --tcp 0.0.0.0:8080
rs_bg_wait_ready squat8080
alt() {
	rs_in_client build/tools/rs_client --target 198.18.0.10:8080 \
		--src-base 198.18.1.1 --count 40 --timeout-ms 1000 2>/dev/null || true
}
e2e_eq "fallback = pass: 40 of 40 clients reach the squatter" \
	"$(alt | grep -c ' squatter$' || true)" 40
sed -i 's/^listen = 198.18.0.10:8080$/&\nfallback = drop/' "$CONF"
rsctl reload >/dev/null
e2e_eq "fallback = drop: none of 40" "$(alt | grep -c ' squatter$' || true)" 0
rs_bg_stop squat8080

echo "# a reload that names another owner drops the socket in use"
sed -i "s/^owner = $USER_NAME\$/owner = root/" "$CONF"
rsctl reload >/dev/null
e2e_eq_within 10 "web-3's socket (of $USER_NAME) out" '[true,true,false,false]' sockets
reached >"$OUT/reowned.clients"
e2e_eq "none of 40 clients on it" "$(grep -c ' web-3$' "$OUT/reowned.clients" || true)" 0

echo "# generations: a user's UDP socket beside the backend's is refused, no generation"
rs_bg_start d-1 rs_in_edge build/tools/rs_backend --name d-1 --udp 127.0.0.1:5353
rs_bg_wait_ready d-1
gens() { rsjson backends | jq -c '[.backends[] | select(.name == "d-1") | .sockets[0].generations[]? | .pid]'; }
e2e_eq_within 10 "d-1: one generation, root's" "[${RS_BG_PID[d-1]}]" gens
rs_bg_start dsquat rs_in_edge "${USER_AS[@]}" "$OUT/tool/rs_backend" --name squatter \
	--udp 127.0.0.1:5353
rs_bg_wait_ready dsquat
e2e_eq_within 10 "the user's socket beside it refused once" 1 refused d-1
e2e_eq "its user named" "$(owner d-1 | jq .refused_uid)" "$USER_UID"
e2e_eq "said once" "$(grep -c "backend d-1: the socket on 127.0.0.1:5353 belongs to uid $USER_UID ($USER_NAME), not to uid 0 (root)" "$(rs_bg_err daemon)")" 1
e2e_eq "d-1: still one generation, root's" "$(gens)" "[${RS_BG_PID[d-1]}]"
rs_in_client build/tools/quic_client --target 198.18.0.10:5353 --src-base 198.18.1.1 \
	--port-base 42000 --count 20 --dcid 0102030405060708 >"$OUT/dgen.clients" 2>/dev/null || true
e2e_eq "20 new flows answered by d-1" "$(grep -c ' d-1$' "$OUT/dgen.clients" || true)" 20
e2e_eq "none by the user's socket" "$(grep -c ' squatter$' "$OUT/dgen.clients" || true)" 0
echo "# a second socket of the user beside them: each said once, not once a pass"
rs_bg_start dsquat2 rs_in_edge "${USER_AS[@]}" "$OUT/tool/rs_backend" --name squatter2 \
	--udp 127.0.0.1:5353
rs_bg_wait_ready dsquat2
e2e_eq_within 10 "refused twice in all" 2 refused d-1
sleep_passes() { local r; r=$(refused d-1); rs_until 2 test "$(refused d-1)" != "$r" || true; }
sleep_passes
e2e_eq "still twice after more watch passes" "$(refused d-1)" 2
e2e_eq "two lines" "$(grep -c "backend d-1: the socket on 127.0.0.1:5353 belongs to uid $USER_UID" "$(rs_bg_err daemon)")" 2
rs_bg_stop dsquat2
rs_bg_stop dsquat

e2e_summary

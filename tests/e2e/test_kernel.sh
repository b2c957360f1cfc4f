#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: the kernel feature probes as the operator sees them. A
# cookie = quic service with one backend whose UDP socket has SO_REUSEPORT
# and one without. Where the kernel's bpf_sk_assign at TC refuses
# SO_REUSEPORT sockets (before 6.6; `make vmtest` runs this on Debian 12's
# 6.1), the daemon must say so at start and per socket, and `ringsteer
# status` must name that backend; where the kernel takes them (the host),
# nothing is reported. Either way the answer must agree with
# `ringsteerd --probe`.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup kern
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'

cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK
interfaces = rs-e

[service quic]
protocol = udp
listen = 198.18.0.10:443
cookie = quic
quic_server_id_len = 2
quic_cid_len = 8
quic_config_id = 1

[backend q-1]
service = quic
address = 127.0.0.1:443
server_id = 0x0001

[backend q-2]
service = quic
address = 127.0.0.2:443
server_id = 0x0002
CONF

e2e_check "ringsteerd --probe: the floor is met" build/ringsteerd --probe
probe=$(build/ringsteerd --probe)
echo "# $probe"
if grep -q "SO_REUSEPORT yes" <<<"$probe"; then refused=false; else refused=true; fi
e2e_check "the SO_REUSEPORT probe gave an answer" \
	grep -Eq "SO_REUSEPORT (yes|NO)" <<<"$probe"

rs_bg_start be1 rs_in_edge build/tools/rs_backend --name q-1 \
	--reuseport --udp 127.0.0.1:443
rs_bg_wait_ready be1
rs_bg_start be2 rs_in_edge build/tools/rs_backend --name q-2 \
	--udp 127.0.0.2:443
rs_bg_wait_ready be2
rs_bg_start d1 rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err d1)" "sk_lookup link" 20
DLOG=$(rs_bg_err d1)

e2e_check "one start-up line of kernel features" \
	grep -q "info: kernel $(uname -r): sk_lookup yes, sk_assign yes, bpf_loop yes" "$DLOG"
status=$(build/ringsteer -s "$SOCK" -j status)
e2e_eq "status: kernel release" "$(jq -r .kernel.release <<<"$status")" "$(uname -r)"
e2e_eq "status: TC sk_assign to SO_REUSEPORT as probed" \
	"$(jq -r .kernel.features.tc_sk_assign_reuseport <<<"$status")" \
	"$([[ $refused == true ]] && echo false || echo true)"
if [[ $refused == true ]]; then
	e2e_eq "status: q-1's cookies refused, q-2's not" \
		"$(jq -c '.services[0].cookie_refused' <<<"$status")" '["q-1"]'
	e2e_eq "status: one kernel warning" "$(jq '.kernel.warnings | length' <<<"$status")" 1
	e2e_check "log: the cookie service is warned about at start" \
		grep -q "bpf_sk_assign at TC refuses SO_REUSEPORT sockets" "$DLOG"
	e2e_check "log: backend q-1 named, with the workaround" \
		grep -q "backend q-1: its socket has SO_REUSEPORT.*listen without SO_REUSEPORT" "$DLOG"
	e2e_check "status (table) prints the warning" \
		bash -c "build/ringsteer -s '$SOCK' status | grep -q '^warning: service quic: backend q-1'"
	e2e_eq "services: q-1 in cookie_refused" \
		"$(build/ringsteer -s "$SOCK" -j services | jq -c '.services[0].cookie_refused')" '["q-1"]'
else
	e2e_eq "status: no cookie refused" \
		"$(jq -c '.services[0].cookie_refused' <<<"$status")" '[]'
	e2e_eq "status: no kernel warning" "$(jq '.kernel.warnings | length' <<<"$status")" 0
	e2e_check "log: no SO_REUSEPORT warning" \
		bash -c "! grep -q 'refuses SO_REUSEPORT\|its socket has SO_REUSEPORT' '$DLOG'"
fi

e2e_summary

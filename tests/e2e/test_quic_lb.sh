#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end: QUIC-LB encrypted connection IDs (docs/quic.md "Encrypted
# CIDs"), decoded by steer_tc at TC ingress, with the kernel's crypto
# kfuncs where it has them and AES in BPF where it does not (make vmtest
# runs this on Debian 12's 6.1).
#   Three services, one per mode: four-pass decoded in three passes (server
#   ID no longer than the nonce; a byte of the server's own after them), four-pass needing the fourth (server ID
#   longer), single-pass (16 bytes: one AES block). Migrating clients keep
#   their backend with `ringsteer cid`'s encrypted CIDs, over IPv4 and
#   IPv6; a client that writes a backend's server ID in the clear lands by
#   IP affinity (counted cookie_unknown); a rotation's previous config
#   (plaintext, or under its own key) is decoded until a reload removes it;
#   a new key strands the old CIDs; kill -9 and a restart keep steering
#   (the kfunc contexts are made again before the program is swapped in);
#   a key file others can read is refused naming the file and line, and
#   so is a keyless previous config unless quic_previous_plaintext = on.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup quiclb
# shellcheck disable=SC2034 # read by the exit trap of rs_install_cleanup (scripts/netns.sh)
# shellcheck disable=SC2016 # expanded when the hook runs
RS_CLEANUP_HOOK='[[ -f $CONF ]] && rs_in_edge build/ringsteerd -q --detach -c "$CONF"; rm -rf "$BPFFS"'

N=10 # source addresses (and ports) per migration run
KEYS=$OUT/keys
mkdir -p "$KEYS"
for k in k2 k3 k4 k5 k6 k7; do
	openssl rand -hex 16 >"$KEYS/$k"
	chmod 600 "$KEYS/$k"
done

# write_conf LB4_PREVIOUS LBF_KEY: LB4_PREVIOUS "1" keeps lb4's plaintext
# config 1 decodable, "" drops it.
write_conf() {
	local prev=$1 lbf_key=$2 i
	cat >"$CONF" <<CONF
[global]
bpffs = $BPFFS
control_socket = $SOCK
interfaces = rs-e

# Four-pass, server ID (2) no longer than the nonce (5): three passes.
# The 9th byte is the server's own, outside the encryption (as Envoy's
# worker byte).
[service lb4]
protocol = udp
listen = 198.18.0.10:443
listen = [2001:db8::10]:443
prefix6 = 128
cookie = quic
quic_server_id_len = 2
quic_cid_len = 9
quic_nonce_len = 5
quic_config_id = 2
quic_key_file = $KEYS/k2
${prev:+quic_previous_config_id = $prev}
${prev:+quic_previous_plaintext = on}

# Four-pass, server ID (6) longer than half of 10: all four passes.
[service lbf]
protocol = udp
listen = 198.18.0.10:5443
listen = [2001:db8::10]:5443
prefix6 = 128
cookie = quic
quic_server_id_len = 6
quic_cid_len = 11
quic_config_id = 3
quic_key_file = $KEYS/$lbf_key
quic_previous_config_id = 4
quic_previous_key_file = $KEYS/k5

# Single pass: server ID 3 + nonce 13 = one AES block.
[service lb1]
protocol = udp
listen = 198.18.0.10:4443
listen = [2001:db8::10]:4443
prefix6 = 128
cookie = quic
quic_server_id_len = 3
quic_cid_len = 17
quic_config_id = 0
quic_key_file = $KEYS/k3
CONF
	for i in 1 2 3; do
		cat >>"$CONF" <<CONF

[backend q-$i]
service = lb4
address = 127.0.0.$i:443
address = [2001:db8::1:$i]:443
server_id = 0x000$i

[backend f-$i]
service = lbf
address = 127.0.0.$i:5443
address = [2001:db8::1:$i]:5443
server_id = 0x0a0b0c0d0e0$i

[backend s-$i]
service = lb1
address = 127.0.0.$i:4443
address = [2001:db8::1:$i]:4443
server_id = 0x00000$i
CONF
	done
}

# One process per backend number serves the three services; it answers
# "q-N" whichever service the datagram was for.
start_backend() {
	local i=$1 a=127.0.0.$1 b="[2001:db8::1:$1]"
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "q-$i" \
		--udp "$a:443" --udp "$b:443" --udp "$a:5443" --udp "$b:5443" \
		--udp "$a:4443" --udp "$b:4443"
	rs_bg_wait_ready "be$i"
}

start_daemon() {
	rs_bg_start "$1" rs_in_edge build/ringsteerd -c "$CONF"
	e2e_wait_for "$(rs_bg_err "$1")" "sk_lookup link" 10
}


# qc NAME PORT FAMILY SRC_BASE [quic_client options]: "SRC PORT BACKEND"
# lines in $OUT/NAME.
qc() {
	local name=$1 port=$2 fam=$3 base=$4 target
	shift 4
	target=198.18.0.10:$port
	[[ $fam == 6 ]] && target="[2001:db8::10]:$port"
	rs_in_client build/tools/quic_client --target "$target" \
		--src-base "$base" --count "$N" "$@" >"$OUT/$name" \
		2>"$OUT/$name.err" || true
}
answered() { awk '$3 !~ /^ERR/' "$OUT/$1" | wc -l; }
not_from() { awk -v b="$2" '$3 != b' "$OUT/$1" | wc -l; }
# off_affinity NAME SERVICE: replies not from the backend `ringsteer lookup`
# gives the source address (IP affinity); f-N and s-N are process q-N.
off_affinity() {
	local n=0 src be want
	while read -r src _ be; do
		want=$(rsjson lookup "$2" "$src" | jq -r .backend)
		want=q-${want#*-}
		[[ $be == "$want" ]] || n=$((n + 1))
	done <"$OUT/$1"
	echo "$n"
}
svc_stat() {
	rsjson services | jq -r --arg s "$1" --arg k "$2" \
		'.services[] | select(.name == $s) | .stats[$k]'
}

write_conf 1 k4
for i in 1 2 3; do start_backend "$i"; done

echo "# --check: lengths against the mode, key files"
e2e_check "ringsteerd --check accepts the config" \
	build/ringsteerd --check -c "$CONF"
chmod 644 "$KEYS/k3"
line=$(grep -n "quic_key_file = $KEYS/k3" "$CONF" | cut -d: -f1)
out=$(build/ringsteerd --check -c "$CONF" 2>&1 || true)
e2e_check "a key file others can read is refused at $CONF:$line" \
	grep -q "$CONF:$line: .*$KEYS/k3 can be read or written by group or others" <<<"$out"
e2e_check "the refusal does not print the key" \
	bash -c "! grep -qi '$(cat "$KEYS/k3")' <<<'$out'"
chmod 600 "$KEYS/k3"
sed -e 's/^quic_cid_len = 9$/quic_cid_len = 6/' -e '/^quic_nonce_len/d' \
	"$CONF" >"$OUT/short.conf"
out=$(build/ringsteerd --check -c "$OUT/short.conf" 2>&1 || true)
e2e_check "a nonce under 4 bytes is refused for an encrypted config" \
	grep -q "quic_cid_len 6 with quic_server_id_len 2 leaves a 3-byte nonce; an encrypted CID needs at least 4" <<<"$out"
echo "zz" >"$KEYS/bad"
chmod 600 "$KEYS/bad"
sed "s|$KEYS/k3|$KEYS/bad|" "$CONF" >"$OUT/bad.conf"
out=$(build/ringsteerd --check -c "$OUT/bad.conf" 2>&1 || true)
e2e_check "a key file that is not 32 hex digits is refused naming its line" \
	grep -q "$KEYS/bad:1: expected 32 hex digits" <<<"$out"
sed 's/^quic_nonce_len = 5$/quic_nonce_len = 7/' "$CONF" >"$OUT/long.conf"
out=$(build/ringsteerd --check -c "$OUT/long.conf" 2>&1 || true)
e2e_check "a nonce longer than the CID holds is refused" \
	grep -q "quic_nonce_len 7 does not fit: quic_cid_len 9 holds the first octet, a 2-byte server ID and at most 6 bytes of nonce" <<<"$out"
# Without the word that it is meant, a keyless previous config would be
# decoded in the clear: clients could write any server ID under it.
sed '/^quic_previous_plaintext = on$/d' "$CONF" >"$OUT/clear.conf"
line=$(grep -n '^quic_previous_config_id = 1$' "$OUT/clear.conf" | cut -d: -f1)
out=$(build/ringsteerd --check -c "$OUT/clear.conf" 2>&1 || true)
e2e_check "a keyless previous config of an encrypted service is refused at clear.conf:$line" \
	grep -q "$OUT/clear.conf:$line: \[service lb4\] quic_previous_config_id: quic_previous_config_id 1 has no quic_previous_key_file: it would be decoded in the clear" <<<"$out"

start_daemon d1
DLOG=$(rs_bg_err d1)
rsjson status >"$OUT/status.json"
want_aes=software kfuncs=false
# The daemon's own probe (rs_probe_crypto_kfuncs(): the kernel's BTF).
if build/ringsteerd --probe | grep "crypto kfuncs yes" >/dev/null; then
	kfuncs=true
	# RINGSTEER_QUIC_LB_CIPHER=software runs the suite on the AES in BPF.
	[[ ${RINGSTEER_QUIC_LB_CIPHER:-} == software ]] || want_aes=kfunc
fi
e2e_eq "status: QUIC-LB AES path ($(uname -r))" \
	"$(jq -r '.programs[] | select(.name == "steer_tc") | .quic_lb_aes' "$OUT/status.json")" "$want_aes"
e2e_eq "status: kernel.features.crypto_kfunc" \
	"$(jq -r '.kernel.features.crypto_kfunc' "$OUT/status.json")" "$kfuncs"
e2e_check "status (table) says which AES runs" \
	bash -c "build/ringsteer -s '$SOCK' status | grep -q '^quic-lb aes $want_aes'"
e2e_check "the log never holds a key" \
	bash -c "! grep -qi -e '$(cat "$KEYS/k2")' -e '$(cat "$KEYS/k4")' '$DLOG'"

echo "# ringsteer cid: encrypted CIDs, decoded back"
declare -A CID
for svc in lb4 lbf lb1; do
	for i in 1 2 3; do
		b=q-$i
		[[ $svc == lbf ]] && b=f-$i
		[[ $svc == lb1 ]] && b=s-$i
		CID[$svc$i]=$(rsctl cid "$svc" "$b")
	done
done
e2e_check "lb4: 9-byte CIDs, config 2 in the top bits" \
	bash -c "[[ ${CID[lb42]} =~ ^[45][0-9a-f]{17}$ ]]"
e2e_check "lb1: 17-byte CIDs, config 0" \
	bash -c "[[ ${CID[lb13]} =~ ^[01][0-9a-f]{33}$ ]]"
plain_at=0
for c in $(rsctl cid lb4 q-2 8); do [[ ${c:2:4} == 0002 ]] && plain_at=$((plain_at + 1)); done
e2e_eq "lb4: the server ID is not in the clear (of 8 CIDs)" "$plain_at" 0
ok=0
for svc in lb4 lbf lb1; do
	for i in 1 2 3; do
		rsjson cid decode "$svc" "${CID[$svc$i]}" >"$OUT/dec.json"
		jq -e --arg i "$i" '.encrypted and .reason == "routable" and
			(.backend | endswith("-" + $i)) and .ipv4.steered and .ipv6.steered' \
			"$OUT/dec.json" >/dev/null && ok=$((ok + 1))
	done
done
e2e_eq "cid decode names the backend of each of 9 encrypted CIDs" "$ok" 9
e2e_eq "cid decode lbf: the 6-byte server ID, decrypted" \
	"$(rsjson cid decode lbf "${CID[lbf3]}" | jq -r .server_id)" 0x0a0b0c0d0e03
e2e_check "cid decode (table) says encrypted" \
	bash -c "build/ringsteer -s '$SOCK' cid decode lb1 '${CID[lb12]}' | grep -q 'routable, encrypted'"

echo "# migrating clients keep their backend"
port() { case $1 in lb4) echo 443 ;; lbf) echo 5443 ;; lb1) echo 4443 ;; esac; }
bad=0 total=0
for svc in lb4 lbf lb1; do
	for i in 1 2 3; do
		for fam in 4 6; do
			base=198.18.1.$((20 * i + 1))
			[[ $fam == 6 ]] && base=2001:db8:1::$((20 * i + 1))
			qc "mig-$svc$i-$fam" "$(port $svc)" "$fam" "$base" \
				--port-base $((40000 + 100 * i)) --dcid "${CID[$svc$i]}"
			total=$((total + $(answered "mig-$svc$i-$fam")))
			bad=$((bad + $(not_from "mig-$svc$i-$fam" "q-$i")))
		done
	done
done
e2e_eq "every datagram answered (3 modes x 3 backends x 2 families x $N)" "$total" $((18 * N))
e2e_eq "every one by the backend its encrypted CID names" "$bad" 0
qc hs 443 4 198.18.2.1 --port-base 44000 --type handshake --dcid "${CID[lb41]}"
e2e_eq "handshake packets too (long header): to q-1" \
	"$(answered hs) $(not_from hs q-1)" "$N 0"

echo "# a client that writes a server ID in the clear goes by IP affinity"
unk0=$(svc_stat lb4 cookie_unknown)
FORGED=40000299aabbccddee # config 2, server ID 0x0002 in clear
qc forged4 443 4 198.18.1.100 --port-base 45000 --dcid "$FORGED"
qc forged6 443 6 2001:db8:1::100 --port-base 45100 --dcid "$FORGED"
e2e_eq "all answered" "$(($(answered forged4) + $(answered forged6)))" $((2 * N))
e2e_eq "each by IP affinity (ringsteer lookup), not by the written ID" \
	"$(($(off_affinity forged4 lb4) + $(off_affinity forged6 lb4)))" 0
e2e_eq "counted as cookie_unknown" "$(($(svc_stat lb4 cookie_unknown) - unk0))" $((2 * N))

echo "# a rotation's previous config"
PREV1=$(rsctl cid --config 1 lb4 q-3)
e2e_check "cid --config 1: a plaintext CID of the previous config" \
	bash -c "[[ $PREV1 =~ ^[23][0-9a-f]0003[0-9a-f]{12}$ ]]"
PREVF=$(rsctl cid --config 4 lbf f-2)
e2e_eq "cid decode: lbf's previous config, under its own key" \
	"$(rsjson cid decode lbf "$PREVF" | jq -r '[.encrypted, .config_id, .backend] | join(" ")')" "true 4 f-2"
e2e_check "cid --config 5 (not decoded) is refused" \
	bash -c "! build/ringsteer -s '$SOCK' cid --config 5 lb4 q-1 2>/dev/null"
qc prev1 443 4 198.18.1.120 --port-base 46000 --dcid "$PREV1"
qc prevf 5443 6 2001:db8:1::120 --port-base 46100 --dcid "$PREVF"
e2e_eq "previous plaintext config: to q-3" "$(not_from prev1 q-3)" 0
e2e_eq "previous encrypted config: to q-2" "$(not_from prevf q-2)" 0

echo "# reload: the previous config removed, lbf's key changed"
write_conf "" k6
rsctl reload >/dev/null
qc prev1b 443 4 198.18.1.140 --port-base 46200 --dcid "$PREV1"
e2e_eq "lb4's old plaintext CID: now IP affinity" "$(off_affinity prev1b lb4)" 0
qc oldkey 5443 4 198.18.1.160 --port-base 46300 --dcid "${CID[lbf1]}"
e2e_eq "lbf's CID under the replaced key: now IP affinity" "$(off_affinity oldkey lbf)" 0
NEWF=$(rsctl cid lbf f-1)
qc newkey 5443 4 198.18.1.180 --port-base 46400 --dcid "$NEWF"
e2e_eq "a CID under the new key: to q-1" "$(not_from newkey q-1)" 0
qc still 4443 6 2001:db8:1::140 --port-base 46500 --dcid "${CID[lb12]}"
e2e_eq "lb1 untouched by the reload: to q-2" "$(not_from still q-2)" 0

echo "# a reload with a key file others can read: refused, nothing changes"
chmod 644 "$KEYS/k3"
e2e_check "reload refused" bash -c "! build/ringsteer -s '$SOCK' reload >'$OUT/reload.out' 2>&1"
e2e_check "the refusal names the file" grep -q "$KEYS/k3 can be read or written by group or others" "$OUT/reload.out"
chmod 600 "$KEYS/k3"
qc refused 4443 4 198.18.1.190 --port-base 46600 --dcid "${CID[lb13]}"
e2e_eq "lb1's CIDs still steered by the running key: to q-3" "$(not_from refused q-3)" 0

echo "# the same key file, new contents: a reload takes the new key"
cp "$KEYS/k3" "$KEYS/k3.old"
openssl rand -hex 16 >"$KEYS/k3"
rsctl reload >/dev/null
qc rekeyed 4443 4 198.18.1.200 --port-base 46700 --dcid "${CID[lb13]}"
e2e_eq "lb1's old CIDs: now IP affinity" "$(off_affinity rekeyed lb1)" 0
NEW1=$(rsctl cid lb1 s-3)
qc rekeyed2 4443 6 2001:db8:1::160 --port-base 46800 --dcid "$NEW1"
e2e_eq "new CIDs under the new contents: to q-3" "$(not_from rekeyed2 q-3)" 0
cp "$KEYS/k3.old" "$KEYS/k3"
rsctl reload >/dev/null

echo "# a key rotation under traffic: the old CIDs' datagrams never misrouted"
# A client keeps migrating with an lb4 CID under key k2 (config 2) while
# the reload makes config 5 (key k7) current and keeps config 2 previous.
cat >"$OUT/rotate.sh" <<SH
#!/bin/bash
i=0
while [[ ! -f $OUT/rotate.stop ]] && ((i < 400)); do
	nsenter --net=/run/netns/$RS_NS_CLIENT -- build/tools/quic_client \\
		--target 198.18.0.10:443 --src-base 198.18.2.\$((1 + i % 200)) \\
		--port-base \$((50000 + i)) --count 1 --dcid ${CID[lb42]}
	i=\$((i + 1))
done
SH
chmod +x "$OUT/rotate.sh"
rs_bg_start rotate "$OUT/rotate.sh"
e2e_eq_within 10 "traffic flows before the reload" 1 \
	bash -c "[[ \$(grep -c . '$(rs_bg_out rotate)') -ge 20 ]] && echo 1"
sed -e 's/^quic_config_id = 2$/quic_config_id = 5/' \
	-e "s|^quic_key_file = $KEYS/k2$|quic_key_file = $KEYS/k7\\nquic_previous_config_id = 2\\nquic_previous_key_file = $KEYS/k2|" \
	-e '/^quic_previous_config_id = 1$/d' "$CONF" >"$OUT/rotated.conf"
cp "$OUT/rotated.conf" "$CONF"
rsctl reload >/dev/null
before=$(grep -c . "$(rs_bg_out rotate)")
e2e_eq_within 10 "traffic flows after the reload" 1 \
	bash -c "[[ \$(grep -c . '$(rs_bg_out rotate)') -ge $((before + 20)) ]] && echo 1"
touch "$OUT/rotate.stop"
e2e_check "the rotation client stops at the stop file" \
	rs_until 30 e2e_gone "${RS_BG_PID[rotate]}"
rs_bg_stop rotate
e2e_check "rotation: at least 40 datagrams around the reload" \
	test "$(grep -c . "$(rs_bg_out rotate)")" -ge 40
e2e_eq "rotation: every one answered by q-2, none lost or misrouted" \
	"$(awk '$3 != "q-2"' "$(rs_bg_out rotate)" | wc -l)" 0
e2e_eq "status: lb4 decodes config 5 now" "$(rsjson cid decode lb4 "$(rsctl cid lb4 q-1)" | jq -r '[.config_id, .backend] | join(" ")')" "5 q-1"

echo "# kill -9, steering meanwhile, and a restart"
kill -KILL "${RS_BG_PID[d1]}"
rs_bg_stop d1
qc dead 443 4 198.18.1.200 --port-base 47000 --dcid "${CID[lb43]}"
e2e_eq "daemon dead: the filter's program still decodes (to q-3)" "$(not_from dead q-3)" 0
start_daemon d2
e2e_check "restart: steer_tc replaced in place" \
	grep -q "replaced the program of our filter" "$(rs_bg_err d2)"
qc after 443 6 2001:db8:1::200 --port-base 47100 --dcid "${CID[lb43]}"
qc after1 4443 4 198.18.1.220 --port-base 47200 --dcid "${CID[lb11]}"
e2e_eq "after the restart: lb4 CID to q-3" "$(not_from after q-3)" 0
e2e_eq "after the restart: lb1 CID to q-1" "$(not_from after1 q-1)" 0

echo "# 12 reloads switching lb1's key, a kill -9 and restart every 4th"
errs0=$(svc_stat lb1 errors)
bad=0 sent=0 d=d2
for ((n = 1; n <= 12; n++)); do
	k=k3
	((n % 2)) && k=k5
	sed -i "s|^quic_key_file = $KEYS/k[35]$|quic_key_file = $KEYS/$k|" "$CONF"
	if ((n % 4 == 0)); then
		kill -KILL "${RS_BG_PID[$d]}"
		rs_bg_stop "$d"
		d=d$((n + 10))
		start_daemon "$d"
	else
		rsctl reload >/dev/null
	fi
	c=$(rsctl cid lb1 "s-$((n % 3 + 1))")
	if ((n % 2)); then
		qc "loop$n" 4443 4 "198.18.1.$((100 + n))" \
			--port-base $((48000 + 100 * n)) --dcid "$c"
	else
		qc "loop$n" 4443 6 "2001:db8:1::$((100 + n))" \
			--port-base $((48000 + 100 * n)) --dcid "$c"
	fi
	sent=$((sent + $(answered "loop$n")))
	bad=$((bad + $(not_from "loop$n" "q-$((n % 3 + 1))")))
done
e2e_eq "every fresh CID after each change answered ($((12 * N)))" "$sent" $((12 * N))
e2e_eq "every one by the backend it names" "$bad" 0
e2e_eq "no error counted (a config without its key or context)" \
	"$(($(svc_stat lb1 errors) - errs0))" 0
e2e_check "the daemon still answers" rsctl status

e2e_summary

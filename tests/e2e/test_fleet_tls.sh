#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end, fleet mode over an etcd that requires TLS client
# certificates and RBAC users (issue 20), all made here: an openssl CA,
# etcd's server certificate, CN-less host certificates (etcd 3.4's JSON
# gateway refuses a request whose certificate has a CN while
# --client-cert-auth is on), a role and a user per host: read on the
# fleet prefix, write on its own record and drain key only.
#   - three hosts authenticate, agree, and keep 200 clients on their
#     backends; when etcd restarts (its tokens are gone) they
#     authenticate again;
#   - a host's user cannot write outside the prefix, nor another host's
#     record, a new member or another host's drain key, nor revoke or use
#     another host's lease (issue 36); fleet drain of another host is
#     refused with etcd's answer; a client without a certificate is
#     refused at TLS;
#   - --check refuses a key or password file that group or others can
#     read, naming the key, and a certificate without its key;
#   - a wrong password shows as etcd down with the reason, and the host
#     comes back when the file is fixed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/fleet_lib.sh

ETCD=https://$RS_FLEET_ETCD_IP:2379

ossl() { openssl "$@" 2>>"$OUT/openssl.log"; }
# cert NAME SUBJECT [SAN]: a key and a certificate signed by the CA.
cert() {
	ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "$2" -keyout "$PKI/$1.key" -out "$PKI/$1.csr"
	if [[ -n ${3:-} ]]; then
		printf 'subjectAltName = %s\nextendedKeyUsage = serverAuth,clientAuth\n' "$3" >"$PKI/$1.ext"
	else
		printf 'extendedKeyUsage = clientAuth\n' >"$PKI/$1.ext"
	fi
	ossl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
		-CAcreateserial -days 2 -extfile "$PKI/$1.ext" -out "$PKI/$1.pem"
	chmod 600 "$PKI/$1.key"
}

# start_etcd NAME: etcd over TLS with client certificates, in the router
# namespace, with its data in $OUT/etcd.
start_etcd() {
	rs_bg_start "$1" nsenter --net="/run/netns/$RS_NS_EDGE" -- \
		etcd --name fleet --data-dir "$OUT/etcd" \
		--listen-client-urls "$ETCD" --advertise-client-urls "$ETCD" \
		--listen-peer-urls "http://$RS_FLEET_ETCD_IP:2380" \
		--initial-advertise-peer-urls "http://$RS_FLEET_ETCD_IP:2380" \
		--initial-cluster "fleet=http://$RS_FLEET_ETCD_IP:2380" \
		--cert-file "$PKI/etcd.pem" --key-file "$PKI/etcd.key" \
		--trusted-ca-file "$PKI/ca.pem" --client-cert-auth \
		--log-level error
	for ((t = 0; t < 100; t++)); do
		etcd_as admin /v3/maintenance/status '{}' | grep -q version && return 0
		sleep 0.1
	done
	return 1
}

# etcd_as CERT PATH JSON [TOKEN]: a gateway call with CERT's certificate.
etcd_as() {
	local hdr=()
	[[ -n ${4:-} ]] && hdr=(-H "Authorization: $4")
	nsenter --net="/run/netns/$RS_NS_EDGE" -- curl -s -m 5 -X POST \
		--cacert "$PKI/ca.pem" --cert "$PKI/$1.pem" --key "$PKI/$1.key" \
		"${hdr[@]}" -d "$3" "$ETCD$2"
}
# etcd_as_says PATTERN CERT PATH JSON [TOKEN]: etcd_as's answer has PATTERN
# (read whole first: grep -q leaving early must not fail curl under pipefail).
etcd_as_says() {
	local pattern=$1
	shift
	grep -q -- "$pattern" <<<"$(etcd_as "$@")"
}

# tls_etcd: e2e_fleet_setup's etcd start: the certificates first (they
# live in $OUT, which the setup makes), then etcd over TLS.
tls_etcd() {
	local i
	PKI=$OUT/pki
	mkdir -p "$PKI"
	chmod 700 "$PKI"
	echo "# a CA, etcd's certificate, CN-less host certificates"
	ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/O=ringsteer test CA" -keyout "$PKI/ca.key" -out "$PKI/ca.pem"
	cert etcd "/O=ringsteer test etcd" "IP:$RS_FLEET_ETCD_IP"
	for i in 1 2 3; do cert "host-$i" "/O=ringsteer"; done
	cert admin "/O=ringsteer admin"
	e2e_check "host certificates carry no CN" \
		bash -c "! openssl x509 -in '$PKI/host-1.pem' -noout -subject | grep -q CN"
	e2e_check "etcd with TLS and client certificates" start_etcd etcd
}
e2e_fleet_setup fts tls_etcd

echo "# RBAC: a role per host, as docs/fleet.md sets it up"
etcd_as admin /v3/auth/user/add '{"name":"root","password":"root-pw"}' >/dev/null
etcd_as admin /v3/auth/user/grant '{"user":"root","role":"root"}' >/dev/null
# grant ROLE TYPE KEY [RANGE_END]: a permission on KEY (a range with END).
grant() {
	etcd_as admin /v3/auth/role/grant "{\"name\":\"$1\",\"perm\":{\"permType\":\"$2\",\"key\":\"$(b64 "$3")\"${4:+,\"range_end\":\"$(b64 "$4")\"}}}" >/dev/null
}
for i in 1 2 3; do
	etcd_as admin /v3/auth/role/add "{\"name\":\"host-$i\"}" >/dev/null
	grant "host-$i" READ "$PREFIX/" "${PREFIX}0"
	grant "host-$i" READWRITE "$PREFIX/members/host-$i"
	grant "host-$i" READWRITE "$PREFIX/drain/host-$i"
	etcd_as admin /v3/auth/user/add "{\"name\":\"host-$i\",\"password\":\"pw-host-$i\"}" >/dev/null
	etcd_as admin /v3/auth/user/grant "{\"user\":\"host-$i\",\"role\":\"host-$i\"}" >/dev/null
	printf 'pw-host-%s\n' "$i" >"$PKI/host-$i.pw"
	chmod 600 "$PKI/host-$i.pw"
done
e2e_check "auth enabled" etcd_as_says header admin /v3/auth/enable '{}'

# conf I [PASSWORD_FILE]: host I's configuration over TLS as user host-I.
conf() {
	host_conf "$1" |
		sed "s|^etcd = .*|etcd = $ETCD\netcd_ca = $PKI/ca.pem\netcd_cert = $PKI/host-$1.pem\netcd_key = $PKI/host-$1.key\netcd_user = host-$1\netcd_password_file = ${2:-$PKI/host-$1.pw}|"
}
for i in 1 2 3; do
	conf "$i" >"$OUT/h$i.conf"
	run_host "$i"
done
e2e_check "--check accepts the TLS configuration" build/ringsteerd --check -c "$OUT/h1.conf"
e2e_check "all three hosts agree on three members over TLS" \
	wait_members host-1,host-2,host-3 1 2 3
e2e_eq "status: TLS, client certificate, user" \
	"$(ctl 1 -j fleet status | jq -c '.etcd_auth | [.tls, .client_certificate, .user]')" \
	'[true,true,"host-1"]'
clients base 200 2
e2e_eq "no failed connections" "$(e2e_errors "$OUT/base")" 0
e2e_eq "every client reaches one backend only" "$(e2e_unstable "$OUT/base")" 0

echo "# etcd restarts: its tokens are gone, the hosts authenticate again"
t0=$(ctl 1 -j fleet status | jq .etcd_auth.tokens)
rs_bg_stop etcd
start_etcd etcd2
for ((t = 0; t < 100; t++)); do
	(($(ctl 1 -j fleet status | jq .etcd_auth.tokens) > t0)) && break
	sleep 0.1
done
e2e_check "host-1 got a new token ($t0 before)" \
	test "$(ctl 1 -j fleet status | jq .etcd_auth.tokens)" -gt "$t0"
e2e_check "the hosts agree again" wait_members host-1,host-2,host-3 1 2 3
e2e_eq "etcd up everywhere" \
	"$(for i in 1 2 3; do ctl "$i" -j fleet status | jq -r .etcd; done | sort -u)" up

echo "# what a host's user and a certificate-less client can do"
tok=$(etcd_as host-1 /v3/auth/authenticate '{"name":"host-1","password":"pw-host-1"}' | jq -r .token)
e2e_check "host-1's user reads host-2's record" etcd_as_says '"kvs"' host-1 /v3/kv/range \
	"{\"key\":\"$(b64 "$PREFIX/members/host-2")\"}" "$tok"
lease2=$(etcd_as host-1 /v3/kv/range "{\"key\":\"$(b64 "$PREFIX/members/host-2")\"}" "$tok" |
	jq -r '.kvs[0].lease')
for k in members/host-2 members/aa-fake drain/host-2; do
	e2e_check "host-1's user cannot write $k" etcd_as_says 'permission denied' host-1 \
		/v3/kv/put "{\"key\":\"$(b64 "$PREFIX/$k")\",\"value\":\"$(b64 x)\"}" "$tok"
done
e2e_check "host-1's user cannot revoke host-2's lease" etcd_as_says 'permission denied' \
	host-1 /v3/lease/revoke "{\"ID\":\"$lease2\"}" "$tok"
e2e_check "nor put its own key under host-2's lease" etcd_as_says 'permission denied' \
	host-1 /v3/kv/put "{\"key\":\"$(b64 "$PREFIX/members/host-1")\",\"value\":\"$(b64 x)\",\"lease\":\"$lease2\"}" "$tok"
out=$(ctl 1 fleet drain host-2 2>&1) && rc=0 || rc=$?
e2e_check "fleet drain host-2 at host-1 fails with etcd's answer ($out)" \
	test "$rc" -ne 0 -a -n "$(grep 'permission denied' <<<"$out")"
e2e_check "host-2 kept its lease and its place" wait_members host-1,host-2,host-3 1 2 3
e2e_check "host-1's user cannot write outside it" etcd_as_says 'permission denied' host-1 /v3/kv/put \
	"{\"key\":\"$(b64 /elsewhere)\",\"value\":\"$(b64 x)\"}" "$tok"
e2e_check "a client without a certificate is refused at TLS" bash -c \
	"! nsenter --net=/run/netns/$RS_NS_EDGE -- curl -sf -m 5 --cacert '$PKI/ca.pem' -X POST -d '{}' '$ETCD/v3/maintenance/status'"

echo "# secrets that group or others can read are refused"
cp "$PKI/host-1.key" "$PKI/open.key"
chmod 644 "$PKI/open.key"
sed "s|^etcd_key = .*|etcd_key = $PKI/open.key|" "$OUT/h1.conf" >"$OUT/open-key.conf"
out=$(build/ringsteerd --check -c "$OUT/open-key.conf" 2>&1 || true)
e2e_check "a 0644 key file is refused, naming etcd_key and the mode" \
	grep -q "\[fleet\] etcd_key: $PKI/open.key can be read or written by group or others (mode 0644)" <<<"$out"
cp "$PKI/host-1.pw" "$PKI/open.pw"
chmod 640 "$PKI/open.pw"
sed "s|^etcd_password_file = .*|etcd_password_file = $PKI/open.pw|" "$OUT/h1.conf" >"$OUT/open-pw.conf"
out=$(build/ringsteerd --check -c "$OUT/open-pw.conf" 2>&1 || true)
e2e_check "a 0640 password file is refused, naming etcd_password_file" \
	grep -q "\[fleet\] etcd_password_file: .* (mode 0640)" <<<"$out"
grep -v '^etcd_key = ' "$OUT/h1.conf" >"$OUT/no-key.conf"
out=$(build/ringsteerd --check -c "$OUT/no-key.conf" 2>&1 || true)
e2e_check "a certificate without its key is refused" \
	grep -q "\[fleet\] etcd_cert: needs etcd_key too" <<<"$out"
e2e_check "no password in any log" bash -c "! grep -q 'pw-host-' $OUT/*.err"

echo "# a wrong password, then the right one"
printf 'not-the-password\n' >"$PKI/wrong.pw"
chmod 600 "$PKI/wrong.pw"
conf 3 "$PKI/wrong.pw" >"$OUT/h3.conf"
e2e_check "reload host-3 with a wrong password" ctl 3 reload
for ((t = 0; t < 100; t++)); do
	ctl 3 -j fleet status | jq -r '.error // ""' | grep -q 'authenticating as etcd user host-3' && break
	sleep 0.1
done
e2e_check "host-3's status says why etcd refuses it" bash -c \
	"build/ringsteer -s '$OUT/h3.sock' -j fleet status | jq -r .error | grep -q 'authenticating as etcd user host-3'"
e2e_eq "host-3 sees etcd down" "$(ctl 3 -j fleet status | jq -r .etcd)" down
conf 3 >"$OUT/h3.conf"
e2e_check "reload host-3 with the right password" ctl 3 reload
e2e_check "host-3 back in every table" wait_members host-1,host-2,host-3 1 2 3

e2e_summary

#!/bin/sh
# SPDX-License-Identifier: MIT
# rs-backend@X: the minimal sample's backend cache-X on 808N (a: 8081,
# b: 8082, c: 8083), on both families; q1..q3: the QUIC service's UDP
# backend q-N on 127.0.1.N:4433 (a port a DynamicUser may bind).
case $1 in
a) port=8081 ;;
b) port=8082 ;;
c) port=8083 ;;
q[123]) exec /opt/ringsteer-vmtest/rs_backend --name "q-${1#q}" --udp "127.0.1.${1#q}:4433" ;;
*) echo "no backend $1" >&2 && exit 2 ;;
esac
exec /opt/ringsteer-vmtest/rs_backend --name "cache-$1" --tcp "127.0.0.1:$port" --tcp "[::1]:$port"

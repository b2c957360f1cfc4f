#!/bin/sh
# SPDX-License-Identifier: MIT
# rs-backend@X: the minimal sample's backend cache-X on 808N (a: 8081,
# b: 8082, c: 8083), on both families.
case $1 in
a) port=8081 ;;
b) port=8082 ;;
c) port=8083 ;;
*) echo "no backend $1" >&2 && exit 2 ;;
esac
exec /opt/ringsteer-vmtest/rs_backend --name "cache-$1" --tcp "127.0.0.1:$port" --tcp "[::1]:$port"

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/e2e/test_fleet_quic.sh with encrypted connection IDs: the three
# hosts share one QUIC-LB key (quic_key_file), so each decrypts a
# migrating client's DCID to find the member whose backend issued it
# (docs/fleet.md "QUIC").
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d /tmp/rs-fleet-quic-key.XXXXXX)
trap 'rm -rf "$dir"' EXIT
openssl rand -hex 16 >"$dir/key"
chmod 600 "$dir/key"
FLEET_QUIC_KEY=$dir/key tests/e2e/test_fleet_quic.sh

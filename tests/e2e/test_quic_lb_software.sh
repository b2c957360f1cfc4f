#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/e2e/test_quic_lb.sh again with the AES in BPF forced
# (RINGSTEER_QUIC_LB_CIPHER=software), so that a host whose kernel has the
# crypto kfuncs also runs the path Debian 12's 6.1 takes.
set -euo pipefail
cd "$(dirname "$0")/../.."
RINGSTEER_QUIC_LB_CIPHER=software exec tests/e2e/test_quic_lb.sh

#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages `make bench` compares against, plots
# or profiles with (perf: `make bench-profile`), and only those that are
# missing. Idempotent.
#   scripts/bench-deps.sh          install what is missing
#   scripts/bench-deps.sh --check  exit 1 if anything is missing
# The packages' own services are never used: the benchmark runs its own
# instances inside network namespaces, so installing them starts none.
set -euo pipefail

PACKAGES=(haproxy nginx libnginx-mod-stream gnuplot-nox linux-perf)

opts=(--no-start --name bench-deps)
if [[ ${1:-} == "--check" ]]; then
	opts+=(--check)
fi
exec "$(dirname "$0")/install-deps.sh" "${opts[@]}" "${PACKAGES[@]}"

#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages `make bench` compares against or plots
# with, and only those that are missing. Idempotent.
#   scripts/bench-deps.sh          install what is missing
#   scripts/bench-deps.sh --check  exit 1 if anything is missing
set -euo pipefail

PACKAGES=(haproxy nginx libnginx-mod-stream gnuplot-nox)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "ok installed"; then
		missing+=("$p")
	fi
done

if [[ ${1:-} == "--check" ]]; then
	if ((${#missing[@]})); then
		echo "missing packages: ${missing[*]}" >&2
		exit 1
	fi
	exit 0
fi

if ((${#missing[@]} == 0)); then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "bench-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "bench-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The packages' own services are never used: the benchmark runs its own
# instances inside network namespaces. policy-rc.d keeps the postinst
# scripts from starting (and failing to start) the system-wide daemons.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 0755 "$policy"
	made_policy=1
fi
rc=0
apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
[[ -n $made_policy ]] && rm -f "$policy"
exit $rc

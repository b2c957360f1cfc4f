#!/bin/bash
# Installs the Debian 12 packages ringsteer needs to build, test and demo,
# and only those that are missing. Idempotent.
#   scripts/install-deps.sh          install what is missing
#   scripts/install-deps.sh --check  exit 1 if anything is missing
set -euo pipefail

PACKAGES=(
	make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
	libxxhash-dev libnl-3-dev libnl-route-3-dev libnl-idiag-3-dev
	libinih-dev libcunit1-dev libev-dev libcurl4-openssl-dev libjansson-dev
	libmicrohttpd-dev
	iproute2 util-linux procps memcached clang-format cppcheck jq socat curl
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing+=("$p")
	fi
done

if [[ "${1:-}" == "--check" ]]; then
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
	echo "install-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

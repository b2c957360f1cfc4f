#!/bin/bash
# Installs the Debian 12 packages ringsteer needs to build, test and demo
# (qemu-system-x86, busybox-static, cpio and kmod: `make vmtest`;
# debootstrap and xz-utils: its Debian 13 roots and kernel),
# and only those that are missing. Idempotent.
#   scripts/install-deps.sh          install what is missing
#   scripts/install-deps.sh --check  exit 1 if anything is missing
#   scripts/install-deps.sh --list   print the packages, one a line (the
#                                    release roots of scripts/release-root.sh
#                                    are made from this list)
# Other package lists go the same way (scripts/bench-deps.sh):
#   scripts/install-deps.sh [--check] [--no-start] [--name NAME] [PACKAGE...]
#     --no-start   keep the packages' postinst scripts from starting their
#                  system-wide services (policy-rc.d) while installing
#     --name NAME  what the messages start with (default: install-deps)
#     PACKAGE...   the packages (default: ringsteer's own)
set -euo pipefail

PACKAGES=(
	make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
	libxxhash-dev libnl-3-dev libnl-route-3-dev libnl-idiag-3-dev
	libinih-dev libcunit1-dev libev-dev libcurl4-openssl-dev libjansson-dev
	libmicrohttpd-dev libssl-dev libsystemd-dev
	iproute2 util-linux procps memcached clang-format cppcheck shellcheck jq
	socat curl scdoc systemd dpkg-dev debhelper lintian prometheus
	qemu-system-x86 busybox-static cpio kmod etcd-server openssl
	debootstrap xz-utils
)

check=""
list=""
no_start=""
name=install-deps
while (($#)); do
	case "$1" in
	--check) check=1 ;;
	--list) list=1 ;;
	--no-start) no_start=1 ;;
	--name)
		name=$2
		shift
		;;
	-*)
		echo "$name: unknown option $1" >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
if (($#)); then
	PACKAGES=("$@")
else
	# The demo and the tests run their own memcached and etcd inside namespaces:
	# the package's system-wide service is not wanted.
	no_start=1
fi

if [[ -n $list ]]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing+=("$p")
	fi
done

if [[ -n $check ]]; then
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
	echo "$name: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "$name: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# policy-rc.d keeps the postinst scripts from starting (and failing to
# start) the system-wide daemons; one that is already there is left alone.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [[ -n $no_start && ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 0755 "$policy"
	made_policy=1
fi
rc=0
apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
[[ -n $made_policy ]] && rm -f "$policy"
exit $rc

#!/bin/bash
# SPDX-License-Identifier: MIT
# A debootstrapped root of a Debian release with what building and testing
# the tree needs, made once and cached: the build roots of
# scripts/build-in-root.sh and the guest's root of
# `make vmtest VMTEST_RELEASE=trixie`.
#   scripts/release-root.sh RELEASE [DIR]      make DIR (unless it is
#                                              current) and print its path
#   scripts/release-root.sh --run RELEASE [DIR] -- CMD...
#                                              run CMD in it (chroot, with
#                                              /proc, /sys and /dev mounted
#                                              for the time of CMD)
# RELEASE is bookworm or trixie; DIR defaults to
# $VMTEST_CACHE/root-RELEASE (VMTEST_CACHE: /var/cache/ringsteer-vmtest).
#
# The packages are scripts/install-deps.sh --list (one list for the host
# and the roots) less what has no use in a root, plus build-essential
# (dpkg-buildpackage checks for it). A root is reused while that list, the
# release and the mirror are the same: their hash is in DIR/.done. Made
# with debootstrap --variant=minbase, then apt-get install inside, with a
# policy-rc.d so that no package starts a service.
# Environment: RELEASE_ROOT_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "release-root: $*" >&2
	exit 1
}
run=""
if [[ ${1:-} == --run ]]; then
	run=1
	shift
fi
(($#)) || die "usage: release-root.sh [--run] RELEASE [DIR] [-- CMD...]"
release=$1
shift
case $release in
bookworm | trixie) ;;
*) die "unknown release $release (bookworm or trixie)" ;;
esac
cache=${VMTEST_CACHE:-/var/cache/ringsteer-vmtest}
dir=$cache/root-$release
if (($#)) && [[ $1 != -- ]]; then
	dir=$1
	shift
fi
[[ ${1:-} == -- ]] && shift
[[ -z $run || $# -gt 0 ]] || die "--run needs a command after --"
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot)"
mirror=${RELEASE_ROOT_MIRROR:-http://deb.debian.org/debian}

# Not in a root: lint (clang-format, cppcheck, shellcheck: the host's
# `make lint` is the one), lintian (the host's checks the root's package),
# the demo's and the host suites' daemons (memcached, prometheus), and what
# `make vmtest` runs on the host (qemu, busybox, cpio, debootstrap,
# xz-utils). etcd-server stays: the fleet suites run their own etcd.
not_in_root=" clang-format cppcheck shellcheck lintian memcached prometheus
	qemu-system-x86 busybox-static cpio debootstrap xz-utils "
packages() {
	{
		scripts/install-deps.sh --list | while read -r p; do
			[[ $not_in_root == *[[:space:]]"${p}"[[:space:]]* ]] || echo "$p"
		done
		echo build-essential
	} | sort -u
}

# Mounts for a command in the root, and their removal on any exit.
mounted=()
unmount_all() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" || umount -l "${mounted[i]}" || true
	done
	mounted=()
}
mount_root() {
	mount -t proc proc "$dir/proc" && mounted+=("$dir/proc")
	mount -t sysfs sys "$dir/sys" && mounted+=("$dir/sys")
	mount --bind /dev "$dir/dev" && mounted+=("$dir/dev")
	mount -t devpts -o newinstance devpts "$dir/dev/pts" && mounted+=("$dir/dev/pts")
	mount -t tmpfs tmp "$dir/dev/shm" && mounted+=("$dir/dev/shm")
}
in_root() {
	chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
trap unmount_all EXIT
trap 'exit 130' INT TERM

# One maker of a root at a time (a second waits, then finds it done).
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9

# format: what this script puts into a root besides the packages (bump it
# when that changes, so that older roots are made again).
format=2
want=$({
	echo "$release $mirror $format"
	packages
} | sha256sum | cut -d' ' -f1)
if [[ ! -f $dir/.done || $(cat "$dir/.done") != "$want" ]]; then
	start=$SECONDS
	if [[ -e $dir ]]; then
		findmnt -rn -o TARGET | grep -q "^$dir/" &&
			die "$dir has mounts; unmount them first"
		echo "release-root: $dir is out of date: made again" >&2
		rm -rf --one-file-system -- "$dir"
	fi
	echo "release-root: debootstrap $release into $dir" >&2
	debootstrap --variant=minbase "$release" "$dir" "$mirror" >"$dir.log" 2>&1 ||
		die "debootstrap failed: $(tail -5 "$dir.log")"
	echo "release-root: debootstrap done after $((SECONDS - start))s" >&2
	# debootstrap writes no /etc/hosts; the suites' "localhost" needs one.
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
		>"$dir/etc/hosts"
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 0755 "$dir/usr/sbin/policy-rc.d"
	mount_root
	mapfile -t pkgs < <(packages)
	in_root apt-get update -q >>"$dir.log" 2>&1 || die "apt-get update failed"
	echo "release-root: installing ${#pkgs[@]} packages" >&2
	if ! in_root apt-get install -y -q --no-install-recommends "${pkgs[@]}" \
		>>"$dir.log" 2>&1; then
		die "apt-get install failed: $(tail -5 "$dir.log")"
	fi
	in_root apt-get clean
	unmount_all
	echo "$want" >"$dir/.done"
	echo "release-root: $release root made in $((SECONDS - start))s" >&2
fi

if [[ -n $run ]]; then
	mount_root
	rc=0
	in_root "$@" || rc=$?
	unmount_all
	exit "$rc"
fi
echo "$dir"

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `make vmtest-systemd`: the package's life under a real systemd, as PID 1
# of a Debian guest booted under qemu TCG with its own kernel (Debian 12:
# 6.1 and systemd 252; Debian 13: 6.12 and systemd 257). The guest runs
# tests/vm/systemd/run.sh as a service: apt install of the package built
# from this tree, enable --now, reloads (hostile names among them),
# restart, kill -9 and the watchdog under load, an upgrade to a newer
# package, a rollback to the previous release and the upgrade back under
# TCP load and established QUIC flows (a UDP backend restarted in the
# hand-over), a local user squatting stopped backends, the daemon as a
# fleet member beside a hostile one (Debian's etcd over TLS with a role
# per host) while it is restarted and reloaded, a reboot,
# remove and purge.
#
#   scripts/vmtest-systemd.sh [bookworm|trixie]...   (root; default: both)
#   scripts/vmtest-systemd.sh --prepare [RELEASE]... only the cached roots
#                                   (.ci/run makes them while make test runs)
#
# The guest's root is debootstrapped once per release (minbase, systemd as
# init, the release's kernel and initramfs) and kept in
# $VMTEST_CACHE/sdroot-RELEASE while its package list is the same; the
# package's run-time dependencies, which apt would otherwise fetch (the
# guest has no network), are added to it from the archive. Each run copies it, adds the test and the packages, and makes the
# guest's disk from it (mkfs.ext4 -d: no loop mount). The package: built
# on this host for the host's release, in a debootstrapped root of the
# release otherwise (scripts/build-in-root.sh). The newer package of the
# upgrade is the same package with a higher version (+vmtest1): what the
# maintainer scripts do on an upgrade does not depend on the binaries.
# The previous release (the last of scripts/releases.list, or
# VMTEST_PREVIOUS), built from git as its package for the guest's release
# (scripts/build-release.sh --package), is the one rolled back to and
# upgraded from across an ABI change. The two guests run side by side.
# Environment:
#   VMTEST_CACHE    guest roots (default /var/cache/ringsteer-vmtest)
#   VMTEST_TIMEOUT  seconds before a guest is killed (default 2400: with
#                   the fleet pass and a helper's builds beside both
#                   guests, one reached its reboot after 1612 s and was
#                   killed at 1800 in its second phase)
#   VMTEST_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   VMTEST_PREVIOUS the release rolled back to (default: releases.list's last)
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${VMTEST_CACHE:-/var/cache/ringsteer-vmtest}
TIMEOUT=${VMTEST_TIMEOUT:-2400}
MIRROR=${VMTEST_MIRROR:-http://deb.debian.org/debian}
OUT=build/vmtest-systemd
PREVIOUS=${VMTEST_PREVIOUS:-$(awk '!/^#/ && NF { n = $1 } END { print n }' scripts/releases.list)}

die() {
	echo "vmtest-systemd: $*" >&2
	exit 1
}
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, qemu)"
for t in qemu-system-x86_64 debootstrap mkfs.ext4 dpkg-deb dpkg-buildpackage; do
	command -v "$t" >/dev/null || die "$t missing: scripts/install-deps.sh installs it"
done
host_release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# The package for RELEASE into DIR/ringsteer_v1.deb and its +vmtest1.
packages() {
	local rel=$1 dir=$2 src deb
	mkdir -p "$dir"
	if [[ $rel == "$host_release" ]]; then
		src=$(mktemp -d /tmp/rs-vmsd-pkg.XXXXXX)
		mkdir "$src/src"
		git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src/src"
		(cd "$src/src" && dpkg-buildpackage -us -uc -b) >"$dir/build.log" 2>&1 || {
			tail -30 "$dir/build.log"
			rm -rf "$src"
			die "dpkg-buildpackage failed (log: $dir/build.log)"
		}
		deb=$(ls "$src"/ringsteer_*_amd64.deb)
		cp "$deb" "$dir/ringsteer_v1.deb"
		rm -rf "$src"
	else
		# make vmtest-trixie builds it too: the same tree's is taken.
		local pkg=build/pkg-$rel
		if [[ $(cat "$pkg/tree-hash" 2>/dev/null) != "$(scripts/tree-hash.sh)" ]]; then
			scripts/build-in-root.sh "$rel" "$pkg" >"$dir/build.log" 2>&1 || {
				tail -30 "$dir/build.log"
				die "building the package on $rel failed (log: $dir/build.log)"
			}
		fi
		deb=$(ls "$pkg"/ringsteer_*_amd64.deb)
		cp "$deb" "$dir/ringsteer_v1.deb"
	fi
	deb=$(scripts/build-release.sh --package "$rel" "$PREVIOUS") ||
		die "building the package of $PREVIOUS for $rel failed"
	cp "$deb" "$dir/ringsteer_prev.deb"
	# The upgrade: the same files, a higher version.
	rm -rf "$dir/repack"
	dpkg-deb -R "$dir/ringsteer_v1.deb" "$dir/repack"
	sed -i 's/^Version: \(.*\)$/Version: \1+vmtest1/' "$dir/repack/DEBIAN/control"
	dpkg-deb --root-owner-group -b "$dir/repack" "$dir/ringsteer_v2.deb" >/dev/null
	rm -rf "$dir/repack"
}

# The package names a .deb's Depends needs (first of each alternative).
depends_of() {
	dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' |
		grep -v '^$' | sort -u
}

# The cached guest root of RELEASE: minbase, systemd as init, the kernel,
# what the test uses. Made without the package (--prepare runs it while
# the package is not built yet).
BASE=(systemd systemd-sysv udev linux-image-amd64 initramfs-tools iproute2
	procps jq bpftool)
base_root() {
	local rel=$1 root=$CACHE/sdroot-$1 key s inc
	key=$(printf '%s\n' "$rel" "$MIRROR" "${BASE[@]}" | sort | sha256sum | cut -c1-16)
	if [[ -f $root/.done && $(cat "$root/.done") == "$key" ]]; then
		echo "$root"
		return
	fi
	rm -rf --one-file-system "$root"
	mkdir -p "$CACHE"
	s=$SECONDS
	inc=$(
		IFS=,
		echo "${BASE[*]}"
	)
	echo "vmtest-systemd: debootstrap $rel" >&2
	debootstrap --variant=minbase --include="$inc" "$rel" "$root" "$MIRROR" \
		>"$CACHE/debootstrap-$rel.log" 2>&1 || {
		tail -20 "$CACHE/debootstrap-$rel.log" >&2
		die "debootstrap $rel failed (log: $CACHE/debootstrap-$rel.log)"
	}
	chroot "$root" apt-get clean
	echo "vmtest-systemd: debootstrap $rel took $((SECONDS - s)) s" >&2
	echo "$key" >"$root/.done"
	echo "$root"
}

# What the test adds to the base root beside the package's dependencies:
# the fleet member's etcd (Debian's, started by systemd), etcdctl, and
# openssl for its CA and the hostile member's signatures. Installed like
# the dependencies, so a cached root keeps its key (BASE) and is added to.
EXTRA=(etcd-server etcd-client openssl)

# The base root with the package's run-time dependencies, which apt would
# fetch on a host with a network (the guest has none), and EXTRA:
# installed from the archive into the cached root when one is missing.
guest_root() {
	local rel=$1 deb=$2 root deps missing=() p
	root=$(base_root "$rel")
	mapfile -t deps < <(depends_of "$deb")
	deps+=("${EXTRA[@]}")
	for p in "${deps[@]}"; do
		chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "ok installed" || missing+=("$p")
	done
	if ((${#missing[@]})); then
		echo "vmtest-systemd: $rel: installing ${missing[*]}" >&2
		printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
		chmod 0755 "$root/usr/sbin/policy-rc.d"
		if ! chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends "${missing[@]}" >"$CACHE/deps-$rel.log" 2>&1 ||
			! chroot "$root" apt-get clean; then
			rm -f "$root/usr/sbin/policy-rc.d"
			tail -20 "$CACHE/deps-$rel.log" >&2
			die "$rel: installing the package's dependencies failed"
		fi
		rm -f "$root/usr/sbin/policy-rc.d"
	fi
	echo "$root"
}

# The guest's disk: the cached root, the test, the packages.
make_disk() {
	local root=$1 dir=$2 rel=$3 r=$2/root t
	rm -rf --one-file-system "$r"
	cp -a "$root" "$r"
	rm -f "$r/.done"
	t=$r/opt/ringsteer-vmtest
	mkdir -p "$t"
	install -m 0755 tests/vm/systemd/run.sh tests/vm/systemd/backend.sh build/tools/rs_client \
		build/tools/rs_backend build/tools/quic_client "$t/"
	install -m 0644 tests/vm/systemd/quic.conf "$t/"
	cp "$dir/ringsteer_v1.deb" "$dir/ringsteer_v2.deb" "$dir/ringsteer_prev.deb" "$t/"
	for u in tests/vm/systemd/*.service; do
		install -m 0644 "$u" "$r/etc/systemd/system/"
	done
	local w=$r/etc/systemd/system/multi-user.target.wants
	mkdir -p "$w"
	for u in rs-vmtest.service rs-vmtest-net.service rs-backend@a.service \
		rs-backend@b.service rs-backend@c.service rs-backend@q1.service \
		rs-backend@q2.service rs-backend@q3.service; do
		ln -sf "/etc/systemd/system/${u/@*./@.}" "$w/$u"
	done
	# etcd-server enables its unit, which fails at boot (the guest has
	# no /etc/hosts for its default peer URL) and costs the boot its CPU;
	# the fleet pass sets it up and starts it.
	rm -f "$w/etcd.service" "$r/etc/systemd/system/etcd2.service"
	echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$r/etc/fstab"
	echo "rs-$rel-guest" >"$r/etc/hostname"
	# No getty on the console the test writes to; no password to set.
	ln -sf /dev/null "$r/etc/systemd/system/serial-getty@ttyS0.service"
	rm -f "$dir/disk.raw"
	truncate -s 4G "$dir/disk.raw"
	mkfs.ext4 -q -F -L root -d "$r" "$dir/disk.raw"
	rm -rf --one-file-system "$r"
}

qpid=""
cleanup() {
	[[ -n $qpid ]] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One release: 0 when its guest printed VMTEST-RESULT: PASS.
run_release() {
	local rel=$1 dir=$OUT/$1 root kernel initrd log start
	rm -rf --one-file-system "$dir"
	mkdir -p "$dir"
	start=$SECONDS
	packages "$rel" "$dir"
	echo "vmtest-systemd: $rel: $(dpkg-deb -f "$dir/ringsteer_v1.deb" Version) built after $((SECONDS - start)) s"
	root=$(guest_root "$rel" "$dir/ringsteer_v1.deb")
	make_disk "$root" "$dir" "$rel"
	kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
	initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -n 1)
	log=$dir/guest.log
	echo "vmtest-systemd: $rel: disk ready after $((SECONDS - start)) s; booting $(basename "$kernel") under qemu TCG; log in $log"
	local s=$SECONDS rc=0
	# No -no-reboot: the test reboots the guest once. It powers off at the
	# end; the timeout ends a guest that never does.
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -smp 2 -m 2048 \
		-nodefaults -no-user-config -display none \
		-serial "file:$log" -nic none \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 root=/dev/vda rw panic=-1 quiet loglevel=3" \
		-drive "file=$dir/disk.raw,format=raw,if=virtio,cache=unsafe" \
		</dev/null &
	qpid=$!
	tail -n +1 -F --pid="$qpid" "$log" 2>/dev/null | grep -a --line-buffered '^VMTEST' |
		sed -u "s/^/$rel: /" &
	local tpid=$!
	wait "$qpid" || rc=$?
	qpid=""
	((rc == 124)) && echo "vmtest-systemd: $rel: guest killed after ${TIMEOUT}s" >&2
	wait "$tpid" 2>/dev/null || true
	rm -f "$dir/disk.raw"
	echo "vmtest-systemd: $rel: guest ran $((SECONDS - s)) s, $((SECONDS - start)) s in all"
	# The guest's kernel, when it complained (a panic reboots the guest:
	# the test sees a reboot that was not its own, unless it came before
	# the test's service started). Shown on a pass too.
	if grep -aqE "$KERNEL_TROUBLE" "$log"; then
		grep -aE "$KERNEL_TROUBLE" "$log" | head -n 30 |
			sed "s/^/vmtest-systemd: $rel: console: /" >&2
	fi
	grep -aq '^VMTEST-RESULT: PASS' "$log" && return 0
	grep -aqE 'Kernel panic|Oops:' "$log" && return 2
	return 1
}
KERNEL_TROUBLE='Kernel panic|BUG:|Oops|Call Trace|soft lockup|rcu: .*stall|Out of memory|segfault'

prepare=""
if [[ ${1:-} == --prepare ]]; then
	prepare=1
	shift
fi
releases=("$@")
((${#releases[@]})) || releases=(bookworm trixie)
for rel in "${releases[@]}"; do
	case $rel in
	bookworm | trixie) ;;
	*) die "unknown release $rel (bookworm or trixie)" ;;
	esac
done
if [[ -n $prepare ]]; then
	for rel in "${releases[@]}"; do
		base_root "$rel" >/dev/null
		scripts/build-release.sh --package "$rel" "$PREVIOUS" >/dev/null
	done
	exit 0
fi
for b in build/tools/rs_client build/tools/rs_backend build/tools/quic_client; do
	[[ -x $b ]] || die "$b missing: run make build first"
done
# Side by side: a guest spends much of its time waiting (boots, loads,
# restarts), so two on the machine's cores take little more than one.
# Each subshell ends its own qemu (cleanup) when it exits or is stopped.
run_one() {
	qpid=""
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	local rc=0
	run_release "$1" || rc=$?
	# The guest's own kernel crashed under TCG (seen once, a double fault
	# in the slab allocator of trixie's 6.12 during accept() of a test
	# backend): not a verdict on the package. Once more, said loudly;
	# a second crash or any other failure fails.
	if ((rc == 2)); then
		echo "vmtest-systemd: $1: the guest's kernel crashed (console above): running the guest once more" >&2
		mv "$OUT/$1/guest.log" "$OUT/guest-$1-crashed.log"
		rc=0
		run_release "$1" || rc=$?
	fi
	return "$rc"
}
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait' EXIT
for rel in "${releases[@]}"; do
	run_one "$rel" &
	pids+=($!)
done
failed=()
for i in "${!releases[@]}"; do
	wait "${pids[$i]}" || failed+=("${releases[$i]}")
done
pids=()
if ((${#failed[@]})); then
	echo "vmtest-systemd: FAIL on ${failed[*]}" >&2
	exit 1
fi
echo "vmtest-systemd: PASS on ${releases[*]}"

#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds and tests the tree on another Debian release's userland: in the
# release's root (scripts/release-root.sh, made once and cached), a copy of
# the tree (tracked and new files, as package-test.sh copies it) is built
# (`make build`, the BPF objects, the BPF test programs and bpf_info: what
# `make vmtest VMTEST_RELEASE=RELEASE` runs in its guest), unit-tested
# (`make unit`: CUnit under ASan/UBSan, on this machine's kernel) and
# packaged (dpkg-buildpackage -us -uc -b, from a second copy, since the
# package build's `make clean` would remove the first's build/). The
# package lands in OUTDIR and is checked with this machine's lintian (no
# error allowed).
#   scripts/build-in-root.sh RELEASE [OUTDIR]   (root; OUTDIR defaults to
#                                                build/pkg-RELEASE)
# The built tree stays in the root at /src/ringsteer for the vmtest guest.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "build-in-root: $*" >&2
	exit 1
}
(($# >= 1)) || die "usage: build-in-root.sh RELEASE [OUTDIR]"
release=$1
out=${2:-build/pkg-$release}
[[ $(id -u) -eq 0 ]] || die "needs root (chroot)"

t0=$SECONDS
root=$(scripts/release-root.sh "$release")
echo "build-in-root: $release root ready after $((SECONDS - t0))s"
findmnt -rn -o TARGET | grep -q "^$root/src\(/\|$\)" && die "$root/src has a mount"
rm -rf --one-file-system -- "$root/src"
mkdir -p "$root/src/ringsteer" "$root/src/pkg"
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$root/src/ringsteer"
tree=$(scripts/tree-hash.sh)
cp -a "$root/src/ringsteer" "$root/src/pkg/ringsteer"

in_root() {
	scripts/release-root.sh --run "$release" -- "$@"
}
# What `make vmtest` builds besides `make build`: the BPF objects (the
# verifier budget loads them), bpf_info and the BPF test programs.
targets="build/bpf_info build/bpf/steer_tc_kfunc.bpf.o"
for f in bpf/*.bpf.c tests/bpf/test_*.c; do
	case $f in
	bpf/*) b=${f#bpf/} && targets+=" build/bpf/${b%.c}.o" ;;
	*) b=${f#tests/bpf/} && targets+=" build/tests/${b%.c}" ;;
	esac
done
t=$SECONDS
in_root /bin/bash -c "cd /src/ringsteer && gcc --version | head -1 &&
	clang --version | head -1 && make -j$(nproc) NO_DEPS=1 build $targets" ||
	die "make build failed on $release"
echo "build-in-root: make build (and the BPF tests' programs) on $release: $((SECONDS - t))s"
t=$SECONDS
in_root /bin/bash -c "cd /src/ringsteer && make -j$(nproc) NO_DEPS=1 unit" ||
	die "make unit failed on $release"
echo "build-in-root: make unit on $release: $((SECONDS - t))s"
t=$SECONDS
if ! in_root /bin/bash -c "cd /src/pkg/ringsteer && dpkg-buildpackage -us -uc -b" \
	>"$root/src/pkg/build.log" 2>&1; then
	tail -40 "$root/src/pkg/build.log"
	die "dpkg-buildpackage failed on $release"
fi
echo "build-in-root: dpkg-buildpackage on $release: $((SECONDS - t))s"
rm -rf "$out"
mkdir -p "$out"
cp "$root"/src/pkg/*.deb "$root"/src/pkg/*.changes "$root"/src/pkg/*.buildinfo "$out/"
# Which tree these packages are of (scripts/vmtest-systemd.sh reuses them).
echo "$tree" >"$out/tree-hash"
if command -v lintian >/dev/null; then
	if ! lintian --fail-on error "$out"/*.changes >"$out/lintian.log" 2>&1; then
		cat "$out/lintian.log"
		die "lintian reports errors in the $release package"
	fi
	echo "build-in-root: lintian: no error ($(grep -c '^W:' "$out/lintian.log" || true) warnings)"
fi
ls "$out"/*.deb
echo "build-in-root: $release done in $((SECONDS - t0))s"

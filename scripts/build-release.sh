#!/bin/bash
# SPDX-License-Identifier: MIT
#
# build-release.sh COMMIT: builds ringsteerd and the ringsteer CLI of an
# earlier commit of this repository (an earlier release, for the upgrade
# and rollback suites) under build/releases/COMMIT/, from `git archive`,
# so the work tree is not touched. COMMIT may name a release of
# scripts/releases.list. Prints the directory. A build already
# there is reused.
#
# build-release.sh --package DEBIAN_RELEASE COMMIT: that commit's Debian
# package, as an operator installed it, built for bookworm or trixie (on
# this machine when it runs that release, else in the release's root,
# scripts/release-root.sh), under build/releases/COMMIT-pkg-DEBIAN_RELEASE/
# (beside, not in, the binaries' directory: the suites may rebuild that
# one while a package is built).
# Prints the .deb's path. The systemd guests upgrade from it and roll back
# to it (scripts/vmtest-systemd.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
package=""
if [ "${1:-}" = --package ]; then
	package=$2
	shift 2
fi
# A release's name is resolved through scripts/releases.list when this
# clone lacks its tag.
if ! git rev-parse --verify --quiet "$1^{commit}" >/dev/null; then
	named=$(awk -v n="$1" '$1 == n { print $2 }' scripts/releases.list)
	[ -n "$named" ] && set -- "$named"
fi
# A shallow clone lacks the earlier commits: fetch them from its origin.
if ! git rev-parse --verify --quiet "$1^{commit}" >/dev/null &&
	[ "$(git rev-parse --is-shallow-repository)" = true ]; then
	git fetch --quiet --unshallow || true
fi
commit=$(git rev-parse --verify --quiet "$1^{commit}") || {
	echo "build-release.sh: $1 is not a commit of this repository" \
		"(a shallow clone? git fetch --unshallow)" >&2
	exit 1
}
short=${commit:0:7}
out=$PWD/build/releases/$short
if [ -n "$package" ]; then
	pkg=$out-pkg-$package
	deb=$(ls "$pkg"/ringsteer_*_amd64.deb 2>/dev/null || true)
	if [ -n "$deb" ]; then
		echo "$deb"
		exit 0
	fi
	rm -rf "$pkg"
	mkdir -p "$pkg"
	host=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	if [ "$package" = "$host" ]; then
		mkdir "$pkg/src"
		git archive "$commit" | tar -x -C "$pkg/src"
		(cd "$pkg/src" && dpkg-buildpackage -us -uc -b) \
			>"$pkg/build.log" 2>&1 || {
			tail -30 "$pkg/build.log" >&2
			echo "build-release.sh: the package of $short failed ($pkg/build.log)" >&2
			exit 1
		}
		rm -rf "$pkg/src"
	else
		# Beside build-in-root.sh's /src, which it empties at each run.
		root=$(scripts/release-root.sh "$package")
		rm -rf --one-file-system "$root/release-$short"
		mkdir -p "$root/release-$short/src"
		git archive "$commit" | tar -x -C "$root/release-$short/src"
		scripts/release-root.sh --run "$package" -- /bin/bash -c \
			"cd /release-$short/src && dpkg-buildpackage -us -uc -b" \
			>"$pkg/build.log" 2>&1 || {
			tail -30 "$pkg/build.log" >&2
			echo "build-release.sh: the $package package of $short failed ($pkg/build.log)" >&2
			exit 1
		}
		mv "$root/release-$short"/*.deb "$pkg/"
		rm -rf --one-file-system "$root/release-$short"
	fi
	ls "$pkg"/ringsteer_*_amd64.deb
	exit 0
fi
if [ -x "$out/src/build/ringsteerd" ] && [ -x "$out/src/build/ringsteer" ]; then
	echo "$out/src/build"
	exit 0
fi
rm -rf "$out"
mkdir -p "$out/src"
git archive "$commit" | tar -x -C "$out/src"
make -C "$out/src" -j"$(nproc)" build/ringsteerd build/ringsteer \
	RS_COMMIT="$short" >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	echo "build-release.sh: building $short failed ($out/build.log)" >&2
	exit 1
}
echo "$out/src/build"

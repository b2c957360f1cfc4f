#!/bin/bash
# SPDX-License-Identifier: MIT
#
# build-release.sh COMMIT: builds ringsteerd and the ringsteer CLI of an
# earlier commit of this repository (an earlier release, for the upgrade
# and rollback suites) under build/releases/COMMIT/, from `git archive`,
# so the work tree is not touched. COMMIT may name a release of
# scripts/releases.list. Prints the directory. A build already
# there is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
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

#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian package from a copy of the tree (so that its
# `make clean` leaves build/ alone), checks it with lintian (no error
# allowed) and installs it into a scratch root with dpkg -x: the files an
# operator gets are there, the binaries run, the sample configurations are
# conffiles and pass --check, the man pages render, the unit runs the
# packaged binaries.
#   scripts/package-test.sh      (make package-test; part of make test)
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/rs-pkg.XXXXXX)
trap 'rm -rf -- "$work"' EXIT
pass=0
fail=0
ok() {
	pass=$((pass + 1))
	echo "  ok   - $*"
}
bad() {
	fail=$((fail + 1))
	echo "  FAIL - $*"
}
check() {
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}

mkdir "$work/src"
# Tracked and new files, as a commit of the work tree would have them.
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$work/src"
start=$(date +%s)
if ! (cd "$work/src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	tail -40 "$work/build.log"
	bad "dpkg-buildpackage -us -uc -b"
	echo "package-test: $pass passed, $fail failed"
	exit 1
fi
ok "dpkg-buildpackage -us -uc -b ($(($(date +%s) - start))s)"
deb=$(ls "$work"/ringsteer_*_*.deb)
check "ringsteer_*.deb built" test -f "$deb"

if lintian --fail-on error "$work"/ringsteer_*.changes >"$work/lintian.log" 2>&1; then
	ok "lintian: no error ($(grep -c '^W:' "$work/lintian.log" || true) warnings)"
else
	sed 's/^/    /' "$work/lintian.log"
	bad "lintian reports errors"
fi
grep '^[EW]:' "$work/lintian.log" | sed 's/^/    /' || true

root=$work/root
dpkg -x "$deb" "$root"
for f in usr/sbin/ringsteerd usr/bin/ringsteer lib/systemd/system/ringsteerd.service \
	etc/ringsteer/ringsteer.conf.sample etc/ringsteer/ringsteer.conf.minimal \
	usr/share/man/man8/ringsteerd.8.gz usr/share/man/man8/ringsteer.8.gz \
	usr/share/man/man5/ringsteer.conf.5.gz \
	usr/share/bash-completion/completions/ringsteer \
	usr/share/bash-completion/completions/ringsteerd \
	usr/share/doc/ringsteer/copyright usr/share/doc/ringsteer/operations.md.gz \
	usr/share/doc/ringsteer/examples/ringsteer-alerts.yml \
	usr/share/doc/ringsteer/examples/ringsteer-dashboard.json; do
	check "installs /$f" test -e "$root/$f"
done
version=$(sed -n 's/^#define RS_VERSION "\(.*\)"/\1/p' include/ringsteer/version.h)
check "ringsteerd --version runs" grep -qx "ringsteerd $version" <("$root/usr/sbin/ringsteerd" --version)
check "ringsteer --version runs" grep -qx "ringsteer $version" <("$root/usr/bin/ringsteer" --version)
dpkg-deb -e "$deb" "$work/control"
for c in ringsteer.conf.sample ringsteer.conf.minimal; do
	check "$c is a conffile" grep -qx "/etc/ringsteer/$c" "$work/control/conffiles"
	check "$c passes --check" "$root/usr/sbin/ringsteerd" --check -c "$root/etc/ringsteer/$c"
done
check "the unit runs /usr/sbin/ringsteerd" \
	grep -qx 'ExecStart=/usr/sbin/ringsteerd -c /etc/ringsteer/ringsteer.conf' \
	"$root/lib/systemd/system/ringsteerd.service"
# dh_installsystemd --no-enable --no-start: postinst starts nothing and
# enables the unit again only where it was enabled before (an upgrade).
check "postinst starts nothing" bash -c "! grep -q deb-systemd-invoke '$work/control/postinst'"
check "postinst enables only a unit that was enabled" \
	bash -c "grep -A2 'was-enabled .ringsteerd.service.' '$work/control/postinst' |
		grep -q 'deb-systemd-helper enable'"
check "postinst enables nothing else" test "$(grep -c 'deb-systemd-helper enable' "$work/control/postinst")" = 1
for m in man8/ringsteerd.8 man8/ringsteer.8 man5/ringsteer.conf.5; do
	check "man $m renders" bash -c "MANWIDTH=80 man -l '$root/usr/share/man/$m.gz' 2>&1 | grep -q '^NAME'"
done
echo "package-test: $pass passed, $fail failed"
((fail == 0))

#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian package from a copy of the tree (so that its
# `make clean` leaves build/ alone), checks it with lintian (no error
# allowed) and installs it into a scratch root with dpkg -x: the files an
# operator gets are there, the binaries run, the sample configurations are
# conffiles and pass --check, the man pages render, the unit runs the
# packaged binaries. Then the package's life on a system: install,
# install again, remove, purge, install again, in a chroot on an overlay
# of this machine's root (its host left as it was).
#   scripts/package-test.sh      (make package-test; part of make test)
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/rs-pkg.XXXXXX)
# The overlay of / (below) is unmounted first; rm never crosses a mount.
cleanup() {
	mountpoint -q "$work/sys" && umount "$work/sys"
	if findmnt -rn -o TARGET | grep -q "^$work/"; then
		echo "package-test: $work still has a mount; left in place" >&2
		return
	fi
	rm -rf --one-file-system -- "$work"
}
trap cleanup EXIT
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
# The package is built without .git: its binaries know no commit.
version=$(scripts/version.sh --version)
check "ringsteerd --version is debian/changelog's" grep -qx "ringsteerd $version (commit unknown, abi [0-9]*)" \
	<("$root/usr/sbin/ringsteerd" --version)
check "ringsteer --version is debian/changelog's" grep -qx "ringsteer $version (commit unknown, abi [0-9]*)" \
	<("$root/usr/bin/ringsteer" --version)
dpkg-deb -e "$deb" "$work/control"
for c in ringsteer.conf.sample ringsteer.conf.minimal; do
	check "$c is a conffile" grep -qx "/etc/ringsteer/$c" "$work/control/conffiles"
	check "$c passes --check" "$root/usr/sbin/ringsteerd" --check -c "$root/etc/ringsteer/$c"
done
check "the unit runs /usr/sbin/ringsteerd" \
	grep -qx 'ExecStart=/usr/sbin/ringsteerd -c /etc/ringsteer/ringsteer.conf' \
	"$root/lib/systemd/system/ringsteerd.service"
# dh_installsystemd --no-enable: postinst enables the unit again only
# where it was enabled before, and (re)starts it through
# deb-systemd-invoke, which starts no disabled unit: a first install starts
# nothing, an upgrade restarts an enabled daemon. The prerm stops it on
# remove; the postrm detaches the data plane on purge. What they do under
# a real systemd: tests/vm/systemd (make vmtest-systemd).
check "postinst (re)starts only through deb-systemd-invoke" \
	bash -c "grep -q 'deb-systemd-invoke \$_dh_action .ringsteerd.service.' '$work/control/postinst'"
check "postinst enables only a unit that was enabled" \
	bash -c "grep -A2 'was-enabled .ringsteerd.service.' '$work/control/postinst' |
		grep -q 'deb-systemd-helper enable'"
check "postinst enables nothing else" test "$(grep -c 'deb-systemd-helper enable' "$work/control/postinst")" = 1
check "prerm stops the daemon on remove" \
	bash -c "grep -q 'deb-systemd-invoke stop .ringsteerd.service.' '$work/control/prerm'"
check "postrm detaches on purge" grep -q 'steer_tc' "$work/control/postrm"
for m in man8/ringsteerd.8 man8/ringsteer.8 man5/ringsteer.conf.5; do
	check "man $m renders" bash -c "MANWIDTH=80 man -l '$root/usr/share/man/$m.gz' 2>&1 | grep -q '^NAME'"
done

# As an operator lives with the package: dpkg -i, edits, dpkg -i again,
# remove, purge, install again. In a chroot whose root is an overlay of
# this machine's (its dpkg database and libraries, writes kept apart), so
# the host's own packages and files are never touched; systemctl is not
# run there (no /run/systemd in it); the operator's `systemctl enable` is
# systemctl --root, which only writes the symlinks.
up=$work/up
mkdir -p "$up/upper" "$up/work" "$work/sys"
if ! mount -t overlay overlay -o "lowerdir=/,upperdir=$up/upper,workdir=$up/work" \
	"$work/sys" 2>"$work/mount.err"; then
	bad "an overlay of / for the dpkg round trip: $(cat "$work/mount.err")"
	echo "package-test: $pass passed, $fail failed"
	exit 1
fi
sys=$work/sys
# The overlay shows the root file system's own /dev: give dpkg /dev/null.
rm -f "$sys/dev/null"
mknod -m 666 "$sys/dev/null" c 1 3
cp "$deb" "$sys/tmp/ringsteer.deb"
in_sys() { chroot "$sys" "$@"; }
etc=$sys/etc/ringsteer
wants=$sys/etc/systemd/system/multi-user.target.wants/ringsteerd.service
check "dpkg -i" in_sys dpkg -i /tmp/ringsteer.deb
check "installed" bash -c "chroot '$sys' dpkg -s ringsteer | grep -qx 'Status: install ok installed'"
echo '# the operator was here' >>"$etc/ringsteer.conf.minimal"
cp "$etc/ringsteer.conf.minimal" "$etc/ringsteer.conf"
check "systemctl enable (offline, --root)" systemctl --root="$sys" enable ringsteerd.service
check "dpkg -i again (same version)" in_sys dpkg -i /tmp/ringsteer.deb
check "an edited conffile is kept" grep -qx '# the operator was here' "$etc/ringsteer.conf.minimal"
check "the operator's ringsteer.conf is kept" test -s "$etc/ringsteer.conf"
check "the unit stays enabled" test -L "$wants"
check "ringsteerd --check of the operator's file" in_sys ringsteerd --check -c /etc/ringsteer/ringsteer.conf
# A downgrade to 0.2.0 of a file with keys 0.2.0 does not know: its
# daemon would refuse the file, and a package cannot refuse its own
# downgrade; the prerm names the keys. Run as dpkg would, in the chroot
# (no systemd there: its branch detaches, on a /sys with no bpffs).
cp "$etc/ringsteer.conf" "$work/conf.kept"
printf 'restart_grace = 2s\n# generations = on\n' >>"$etc/ringsteer.conf"
out=$(in_sys /var/lib/dpkg/info/ringsteer.prerm upgrade 0.2.0-1 2>&1)
check "prerm on a downgrade to 0.2.0 names the key 0.2.0 does not know" \
	grep -q "WARNING: /etc/ringsteer/ringsteer.conf has keys 0.2.0-1 does not know: restart_grace$" <<<"$out"
cp "$work/conf.kept" "$etc/ringsteer.conf"
out=$(in_sys /var/lib/dpkg/info/ringsteer.prerm upgrade 0.2.0-1 2>&1)
if grep -q WARNING <<<"$out"; then
	bad "a downgrade of a file 0.2.0 reads: a warning: $(grep WARNING <<<"$out")"
else
	ok "and warns of nothing on a file 0.2.0 reads"
fi
# The prerm's list is every key this release reads that the previous
# release (scripts/releases.list) did not: the key tables compared.
keys_of() {
	for f in config_global.c config_service.c config_backend.c config_fleet.c; do
		if [[ $1 == HEAD ]]; then cat "userspace/config/$f"; else git show "$1:userspace/config/$f"; fi
	done | grep -o '{"[a-z_0-9]*",' | tr -d '{",' | sort -u
}
prev=$(awk '!/^#/ && NF == 2 { c = $2 } END { print c }' scripts/releases.list)
added=$(comm -23 <(keys_of HEAD) <(keys_of "$prev" 2>/dev/null) | tr '\n' ' ')
listed=$(sed -n 's/.*\\(\(owner[^)]*\)\\).*/\1/p' debian/ringsteer.prerm | sed 's/\\|/ /g' | tr ' ' '\n' | sort | tr '\n' ' ')
check "the prerm names every key added since $prev ($added)" test -n "$added" -a "$added" = "$listed"
check "dpkg -r" in_sys dpkg -r ringsteer
check "removed: no binaries" test ! -e "$sys/usr/sbin/ringsteerd"
check "removed: conffiles stay" test -e "$etc/ringsteer.conf.sample"
check "dpkg -P" in_sys dpkg -P ringsteer
check "purged: no conffiles" test ! -e "$etc/ringsteer.conf.sample" -a ! -e "$etc/ringsteer.conf.minimal"
check "purged: the operator's ringsteer.conf too" test ! -e "$etc/ringsteer.conf"
check "purged: the unit's enablement gone" test ! -L "$wants"
check "dpkg -i after the purge" in_sys dpkg -i /tmp/ringsteer.deb
check "fresh conffiles" bash -c "test -e '$etc/ringsteer.conf.sample' && ! grep -q 'the operator' '$etc/ringsteer.conf.minimal'"
check "ringsteerd --check of the fresh sample" in_sys ringsteerd --check -c /etc/ringsteer/ringsteer.conf.minimal
check "the host has no ringsteer package" bash -c "! dpkg -s ringsteer >/dev/null 2>&1"

echo "package-test: $pass passed, $fail failed"
((fail == 0))

#!/bin/bash
# make tsan: end-to-end suites with ringsteerd built under ThreadSanitizer.
#   scripts/tsan-suites.sh TSAN_BUILD SUITE...
# Each suite starts TSAN_BUILD/ringsteerd (RS_DAEMON, scripts/netns.sh).
# A report stops that daemon (halt_on_error, exit 66), which fails the
# suite; reports are written to TSAN_BUILD/reports/ (log_path), so that
# one raised while a daemon stops, after the suite's checks, fails the run
# too. Nothing is suppressed.
set -u
dir=$1
shift
daemon=$dir/ringsteerd
reports=$dir/reports
if [[ ! -x $daemon ]]; then
	echo "tsan: $daemon is missing (make $daemon)" >&2
	exit 1
fi
rm -rf "$reports"
mkdir -p "$reports"
export RS_DAEMON=$daemon
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 log_path=$PWD/$reports/tsan"
scripts/run-suite.sh tsan "$@"
rc=$?
shopt -s nullglob
found=("$reports"/tsan*)
if ((${#found[@]})); then
	echo "tsan: ${#found[@]} report file(s) in $reports/:"
	for f in "${found[@]}"; do
		echo "--- $f"
		head -60 "$f"
	done
	rc=1
else
	echo "tsan: no ThreadSanitizer reports"
fi
exit $rc

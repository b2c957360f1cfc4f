#!/bin/bash
# Runs each test program of a suite, prints one line per program and a
# summary, and exits non-zero if any failed.
#   scripts/run-suite.sh NAME PROGRAM...
set -u
suite=$1
shift
pass=0
fail=0
failed=()
for t in "$@"; do
	echo "=== $suite: $t"
	start=$(date +%s)
	if "$t"; then
		pass=$((pass + 1))
		echo "=== $suite: PASS $t ($(($(date +%s) - start))s)"
	else
		fail=$((fail + 1))
		failed+=("$t")
		echo "=== $suite: FAIL $t ($(($(date +%s) - start))s)"
	fi
done
echo "=== $suite summary: $pass passed, $fail failed${failed:+ (${failed[*]})}"
[[ $fail -eq 0 && $pass -gt 0 ]]

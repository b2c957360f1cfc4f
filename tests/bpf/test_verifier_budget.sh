#!/bin/bash
# SPDX-License-Identifier: MIT
# Fails when a shipped BPF program's verified instruction count (as
# `make info` prints it, on the running kernel) exceeds its budget in
# tests/bpf/verifier_budget.txt, or when a program has no budget, or does
# not load at all.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
budget_file=tests/bpf/verifier_budget.txt
# steer_tc_kfunc needs the crypto kfuncs (6.10+); ringsteerd loads
# steer_tc without them (docs/quic.md), so only where they are is it checked.
skip=""
objs=()
kfuncs=1
# The daemon's own probe (rs_probe_crypto_kfuncs(): the kernel's BTF).
if ! build/ringsteerd --probe | grep "crypto kfuncs yes" >/dev/null; then
	kfuncs=0
	skip=rs_quic_lb_set_key
	echo "  note - no crypto kfuncs on $(uname -r): steer_tc_kfunc not loaded"
fi
for o in build/bpf/*.bpf.o; do
	[[ $kfuncs == 0 && $o == */steer_tc_kfunc.bpf.o ]] && continue
	objs+=("$o")
done
info=$(build/bpf_info "${objs[@]}")
rc=$?
echo "$info"
if ((rc)); then
	echo "verifier budget: a program failed to load (above)"
	exit 1
fi
awk -v kernel="$(uname -r)" '
	FNR == NR {
		if ($0 !~ /^#/ && NF == 2 && $1 != skip) budget[$1] = $2
		next
	}
	FNR == 1 { next } # bpf_info header
	{
		prog = $2; got = $3; seen[prog] = 1
		if (!(prog in budget)) {
			printf "  FAIL - %s: %d verified, no budget in %s\n",
				prog, got, FILENAME_B; bad++; next
		}
		if (got < 0 || got > budget[prog]) {
			printf "  FAIL - %s: %d verified instructions on %s, budget %d\n",
				prog, got, kernel, budget[prog]; bad++
		} else
			printf "  ok   - %s: %d verified instructions on %s, budget %d (%d%%)\n",
				prog, got, kernel, budget[prog], 100 * got / budget[prog]
	}
	END {
		for (p in budget) if (!(p in seen)) {
			printf "  FAIL - %s has a budget but was not loaded\n", p; bad++
		}
		exit bad > 0
	}' FILENAME_B="$budget_file" skip="$skip" "$budget_file" - <<<"$info"

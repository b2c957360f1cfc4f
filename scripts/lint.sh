#!/bin/bash
# clang-format check, each BPF header compiled on its own, and cppcheck
# over the given C sources; shellcheck over the shell suites and scripts
# (warnings and errors).
set -u
rc=0
unformatted=()
for f in "$@"; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		unformatted+=("$f")
	fi
done
if ((${#unformatted[@]})); then
	echo "lint: not clang-formatted (run clang-format -i): ${unformatted[*]}"
	rc=1
fi
# Each BPF header (and each of the ABI's headers, which the programs
# share with userspace) compiles on its own, included first: it includes
# what it uses, so no program has to include something else before it.
# (-Wno-unused-function: alone, its noinline statics have no caller.)
alone=()
arch_inc=/usr/include/$(${CC:-cc} -dumpmachine)
for f in "$@"; do
	case "$f" in bpf/lib/*.bpf.h | include/ringsteer/abi*.h) ;; *) continue ;; esac
	h=${f#bpf/lib/}
	if ! printf '#include "%s"\n' "${h#include/}" |
		clang -target bpf -mcpu=v3 -O2 -Wall -Werror -Wno-unused-function \
			-Iinclude -Ibpf/lib -I"$arch_inc" -fsyntax-only -x c - \
			>/dev/null 2>&1; then
		alone+=("$f")
	fi
done
if ((${#alone[@]})); then
	echo "lint: BPF headers that do not compile on their own: ${alone[*]}"
	rc=1
fi
userspace=()
for f in "$@"; do
	case "$f" in bpf/* | */bpf/progs/* | bench/bpf/*) ;; *.c) userspace+=("$f") ;; esac
done
if ! cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
	--enable=warning,portability,performance \
	--suppress=missingIncludeSystem \
	--include=/usr/include/bpf/libbpf_common.h --include=/usr/include/jansson.h \
	-Iinclude -Iuserspace/core -Iuserspace/core/fleet -Iuserspace/core/ring -Iuserspace/config -Iuserspace/dataplane \
	-Iuserspace/sys -Iuserspace/ringsteerd -Iuserspace/ringsteerd/apply -Iuserspace/ringsteerd/fleet -Iuserspace/ringsteerd/serve -Iuserspace/ringsteerd/state -Iuserspace/ringsteerd/sources -D__linux__ "${userspace[@]}"; then
	echo "lint: cppcheck found problems"
	rc=1
fi
shells=(tests/e2e/*.sh tests/bpf/*.sh tests/vm/*.sh tests/vm/init scripts/*.sh .ci/run
	contrib/bash-completion/ringsteer)
if ! shellcheck -x -S warning "${shells[@]}"; then
	echo "lint: shellcheck found problems"
	rc=1
fi
[[ $rc -eq 0 ]] && echo "lint: ok (${#} C files, ${#shells[@]} shell files)"
exit $rc

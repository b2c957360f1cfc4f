#!/bin/bash
# The tree's shape (issue 35), measured; fails where it breaks a rule:
#   - a folder with more than 16 .c files (tests/ included),
#   - a source file (.c/.h under userspace/, include/, bpf/) over 800 lines,
#   - a `void *` struct member in the daemon (userspace/ringsteerd/), or
#     a copy of struct daemon by value,
#   - a circle of calls between the daemon's files: gcc -fcallgraph-info
#     over userspace/ringsteerd/**.c, functions mapped to the file that
#     defines them, strongly connected components of the file graph,
#   - a call reachable from daemon_start that climbs from a lower room
#     back to a higher one (state below apply below sources/fleet below
#     serve below the life cycle at the root).
# Reported, not failed: test files over 800 lines, daemon functions over 60
# lines, and how many functions and files the walk from daemon_start
# reaches.
# Usage: scripts/shape.sh [CFLAGS for the daemon's files...]; make shape
# passes the daemon's include path (the skeletons must exist).
# SHAPE_VERBOSE=1 lists the calls that make each circle.
# No root needed; about 10 s on 2 cores.
set -u
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

daemon_srcs=$(find userspace/ringsteerd -name '*.c' | sort)
# -O0: nothing inlined, every call is an edge. Objects go nowhere; the
# .ci files land in $tmp, one per source (its path flattened).
export tmp
printf '%s\n' "$daemon_srcs" | xargs -P "$(nproc)" -I{} sh -c '
	f="$1"; shift
	out="$tmp/$(printf %s "$f" | tr / _)"
	gcc "$@" -O0 -fcallgraph-info -c "$f" -o "${out%.c}.o" ||
		{ echo "shape: $f does not compile" >&2; exit 255; }
' sh {} "$@" || exit 1

python3 - "$tmp" <<'EOF'
import collections, glob, os, re, sys

tmp = sys.argv[1]
fail = []
LIMIT_C, LIMIT_LINES, LIMIT_FN = 16, 800, 60


def tracked(roots, exts):
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for n in names:
                if n.endswith(exts):
                    yield os.path.join(dirpath, n)


# Folders.
per_dir = collections.Counter(
    os.path.dirname(p) for p in tracked(
        ["userspace", "include", "bpf", "tests", "bench", "scripts"], (".c",)))
print("shape: folders by .c files (limit %d):" % LIMIT_C)
for d, n in per_dir.most_common(5):
    print("  %3d %s" % (n, d))
fail += ["folder %s holds %d .c files" % (d, n)
         for d, n in per_dir.items() if n > LIMIT_C]

# Files.
def nlines(p):
    with open(p, errors="replace") as f:
        return sum(1 for _ in f)

src = sorted(((nlines(p), p) for p in
              tracked(["userspace", "include", "bpf"], (".c", ".h"))),
             reverse=True)
print("shape: largest source files (limit %d lines):" % LIMIT_LINES)
for n, p in src[:5]:
    print("  %5d %s" % (n, p))
fail += ["%s has %d lines" % (p, n) for n, p in src if n > LIMIT_LINES]
tests = [(n, p) for n, p in ((nlines(p), p) for p in
         tracked(["tests", "bench"], (".c", ".h"))) if n > LIMIT_LINES]
print("shape: test files over %d lines (reported): %d" %
      (LIMIT_LINES, len(tests)))

# void * members of the daemon's structs.
voids = []
for p in sorted(tracked(["userspace/ringsteerd"], (".c", ".h"))):
    depth, in_struct = 0, []
    with open(p) as f:
        for i, line in enumerate(f, 1):
            code = re.sub(r"/\*.*?\*/|//.*", "", line)
            opens = re.match(r"\s*(typedef\s+)?(struct|union)\b[^;(]*\{", code)
            if in_struct and in_struct[-1] and re.match(
                    r"\s*(const\s+)?void\s*\*+\s*(const\s+)?\w+\s*(\[[^]]*\])?\s*;",
                    code):
                voids.append("%s:%d" % (p, i))
            for ch in code:
                if ch == "{":
                    depth += 1
                    in_struct.append(bool(opens))
                    opens = None
                elif ch == "}":
                    depth -= 1
                    in_struct.pop()
print("shape: void * members in the daemon's structs: %d" % len(voids))
fail += ["void * member at %s" % v for v in voids]

# The daemon is never copied by value: not as a parameter or a return,
# not initialised from another, not memcpy'd (live watchers, handles).
copy_re = re.compile(
    r"\bstruct daemon\s+\w+\s*[,)]"          # a parameter by value
    r"|^\s*(static\s+)?struct daemon\s+\w+\s*\("  # returned by value
    r"|\bstruct daemon\s+\w+\s*=\s*\*"       # from a dereference
    r"|sizeof\s*\(\s*struct daemon\s*\)")
copies = []
for p in sorted(tracked(["userspace/ringsteerd"], (".c", ".h"))):
    with open(p) as f:
        for i, line in enumerate(f, 1):
            if copy_re.search(re.sub(r"/\*.*?\*/|//.*", "", line)):
                copies.append("%s:%d" % (p, i))
print("shape: by-value copies of struct daemon: %d" % len(copies))
fail += ["struct daemon copied by value at %s" % c for c in copies]

# Calls between the daemon's files.
defined = {}   # (ci, name) -> file
extern = collections.defaultdict(set)  # name -> files defining it
edges = []     # (ci, caller, callee)
node_re = re.compile(r'node: \{ title: "([^"]+)" label: "[^"\\]*\\n([^:"]+):(\d+)')
edge_re = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
for ci in glob.glob(os.path.join(tmp, "*.ci")):
    with open(ci) as f:
        for line in f:
            m = node_re.match(line)
            if m and "shape : ellipse" not in line:
                defined[(ci, m.group(1))] = os.path.normpath(m.group(2))
                extern[m.group(1)].add(os.path.normpath(m.group(2)))
                continue
            m = edge_re.match(line)
            if m:
                edges.append((ci, m.group(1), m.group(2)))


def where(ci, name):
    if (ci, name) in defined:
        return defined[(ci, name)]
    files = extern.get(name, ())
    return next(iter(files)) if len(files) == 1 else None


daemon = lambda f: f is not None and f.startswith("userspace/ringsteerd/")
fgraph = collections.defaultdict(set)
calls = collections.defaultdict(set)  # function graph, (file, name) nodes
for ci, a, b in edges:
    fa, fb = where(ci, a), where(ci, b)
    if not (daemon(fa) and daemon(fb)):
        continue
    calls[(fa, a)].add((fb, b))
    if fa != fb:
        fgraph[fa].add(fb)


def sccs(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    nodes = set(graph) | {v for vs in graph.values() for v in vs}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = n[0]; n[0] += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]; n[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


circles = sccs(fgraph)
nfiles = len({f for f in fgraph} | {g for gs in fgraph.values() for g in gs})
print("shape: daemon call graph: %d files, %d file-to-file arrows, %d circles"
      % (nfiles, sum(len(v) for v in fgraph.values()), len(circles)))
verbose = os.environ.get("SHAPE_VERBOSE") == "1"
for c in circles:
    print("  circle: " + " <-> ".join(os.path.relpath(f, "userspace/ringsteerd")
                                       for f in c))
    fail.append("a circle of calls through %d daemon files" % len(c))
    # SHAPE_VERBOSE=1: the calls that make it, to see which to move.
    for (fa, a), targets in sorted(calls.items()) if verbose else ():
        for fb, b in sorted(targets):
            if fa != fb and fa in c and fb in c:
                # A static function's name carries its file: dropped.
                print("    %s:%s() -> %s:%s()" % (
                    os.path.basename(fa), a.split(":")[-1],
                    os.path.basename(fb), b.split(":")[-1]))

# The walk from daemon_start: rooms ranked top (0) to bottom; a call from
# a lower room to a higher one climbs.
def room(f):
    rel = os.path.relpath(f, "userspace/ringsteerd")
    top = rel.split(os.sep)[0] if os.sep in rel else ""
    return {"": 0, "serve": 1, "sources": 2, "fleet": 2, "apply": 3,
            "state": 4}.get(top, 0)

start = [n for n in calls if n[1] == "daemon_start"]
seen, todo, climbs = set(start), list(start), set()
while todo:
    v = todo.pop()
    for w in calls.get(v, ()):
        if room(w[0]) < room(v[0]):
            climbs.add((v, w))
        if w not in seen:
            seen.add(w); todo.append(w)
print("shape: from daemon_start: %d functions in %d files, %d calls climb "
      "a room" % (len(seen), len({f for f, _ in seen}), len(climbs)))
fail += ["%s:%s() climbs to %s:%s()" % (
    os.path.relpath(fa, "userspace/ringsteerd"), a.split(":")[-1],
    os.path.relpath(fb, "userspace/ringsteerd"), b.split(":")[-1])
    for (fa, a), (fb, b) in sorted(climbs)]
for (fa, a), (fb, b) in sorted(climbs) if verbose else ():
    print("    climbs: %s:%s() -> %s:%s()" % (
        os.path.relpath(fa, "userspace/ringsteerd"), a.split(":")[-1],
        os.path.relpath(fb, "userspace/ringsteerd"), b.split(":")[-1]))

# Long functions of the daemon: a definition's '{' and '}' at column 0.
long_fns = []
for p in sorted(tracked(["userspace/ringsteerd"], (".c",))):
    with open(p) as f:
        lines = f.readlines()
    start_at, name = None, None
    for i, line in enumerate(lines):
        if line.startswith("{") and i > 0:
            start_at = i
            for back in range(i - 1, max(i - 6, -1), -1):
                m = re.search(r"(\w+)\s*\(", lines[back])
                if m:
                    name = m.group(1)
                    break
        elif line.startswith("}") and start_at is not None:
            if i - start_at + 1 > LIMIT_FN:
                long_fns.append((i - start_at + 1, p, name))
            start_at = None
long_fns.sort(reverse=True)
print("shape: daemon functions over %d lines (reported): %d" %
      (LIMIT_FN, len(long_fns)))
for n, p, name in long_fns[:5]:
    print("  %4d %s %s()" % (n, p, name))

if fail:
    for f in fail:
        print("shape: FAIL: " + f)
    sys.exit(1)
print("shape: ok")
EOF

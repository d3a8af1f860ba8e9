#!/usr/bin/env bash
# Fails when the product's folders use each other against their layers (docs/architecture.md):
# a folder may use the folders of the layers below its own, never one above it, and never a
# peer on its own layer (worker/ and operator/ are two programs: neither includes the other;
# cli/, the command a person types, sits above the worker whose run it shares, and never uses
# the operator).
# Checked: every `#include "FOLDER/..."` in the product folders' C++ and CUDA sources (tests/
# and generated code are not product folders), and every library a product folder's CMake files
# name in target_link_libraries, by the folder whose CMake files define it. Each wrong one is
# named with its file and line and both folders; the exit status is 1 when there is any.
#   bash scripts/check-layers.sh [ROOT]      ROOT: the source tree (default: this repository)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"

# The layers, lowest first: the one place their order is written down. The folders on one line
# are peers.
layers=(
  "common"
  "kernels kube store"
  "core"
  "worker operator"
  "cli"
)
# Folders a higher layer still may not use (USER:USED).
forbidden=("cli:operator")

FORBIDDEN="${forbidden[*]}" python3 - "$root" "${layers[@]}" <<'PY'
import os
import re
import sys

root = sys.argv[1]
rank = {}
for i, line in enumerate(sys.argv[2:]):
    for folder in line.split():
        rank[folder] = i
peers = [line.split() for line in sys.argv[2:]]
order = " < ".join(", ".join(p) for p in peers)

SOURCES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/[^"]*"')


def files_of(folder, want):
    base = os.path.join(root, folder)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            if want(name):
                path = os.path.join(dirpath, name)
                yield path, os.path.relpath(path, root)


forbidden = {tuple(pair.split(":")) for pair in os.environ.get("FORBIDDEN", "").split()}


def wrong(user, used):
    """Why `user` may not use `used` (both layer folders), or None when it may."""
    if used == user or used not in rank:
        return None
    if (user, used) in forbidden:
        return f"{user} never uses {used}"
    if rank[used] > rank[user]:
        return f"{used} is a layer above {user}"
    if rank[used] == rank[user]:
        return f"{user} and {used} are peers ({', '.join(peers[rank[user]])}) and never use each other"
    return None


problems = []
sources = 0
for folder in rank:
    for path, rel in files_of(folder, lambda n: n.endswith(SOURCES)):
        sources += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                m = INCLUDE.match(text)
                if not m:
                    continue
                why = wrong(folder, m.group(1))
                if why:
                    header = text.strip().split('"')[1]
                    problems.append(f"{rel}:{number}: {folder}/ includes \"{header}\": {why}")

# CMake: which folder defines each library and executable, then who links what.
def cmake_files(folder):
    return files_of(folder, lambda n: n == "CMakeLists.txt" or n.endswith(".cmake"))


def without_comments(text):
    # '#' to the end of the line, except inside a quoted argument; line numbers kept.
    out = []
    for line in text.split("\n"):
        quoted = False
        for i, c in enumerate(line):
            if c == '"':
                quoted = not quoted
            elif c == "#" and not quoted:
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


COMMAND = re.compile(r"\b(add_library|add_executable|target_link_libraries)\s*\(([^)]*)\)", re.I)
defined = {}  # target -> (folder, file)
links = []    # (folder, file, line, target, library)
cmakes = 0
for folder in rank:
    for path, rel in cmake_files(folder):
        cmakes += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            text = without_comments(f.read())
        for m in COMMAND.finditer(text):
            command = m.group(1).lower()
            args = list(re.finditer(r"[^\s]+", m.group(2)))
            if not args:
                continue
            if command != "target_link_libraries":
                defined.setdefault(args[0].group(0), (folder, rel))
                continue
            for a in args[1:]:
                line = text.count("\n", 0, m.start(2) + a.start()) + 1
                links.append((folder, rel, line, args[0].group(0), a.group(0)))
for folder, rel, line, target, library in links:
    if library not in defined:
        continue  # a keyword, a variable, a package's target (fmt::fmt), proto/'s library
    owner, where = defined[library]
    why = wrong(folder, owner)
    if why:
        problems.append(f"{rel}:{line}: {folder}/ links {library} into {target}, "
                        f"a library of {owner}/ ({where}): {why}")

if problems:
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check-layers: {len(problems)} use(s) against the layers ({order}); "
          "move what both sides need into the lower layer (docs/architecture.md)", file=sys.stderr)
    sys.exit(1)
print(f"check-layers: {sources} sources and {cmakes} CMake files use only the layers below "
      f"their own ({order})")
PY

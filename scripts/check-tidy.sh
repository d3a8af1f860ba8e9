#!/usr/bin/env bash
# Runs clang-tidy 14 (.clang-tidy) over the product's C++ sources: common/, kernels/, kube/,
# operator/, worker/, store/ and cli/ (where present), .cc files only — not the .cu files (nvcc's
# dialect), not the generated protobuf code, not the tests. Uses the compile commands of a
# configured and built tree (default build-ci, which scripts/test-all.sh builds first: the
# generated protobuf headers must exist). Fails on any warning. Files run in parallel, one
# clang-tidy per core.
#   bash scripts/check-tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-ci}"
tidy="$(command -v clang-tidy-14 || command -v clang-tidy || true)"
[ -n "$tidy" ] || { echo "check-tidy: clang-tidy-14 not found (scripts/install-deps.sh)" >&2; exit 1; }
[ -f "$build/compile_commands.json" ] || {
  echo "check-tidy: no $build/compile_commands.json (cmake --preset ci && cmake --build --preset ci)" >&2
  exit 1
}
root="$(pwd)"
mapfile -t files < <(python3 - "$build/compile_commands.json" "$root" <<'PY'
import json, os, sys
db, root = sys.argv[1], sys.argv[2]
dirs = ("common", "kernels", "kube", "operator", "worker", "store", "cli")
seen = set()
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.endswith(".cc") and rel.split(os.sep)[0] in dirs and rel not in seen:
        seen.add(rel)
        print(rel)
PY
)
((${#files[@]})) || { echo "check-tidy: no sources found in $build/compile_commands.json" >&2; exit 1; }
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
start=$SECONDS
rc=0
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 "$tidy" -p "$build" --quiet >"$out" 2>/dev/null \
  || rc=$?
findings="$(grep -cE '(warning|error): ' "$out" || true)"
echo "check-tidy: ${#files[@]} files in $((SECONDS - start)) s, $findings finding(s)"
if [ "$findings" != 0 ] || [ "$rc" != 0 ]; then
  grep -E -A3 '(warning|error): ' "$out" >&2 || true
  echo "check-tidy: failed (clang-tidy exit status $rc)" >&2
  exit 1
fi

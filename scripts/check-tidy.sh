#!/usr/bin/env bash
# Runs clang-tidy 14 (.clang-tidy) over the product's C++ sources: common/, kernels/, kube/,
# store/, core/, worker/, operator/ and cli/ (where present), .cc files only — not the .cu files
# (nvcc's dialect), not the generated protobuf code, not the tests. Uses the compile commands of a
# configured and built tree (default build-ci, which scripts/test-all.sh builds first: the
# generated protobuf headers must exist). Fails on any warning. Units run in parallel, one
# clang-tidy per core.
#
# A tree built in unity batches (PERFGATE_UNITY, the default) is checked batch by batch, as it
# compiles: each batch parses the heavy headers once, which is most of clang-tidy's time. The
# batch's .cc files count as headers to clang-tidy, so HeaderFilterRegex names them (the naming
# check still reads the .clang-tidy nearest each file: kube/ has its own).
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
# One line per unit: the file clang-tidy compiles, a product .cc or a unity batch of them.
mapfile -t units < <(python3 - "$build/compile_commands.json" "$root" <<'PY'
import json, os, re, sys
db, root = sys.argv[1], sys.argv[2]
dirs = ("common", "kernels", "kube", "store", "core", "worker", "operator", "cli")

def product(path):
    rel = os.path.relpath(path, root)
    return rel.endswith(".cc") and rel.split(os.sep)[0] in dirs

seen = set()
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path in seen:
        continue
    seen.add(path)
    if os.sep + "Unity" + os.sep in path:
        sources = [s for s in re.findall(r'#include "([^"]+)"', open(path).read()) if product(s)]
    else:
        sources = [path] if product(path) else []
    if sources:
        print(os.path.relpath(path, root))
PY
)
((${#units[@]})) || { echo "check-tidy: no sources found in $build/compile_commands.json" >&2; exit 1; }
out="$(mktemp)"
start=$SECONDS
rc=0
# A file whose one function is a deeply nested JSON literal can take clang-tidy far past any
# sensible time (operator/reconcile/pods.cc did, until its pod was built from small helpers): each file
# gets PERFGATE_TIDY_FILE_SECONDS (default 240), and a file that runs past it is named as not
# checked rather than holding CI for an hour.
limit="${PERFGATE_TIDY_FILE_SECONDS:-240}"
skipped="$(mktemp)"
trap 'rm -f "$out" "$skipped"' EXIT
export tidy build limit skipped
# A batch includes .cc files by design: bugprone-suspicious-include is for the files themselves.
printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -n 1 bash -c '
  case "$0" in */Unity/*) extra=--checks=-bugprone-suspicious-include ;; *) extra= ;; esac
  timeout "$limit" "$tidy" -p "$build" $extra --quiet "$0" 2>/dev/null
  status=$?
  if [ "$status" = 124 ]; then echo "$0" >>"$skipped"; exit 0; fi
  exit "$status"' >"$out" || rc=$?
findings="$(grep -cE '(warning|error): ' "$out" || true)"
echo "check-tidy: ${#units[@]} units in $((SECONDS - start)) s, $findings finding(s)"
if [ -s "$skipped" ]; then
  echo "check-tidy: not checked, past ${limit} s each: $(tr '\n' ' ' <"$skipped")" >&2
fi
if [ "$findings" != 0 ] || [ "$rc" != 0 ]; then
  grep -E -A3 '(warning|error): ' "$out" >&2 || true
  echo "check-tidy: failed (clang-tidy exit status $rc)" >&2
  exit 1
fi

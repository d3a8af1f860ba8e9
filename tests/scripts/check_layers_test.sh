#!/usr/bin/env bash
# scripts/check-layers.sh on a small copy of the tree with one wrong use planted, and on the
# repository itself:
#   real-tree        the repository passes
#   upward-include   core/ including operator/ fails, naming the file, the line and both folders
#   peer-include     operator/ including worker/ fails the same way (peers never use each other)
#   cli-operator     cli/ including operator/ fails: the command a person types never uses the
#                    operator, though it sits above it
#   upward-link      core/ linking a library operator/ defines fails, naming both
set -euo pipefail
: "${REPO_ROOT:?}" "${WORK_DIR:?}"
CASE=$1
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
check="$REPO_ROOT/scripts/check-layers.sh"

# A few real files in their folders; the copy passes as it is.
tree="$WORK_DIR/tree"
for f in common/result.h core/gpu_model.h core/gpu_model.cc core/CMakeLists.txt \
  operator/runtime/metrics.cc operator/CMakeLists.txt cli/summary.cc cli/CMakeLists.txt worker/runner.h; do
  mkdir -p "$tree/$(dirname "$f")"
  cp "$REPO_ROOT/$f" "$tree/$f"
done
bash "$check" "$tree" >/dev/null || fail "the unchanged copy does not pass"

# Puts LINE after the first #include of FILE; prints the line number it lands on.
plant_include() {
  local file=$1 line=$2 n
  n=$(grep -n -m1 '^#include' "$file" | cut -d: -f1)
  sed -i "${n}a $line" "$file"
  echo $((n + 1))
}

# Runs the check, which must fail; prints what it said.
must_fail() {
  local out rc=0
  out=$(bash "$check" "$tree" 2>&1) || rc=$?
  echo "$out" >&2
  [ "$rc" = 1 ] || fail "exit status $rc, not 1"
  echo "$out"
}

case "$CASE" in
  real-tree)
    bash "$check" "$REPO_ROOT" || fail "the repository uses a layer above or beside its own"
    ;;
  upward-include)
    n=$(plant_include "$tree/core/gpu_model.cc" '#include "operator/reconcile/reconciler.h"')
    out=$(must_fail)
    echo "$out" | grep -qF "core/gpu_model.cc:$n: core/ includes \"operator/reconcile/reconciler.h\": operator is a layer above core" ||
      fail "the upward include is not named with its file, line and both folders"
    [ "$(echo "$out" | grep -c '^core/\|^cli/\|^operator/')" = 1 ] || fail "more than the planted one named"
    ;;
  peer-include)
    n=$(plant_include "$tree/operator/runtime/metrics.cc" '#include "worker/runner.h"')
    out=$(must_fail)
    grep -qF "operator/runtime/metrics.cc:$n: operator/ includes \"worker/runner.h\": operator and worker are peers" <<<"$out" ||
      fail "the include of a peer program is not named with its file, line and both folders"
    ;;
  cli-operator)
    n=$(plant_include "$tree/cli/summary.cc" '#include "operator/runtime/metrics.h"')
    out=$(must_fail)
    grep -qF "cli/summary.cc:$n: cli/ includes \"operator/runtime/metrics.h\": cli never uses operator" <<<"$out" ||
      fail "the operator included by the CLI is not named with its file, line and both folders"
    ;;
  upward-link)
    echo 'target_link_libraries(perfgate_gpu_model PRIVATE perfgate_operator)' >>"$tree/core/CMakeLists.txt"
    n=$(wc -l <"$tree/core/CMakeLists.txt")
    out=$(must_fail)
    echo "$out" | grep -qF "core/CMakeLists.txt:$n: core/ links perfgate_operator into perfgate_gpu_model, a library of operator/ (operator/CMakeLists.txt): operator is a layer above core" ||
      fail "the upward link is not named with its file, line and both folders"
    ;;
  *)
    fail "unknown case $CASE"
    ;;
esac
echo "PASS: $CASE"

#!/usr/bin/env bash
# The product worker holds no fixture test (CTest label `image`). PRODUCT_WORKER is a
# perfgate-worker built as the images build it (PERFGATE_TEST_FIXTURES=OFF: scripts/test-all.sh
# builds it with the nocuda preset); TEST_WORKER is this tree's, built with the fixtures the
# tests need. Checks:
#   - `list --enable-fixtures` of the product worker names no fixture test, while the test
#     worker's does (so the check can tell the two apart);
#   - a spec naming `synthetic` is refused by the product worker even with --enable-fixtures;
#   - no fixture code is linked in: neither factory symbol nor the fixtures' descriptions.
# Env: PRODUCT_WORKER, TEST_WORKER, WORK_DIR.
set -euo pipefail
: "${PRODUCT_WORKER:?}" "${TEST_WORKER:?}" "${WORK_DIR:?}"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[ -x "$PRODUCT_WORKER" ] || fail "no product worker at $PRODUCT_WORKER (cmake --preset nocuda \
-DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF && cmake --build --preset nocuda --target \
perfgate-worker)"
mkdir -p "$WORK_DIR"
# The test types of `list -o json`, one a line.
types() { python3 -c 'import json, sys; print("\n".join(t["type"] for t in json.load(sys.stdin)))'; }
fixtures='^(synthetic|nccl-cpu-loopback|nccl-rails-cpu-loopback)$'

"$TEST_WORKER" list -o json --enable-fixtures | types >"$WORK_DIR/test-types.txt"
[ "$(grep -Ec "$fixtures" "$WORK_DIR/test-types.txt")" = 3 ] \
  || fail "the test worker should list the three fixture tests: $(tr '\n' ' ' <"$WORK_DIR/test-types.txt")"

"$PRODUCT_WORKER" list -o json --enable-fixtures | types >"$WORK_DIR/product-types.txt"
[ -s "$WORK_DIR/product-types.txt" ] || fail "the product worker lists no test at all"
if grep -Eq "$fixtures" "$WORK_DIR/product-types.txt"; then
  fail "the product worker lists a fixture test: $(grep -E "$fixtures" "$WORK_DIR/product-types.txt")"
fi
grep -vEf <(sed 's/.*/^&$/' "$WORK_DIR/product-types.txt") "$WORK_DIR/test-types.txt" \
  >"$WORK_DIR/only-in-test.txt" || true
[ "$(grep -Evc "$fixtures" "$WORK_DIR/only-in-test.txt")" = 0 ] \
  || fail "the product worker lacks product tests: $(tr '\n' ' ' <"$WORK_DIR/only-in-test.txt")"

cat >"$WORK_DIR/synthetic.yaml" <<'YAML'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: fixture
spec:
  tests:
    - type: synthetic
YAML
if "$PRODUCT_WORKER" run --enable-fixtures --no-store "$WORK_DIR/synthetic.yaml" >"$WORK_DIR/plan.out" 2>&1; then
  fail "the product worker planned a synthetic test: $(cat "$WORK_DIR/plan.out")"
fi
grep -q 'synthetic' "$WORK_DIR/plan.out" || fail "the refusal does not name the test: $(cat "$WORK_DIR/plan.out")"

for needle in MakeSyntheticTest MakeNcclCpuLoopbackTest MakeNcclRailsCpuLoopbackTest CreateCpuLoopbackCommunicator \
  'TEST FIXTURE: samples' 'TEST STAND-IN'; do
  if grep -aq "$needle" "$PRODUCT_WORKER"; then fail "the product worker holds '$needle'"; fi
  grep -aq "$needle" "$TEST_WORKER" || fail "the test worker lacks '$needle' (is the needle stale?)"
done
echo "product worker: $(wc -l <"$WORK_DIR/product-types.txt") tests, no fixture"

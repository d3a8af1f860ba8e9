#!/usr/bin/env bash
# scripts/profile-table.sh --check with a stand-in perfgate-profile-sim, in a second: the check
# passes when the simulation prints the table docs/benchmarks.md holds, and fails, naming the
# command that regenerates it, when the two differ (a profile changed, the doc did not) or when
# a profile misses its rates. The real simulation runs in CTest profile_sim.
set -euo pipefail
: "${REPO_ROOT:?}" "${WORK_DIR:?}"
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR/build/tests/bench"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The doc's table, as the script reads it: the lines between the markers.
awk '/^<!-- profile-table: end -->$/ {inside = 0} inside {print}
     /^<!-- profile-table: begin / {inside = 1}' "$REPO_ROOT/docs/benchmarks.md" >"$WORK_DIR/doc-table.md"
[[ -s $WORK_DIR/doc-table.md ]] || fail "no table between the markers of docs/benchmarks.md"

# Stand-in: prints $SIM_TABLE, exits $SIM_STATUS (1: some profile misses its rates).
cat >"$WORK_DIR/build/tests/bench/perfgate-profile-sim" <<'SIM'
#!/usr/bin/env bash
cat "$SIM_TABLE"
exit "${SIM_STATUS:-0}"
SIM
chmod +x "$WORK_DIR/build/tests/bench/perfgate-profile-sim"

run() { bash "$REPO_ROOT/scripts/profile-table.sh" "$WORK_DIR/build" --check >"$WORK_DIR/out" 2>&1; }

SIM_TABLE=$WORK_DIR/doc-table.md run || fail "the doc's own table did not pass: $(cat "$WORK_DIR/out")"

sed '0,/| CV 1% |/s/| CV 1% | 100.0% |/| CV 1% | 99.8% |/' "$WORK_DIR/doc-table.md" >"$WORK_DIR/changed.md"
! cmp -s "$WORK_DIR/doc-table.md" "$WORK_DIR/changed.md" || fail "the stand-in table did not change"
if SIM_TABLE=$WORK_DIR/changed.md run; then fail "a stale table passed"; fi
grep -q "regenerate it with scripts/profile-table.sh" "$WORK_DIR/out" || fail "no remedy named: $(cat "$WORK_DIR/out")"
grep -q '^+| CV 1% | 99.8% |' "$WORK_DIR/out" || fail "the diff does not show the new row"

if SIM_TABLE=$WORK_DIR/doc-table.md SIM_STATUS=1 run; then fail "a profile missing its rates passed"; fi
grep -q "misses its rates" "$WORK_DIR/out" || fail "no word of the missed rates: $(cat "$WORK_DIR/out")"
echo "ok"

#!/usr/bin/env bash
# scripts/gpu-check.sh without a GPU: a stand-in bundle (a worker that writes a small report,
# gtest binaries that print a line) shows the promises the GPU machine's short window needs:
#   plan                           the step budgets add up to well under five minutes, and the
#                                  references run first, NCCL last
#   from-the-bundle                the bundle's own copy finds its bundle from any directory
#   a-hung-step-loses-only-itself  a step that hangs is killed at its budget; the steps before
#                                  and after it keep their results
#   workloads-mode                 --workloads plans only setup, workloads and summary, within
#                                  the same limit, and the default plan has no workloads step
set -euo pipefail
: "${REPO_ROOT:?}" "${WORK_DIR:?}"
CASE=$1
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A bundle laid out as scripts/bundle-worker.sh lays it out, with stand-in binaries.
make_bundle() {
  local b=$1
  mkdir -p "$b/bin" "$b/scripts" "$b/share/perfgate/examples"
  cp "$REPO_ROOT/scripts/gpu-check.sh" "$b/scripts/"
  cp "$REPO_ROOT/examples/h200-node.yaml" "$b/share/perfgate/examples/"
  cat >"$b/bin/perfgate-worker" <<'WORKER'
#!/usr/bin/env bash
# Stand-in: `run SPEC [--only T]... --report-json PATH`; hangs on the test named in HANG_TEST.
if [ "${1:-}" = "--version" ]; then echo "perfgate-worker stand-in"; exit 0; fi
report="" only=()
case "${2:-}" in *h200-node.yaml) [ -n "${SPEC_COPY:-}" ] && cp "$2" "$SPEC_COPY" ;; esac
while [ $# -gt 0 ]; do
  case "$1" in
    --report-json) report=$2; shift ;;
    --only) only+=("$2"); shift ;;
  esac
  shift
done
for t in "${only[@]}"; do
  if [ "$t" = "${HANG_TEST:-}" ]; then sleep 600; fi
done
name=${only[0]:-nccl-all-reduce}
echo "{\"tests\": [{\"name\": \"$name\", \"device\": \"gpu0\", \"verdict\": \"PASS\", \"samples\": 4, \"warmupSamples\": 1, \"seconds\": 2.0, \"stopReason\": \"decided\", \"metrics\": [{\"name\": \"copyBandwidthGBps\", \"summary\": {\"median\": 4000}}]}, {\"name\": \"$name\", \"device\": \"gpu1\", \"verdict\": \"PASS\", \"samples\": 4, \"warmupSamples\": 1, \"seconds\": 2.0, \"stopReason\": \"decided\", \"metrics\": [{\"name\": \"copyBandwidthGBps\", \"summary\": {\"median\": 3960}}]}]}" >"$report"
echo "$name: PASS"
WORKER
  printf '#!/usr/bin/env bash\necho "[  PASSED  ] 1 test."\n' >"$b/bin/gpu_device_test"
  cp "$b/bin/gpu_device_test" "$b/bin/nccl_gpu_test"
  chmod +x "$b/bin/"*
}

case "$CASE" in
  plan)
    out=$(bash "$REPO_ROOT/scripts/gpu-check.sh" --plan)
    echo "$out"
    total=$(echo "$out" | awk '$1 == "total" {print $2}')
    [ -n "$total" ] || fail "no total in the plan"
    [ "$total" -le 270 ] || fail "budgets add up to $total s, over 270"
    # Each step's budget is printed and adds up to the total.
    sum=$(echo "$out" | awk 'NR > 1 && $1 != "total" && $1 != "bundle:" {s += $2} END {print s}')
    [ "$sum" = "$total" ] || fail "steps add up to $sum, the plan says $total"
    order=$(echo "$out" | awk 'NR > 1 && $1 != "total" && $1 != "bundle:" {print $1}' | tr '\n' ' ')
    [[ "$order" == "setup references device-tests worker-"*" nccl-"*"summary " ]] ||
      fail "order: $order (references first, then the worker's tests, then NCCL)"
    ;;
  workloads-mode)
    out=$(bash "$REPO_ROOT/scripts/gpu-check.sh" --workloads --plan)
    echo "$out"
    order=$(echo "$out" | awk 'NR > 1 && $1 != "total" && $1 != "bundle:" {print $1}' | tr '\n' ' ')
    [ "$order" = "setup workloads summary " ] || fail "workloads order: $order"
    total=$(echo "$out" | awk '$1 == "total" {print $2}')
    [ "$total" -le 270 ] || fail "workloads budgets add up to $total s, over 270"
    if grep -q '^ *workloads ' <<<"$(bash "$REPO_ROOT/scripts/gpu-check.sh" --plan)"; then
      fail "the default plan runs the workloads step"
    fi
    ;;
  from-the-bundle)
    make_bundle "$WORK_DIR/carried/.bundle"
    mkdir -p "$WORK_DIR/elsewhere"
    out=$(cd "$WORK_DIR/elsewhere" && bash ../carried/.bundle/scripts/gpu-check.sh --plan)
    grep -qx "bundle: $WORK_DIR/carried/.bundle" <<<"$out" ||
      fail "the bundle's copy did not find its bundle: $(echo "$out" | grep bundle:)"
    # And the repository's copy, started from the repository root, finds .bundle/ there.
    out=$(cd "$REPO_ROOT" && bash scripts/gpu-check.sh --plan)
    grep -qx "bundle: $REPO_ROOT/.bundle" <<<"$out" || fail "repository copy: $out"
    ;;
  a-hung-step-loses-only-itself)
    make_bundle "$WORK_DIR/.bundle"
    start=$(date +%s)
    (cd "$WORK_DIR" && HANG_TEST=p2p SPEC_COPY="$WORK_DIR/spec.yaml" PATH="$PATH" \
      bash .bundle/scripts/gpu-check.sh results) \
      >"$WORK_DIR/run.log" 2>&1 || true
    took=$(($(date +%s) - start))
    cat "$WORK_DIR/run.log"
    r="$WORK_DIR/results"
    grep -P '^worker-health\t12\t\d+\t(124|137)\ttimed out' "$r/steps.tsv" >/dev/null ||
      fail "the hung step was not recorded as killed at its budget"
    hung=$(awk -F'\t' '$1 == "worker-health" {print $3}' "$r/steps.tsv")
    [ "$hung" -le 13 ] || fail "the hung step ran $hung s, its budget is 12"
    for f in torch.json report-hbm-stream.json report-gemm.json report-burn.json \
      report-nccl.json summary.txt; do
      [ -s "$r/$f" ] || fail "$f missing: a later step lost its results"
    done
    [ "$(grep -c $'\tok$' "$r/steps.tsv")" -ge 9 ] || fail "other steps did not end ok"
    # figures.tsv: what replaces the docs' estimates. The stand-in reports 2 s over 4 samples
    # and 1 warm-up on each of two GPUs, medians 4000 and 3960 GB/s.
    f="$r/figures.tsv"
    [ -s "$f" ] || fail "figures.tsv missing"
    grep -qxP 'sample-cost\thbm-stream\tgpu0\t0\.400\ts' "$f" || fail "no per-sample cost: $(cat "$f")"
    grep -qP '^setup-cost\tworker-hbm-stream\t-\t[0-9.]+\ts$' "$f" || fail "no set-up cost: $(cat "$f")"
    grep -qxP 'gpu-spread\thbm-stream\tcopyBandwidthGBps\t1\.01\t%' "$f" ||
      fail "no spread across GPUs: $(cat "$f")"
    [ "$took" -le 270 ] || fail "the run took $took s"
    # The worker ran the H200 example as shipped, less gpusPerNode (the machine's own GPUs).
    grep -q '^  profile: h200-sxm-141gb' "$WORK_DIR/spec.yaml" || fail "not the H200 example"
    ! grep -q 'gpusPerNode' "$WORK_DIR/spec.yaml" || fail "gpusPerNode left in the spec"
    # The summary shows how many samples each test took and why it stopped.
    grep -q 'hbm-stream \[gpu0\]: 4 samples (decided), PASS' "$r/summary.txt" ||
      fail "no per-test sample count in the summary"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "PASS: $CASE"

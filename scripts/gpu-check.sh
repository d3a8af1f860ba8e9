#!/usr/bin/env bash
# Every GPU check in one run, on the GPU machine (one H200, CUDA 13 driver, PyTorch in its
# Python packages; nothing can be installed there), in well under five minutes by
# construction: each step runs under a hard timeout equal to its budget, the budgets add up to
# BUDGET_LIMIT, and the script refuses to start if they do not.
#
#   scripts/bundle-worker.sh                      # here: builds .bundle/ (under 64 MiB)
#   scripts/gpu-check.sh [RESULTS_DIR]            # there, from the repository root, .bundle/ carried
#   .bundle/scripts/gpu-check.sh [RESULTS_DIR]    # the bundle's copy, from anywhere
#   scripts/gpu-check.sh --plan                   # print the steps and budgets, run nothing
#
# Order: what is most likely to answer first, what is most likely to hang last.
#   setup        find cuBLASLt/cudart/NCCL in the nvidia-* wheels' lib folders (no torch import)
#   references   PyTorch on the same shapes and data: copy/add/triad on 1 GiB doubles, matmuls
#                at 8192^3, pinned 1 GiB host<->device copies (each figure saved as measured)
#   device-tests gpu_device_test (gtest, label gpu): every kernel small, verified
#   worker-config-memtest, worker-power (GPU_CHECK_EXTENDED=1 only): the node-diagnosis tests
#                on small one-test specs, each with its own report
#   worker-*     perfgate-worker on examples/h200-node.yaml (the profile's quick level, as a
#                user runs it), one run per test, each writing its own report
#   nccl-*       nccl_gpu_test (one-rank all_reduce, watchdog abort of a two-rank init with a
#                5 s deadline), one-rank all_reduce figures, a node-local run in a gang's env
#   summary      each perfgate figure beside the PyTorch reference and the datasheet peak;
#                figures.tsv: per-sample and set-up costs, spread across the GPUs
#
#   scripts/gpu-check.sh --workloads [RESULTS_DIR]   the workload tests instead (a run of its
#                own, so the default run keeps its budget): setup, then workloads
#                (workload_gpu_test; perfgate-worker on training-step, decode-step and
#                sequence-search; PyTorch on the same shapes where it is importable, in
#                torch-workloads.json, side by side in workloads-summary.txt), then summary.
# Each step writes its files into RESULTS_DIR (default $OUT if set, else ./gpu-check-results)
# as it ends and appends a line to steps.tsv: a step killed at its timeout loses only itself.
set -uo pipefail

# name:budget seconds. The budget includes the 2 s that `timeout -k` allows a step to exit.
STEPS=(
  setup:10
  references:35
  device-tests:30
  worker-health:12
  worker-hbm-stream:20
  worker-gemm:30
  worker-h2d-d2h:15
  worker-burn:48
  nccl-gtest:25
  nccl-all-reduce:25
  nccl-local-in-gang:10
  summary:5
)
BUDGET_LIMIT=270  # of the promised 300 s: the rest covers process start-up between steps
MODE=default
if [ "${1:-}" = "--workloads" ]; then
  MODE=workloads
  STEPS=(setup:10 workloads:125 summary:5)
  shift
# GPU_CHECK_EXTENDED=1 (default mode only) adds the node-diagnosis tests (config, memtest on
# 8 GiB, power for 15 s): 40 s past the default budget and past the five-minute promise, so
# they run only when asked for.
elif [ "${GPU_CHECK_EXTENDED:-0}" = 1 ]; then
  STEPS+=(worker-config-memtest:14 worker-power:26)
  BUDGET_LIMIT=$((BUDGET_LIMIT + 40))
fi

budget_total() {
  local total=0 entry
  for entry in "${STEPS[@]}"; do total=$((total + ${entry##*:})); done
  echo "$total"
}

print_plan() {
  local entry
  echo "gpu-check plan (seconds; each step is killed at its budget):"
  for entry in "${STEPS[@]}"; do printf '  %-20s %4d\n' "${entry%%:*}" "${entry##*:}"; done
  printf '  %-20s %4d (limit %d, promise 300)\n' total "$(budget_total)" "$BUDGET_LIMIT"
}

step_budget() {
  local entry
  for entry in "${STEPS[@]}"; do
    if [ "${entry%%:*}" = "$1" ]; then
      echo "${entry##*:}"
      return
    fi
  done
  echo 0
}

# The bundle: $BUNDLE, else the folder this script sits in when it is the bundle's copy
# (.bundle/scripts/), else .bundle/ beside the repository's scripts/ folder.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${BUNDLE:-}" ]; then
  if [ -x "$HERE/../bin/perfgate-worker" ]; then
    BUNDLE=$(cd "$HERE/.." && pwd)
  else
    BUNDLE=$(cd "$HERE/.." && pwd)/.bundle
  fi
fi
export BUNDLE

if [ "$(budget_total)" -gt "$BUDGET_LIMIT" ]; then
  print_plan
  echo "gpu-check: the budgets add up to more than $BUDGET_LIMIT s; fix STEPS" >&2
  exit 2
fi
if [ "${1:-}" = "--plan" ]; then
  print_plan
  echo "bundle: $BUNDLE"
  exit 0
fi

RESULTS="${1:-${OUT:-$PWD/gpu-check-results}}"
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
export RESULTS
START=$(date +%s)
export START
say() { echo "[gpu-check +$(($(date +%s) - START))s] $*"; }
export -f say

print_plan
echo "bundle: $BUNDLE"
echo "results: $RESULTS"
printf 'step\tbudget_s\tseconds\texit\tstatus\n' >"$RESULTS/steps.tsv"

# Runs step function $1 under its budget; records how it ended, whatever happens after.
run_step() {
  local name=$1 fn=$2 budget started rc status
  budget=$(step_budget "$name")
  say "$name (budget ${budget} s)"
  started=$(date +%s)
  timeout -k 2 $((budget - 2)) bash -c "$fn" 2>&1 | tee "$RESULTS/$name.log"
  rc=${PIPESTATUS[0]}
  case "$rc" in
    0) status=ok ;;
    124 | 137) status="timed out (killed at its budget)" ;;
    *) status="exit $rc" ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$budget" "$(($(date +%s) - started))" "$rc" "$status" \
    >>"$RESULTS/steps.tsv"
  say "$name: $status"
}

# ---- setup ----------------------------------------------------------------------------------
PY=$(command -v python3 || command -v python || true)
if [ -z "$PY" ]; then echo "gpu-check: no python3 on this machine" >&2; exit 2; fi
export PY
WORKER="$BUNDLE/bin/perfgate-worker"
export WORKER
if [ ! -x "$WORKER" ]; then
  echo "gpu-check: $WORKER missing: run scripts/bundle-worker.sh and carry .bundle/" >&2
  exit 2
fi

# Finds the libraries and writes $RESULTS/env.sh, which the later steps run with.
setup_step() {
  # The nvidia-* wheels (cublas, cuda_runtime, nccl, ...) share the `nvidia` namespace
  # package: importing it is cheap, importing torch is not, and torch's lib/ is not needed.
  local nvlibs
  nvlibs=$("$PY" -c '
import glob, os
dirs = []
try:
    import nvidia
    for root in list(nvidia.__path__):
        dirs += sorted(glob.glob(os.path.join(root, "*", "lib")))
except Exception:
    pass
print(":".join(d for d in dirs if os.path.isdir(d)))
')
  export LD_LIBRARY_PATH="${nvlibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The machine's C++ runtime first; the bundled one (built against a newer glibc) only if
  # the machine's is too old for the binaries.
  if ! "$WORKER" --version >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$BUNDLE/lib-compat:$LD_LIBRARY_PATH"
  fi
  printf 'export LD_LIBRARY_PATH=%q\n' "$LD_LIBRARY_PATH" >"$RESULTS/env.sh"
  echo "library folders: ${nvlibs:-none found}"
  "$WORKER" --version 2>&1 | head -1
  if grep -q "not found" <<<"$(ldd "$WORKER")"; then
    echo "unresolved libraries:"
    ldd "$WORKER" | grep "not found"
    exit 2
  fi
  # cuBLASLt is opened when the first GEMM runs, so ldd does not list it: look for it here.
  if ! "$PY" -c 'import ctypes; ctypes.CDLL("libcublasLt.so.13")' 2>/dev/null; then
    echo "libcublasLt.so.13 not found (the GEMM tests open it; PyTorch's wheels may carry another"
    echo "major version)"
    exit 2
  fi
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,clocks.max.mem,power.limit,ecc.mode.current \
    --format=csv 2>&1 | tee "$RESULTS/nvidia-smi.csv"
}
export -f setup_step
run_step setup setup_step
# shellcheck disable=SC1091
[ -f "$RESULTS/env.sh" ] && . "$RESULTS/env.sh"

# ---- PyTorch references (first: they need nothing of ours) ------------------------------------
references_step() {
  "$PY" - "$RESULTS/torch.json" <<'EOF'
import json, os, sys
path = sys.argv[1]
out = {}
def save():  # after every figure: a kill loses only the one being measured
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(path + ".tmp", path)
try:
    import torch
except Exception as e:
    out["note"] = "no PyTorch: %s" % e
    save(); print(out["note"]); sys.exit(0)
dev = torch.device("cuda")
out["torch"] = torch.__version__
out["cuda"] = torch.version.cuda
save()

def timed(fn, iters, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / 1e3 / iters

def figure(name, value):
    out[name] = value
    save()
    print("%-12s %10.1f" % (name, value), flush=True)

# Same arrays as hbm-stream: three 1 GiB float64 arrays.
n = (1 << 30) // 8
a = torch.full((n,), 0.1, dtype=torch.float64, device=dev)
b = torch.full((n,), 0.2, dtype=torch.float64, device=dev)
c = torch.zeros(n, dtype=torch.float64, device=dev)
figure("copyGBps", 2 * 8 * n / timed(lambda: c.copy_(a), 20) / 1e9)
figure("addGBps", 3 * 8 * n / timed(lambda: torch.add(a, b, out=c), 20) / 1e9)
figure("triadGBps", 3 * 8 * n / timed(lambda: torch.add(b, c, alpha=0.4, out=a), 20) / 1e9)
del a, b, c

# Same shapes and random normal data as gemm; perfgate computes A^T B (TN): time both forms.
m = nn = k = 8192
flops = 2 * m * nn * k
for name, dtype, tf32 in [("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                          ("tf32", torch.float32, True), ("fp64", torch.float64, False)]:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    x = torch.randn(k, m, device=dev).to(dtype)
    y = torch.randn(k, nn, device=dev).to(dtype)
    iters = 5 if dtype == torch.float64 else 20
    figure(name + "Tflops", max(flops / timed(lambda: x.t() @ y, iters) / 1e12,
                                flops / timed(lambda: x @ y, iters) / 1e12))
    del x, y
try:  # fp8: torch._scaled_mm needs A row-major, B column-major
    x = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
    y = torch.randn(nn, k, device=dev).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=dev)
    figure("fp8Tflops", flops / timed(
        lambda: torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
        20) / 1e12)
except Exception as e:
    out["fp8Note"] = str(e)[:200]
    save()

# Pinned 1 GiB host<->device, as h2d-d2h's headline.
size = 1 << 30
h = torch.empty(size, dtype=torch.uint8, pin_memory=True)
d = torch.empty(size, dtype=torch.uint8, device=dev)
figure("h2dGBps", size / timed(lambda: d.copy_(h, non_blocking=True), 5) / 1e9)
figure("d2hGBps", size / timed(lambda: h.copy_(d, non_blocking=True), 5) / 1e9)
EOF
}
export -f references_step
[ "$MODE" = default ] && run_step references references_step

# ---- device tests ---------------------------------------------------------------------------
device_tests_step() {
  if [ ! -x "$BUNDLE/bin/gpu_device_test" ]; then
    echo "no $BUNDLE/bin/gpu_device_test in the bundle"
    exit 2
  fi
  "$BUNDLE/bin/gpu_device_test"
}
export -f device_tests_step
[ "$MODE" = default ] && run_step device-tests device_tests_step

# ---- perfgate-worker, one run (and one report) per test -----------------------------------
# The H200 example as shipped, for the GPUs here: without gpusPerNode (8 in the example), a
# one-GPU machine is priced and judged as the node it is; p2p and NVLink all-reduce need two.
SPEC="$RESULTS/h200-node.yaml"
grep -v '^ *gpusPerNode:' "$BUNDLE/share/perfgate/examples/h200-node.yaml" >"$SPEC"
export SPEC
# worker_run STEP TEST...: the named tests of the spec, their own report and JUnit file
# (--only matches a name or a type: no name here is another test's type).
worker_run() {
  local step=$1 only=()
  shift
  for t in "$@"; do only+=(--only "$t"); done
  "$WORKER" run "$SPEC" "${only[@]}" --report-json "$RESULTS/report-$step.json" \
    --junit "$RESULTS/junit-$step.xml"
  echo "perfgate-worker exit $?"
}
export -f worker_run
if [ "$MODE" = default ]; then
  run_step worker-health "worker_run health health p2p nvlink-all-reduce"
  run_step worker-hbm-stream "worker_run hbm-stream hbm-stream"
  run_step worker-gemm "worker_run gemm gemm"
  run_step worker-h2d-d2h "worker_run h2d-d2h h2d-d2h"
  run_step worker-burn "worker_run burn burn"
fi

# ---- workloads (--workloads): perfgate's and PyTorch's figures for the same shapes ---------
workloads_step() {
  if [ -x "$BUNDLE/bin/workload_gpu_test" ]; then
    timeout 40 "$BUNDLE/bin/workload_gpu_test"
    echo "workload_gpu_test exit $?"
  else
    echo "no $BUNDLE/bin/workload_gpu_test in the bundle"
  fi
  # Shapes shared with the PyTorch snippet below: keep them in step.
  cat >"$RESULTS/workloads.yaml" <<'EOF'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-workloads
spec:
  sampling: {warmup: 1, minRepeats: 3, maxRepeats: 3, method: fixed, maxSeconds: 20}
  tests:
    - type: training-step
      parameters: {hidden: 4096, sequence: 4096, microBatch: 1, layers: 2, dtype: bf16, bucketMB: 25, stepsPerSample: 3}
    - type: decode-step
      parameters: {hidden: 4096, layers: 8, batch: 16, kvTokens: 4096, dtype: bf16, stepsPerSample: 5}
    - type: sequence-search
      parameters: {queries: 8, queryLength: 256, targets: 20000}
EOF
  timeout 50 "$WORKER" run "$RESULTS/workloads.yaml" --report-json "$RESULTS/report-workloads.json"
  echo "perfgate-worker (workloads) exit $?"
  timeout 25 "$PY" - "$RESULTS/torch-workloads.json" <<'EOF'
import json, os, sys
path = sys.argv[1]
out = {}
def save():
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(path + ".tmp", path)
try:
    import torch
except Exception as e:
    out["note"] = "no PyTorch: %s" % e
    save(); print(out["note"]); sys.exit(0)
dev = torch.device("cuda")
def timed(fn, iters, warm=2):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / 1e3 / iters
def figure(name, value):
    out[name] = value
    save()
    print("%-22s %12.2f" % (name, value), flush=True)
# training-step: the same four weight matmuls per layer, forward and backward (no attention
# core, no bias), one GPU, no all-reduce: 72 T h^2 per layer.
h, T, layers = 4096, 4096, 2
dims = [(h, 3 * h), (h, h), (h, 4 * h), (4 * h, h)] * layers
ws = [torch.randn(i, o, device=dev, dtype=torch.bfloat16, requires_grad=True) for i, o in dims]
xs = [torch.randn(T, i, device=dev, dtype=torch.bfloat16, requires_grad=True) for i, _ in dims]
def train():
    loss = sum((x @ w).float().sum() for x, w in zip(xs, ws))
    loss.backward()
step = timed(train, 3)
figure("trainingStepMs", step * 1e3)
figure("trainingTflops", 72 * T * h * h * layers / step / 1e12)
del ws, xs
# decode-step: batch 16 vectors through 12 h^2 weights per layer, then K and V read per sequence.
layers, batch, kv = 8, 16, 4096
heads = h // 128
shapes = [(h, 3 * h), (h, h), (h, 4 * h), (4 * h, h)] * layers
W = [torch.randn(i, o, device=dev, dtype=torch.bfloat16) for i, o in shapes]
K = [torch.randn(batch, heads, kv, 128, device=dev, dtype=torch.bfloat16) for _ in range(layers)]
V = [torch.randn(batch, heads, kv, 128, device=dev, dtype=torch.bfloat16) for _ in range(layers)]
q = torch.randn(batch, heads, 128, 1, device=dev, dtype=torch.bfloat16)
xin = {i: torch.randn(batch, i, device=dev, dtype=torch.bfloat16) for i in (h, 4 * h)}
def decode():
    for w in W:
        xin[w.shape[0]] @ w
    for k, v in zip(K, V):
        v.transpose(-1, -2) @ (k @ q)
step = timed(decode, 5)
figure("decodeStepMs", step * 1e3)
figure("decodeTokensPerSecond", batch / step)
figure("decodeGBps", (12 * h * h * layers * 2 + 2 * h * kv * batch * layers * 2) / step / 1e9)
out["sequenceSearch"] = "no PyTorch equivalent"
save()
EOF
  "$PY" - "$RESULTS/report-workloads.json" "$RESULTS/torch-workloads.json" <<'EOF' | tee "$RESULTS/workloads-summary.txt"
import json, sys
try:
    tests = json.load(open(sys.argv[1]))["tests"]
except Exception as e:
    print("no workloads report:", e); sys.exit(0)
try:
    torch = json.load(open(sys.argv[2]))
except Exception:
    torch = {}
pairs = {("training-step", "stepMs"): "trainingStepMs",
         ("training-step", "tflops"): "trainingTflops",
         ("decode-step", "stepMs"): "decodeStepMs",
         ("decode-step", "tokensPerSecond"): "decodeTokensPerSecond",
         ("decode-step", "achievedGBps"): "decodeGBps"}
for t in tests:
    kind = t.get("type", t["name"])
    print("%s [%s]: %s %s" % (t["name"], t.get("device", ""), t.get("verdict"), t.get("reason", "")))
    for k in ("speedOfLight", "nodeFigures"):
        if k in t.get("details", {}):
            print("  %s: %s" % (k, t["details"][k]))
    for m in t.get("metrics", []):
        med = m.get("summary", {}).get("median")
        ref = torch.get(pairs.get((kind, m["name"]), ""), None)
        print("  %-18s %12.3f  pytorch %s" % (m["name"], med if med is not None else float("nan"),
                                             "%.3f" % ref if ref else "-"))
EOF
}
export -f workloads_step
[ "$MODE" = workloads ] && run_step workloads workloads_step

# ---- node diagnosis (GPU_CHECK_EXTENDED=1): config, memtest, power, each in its own report --
diag_spec() {  # diag_spec NAME TEST-YAML: a one-test spec, one sample, no warm-up
  cat >"$RESULTS/$1.yaml" <<EOF
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-$1
spec:
  sampling: {warmup: 0, minRepeats: 1, maxRepeats: 1, method: fixed, maxSeconds: 30}
  tests:
$2
EOF
}
export -f diag_spec
config_memtest_step() {
  diag_spec config "    - type: config"
  "$WORKER" run "$RESULTS/config.yaml" --report-json "$RESULTS/report-config.json"
  echo "perfgate-worker (config) exit $?"
  diag_spec memtest "    - type: memtest
      parameters: {maxBytes: 8589934592, retentionSeconds: 0.25}"
  "$WORKER" run "$RESULTS/memtest.yaml" --report-json "$RESULTS/report-memtest.json"
  echo "perfgate-worker (memtest, 8 GiB, 0.25 s retention: 1 s of waits in the budget) exit $?"
}
export -f config_memtest_step
power_step() {
  diag_spec power "    - type: power
      parameters: {durationSeconds: 15, warmupSeconds: 5, minSmClockFraction: 0.75}"
  "$WORKER" run "$RESULTS/power.yaml" --report-json "$RESULTS/report-power.json"
  echo "perfgate-worker (power, 15 s) exit $?"
}
export -f power_step
if [ "$MODE" = default ] && [ "${GPU_CHECK_EXTENDED:-0}" = 1 ]; then
  run_step worker-config-memtest config_memtest_step
  run_step worker-power power_step
fi

# ---- NCCL (last: the likeliest to hang) ---------------------------------------------------
# One H200 here, so one-rank paths only. libnccl.so.2 comes from nvidia/nccl/lib (setup).
nccl_gtest_step() {
  if [ ! -x "$BUNDLE/bin/nccl_gpu_test" ]; then
    echo "no $BUNDLE/bin/nccl_gpu_test in the bundle"
    exit 2
  fi
  "$BUNDLE/bin/nccl_gpu_test"
}
export -f nccl_gtest_step
[ "$MODE" = default ] && run_step nccl-gtest nccl_gtest_step

nccl_all_reduce_step() {
  cat >"$RESULTS/nccl-check.yaml" <<'EOF'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-nccl
spec:
  sampling: {warmup: 1, minRepeats: 3, maxRepeats: 3, method: fixed, maxSeconds: 15}
  tests:
    - type: nccl-all-reduce
      parameters: {minBytes: 8, maxBytes: 1073741824, stepFactor: 8, iterations: 20, initTimeoutSeconds: 10}
EOF
  "$WORKER" run "$RESULTS/nccl-check.yaml" --report-json "$RESULTS/report-nccl.json"
  echo "perfgate-worker (nccl-all-reduce, one rank) exit $?"
  "$PY" - "$RESULTS/report-nccl.json" <<'EOF' | tee "$RESULTS/nccl-summary.txt"
import json, sys
try:
    t = json.load(open(sys.argv[1]))["tests"][0]
except Exception as e:
    print("no NCCL report:", e); sys.exit(0)
d = t.get("details", {})
print("nccl-all-reduce [%s]: %s %s" % (t.get("device", ""), t.get("verdict"), t.get("reason", "")))
for k in ("ncclVersion", "transport", "busBandwidth", "wrongElementsTotal", "worldSize"):
    print("  %s: %s" % (k, d.get(k, "-")))
for m in t.get("metrics", []):
    if m["name"].startswith(("algBandwidthGBps@", "inPlaceAlgBandwidthGBps@", "timeMicroseconds@")):
        print("  %-34s median %10.3f %s" % (m["name"], m["summary"]["median"], m.get("unit", "")))
EOF
}
export -f nccl_all_reduce_step
[ "$MODE" = default ] && run_step nccl-all-reduce nccl_all_reduce_step

# The gang's rank 0 is "elsewhere" (nobody listens there): a node-local communicator must not
# use that address, so this ends PASS at once, with worldSize 1, instead of a watchdog abort.
nccl_local_step() {
  cat >"$RESULTS/nccl-local.yaml" <<'EOF'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-nccl-local
spec:
  sampling: {warmup: 0, minRepeats: 2, maxRepeats: 2, method: fixed, maxSeconds: 5}
  tests:
    - type: nccl-all-reduce
      parameters: {minBytes: 1048576, maxBytes: 1048576, acrossNodes: false, initTimeoutSeconds: 5}
EOF
  PERFGATE_GANG_SIZE=2 PERFGATE_GANG_RANK=1 NCCL_COMM_ID=127.0.0.1:29556 "$WORKER" run \
    "$RESULTS/nccl-local.yaml" --report-json "$RESULTS/report-nccl-local.json"
  echo "perfgate-worker (acrossNodes: false, in a gang env) exit $?"
}
export -f nccl_local_step
[ "$MODE" = default ] && run_step nccl-local-in-gang nccl_local_step

# ---- summary: whatever reports exist ------------------------------------------------------
# summary.txt, and figures.tsv: the figures that replace the docs' estimates, one a line as
# kind, test, what, value, unit:
#   sample-cost  TEST DEVICE  seconds per sample (warm-ups included), set-up included
#   setup-cost   STEP -       the worker run's seconds outside its tests (start, CUDA, NVML)
#   gpu-spread   TEST METRIC  (max - min) / median of the GPUs' medians, percent; "n/a (1 GPU)"
summary_step() {
  "$PY" - "$RESULTS" <<'EOF' | tee "$RESULTS/summary.txt"
import glob, json, os, sys
results = sys.argv[1]
try:
    torch = json.load(open(os.path.join(results, "torch.json")))
except Exception:
    torch = {}
# H200 SXM datasheet peaks (dense): see profiles/h200-sxm-141gb.yaml for sources.
peak = {"triadBandwidthGBps": 4800, "copyBandwidthGBps": 4800, "addBandwidthGBps": 4800,
        "bf16Tflops": 989.5, "fp16Tflops": 989.5, "fp8Tflops": 1979, "tf32Tflops": 494.5,
        "fp64Tflops": 67, "h2dBandwidthGBps": 63.0, "d2hBandwidthGBps": 63.0}
ref = {"triadBandwidthGBps": "triadGBps", "copyBandwidthGBps": "copyGBps",
       "addBandwidthGBps": "addGBps", "bf16Tflops": "bf16Tflops", "fp16Tflops": "fp16Tflops",
       "fp8Tflops": "fp8Tflops", "tf32Tflops": "tf32Tflops", "fp64Tflops": "fp64Tflops",
       "h2dBandwidthGBps": "h2dGBps", "d2hBandwidthGBps": "d2hGBps"}
print(open(os.path.join(results, "steps.tsv")).read())
print(f"{'test':12} {'metric':28} {'perfgate':>10} {'pytorch':>10} {'ratio':>7} {'peak':>8} {'%peak':>6}")
for path in sorted(glob.glob(os.path.join(results, "report-*.json"))):
    try:
        report = json.load(open(path))
    except Exception as e:
        print(f"{os.path.basename(path)}: unreadable ({e})"); continue
    for t in report.get("tests", []):
        for m in t.get("metrics", []):
            name = m["name"]
            med = m.get("summary", {}).get("median")
            if med is None or "@" in name:
                continue
            r = torch.get(ref.get(name, ""), None)
            p = peak.get(name)
            print(f"{t['name']:12} {name:28} {med:10.1f} "
                  f"{(f'{r:10.1f}' if r else '         -')} "
                  f"{(f'{med / r:7.3f}' if r else '      -')} "
                  f"{(f'{p:8.1f}' if p else '       -')} "
                  f"{(f'{100 * med / p:5.1f}%' if p else '     -')}")
        print(f"  {t['name']} [{t.get('device','')}]: {t.get('samples', 0)} samples "
              f"({t.get('stopReason', '-')}), {t.get('verdict')}"
              + (f": {t['reason']}" if t.get("verdict") != "PASS" and t.get("reason") else ""))
# figures.tsv (see above summary_step)
wall = {}
try:
    for line in open(os.path.join(results, "steps.tsv")):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 3 and f[2].isdigit():
            wall[f[0]] = int(f[2])
except Exception:
    pass
rows = []
for path in sorted(glob.glob(os.path.join(results, "report-*.json"))):
    try:
        tests = json.load(open(path)).get("tests", [])
    except Exception:
        continue
    step = "worker-" + os.path.basename(path)[len("report-"):-len(".json")]
    in_tests = 0.0
    medians = {}
    for t in tests:
        seconds = float(t.get("seconds", 0) or 0)
        in_tests += seconds
        n = int(t.get("samples", 0) or 0) + int(t.get("warmupSamples", 0) or 0)
        if n > 0 and seconds > 0:
            rows.append(("sample-cost", t["name"], t.get("device", "") or "-",
                         "%.3f" % (seconds / n), "s"))
        if str(t.get("device", "")).startswith("gpu"):
            for m in t.get("metrics", []):
                med = m.get("summary", {}).get("median")
                if med is not None:
                    medians.setdefault((t["name"], m["name"]), []).append(med)
    if step in wall:
        rows.append(("setup-cost", step, "-", "%.1f" % max(0.0, wall[step] - in_tests), "s"))
    for (test, metric), values in sorted(medians.items()):
        values.sort()
        mid = (values[(len(values) - 1) // 2] + values[len(values) // 2]) / 2
        if len(values) < 2 or mid == 0:
            rows.append(("gpu-spread", test, metric, "n/a (%d GPU)" % len(values), "%"))
        else:
            rows.append(("gpu-spread", test, metric,
                         "%.2f" % (100 * (values[-1] - values[0]) / abs(mid)), "%"))
with open(os.path.join(results, "figures.tsv"), "w") as f:
    f.write("kind\ttest\twhat\tvalue\tunit\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
print("figures.tsv: %d rows (sample-cost, setup-cost, gpu-spread)" % len(rows))
EOF
}
export -f summary_step

run_step summary summary_step
say "done in $(($(date +%s) - START)) s; results in $RESULTS"

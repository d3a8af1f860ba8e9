#!/usr/bin/env bash
# Every GPU check in one run, under five minutes, on the GPU machine (one H200, CUDA 13
# driver, PyTorch in its Python packages; nothing can be installed there).
#
#   scripts/bundle-worker.sh                 # here: builds .bundle/ (under 64 MiB)
#   scripts/gpu-check.sh [RESULTS_DIR]       # there, from the repository root, .bundle/ carried
#
# Steps (each under its own timeout):
#   1. find cuBLASLt/cudart in PyTorch's nvidia/*/lib folders and put them on LD_LIBRARY_PATH
#   2. the device tests (gtest, label gpu): every kernel runs small and verifies
#   3. perfgate-worker runs the GPU tests at their default sizes, writing report JSON
#   4. references measured in the same run with PyTorch on the same shapes and random data:
#      device copy, add and triad-like kernels on 1 GiB doubles, bf16/fp16/tf32/fp64 matmul at
#      8192^3, pinned host<->device copies of 1 GiB
#   3b. NCCL, one rank (one GPU): all_reduce runs, verifies, reports algbw; a two-rank init whose
#      peer never comes is aborted by the watchdog
#   5. a table: each perfgate figure beside the PyTorch reference and the datasheet peak
# RESULTS_DIR (default $OUT if set, else gpu-check-results/) receives the logs and JSON.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUNDLE="${BUNDLE:-$ROOT/.bundle}"
RESULTS="${1:-${OUT:-$ROOT/gpu-check-results}}"
mkdir -p "$RESULTS"
START=$(date +%s)
say() { echo "[gpu-check +$(( $(date +%s) - START ))s] $*"; }

# ---- 1. libraries -------------------------------------------------------------------------
PY=$(command -v python3 || command -v python || true)
if [ -z "$PY" ]; then echo "gpu-check: no python3 on this machine" >&2; exit 2; fi
NVLIBS=$("$PY" - <<'EOF'
import glob, os
dirs = []
try:
    import nvidia  # namespace package of the nvidia-* wheels (cublas, cuda_runtime, nccl, ...)
    for root in list(nvidia.__path__):
        dirs += sorted(glob.glob(os.path.join(root, "*", "lib")))
except Exception:
    pass
try:
    import torch
    dirs.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
print(":".join(d for d in dirs if os.path.isdir(d)))
EOF
)
export LD_LIBRARY_PATH="${NVLIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "library folders: ${NVLIBS:-none found}"
WORKER="$BUNDLE/bin/perfgate-worker"
DEVTEST="$BUNDLE/bin/gpu_device_test"
if [ ! -x "$WORKER" ]; then echo "gpu-check: $WORKER missing: run scripts/bundle-worker.sh" >&2; exit 2; fi
# The machine's C++ runtime first; the bundled one (built against a newer glibc) only if the
# machine's is too old for the binaries.
if ! "$WORKER" --version >/dev/null 2>&1; then
  export LD_LIBRARY_PATH="$BUNDLE/lib-compat:$LD_LIBRARY_PATH"
  say "using the bundled libstdc++ ($("$WORKER" --version 2>&1 | head -1))"
fi
if ldd "$WORKER" | grep -q "not found"; then
  echo "gpu-check: unresolved libraries (the bundle links libcublasLt.so.13; PyTorch's wheels" >&2
  echo "           may carry another major version):" >&2
  ldd "$WORKER" | grep "not found" >&2
  ls ${NVLIBS//:/ } 2>/dev/null | grep -E "cublas|cudart" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,clocks.max.mem,power.limit,ecc.mode.current \
  --format=csv 2>&1 | tee "$RESULTS/nvidia-smi.csv"

# ---- 2. device tests ------------------------------------------------------------------------
say "device tests"
timeout 60 "$DEVTEST" --gtest_brief=0 >"$RESULTS/gpu_device_test.log" 2>&1
echo "gpu_device_test exit $?" | tee -a "$RESULTS/gpu_device_test.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^  " "$RESULTS/gpu_device_test.log" | head -60

# ---- 3. perfgate-worker --------------------------------------------------------------------
SPEC="$RESULTS/gpu-check.yaml"
cat >"$SPEC" <<'EOF'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check
spec:
  sampling:
    warmup: 2
    minRepeats: 10
    maxRepeats: 10
    method: fixed
    maxSeconds: 40
  tests:
    - type: health
      sampling: {warmup: 0, minRepeats: 1, maxRepeats: 1}
    - type: hbm-stream
    - type: gemm
      parameters:
        dtypes: [bf16, fp16, fp8, tf32, fp64]
    - type: h2d-d2h
    - type: p2p
      optional: true
    - type: burn
      parameters: {windowSeconds: 10}
      sampling: {warmup: 1, minRepeats: 3, maxRepeats: 3}
    - type: health
      name: health-after
      sampling: {warmup: 0, minRepeats: 1, maxRepeats: 1}
EOF
say "perfgate-worker run (GPU tests at default sizes)"
timeout 150 "$WORKER" run "$SPEC" --report-json "$RESULTS/report.json" \
  --junit "$RESULTS/junit.xml" >"$RESULTS/worker.log" 2>&1
echo "perfgate-worker exit $?" | tee -a "$RESULTS/worker.log"
cat "$RESULTS/worker.log" | tail -40

# ---- 3b. NCCL (issue 7) ---------------------------------------------------------------------
# One H200 here, so one-rank paths only: a one-rank all_reduce runs, verifies and reports algbw
# (busbw needs two ranks), and a two-rank non-blocking init whose peer never comes is aborted by
# the watchdog with a clear reason. libnccl.so.2 comes from PyTorch's nvidia/nccl/lib (step 1).
say "NCCL: one-rank all_reduce"
cat >"$RESULTS/nccl-check.yaml" <<'EOF2'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-nccl
spec:
  sampling: {warmup: 1, minRepeats: 3, maxRepeats: 3, method: fixed, maxSeconds: 60}
  tests:
    - type: nccl-all-reduce
      parameters: {minBytes: 8, maxBytes: 1073741824, stepFactor: 8, iterations: 20}
EOF2
timeout 120 "$WORKER" run "$RESULTS/nccl-check.yaml" --report-json "$RESULTS/nccl-report.json" \
  >"$RESULTS/nccl.log" 2>&1
echo "perfgate-worker (nccl-all-reduce, one rank) exit $?" | tee -a "$RESULTS/nccl.log"
tail -5 "$RESULTS/nccl.log"
"$PY" - "$RESULTS/nccl-report.json" <<'EOF2' | tee "$RESULTS/nccl-summary.txt"
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
EOF2

say "NCCL: two-rank non-blocking init whose peer never comes (watchdog, 20 s deadline)"
cat >"$RESULTS/nccl-watchdog.yaml" <<'EOF2'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-nccl-watchdog
spec:
  sampling: {warmup: 0, minRepeats: 1, maxRepeats: 1, method: fixed, maxSeconds: 60}
  tests:
    - type: nccl-all-reduce
      parameters: {minBytes: 1048576, maxBytes: 1048576, initTimeoutSeconds: 20}
EOF2
WD_START=$(date +%s)
PERFGATE_GANG_SIZE=2 PERFGATE_GANG_RANK=0 NCCL_COMM_ID=127.0.0.1:29555 timeout 90 "$WORKER" run \
  "$RESULTS/nccl-watchdog.yaml" --report-json "$RESULTS/nccl-watchdog.json" \
  >"$RESULTS/nccl-watchdog.log" 2>&1
WD_RC=$?
echo "perfgate-worker (rank 0 of 2, rank 1 never starts) exit $WD_RC after $(( $(date +%s) - WD_START )) s" \
  | tee -a "$RESULTS/nccl-watchdog.log"
if grep -q "aborted by the watchdog" "$RESULTS/nccl-watchdog.log"; then
  echo "watchdog check: PASS (init aborted with its reason)"
else
  echo "watchdog check: FAIL (no watchdog abort in the log; exit $WD_RC)"
fi
grep -E "ERROR|aborted" "$RESULTS/nccl-watchdog.log" | head -3

say "NCCL: acrossNodes: false inside a gang pod's environment (NCCL_COMM_ID scoped per init)"
cat >"$RESULTS/nccl-local.yaml" <<'EOF2'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: gpu-check-nccl-local
spec:
  sampling: {warmup: 0, minRepeats: 2, maxRepeats: 2, method: fixed, maxSeconds: 60}
  tests:
    - type: nccl-all-reduce
      parameters: {minBytes: 1048576, maxBytes: 1048576, acrossNodes: false, initTimeoutSeconds: 20}
EOF2
# The gang's rank 0 is "elsewhere" (nobody listens there): a node-local communicator must not
# use that address, so this ends PASS at once, with worldSize 1, instead of a watchdog abort.
PERFGATE_GANG_SIZE=2 PERFGATE_GANG_RANK=1 NCCL_COMM_ID=127.0.0.1:29556 timeout 60 "$WORKER" run \
  "$RESULTS/nccl-local.yaml" --report-json "$RESULTS/nccl-local.json" >"$RESULTS/nccl-local.log" 2>&1
echo "perfgate-worker (acrossNodes: false, in a gang env) exit $?" | tee -a "$RESULTS/nccl-local.log"
grep -E "verdict|PASS|ERROR" "$RESULTS/nccl-local.log" | tail -3

# The gtest cases of the same two checks, when the bundle carries them.
if [ -x "$BUNDLE/bin/nccl_gpu_test" ]; then
  timeout 90 "$BUNDLE/bin/nccl_gpu_test" >"$RESULTS/nccl_gpu_test.log" 2>&1
  echo "nccl_gpu_test exit $?" | tee -a "$RESULTS/nccl_gpu_test.log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |aborted after|algBandwidth" "$RESULTS/nccl_gpu_test.log"
fi

# ---- 4. PyTorch references -----------------------------------------------------------------
say "PyTorch references"
timeout 75 "$PY" - "$RESULTS/torch.json" <<'EOF' 2>&1 | tee "$RESULTS/torch.log"
import json, sys
out = {}
try:
    import torch
except Exception as e:  # no PyTorch: no references, say so
    print("no PyTorch:", e); json.dump(out, open(sys.argv[1], "w")); sys.exit(0)
dev = torch.device("cuda")
out["torch"] = torch.__version__
out["cuda"] = torch.version.cuda

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

# Same arrays as hbm-stream: three 1 GiB float64 arrays.
n = (1 << 30) // 8
a = torch.full((n,), 0.1, dtype=torch.float64, device=dev)
b = torch.full((n,), 0.2, dtype=torch.float64, device=dev)
c = torch.zeros(n, dtype=torch.float64, device=dev)
out["copyGBps"] = 2 * 8 * n / timed(lambda: c.copy_(a), 20) / 1e9
out["addGBps"] = 3 * 8 * n / timed(lambda: torch.add(a, b, out=c), 20) / 1e9
out["triadGBps"] = 3 * 8 * n / timed(lambda: torch.add(b, c, alpha=0.4, out=a), 20) / 1e9
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
    best = max(flops / timed(lambda: x.t() @ y, iters) / 1e12,
               flops / timed(lambda: x @ y, iters) / 1e12)
    out[name + "Tflops"] = best
    del x, y
try:  # fp8: torch._scaled_mm needs A row-major, B column-major
    x = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
    y = torch.randn(nn, k, device=dev).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=dev)
    out["fp8Tflops"] = flops / timed(
        lambda: torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
        20) / 1e12
except Exception as e:
    out["fp8Note"] = str(e)[:200]

# Pinned 1 GiB host<->device, as h2d-d2h's headline.
size = 1 << 30
h = torch.empty(size, dtype=torch.uint8, pin_memory=True)
d = torch.empty(size, dtype=torch.uint8, device=dev)
out["h2dGBps"] = size / timed(lambda: d.copy_(h, non_blocking=True), 5) / 1e9
out["d2hGBps"] = size / timed(lambda: h.copy_(d, non_blocking=True), 5) / 1e9
print(json.dumps(out, indent=1))
json.dump(out, open(sys.argv[1], "w"))
EOF

# ---- 5. the comparison ------------------------------------------------------------------------
say "summary"
"$PY" - "$RESULTS/report.json" "$RESULTS/torch.json" <<'EOF' | tee "$RESULTS/summary.txt"
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except Exception as e:
    print("no report:", e); sys.exit(0)
try:
    torch = json.load(open(sys.argv[2]))
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
print(f"{'test':12} {'metric':28} {'perfgate':>10} {'pytorch':>10} {'ratio':>7} {'peak':>8} {'%peak':>6}")
for t in report.get("tests", []):
    for m in t.get("metrics", []):
        name = m["name"]
        med = m.get("summary", {}).get("median")
        if med is None:
            continue
        r = torch.get(ref.get(name, ""), None)
        p = peak.get(name)
        print(f"{t['name']:12} {name:28} {med:10.1f} "
              f"{(f'{r:10.1f}' if r else '         -')} "
              f"{(f'{med / r:7.3f}' if r else '      -')} "
              f"{(f'{p:8.1f}' if p else '       -')} "
              f"{(f'{100 * med / p:5.1f}%' if p else '     -')}")
    if t.get("verdict") not in ("PASS", None) or t.get("reason"):
        print(f"  {t['name']} [{t.get('device','')}]: {t.get('verdict')} {t.get('reason','')}")
EOF
say "done in $(( $(date +%s) - START )) s; results in $RESULTS"

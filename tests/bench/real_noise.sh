#!/bin/bash
# Real-noise study for the verdict rule: one calibration run of host-stream (fixed,
# 30 samples), then RUNS validation runs with every median bound at 90% of the calibration
# medians, with the proposed sampling defaults. Summarise with real_noise_summary.py OUT.
# Usage: tests/bench/real_noise.sh [WORKER] [OUT] [RUNS]
set -u
W=${1:-build/worker/perfgate-worker}
OUT=${2:-real-noise}
RUNS=${3:-100}
W=$(realpath "$W")
mkdir -p "$OUT" && cd "$OUT" || exit 2
# One OpenMP thread: on a 2-vCPU VM shared with other work, a 2-thread STREAM waits at
# every barrier for whichever thread was descheduled.
cat > calib.yaml <<'YAML'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: host-stream-calibration
spec:
  sampling: {warmup: 2, minRepeats: 30, maxRepeats: 30, maxSeconds: 600, confidence: 0.99,
             method: fixed}
  tests:
    - type: host-stream
      parameters: {threads: 1}
      thresholds:
        - {metric: triadBandwidthGBps, value: 0.001}
YAML
"$W" run calib.yaml --report-json calib.json > calib.log 2>&1
python3 - <<'PY'
import json
r = json.load(open('calib.json'))
meds = {m['name']: m['summary']['median'] for m in r['tests'][0]['metrics']}
json.dump(meds, open('calib_medians.json', 'w'))
ths = "\n".join(f"        - {{metric: {k}, statistic: median, op: \">=\", value: {0.9 * v:.4f}}}"
                for k, v in meds.items())
open('healthy.yaml', 'w').write(f"""apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: host-stream-real-noise
spec:
  sampling: {{warmup: 3, minRepeats: 10, maxRepeats: 150, maxSeconds: 60, confidence: 0.99}}
  tests:
    - type: host-stream
      parameters: {{threads: 1}}
      thresholds:
{ths}
""")
PY
for i in $(seq -w 1 "$RUNS"); do
  "$W" run healthy.yaml --report-json "run_$i.json" > "run_$i.log" 2>&1
  echo "$i rc=$?" >> progress.txt
done
echo DONE >> progress.txt

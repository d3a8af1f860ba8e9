#!/usr/bin/env bash
# Records the PerfValidation fixtures in testdata/ from real runs: kube-sim with 4 nodes, the
# chart installed, the real operator and workers (synthetic fixture test), one validation per
# state, `kubectl get -o json` of each. Run it again when the status shape changes:
#   OPERATOR_BIN=build/operator/perfgate-operator WORKER_BIN=build/worker/perfgate-worker \
#   KUBE_SIM=build/tests/kube-sim/kube-sim CHART_RENDER=build/tests/chart/chart-render \
#   tests/gitops/record.sh
# new.json, generation-lag.json and stale-conditions.json are then derived from passed.json
# (an object the operator has not yet seen cannot be caught reliably in a live run).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
REPO_ROOT="$(cd "$here/../.." && pwd)"
source "$here/../chart/lib.sh"
: "${OPERATOR_BIN:?}" "${WORKER_BIN:?}" "${KUBE_SIM:?}" "${CHART_RENDER:?}"
CHART_DIR="$REPO_ROOT/charts/perfgate"
WORK_DIR="$(mktemp -d)"
image=registry.example.com/perfgate/perfgate-worker
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; wait "$operator_pid" 2>/dev/null || true; fi
  stop_kube_sim
  rm -rf "$WORK_DIR"
}
trap cleanup EXIT
start_kube_sim "$WORK_DIR" --nodes 4 --gpus-per-node 8 --image-map "$image=$WORKER_BIN"
install_chart "$WORK_DIR" perfgate-system --set worker.image.repository="$image" --set worker.image.tag=rec
operator_kubeconfig "$WORK_DIR/operator.kubeconfig"
mapfile -t args < <(operator_args "$WORK_DIR/rendered.yaml" \
  | drop_flags --metrics-bind-address --health-probe-bind-address)
"$OPERATOR_BIN" "${args[@]}" --kubeconfig="$WORK_DIR/operator.kubeconfig" \
  --metrics-bind-address=127.0.0.1:0 --health-probe-bind-address=127.0.0.1:0 \
  --enable-fixtures >"$WORK_DIR/operator.log" 2>&1 &
operator_pid=$!

# One state at a time: the operator runs one validation per node at a time.
record_complete() {  # NAME SPEC...
  local name="$1"; shift
  synthetic_spec "$name" "$@" | kubectl apply -f - >/dev/null
  kubectl wait "pval/$name" --for=condition=Complete --timeout=90s >/dev/null
  kubectl get pval "$name" -o json >"$here/testdata/$name.json"
  kubectl delete pval "$name" --wait=true >/dev/null
}
record_complete passed synthetic "" 100 0.01 0
record_complete failed synthetic "node-2=50" 100 0.01 0
record_complete node-error synthetic "node-3=error" 100 0.01 0
record_complete inconclusive synthetic "" 90 0.3 0
record_complete invalid-spec no-such-test "" 100 0.01 0
synthetic_spec suspended synthetic "" 100 0.01 0 "  suspend: true" | kubectl apply -f - >/dev/null
wait_for kubectl wait pval/suspended --for=jsonpath='{.status.observedGeneration}'=1 --timeout=5s
kubectl get pval suspended -o json >"$here/testdata/suspended.json"
kubectl delete pval suspended --wait=true >/dev/null
synthetic_spec running synthetic "" 100 0.01 2 | kubectl apply -f - >/dev/null
wait_for kubectl wait pval/running --for=jsonpath='{.status.observedGeneration}'=1 --timeout=5s
kubectl get pval running -o json >"$here/testdata/running.json"
# Derived: a spec change the operator has not seen (generation 2, status of generation 1),
# and conditions one generation behind a status that already says it observed the new one.
lua5.1 - "$here/testdata/passed.json" "$here/testdata" <<'LUA'
local cjson = require("cjson")
local f = assert(io.open(arg[1])); local text = f:read("*a"); f:close()
local function write(name, o)
  local out = assert(io.open(arg[2] .. "/" .. name .. ".json", "w"))
  out:write(cjson.encode(o), "\n"); out:close()
end
local o = cjson.decode(text)
o.metadata.name = "generation-lag"; o.metadata.generation = o.metadata.generation + 1
write("generation-lag", o)
o = cjson.decode(text)
o.metadata.name = "stale-conditions"; o.metadata.generation = o.metadata.generation + 1
o.status.observedGeneration = o.metadata.generation
write("stale-conditions", o)
o = cjson.decode(text)
o.metadata.name = "new"; o.metadata.finalizers = nil; o.status = nil
write("new", o)
LUA
for f in "$here"/testdata/*.json; do
  python3 -m json.tool --indent 2 "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
echo "recorded: $(ls "$here/testdata")"

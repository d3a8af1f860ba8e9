#!/usr/bin/env bash
# The e2e suite's first two scenarios (tests/e2e: four nodes pass; one slow node is tainted)
# under the chart's RBAC (CTest label e2e): kube-sim with 4 simulated 8-GPU nodes whose
# kubelet runs the real perfgate-worker; the chart rendered and applied; the real
# perfgate-operator started with the flags the chart's Deployment gives it and a token of the
# chart's operator service account; worker pods under the chart's worker service account
# (pod-bound tokens). Passes when the validation completes Passed=True with one worker-written
# PerfResult per node, every node labelled passed, and neither the operator nor a worker was
# refused by RBAC; then a slow node fails, is labelled and tainted, and an event says so; and
# the chart's admission policy lets a worker write only its own node's result; an NCCL gang
# (CPU stand-in) passes with each rank writing its own result.
# Env: OPERATOR_BIN, WORKER_BIN, KUBE_SIM, CHART_RENDER, REPO_ROOT, WORK_DIR.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${OPERATOR_BIN:?}" "${WORKER_BIN:?}" "${KUBE_SIM:?}" "${CHART_RENDER:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}"
CHART_DIR="$REPO_ROOT/charts/perfgate"
rm -rf "$WORK_DIR" && mkdir -p "$WORK_DIR"
image=registry.example.com/perfgate/perfgate-worker
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; wait "$operator_pid" 2>/dev/null || true; fi
  stop_kube_sim
}
trap cleanup EXIT

# With OwnerReferencesPermissionEnforcement (on by default in OpenShift): a worker may not
# set blockOwnerDeletion on its result, having no rights on the validation's finalizers.
start_kube_sim "$WORK_DIR" --nodes 4 --gpus-per-node 8 --image-map "$image=$WORKER_BIN" \
  --owner-references-permission-enforcement
install_chart "$WORK_DIR" perfgate-system --set worker.image.repository="$image" --set worker.image.tag=e2e \
  --set metrics.perNode=true
operator_kubeconfig "$WORK_DIR/operator.kubeconfig"
mapfile -t args < <(operator_args "$WORK_DIR/rendered.yaml" \
  | drop_flags --metrics-bind-address --health-probe-bind-address)
((${#args[@]} >= 5)) || fail "no operator args in the rendered Deployment"
health_port="$(free_port)"
"$OPERATOR_BIN" "${args[@]}" --kubeconfig="$WORK_DIR/operator.kubeconfig" \
  --metrics-bind-address=127.0.0.1:0 --health-probe-bind-address="127.0.0.1:$health_port" \
  --enable-fixtures --gang-rendezvous-host=127.0.0.1 >"$WORK_DIR/operator.log" 2>&1 &
operator_pid=$!
echo "operator: ${args[*]}"

# expect_worker_results VALIDATION: one PerfResult per node (4), each written by its worker
# (under the worker's Role and the admission policy), none by the operator on its behalf.
expect_worker_results() {
  local n by_operator
  n="$(kubectl -n perfgate-system get perfresults -l "perfgate.io/validation=$1" -o name | wc -l)"
  [ "$n" = 4 ] || fail "$1: want 4 PerfResults, got $n"
  by_operator="$(kubectl -n perfgate-system get perfresults -l "perfgate.io/validation=$1" \
    -o 'jsonpath={range .items[*]}{.spec.writtenBy}{"\n"}{end}' | grep -c operator || true)"
  [ "$by_operator" = 0 ] || fail "$1: $by_operator results written by the operator: a worker could not write its own"
}

synthetic_spec smoke synthetic "" 100 0.01 0 | kubectl apply -f - >/dev/null || fail "apply the validation"
if ! kubectl wait pval/smoke --for=condition=Complete --timeout=90s >/dev/null; then
  tail -30 "$WORK_DIR/operator.log" >&2
  kubectl get pval smoke -o yaml >&2 || true
  fail "validation not complete in 90 s"
fi
passed="$(kubectl get pval smoke -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = True ] || { kubectl get pval smoke -o yaml >&2; fail "Passed=$passed, want True"; }
expect_worker_results smoke
for node in node-0 node-1 node-2 node-3; do
  label="$(kubectl get node "$node" -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}')"
  [ "$label" = passed ] || fail "$node labelled '$label', want passed"
done

# Every way to start a new run under the chart's roles: a rerun token, a suspend and resume,
# a spec edit. Each new run deletes the previous run's plan ConfigMap, which the operator's
# Role must allow, or the new run never starts.
# complete_new_run NAME RUN_BEFORE: waits until NAME has completed a run other than RUN_BEFORE
# for its current generation, and passed.
complete_new_run() {
  local i status
  for i in $(seq 300); do
    status="$(kubectl get pval "$1" -o 'jsonpath={.metadata.generation} {.status.observedGeneration} {.status.run} {.status.completionTime}')"
    read -r gen observed run done_at <<<"$status"
    if [ "$gen" = "$observed" ] && [ "$run" != "$2" ] && [ -n "${done_at:-}" ]; then
      passed="$(kubectl get pval "$1" -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
      [ "$passed" = True ] || { kubectl get pval "$1" -o yaml >&2; fail "$1 run $run: Passed=$passed"; }
      return 0
    fi
    sleep 0.2
  done
  tail -20 "$WORK_DIR/operator.log" >&2
  kubectl get pval "$1" -o yaml >&2
  fail "$1: no new completed run after $2 in 60 s"
}
run_of() { kubectl get pval "$1" -o 'jsonpath={.status.run}'; }
before="$(run_of smoke)"
kubectl annotate --overwrite pval smoke perfgate.io/rerun=1 >/dev/null || fail "annotate rerun"
complete_new_run smoke "$before"
before="$(run_of smoke)"
kubectl patch pval smoke --type=merge -p '{"spec":{"suspend":true}}' >/dev/null || fail "suspend"
kubectl wait pval/smoke --for=jsonpath='{.status.verdict}'=Suspended --timeout=30s >/dev/null \
  || { tail -20 "$WORK_DIR/operator.log" >&2; fail "smoke not Suspended in 30 s"; }
suspended_run="$(run_of smoke)"
kubectl patch pval smoke --type=merge -p '{"spec":{"suspend":false}}' >/dev/null || fail "resume"
complete_new_run smoke "$suspended_run"
before="$(run_of smoke)"
kubectl patch pval smoke --type=merge -p '{"spec":{"sampling":{"minRepeats":6}}}' >/dev/null \
  || fail "edit the spec"
complete_new_run smoke "$before"
plans="$(kubectl -n perfgate-system get configmaps -l perfgate.io/validation=smoke -o name | wc -l)"
[ "$plans" = 1 ] || fail "smoke: $plans plan ConfigMaps after four runs, want 1 (the newest run's)"

# Scenario 2 of tests/e2e: one slow node. Exercises the node update (verdict label, taint) and
# the event in "default" under the chart's roles.
synthetic_spec slow synthetic "node-2=50" 100 0.01 0 | kubectl apply -f - >/dev/null || fail "apply the slow validation"
kubectl wait pval/slow --for=condition=Complete --timeout=90s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "slow validation not complete in 90 s"; }
passed="$(kubectl get pval slow -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = False ] || fail "slow: Passed=$passed, want False"
[ "$(kubectl get node node-2 -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}')" = failed ] \
  || fail "node-2 not labelled failed"
grep -q 'perfgate.io/failed' <<<"$(kubectl get node node-2 -o 'jsonpath={.spec.taints[*].key}')" \
  || fail "node-2 not tainted perfgate.io/failed"
grep -q NodeNotPassed <<<"$(kubectl get events -n default -o 'jsonpath={.items[*].reason}')" \
  || fail "no NodeNotPassed event in default"
# /metrics (served on the health port too), with the chart's metrics.perNode.
metrics="$(curl -fsS "http://127.0.0.1:$health_port/metrics")" || fail "/metrics"
for want in 'perfgate_validations{verdict="Passed"} 1' 'perfgate_validations{verdict="Failed"} 1' \
    'perfgate_nodes{verdict="failed"} 1' 'perfgate_nodes{verdict="passed"} 3' \
    'perfgate_node_verdict{node="node-2",verdict="failed",validation="slow"} 1' 'perfgate_leader 1'; do
  grep -qF "$want" <<<"$metrics" || { echo "$metrics" >&2; fail "/metrics lacks: $want"; }
done

# The admission policy, enforced (kube-sim evaluates ValidatingAdmissionPolicies): the workers
# above wrote their own nodes' results through it; a pod of the worker account on node-0 may
# write node-0's result but not node-1's, whatever it claims.
cat >"$WORK_DIR/forge.sh" <<'SH'
write() {  # write NODE: a PerfResult for NODE, with this pod's bound token
  cat <<YAML | kubectl --server="https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT" \
    --certificate-authority="$KUBE_SIM_SA_DIR/ca.crt" --token="$(cat "$KUBE_SIM_SA_DIR/token")" \
    -n perfgate-system create -f - 2>&1
apiVersion: perfgate.io/v1alpha1
kind: PerfResult
metadata: {name: forged-$1, labels: {perfgate.io/node: $1, perfgate.io/validation: forged}}
spec: {validation: forged, nodeName: $1, run: g1, report: {verdict: PASS}}
YAML
}
write node-0 && write node-1
SH
cat <<YAML | kubectl apply -f - >/dev/null || fail "create the forging pod"
apiVersion: v1
kind: Pod
metadata: {name: forger, namespace: perfgate-system}
spec:
  restartPolicy: Never
  serviceAccountName: perfgate-worker
  nodeSelector: {kubernetes.io/hostname: node-0}
  tolerations: [{operator: Exists}]
  containers:
    - name: main
      image: busybox:1.36
      command: [/bin/sh, $WORK_DIR/forge.sh]
      terminationMessagePolicy: FallbackToLogsOnError
YAML
kubectl -n perfgate-system wait pod/forger --for=jsonpath='{.status.phase}'=Failed --timeout=30s \
  >/dev/null || { kubectl -n perfgate-system logs forger >&2 || true; fail "the forging pod did not fail"; }
forged="$(kubectl -n perfgate-system logs forger)"
grep -q 'perfresult.perfgate.io/forged-node-0 created' <<<"$forged" \
  || fail "a worker on node-0 could not write node-0's result: $forged"
grep -q "denied request: a perfgate worker on node node-0 may not write the PerfResult of node node-1" \
  <<<"$forged" || fail "a worker on node-0 was not refused node-1's result: $forged"
kubectl -n perfgate-system get perfresult forged-node-1 >/dev/null 2>&1 && fail "forged-node-1 stored"
kubectl -n perfgate-system delete perfresult forged-node-0 >/dev/null

# An NCCL gang (the CPU stand-in) under the same roles and policy: each rank writes its own
# node's result. kube-sim has no DNS, so the ranks meet on loopback (--gang-rendezvous-host).
cat <<YAML | kubectl apply -f - >/dev/null || fail "apply the gang validation"
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata: {name: gang}
spec:
  nodeSelector: {nvidia.com/gpu.present: "true"}
  gang: {shape: all}
  sampling: {warmup: 1, minRepeats: 2, maxRepeats: 2}
  policy: {nodeTimeoutSeconds: 60}
  tests:
    - type: nccl-cpu-loopback
      parameters: {collective: all_reduce, maxBytes: 4096, initTimeoutSeconds: 30}
YAML
kubectl wait pval/gang --for=condition=Complete --timeout=90s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "gang validation not complete in 90 s"; }
passed="$(kubectl get pval gang -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = True ] || { kubectl get pval gang -o yaml >&2; fail "gang: Passed=$passed, want True"; }
expect_worker_results gang

if grep -Eq 'Forbidden|"code": ?403| 403' "$WORK_DIR/operator.log"; then
  grep -Em5 'Forbidden|403' "$WORK_DIR/operator.log" >&2
  fail "RBAC refused the operator or a worker"
fi
curl -fsS "http://127.0.0.1:$health_port/readyz" >/dev/null || fail "/readyz"
echo "chart e2e: ok"

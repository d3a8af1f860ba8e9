#!/usr/bin/env bash
# Every operator path under the chart's own RBAC (CTest label e2e): kube-sim with 4 simulated
# 8-GPU nodes whose kubelet runs the real perfgate-worker, OwnerReferencesPermissionEnforcement on
# (as in OpenShift) and an audit log; the chart rendered and applied; its namespace enforcing the
# Pod Security level values.yaml names; the real perfgate-operator started with the flags the
# chart's Deployment gives it and a token of the chart's operator service account; worker pods
# under the chart's worker service account (pod-bound tokens). One kube-sim and one operator
# walk: a run, a rerun, a suspend and resume, a spec edit; a slow node failed, tainted and
# cordoned; the admission policy; a validation deleted mid-run; an NCCL gang narrowed to its
# slow node; deleting every validation; the cordoned node re-tested and released on PASS by a
# validation and on a node whose names are longer than a label value, from a PerfProfile; a
# threshold relative to a PerfBaseline; a passing gang of every node; deleting every validation again leaves every node clean;
# then the audit log shows no call refused by RBAC and no right in the chart left unused
# (rbac_check.py; what each account used is written to WORK_DIR/rbac-used.txt).
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
  --owner-references-permission-enforcement --audit-log "$WORK_DIR/audit.log"
install_chart "$WORK_DIR" perfgate-system --set worker.image.repository="$image" --set worker.image.tag=e2e \
  --set metrics.perNode=true
# Pod Security as values.yaml says: restricted where no gang runs (a gang's IPC_LOCK needs
# privileged; the namespace is relabelled for the gangs below, and back).
pod_security() {
  kubectl label --overwrite namespace perfgate-system "pod-security.kubernetes.io/enforce=$1" >/dev/null \
    || fail "label the namespace $1"
}
grep -q 'pod-security.kubernetes.io/enforce: restricted' "$CHART_DIR/values.yaml" \
  && grep -q 'pod-security.kubernetes.io/enforce: privileged' "$CHART_DIR/values.yaml" \
  || fail "values.yaml no longer names the Pod Security levels this test applies"
pod_security restricted
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

# expect_worker_results VALIDATION [NODES]: one PerfResult per node (NODES, default 4), each
# written by its worker (under the worker's Role and the admission policy), none by the operator
# on its behalf.
expect_worker_results() {
  local n by_operator want="${2:-4}"
  n="$(kubectl -n perfgate-system get perfresults -l "perfgate.io/validation=$1" -o name | wc -l)"
  [ "$n" = "$want" ] || fail "$1: want $want PerfResults, got $n"
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

# Scenario 2 of tests/e2e: one slow node. Exercises the node update (verdict label, taint,
# cordon) and the event in "default" under the chart's roles.
synthetic_spec slow synthetic "node-2=50" 100 0.01 0 "" taintAndCordon | kubectl apply -f - >/dev/null \
  || fail "apply the slow validation"
kubectl wait pval/slow --for=condition=Complete --timeout=90s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "slow validation not complete in 90 s"; }
passed="$(kubectl get pval slow -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = False ] || fail "slow: Passed=$passed, want False"
[ "$(kubectl get node node-2 -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}')" = failed ] \
  || fail "node-2 not labelled failed"
grep -q 'perfgate.io/failed' <<<"$(kubectl get node node-2 -o 'jsonpath={.spec.taints[*].key}')" \
  || fail "node-2 not tainted perfgate.io/failed"
[ "$(kubectl get node node-2 -o 'jsonpath={.spec.unschedulable}')" = true ] || fail "node-2 not cordoned"
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
# forger_pod SECURITY_LINE: the forging pod, its pod securityContext on one line.
forger_pod() {
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: forger, namespace: perfgate-system}
spec:
  restartPolicy: Never
  serviceAccountName: perfgate-worker
  nodeSelector: {kubernetes.io/hostname: node-0}
  tolerations: [{operator: Exists}]
  $1
  containers:
    - name: main
      image: busybox:1.36
      command: [/bin/sh, $WORK_DIR/forge.sh]
      terminationMessagePolicy: FallbackToLogsOnError
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
}
# The namespace's level is enforced: without runAsNonRoot and a seccomp profile the pod is
# refused, in the Pod Security plugin's words; the workers above met it.
refused="$(forger_pod "securityContext: {}" | kubectl apply -f - 2>&1)" \
  && fail "a pod below restricted was admitted"
grep -qF 'pods "forger" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true' \
  <<<"$refused" || fail "not refused by Pod Security: $refused"
forger_pod "securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}" \
  | kubectl apply -f - >/dev/null || fail "create the forging pod"
kubectl -n perfgate-system wait pod/forger --for=jsonpath='{.status.phase}'=Failed --timeout=30s \
  >/dev/null || { kubectl -n perfgate-system logs forger >&2 || true; fail "the forging pod did not fail"; }
forged="$(kubectl -n perfgate-system logs forger)"
grep -q 'perfresult.perfgate.io/forged-node-0 created' <<<"$forged" \
  || fail "a worker on node-0 could not write node-0's result: $forged"
grep -q "denied request: a perfgate worker on node node-0 may not write the PerfResult of node node-1" \
  <<<"$forged" || fail "a worker on node-0 was not refused node-1's result: $forged"
kubectl -n perfgate-system get perfresult forged-node-1 >/dev/null 2>&1 && fail "forged-node-1 stored"
kubectl -n perfgate-system delete perfresult forged-node-0 >/dev/null

# Deleted mid-run: slow's next run crashes on node-0 (the operator writes node-0's ERROR result)
# and hangs on node-1; deleting slow then stops its pods, takes back the verdict labels its last
# run set on node-0, node-1 and node-3, removes the finalizer, and its results and plan go with
# it. node-2 keeps slow's taint and cordon, and with them its verdict: a bad GPU stays fenced off.
before="$(run_of slow)"
synthetic_spec slow synthetic "node-0=crash, node-1=hang" 100 0.01 0 "" taintAndCordon \
  | kubectl apply -f - >/dev/null || fail "edit slow to crash and hang"
for i in $(seq 150); do
  written="$(kubectl -n perfgate-system get perfresults -l perfgate.io/validation=slow \
    -o 'jsonpath={range .items[*]}{.spec.nodeName}/{.spec.run}/{.spec.writtenBy}{"\n"}{end}')"
  run="$(run_of slow)"
  [ "$run" != "$before" ] && grep -qx "node-0/$run/operator" <<<"$written" && break
  sleep 0.2
done
grep -qx "node-0/$run/operator" <<<"$written" \
  || { tail -20 "$WORK_DIR/operator.log" >&2; fail "no operator-written result for the crashed node-0 in 30 s: $written"; }
[ "$(kubectl get pval slow -o 'jsonpath={.status.conditions[?(@.type=="Complete")].status}')" = False ] \
  || fail "slow's run is not running: not a deletion mid-run"
kubectl delete pval slow --timeout=30s >/dev/null || fail "delete slow mid-run"
# gone_within SECONDS WHAT CMD...: waits until CMD prints nothing.
gone_within() {
  local seconds="$1" what="$2" i out
  shift 2
  for i in $(seq $((seconds * 5))); do
    out="$("$@" 2>/dev/null)"
    [ -z "$out" ] && return 0
    sleep 0.2
  done
  fail "$what still there after $seconds s: $out"
}
gone_within 30 "slow's pods" kubectl -n perfgate-system get pods -l perfgate.io/validation=slow -o name
gone_within 30 "slow's results" kubectl -n perfgate-system get perfresults -l perfgate.io/validation=slow -o name
gone_within 30 "slow's plan" kubectl -n perfgate-system get configmaps -l perfgate.io/validation=slow -o name
for node in node-0 node-1 node-3; do
  [ -z "$(kubectl get node "$node" -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}')" ] \
    || fail "$node keeps the deleted slow's verdict label"
done
[ "$(kubectl get node node-2 -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}/{.spec.unschedulable}')" = failed/true ] \
  || fail "node-2 lost its failed verdict, taint or cordon with the validation that tainted it"


# gang_spec NAME SHAPE REPEATS POLICY PARAMETERS [THRESHOLD]: a validation of the NCCL CPU
# stand-in as gangs of every GPU node, fixed sampling, YAML flow values for the rest.
gang_spec() {
  cat <<YAML
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata: {name: $1}
spec:
  nodeSelector: {nvidia.com/gpu.present: "true"}
  gang: {shape: $2}
  sampling: {warmup: 1, minRepeats: $3, maxRepeats: $3}
  policy: $4
  tests:
    - type: nccl-cpu-loopback
      parameters: $5
YAML
  [ -z "${6:-}" ] || printf '      thresholds: [%s]\n' "$6"
}

# Narrowing, an NCCL gang (the CPU stand-in) in pairs: (node-0,node-1) and (node-2,node-3);
# node-2 is slow (200 ms a call), so its pair fails its time bound, each node of it runs again
# beside a node that passed, and only node-2 is named. node-2 is still tainted and cordoned by
# slow: the gang's pods tolerate both. Gang pods add IPC_LOCK: the namespace runs them at
# privileged, as values.yaml says. kube-sim has no DNS, so the ranks meet on loopback
# (--gang-rendezvous-host).
pod_security privileged
gang_spec narrow pairs 5 "{onFailure: none, nodeTimeoutSeconds: 60}" \
  "{collective: all_reduce, minBytes: 65536, maxBytes: 65536, warmupIterations: 1, iterations: 3,$(
  ) inPlace: false, initTimeoutSeconds: 30, behaviour: [\"node-2=slow:200\"]}" \
  '{metric: timeMicroseconds@64KiB, statistic: median, op: "<=", value: 50000}' \
  | kubectl apply -f - >/dev/null || fail "apply the narrowing validation"
kubectl wait pval/narrow --for=condition=Complete --timeout=120s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "narrow not complete in 120 s"; }
suspects="$(kubectl get pval narrow -o 'jsonpath={.status.suspectNodes}')"
[ "$suspects" = '["node-2"]' ] || { kubectl get pval narrow -o yaml >&2; fail "narrow: suspects $suspects, want node-2"; }
probes="$(kubectl -n perfgate-system get perfresults -l perfgate.io/validation=narrow \
  -o 'jsonpath={range .items[*]}{.metadata.labels.perfgate\.io/run}{"\n"}{end}' | grep -c -- '-probe$' || true)"
[ "$probes" = 4 ] || fail "narrow: $probes probe results, want 4 (node-2 and node-3, each beside a passing node)"
[ "$(kubectl get node node-2 -o 'jsonpath={.metadata.annotations.perfgate\.io/verdict-by}')" = narrow ] \
  || fail "node-2's verdict not narrow's"
pod_security restricted

# Deleting every validation leaves no verdict label behind, also on node-2, which narrow judged
# last and the deleted slow's taint and cordon still hold: a bad GPU stays fenced off until it
# passes.
kubectl delete pval --all --timeout=60s >/dev/null || fail "delete every validation"
for node in node-0 node-1 node-2 node-3; do
  meta="$(kubectl get node "$node" -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}{.metadata.annotations.perfgate\.io/verdict-by}')"
  [ -z "$meta" ] || fail "$node keeps a verdict after every validation was deleted: $meta"
done
grep -q 'perfgate.io/failed' <<<"$(kubectl get node node-2 -o 'jsonpath={.spec.taints[*].key}')" \
  || fail "node-2 lost its failed taint when its validation was deleted"

# Re-test and release: a node whose name is longer than a label value joins (created without a
# spec; tainted not-ready until it reports Ready, as a real API server does), and a validation
# whose name is longer too runs from a PerfProfile on every GPU node. Its workers tolerate the
# cordon, node-2 passes, and its taint and cordon are lifted.
long_node=gpu-7.rack-42.zone-b.datacenter-east.gpu-fleet.example-cloud.internal
long_name=nightly-acceptance-of-the-h200-fleet-after-the-driver-upgrade-in-zone-b
cat <<YAML | kubectl apply -f - >/dev/null || fail "add $long_node"
apiVersion: v1
kind: Node
metadata:
  name: $long_node
  labels: {kubernetes.io/hostname: gpu-7, nvidia.com/gpu.present: "true", nvidia.com/gpu.product: NVIDIA-H200}
status:
  capacity: {cpu: "64", memory: 2113929216Ki, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "64", memory: 2113929216Ki, pods: "110", nvidia.com/gpu: "8"}
  conditions: [{type: Ready, status: "True"}]
YAML
cat <<YAML | kubectl apply -f - >/dev/null || fail "apply the profile and the re-test"
apiVersion: perfgate.io/v1alpha1
kind: PerfProfile
metadata: {name: sim-h200}
spec:
  version: "2026.12-1"
  gpuModels: [H200]
  quick:
    sampling: {warmup: 1, minRepeats: 5, maxRepeats: 10}
    tests:
      - type: synthetic
        parameters: {mean: 100, cv: 0.01, sampleSeconds: 0}
        thresholds: [{metric: bandwidthGBps, value: 90}]
---
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata: {name: $long_name}
spec:
  nodeSelector: {nvidia.com/gpu.present: "true"}
  profile: sim-h200
  level: quick
  policy: {onFailure: taintAndCordon}
YAML
kubectl wait "pval/$long_name" --for=condition=Complete --timeout=90s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "the re-test not complete in 90 s"; }
[ "$(kubectl get pval "$long_name" -o 'jsonpath={.status.passedNodes}')" = 5/5 ] \
  || { kubectl get pval "$long_name" -o yaml >&2; fail "the re-test did not pass 5/5"; }
writers="$(kubectl -n perfgate-system get perfresults \
  -o "jsonpath={range .items[?(@.spec.validation==\"$long_name\")]}{.spec.nodeName}={.spec.writtenBy}{\"\\n\"}{end}")"
[ "$(grep -c . <<<"$writers")" = 5 ] && ! grep -q =operator <<<"$writers" \
  || fail "the re-test: want 5 results written by their workers, got: $writers"
[ "$(kubectl get node "$long_node" -o 'jsonpath={.metadata.labels.perfgate\.io/verdict}')" = passed ] \
  || fail "$long_node not labelled passed"
state="$(kubectl get node node-2 -o 'jsonpath={.spec.unschedulable}/{.spec.taints[?(@.key=="perfgate.io/failed")].key}')"
[ "$state" = / ] || [ "$state" = false/ ] || fail "node-2 still cordoned or tainted after it passed: $state"
# profile: auto lists the cluster's profiles; a node no profile can certify is refused, no pod.
cat <<YAML | kubectl apply -f - >/dev/null || fail "apply the auto validation"
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata: {name: auto}
spec: {profile: auto, nodes: [absent-node]}
YAML
kubectl wait pval/auto --for=condition=Complete --timeout=30s >/dev/null || fail "auto not complete"
[ "$(kubectl get pval auto -o 'jsonpath={.status.verdict}')" = InvalidSpec ] || fail "auto not InvalidSpec"

# A threshold relative to a PerfBaseline from the chart's CRD, read under the operator's role
# (get perfbaselines): 0.9 x the baseline's 100 GB/s, so node-0 at about 100 passes, and its
# result says where the bound came from.
cat <<YAML | kubectl apply -f - >/dev/null || fail "apply the PerfBaseline"
apiVersion: perfgate.io/v1alpha1
kind: PerfBaseline
metadata: {name: chart-base}
spec:
  source: written by hand
  values:
    - {gpuModel: NVIDIA H200, test: synthetic, metric: bandwidthGBps, statistic: median, value: 100}
YAML
kubectl get pbl chart-base >/dev/null || fail "kubectl get pbl (the PerfBaseline short name)"
cat <<YAML | kubectl apply -f - >/dev/null || fail "apply the baseline validation"
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata: {name: based}
spec:
  nodes: [node-0]
  sampling: {warmup: 1, minRepeats: 5, maxRepeats: 10}
  tests:
    - type: synthetic
      parameters: {mean: 100, cv: 0.01, sampleSeconds: 0}
      thresholds:
        - {metric: bandwidthGBps, statistic: median, op: ">=", baseline: chart-base, fraction: 0.9}
YAML
kubectl wait pval/based --for=condition=Complete --timeout=60s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "based not complete in 60 s"; }
[ "$(kubectl get pval based -o 'jsonpath={.status.passedNodes}')" = 1/1 ] \
  || { kubectl get pval based -o yaml >&2; fail "based: want 1/1 passed"; }
source_of_bound="$(kubectl -n perfgate-system get perfresults \
  -o 'jsonpath={.items[?(@.spec.validation=="based")].spec.report.tests[0].thresholds[0].threshold.referenceSource}')"
[ "$source_of_bound" = "baseline chart-base" ] || fail "based: the bound's source is '$source_of_bound'"

# An NCCL gang of every node (the long-named one too) under the same roles and policy passes:
# each rank writes its own node's result.
pod_security privileged
gang_spec gang all 2 "{nodeTimeoutSeconds: 60}" "{collective: all_reduce, maxBytes: 4096, initTimeoutSeconds: 30}" \
  | kubectl apply -f - >/dev/null || fail "apply the gang validation"
kubectl wait pval/gang --for=condition=Complete --timeout=90s >/dev/null \
  || { tail -30 "$WORK_DIR/operator.log" >&2; fail "gang validation not complete in 90 s"; }
passed="$(kubectl get pval gang -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = True ] || { kubectl get pval gang -o yaml >&2; fail "gang: Passed=$passed, want True"; }
expect_worker_results gang 5
pod_security restricted

# A clean node after every validation is deleted: no verdict, no perfgate taint, annotation or cordon.
kubectl delete pval --all --timeout=60s >/dev/null || fail "delete every validation"
for node in node-0 node-1 node-2 node-3 "$long_node"; do
  left="$(kubectl get node "$node" -o json | python3 -c '
import json, sys
n = json.load(sys.stdin)
left = [k for k in list(n["metadata"].get("labels", {})) + list(n["metadata"].get("annotations", {})) if k.startswith("perfgate.io/")]
left += [t["key"] for t in n["spec"].get("taints", []) if t["key"].startswith("perfgate.io/")]
left += ["unschedulable"] if n["spec"].get("unschedulable") else []
print(" ".join(left))')"
  [ -z "$left" ] || fail "$node not clean after every validation was deleted: $left"
done

# RBAC, derived from the calls: nothing the operator or a worker called was refused, and
# nothing the chart grants went unused.
{ kubectl get roles,rolebindings -A -o json; kubectl get clusterroles,clusterrolebindings -o json; } \
  >"$WORK_DIR/rbac.json" || fail "read the cluster's RBAC"
python3 "$(dirname "$0")/rbac_check.py" "$WORK_DIR/audit.log" "$WORK_DIR/rbac.json" perfgate-system \
  "$WORK_DIR/rbac-used.txt" perfgate-operator perfgate-worker \
  --unused-ok "perfgate-operator get \"\" pods/log read only for a worker pod that failed with neither a result nor a termination message (kube-sim's kubelet always leaves the log tail as its message)" \
  --unused-ok "perfgate-operator create \"\" pods/eviction only spec.disruption.policy drain evicts, and no validation of this walk drains a node (tests/e2e/disruption_e2e_test.cc does)" \
  --unused-ok "perfgate-operator patch \"\" pods only a worker under spec.disruption.policy yield carries the finalizer the operator removes once its yield is recorded (tests/e2e/disruption_e2e_test.cc does)" \
  --unused-ok "perfgate-operator list resource.k8s.io resourceslices only a FAIL confined to some GPUs with policy.deviceTaint set reads DRA devices (tests/operator/device_taints_test.cc does)" \
  --unused-ok "perfgate-operator list resource.k8s.io devicetaintrules only a PASS of a node whose GPUs perfgate tainted lists its rules (tests/operator/device_taints_test.cc does)" \
  --unused-ok "perfgate-operator create resource.k8s.io devicetaintrules only a FAIL confined to some GPUs with policy.deviceTaint set taints devices (tests/operator/device_taints_test.cc does)" \
  --unused-ok "perfgate-operator delete resource.k8s.io devicetaintrules only a PASS of a node whose GPUs perfgate tainted deletes its rules (tests/operator/device_taints_test.cc does)" \
  --unused-ok "perfgate-operator create \"\" services a gang's ranks meet at rank 0's headless Service; kube-sim has no DNS, so here they meet on loopback (--gang-rendezvous-host) and no Service is made" \
  || { cat "$WORK_DIR/rbac-used.txt" >&2; fail "the chart's RBAC does not match the calls made (used: $WORK_DIR/rbac-used.txt)"; }

if grep -Eq 'Forbidden|"code": ?403| 403' "$WORK_DIR/operator.log"; then
  grep -Em5 'Forbidden|403' "$WORK_DIR/operator.log" >&2
  fail "RBAC refused the operator or a worker"
fi
curl -fsS "http://127.0.0.1:$health_port/readyz" >/dev/null || fail "/readyz"
echo "chart e2e: ok"

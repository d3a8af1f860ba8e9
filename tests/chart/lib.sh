# Shell helpers for the chart, image and GitOps tests: a kube-sim process and the chart
# rendered and applied into it. Source it; every function fails the test (exit 1) on error.
# Needs: KUBE_SIM (kube-sim binary), CHART_RENDER (chart-render binary), kubectl on PATH.

fail() { echo "FAIL: $*" >&2; exit 1; }

# run_logged WHAT LOG COMMAND...: runs COMMAND with its output in LOG; when it fails, shows the
# log's tail and fails the test naming WHAT.
run_logged() {
  local what=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1 || { tail -20 "$log" >&2; fail "$what"; }
}

# needs_root_and TOOL...: skips the test (exit 77, CTest's SKIP_RETURN_CODE) unless it runs as
# root with every TOOL on PATH; the tests that build roots, images and packages need both.
needs_root_and() {
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root" >&2
    exit 77
  fi
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "SKIP: needs $tool (scripts/install-deps.sh test)" >&2; exit 77; }
  done
}

# start_kube_sim WORKDIR [kube-sim flags...]: starts kube-sim on a free loopback port, waits for
# its kubeconfig and exports KUBECONFIG. Stopped by stop_kube_sim (call it from an EXIT trap).
start_kube_sim() {
  local dir="$1"; shift
  mkdir -p "$dir/sim"
  "$KUBE_SIM" --listen 127.0.0.1:0 --kubeconfig-out "$dir/kubeconfig" --work-dir "$dir/sim" "$@" \
    >"$dir/kube-sim.log" 2>&1 &
  KUBE_SIM_PID=$!
  local i
  for i in $(seq 100); do
    [ -s "$dir/kubeconfig" ] && break
    kill -0 "$KUBE_SIM_PID" 2>/dev/null || { cat "$dir/kube-sim.log" >&2; fail "kube-sim exited"; }
    sleep 0.1
  done
  [ -s "$dir/kubeconfig" ] || fail "kube-sim wrote no kubeconfig in 10 s"
  export KUBECONFIG="$dir/kubeconfig"
}

stop_kube_sim() {
  if [ -n "${KUBE_SIM_PID:-}" ]; then
    kill "$KUBE_SIM_PID" 2>/dev/null || true
    wait "$KUBE_SIM_PID" 2>/dev/null || true
    KUBE_SIM_PID=""
  fi
}

# pval_head NAME: the start of a PerfValidation NAME that selects every simulated GPU node; the
# rest of its spec follows, indented two spaces (tests/e2e's GpuNodesSpec).
pval_head() {
  cat <<YAML
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: $1
spec:
  nodeSelector:
    nvidia.com/gpu.present: "true"
YAML
}

# synthetic_spec NAME TYPE BEHAVIOUR MEAN CV SAMPLE_SECONDS [EXTRA_SPEC_LINE [ON_FAILURE]]: a
# validation of the synthetic fixture (TYPE: synthetic, or anything else for an invalid spec) on
# every GPU node, tainting failed nodes (policy.onFailure ON_FAILURE, default taint); tests/e2e's
# SyntheticSpec.
synthetic_spec() {
  pval_head "$1"
  cat <<YAML
${7:-}
  sampling:
    warmup: 1
    minRepeats: 5
    maxRepeats: 10
  policy:
    onFailure: ${8:-taint}
  tests:
    - type: $2
      parameters:
        mean: $4
        cv: $5
        sampleSeconds: $6
        behaviour: [$3]
      thresholds:
        - metric: bandwidthGBps
          statistic: median
          op: ">="
          value: 90
YAML
}

# wait_for CMD...: retries a command for up to 10 s (CRDs become Established asynchronously).
wait_for() {
  local i
  for i in $(seq 50); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  "$@"
}

# install_chart DIR NAMESPACE [chart-render flags...]: what `helm install --create-namespace`
# does, with chart-render for the templates: namespace, CRDs, then the manifests.
install_chart() {
  local dir="$1" ns="$2"; shift 2
  "$CHART_RENDER" --lint --release perfgate --namespace "$ns" "$@" "$CHART_DIR" >"$dir/rendered.yaml" \
    || fail "chart-render"
  kubectl create namespace "$ns" >/dev/null || fail "create namespace $ns"
  kubectl apply -f "$CHART_DIR/crds/" >"$dir/apply-crds.log" 2>&1 \
    || { cat "$dir/apply-crds.log" >&2; fail "kubectl apply crds"; }
  local crd
  for crd in perfvalidations perfresults perfprofiles perfbaselines; do
    wait_for kubectl get crd "$crd.perfgate.io" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' \
      || fail "CRD $crd.perfgate.io not served"
  done
  wait_for kubectl get perfprofiles || fail "perfprofiles not served"
  kubectl apply -f "$dir/rendered.yaml" >"$dir/apply.log" 2>&1 \
    || { cat "$dir/apply.log" >&2; fail "kubectl apply of the rendered chart"; }
}

# operator_args RENDERED_YAML: the operator container's args from the rendered Deployment,
# one per line (so tests run the operator with exactly the flags the chart gives it).
operator_args() {
  awk '/^kind: Deployment$/ { dep = 1 } dep && /^ *args:$/ { on = 1; next }
       on && /^ *- / { sub(/^ *- /, ""); gsub(/^"|"$/, ""); print; next }
       on { exit }' "$1"
}

# operator_kubeconfig OUT: a kubeconfig for the current kube-sim whose credential is a token
# of the chart's operator service account (so the operator runs under the chart's RBAC).
operator_kubeconfig() {
  local out="$1" token user
  token="$(kubectl -n perfgate-system create token perfgate-operator)" || fail "operator token"
  kubectl config view --raw --minify >"$out"
  user="$(kubectl config view --minify -o 'jsonpath={.users[0].name}')"
  KUBECONFIG="$out" kubectl config set-credentials "$user" --token="$token" >/dev/null
  chmod 0644 "$out"
}

# free_port: a loopback TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Flags a test run must change from the chart's: where the API server is, loopback ports.
# drop_flags FLAG...: filters stdin, dropping --FLAG=... lines.
drop_flags() {
  local re
  re="$(printf '%s|' "$@")"
  grep -Ev -- "^(${re%|})(=|$)" || true
}

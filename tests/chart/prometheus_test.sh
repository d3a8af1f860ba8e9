#!/usr/bin/env bash
# perfgate's metrics, alerts and Grafana dashboard against a real Prometheus (Debian's
# prometheus package: /usr/bin/prometheus and /usr/bin/promtool).
#   prometheus_test.sh rules   promtool checks the chart's alerting rules and runs their unit
#                              tests; the rendered chart's PrometheusRule and dashboard ConfigMap
#                              carry exactly the rules file and the dashboard (CTest label unit)
#   prometheus_test.sh e2e     kube-sim with 8 simulated nodes running the real worker, the chart
#                              applied, the real operator with the chart's flags
#                              (metrics.perNode); `kubectl get pval` shows the run's progress;
#                              Prometheus scrapes its /metrics every second and
#                              evaluates the rules. One node fails, one passes but lags its peers
#                              (a regression against its peers: the operator keeps a SQLite store).
#                              The series a user graphs hold the right values, the alerts for the
#                              failed node, the failed validation and the lagging node fire, every
#                              rule is healthy. A validation under disruption policy yield gives
#                              node-0 to a customer's pod, and its cost shows in the yield series;
#                              a rolling validation's node held busy when due shows as overdue and
#                              its alert is pending; every dashboard panel's query returns data.
#                              Then a second validation fails 6 of the 8 nodes with a brake of
#                              25%: 4 are held back untainted and PerfgateSystemicFailure fires
#                              (CTest label e2e)
# Env: PROMETHEUS, PROMTOOL (default: from PATH), CHART_RENDER, REPO_ROOT, WORK_DIR; for e2e also
# OPERATOR_BIN, WORKER_BIN, KUBE_SIM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${CHART_RENDER:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}"
PROMETHEUS="${PROMETHEUS:-$(command -v prometheus || true)}"
PROMTOOL="${PROMTOOL:-$(command -v promtool || true)}"
[ -x "$PROMETHEUS" ] && [ -x "$PROMTOOL" ] \
  || fail "prometheus and promtool not found (scripts/install-deps.sh installs Debian's prometheus)"
CHART_DIR="$REPO_ROOT/charts/perfgate"
RULES="$CHART_DIR/files/prometheus-rules.yaml"
DASHBOARD="$CHART_DIR/dashboards/perfgate.json"
HERE="$(cd "$(dirname "$0")" && pwd)"
PROMQL="python3 $HERE/prometheus/promql.py"
rm -rf "$WORK_DIR" && mkdir -p "$WORK_DIR"

step_rules() {
  "$PROMTOOL" check rules "$RULES" || fail "promtool check rules $RULES"
  # The unit tests name the rules file relative to themselves.
  (cd "$HERE/prometheus" && "$PROMTOOL" test rules rules_test.yaml stale_rules_test.yaml) \
    || fail "promtool test rules"
  "$CHART_RENDER" --lint --release perfgate --namespace perfgate-system \
    --set metrics.prometheusRule.enabled=true --set metrics.grafanaDashboard.enabled=true \
    "$CHART_DIR" >"$WORK_DIR/rendered.yaml" || fail "chart-render with the rule and dashboard on"
  $PROMQL chart "$WORK_DIR/rendered.yaml" "$RULES" "$DASHBOARD"
  "$PROMTOOL" check rules "$WORK_DIR/rendered.yaml.rules" || fail "promtool: the rendered rules"
  # Off by default: neither object without the values.
  "$CHART_RENDER" --release perfgate --namespace perfgate-system "$CHART_DIR" >"$WORK_DIR/default.yaml" \
    || fail "chart-render with defaults"
  if grep -Eq '^kind: PrometheusRule$|grafana_dashboard' "$WORK_DIR/default.yaml"; then
    fail "the PrometheusRule or the dashboard ConfigMap is rendered by default"
  fi
  echo "prometheus rules: ok"
}

step_e2e() {
  : "${OPERATOR_BIN:?}" "${WORKER_BIN:?}" "${KUBE_SIM:?}"
  local image=registry.example.com/perfgate/perfgate-worker
  operator_pid="" prom_pid=""  # global: the EXIT trap runs after this function returns
  cleanup() {
    local pid
    for pid in "$prom_pid" "$operator_pid"; do
      if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    done
    stop_kube_sim
  }
  trap cleanup EXIT
  start_kube_sim "$WORK_DIR" --nodes 8 --gpus-per-node 8 --image-map "$image=$WORKER_BIN"
  install_chart "$WORK_DIR" perfgate-system --set worker.image.repository="$image" \
    --set worker.image.tag=e2e --set metrics.perNode=true --set metrics.grafanaDashboard.enabled=true \
    --set store.mode=sqlite
  grep -q dashboard <<<"$(kubectl -n perfgate-system get configmap -l grafana_dashboard=1 -o name)" \
    || fail "the dashboard ConfigMap was not applied with its sidecar label"
  operator_kubeconfig "$WORK_DIR/operator.kubeconfig"
  local args metrics_port prom_port
  mapfile -t args < <(operator_args "$WORK_DIR/rendered.yaml" \
    | drop_flags --metrics-bind-address --health-probe-bind-address --store)
  grep -qx -- --metrics-per-node <<<"$(printf '%s\n' "${args[@]}")" || fail "metrics.perNode gave no --metrics-per-node"
  # The chart's SQLite store (store.mode=sqlite), in the work dir rather than the volume's path.
  args+=("--store=sqlite://$WORK_DIR/store/results.db")
  metrics_port="$(free_port)"
  "$OPERATOR_BIN" "${args[@]}" --kubeconfig="$WORK_DIR/operator.kubeconfig" \
    --metrics-bind-address="127.0.0.1:$metrics_port" --health-probe-bind-address=0 \
    --enable-fixtures >"$WORK_DIR/operator.log" 2>&1 &
  operator_pid=$!

  prom_port="$(free_port)"
  cat >"$WORK_DIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: perfgate
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
YAML
  "$PROMTOOL" check config "$WORK_DIR/prometheus.yml" >/dev/null || fail "promtool check config"
  "$PROMETHEUS" --config.file="$WORK_DIR/prometheus.yml" --storage.tsdb.path="$WORK_DIR/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$WORK_DIR/prometheus.log" 2>&1 &
  prom_pid=$!
  local url="http://127.0.0.1:$prom_port" i
  for i in $(seq 100); do
    curl -fsS "$url/-/ready" >/dev/null 2>&1 && break
    kill -0 "$prom_pid" 2>/dev/null || { tail -20 "$WORK_DIR/prometheus.log" >&2; fail "prometheus exited"; }
    sleep 0.2
  done
  curl -fsS "$url/-/ready" >/dev/null || fail "prometheus not ready in 20 s"

  # node-2 fails its bound (50 < 90); node-5 passes (93 >= 90) but lags the rest (about 100),
  # so it is also a regression against its peers (beyond the 3% margin). Each sample takes 0.3 s,
  # so the run lasts seconds and the polls below see it in progress.
  synthetic_spec fleet synthetic "node-2=50, node-5=93" 100 0.01 0.3 | kubectl apply -f - >/dev/null \
    || fail "apply the validation"
  # kubectl get pval while it runs: its PROGRESS column counts the nodes decided of those
  # selected and ETA estimates the time left (the CRD's printer columns, as kube-sim serves
  # them in kubectl's Table format).
  local done_at="" table
  for i in $(seq 600); do
    done_at="$(kubectl get pval fleet -o 'jsonpath={.status.completionTime}')"
    [ -n "$done_at" ] && break
    kubectl get pval fleet >>"$WORK_DIR/get-pval.txt" || fail "kubectl get pval"
    sleep 0.2
  done
  [ -n "$done_at" ] || { tail -30 "$WORK_DIR/operator.log" >&2; kubectl get pval fleet -o yaml >&2; fail "fleet not complete in 120 s"; }
  table="$(kubectl get pval fleet)" || fail "kubectl get pval"
  head -1 <<<"$table" | grep -Eq '^NAME +VERDICT +PROGRESS +ETA +PASSED +AGE$' \
    || fail "kubectl get pval columns: $(head -1 <<<"$table")"
  grep -Eq '^fleet +Failed +8/8 +7/8 ' <<<"$table" || fail "kubectl get pval when done: $table"
  grep -Eq '^fleet +Running +[0-7]/8 +(~[^ ]+ +)?[0-7]/8 ' "$WORK_DIR/get-pval.txt" \
    || fail "kubectl get pval never showed the run in progress: $(sort -u "$WORK_DIR/get-pval.txt")"

  # query EXPR: the instant vector; want EXPR LINE: waits up to 30 s for LINE among its series.
  query() { $PROMQL "$url" query "$1"; }
  want() {
    local got
    for i in $(seq 60); do
      got="$(query "$1")" || fail "query $1"
      grep -qxF -- "$2" <<<"$got" && return 0
      sleep 0.5
    done
    fail "$1: want the line '$2', got: ${got:-nothing}"
  }
  # alerts_active WHAT ALERT...: every rule loaded and healthy and each ALERT firing (or, with
  # @pending, active), within 30 s; WHAT names the check when it fails.
  alerts_active() {
    local what="$1"
    shift
    for i in $(seq 60); do
      $PROMQL "$url" rules "$RULES" "$@" >"$WORK_DIR/rules.out" 2>&1 && break
      sleep 0.5
    done
    cat "$WORK_DIR/rules.out"
    grep -q '^rules: ' "$WORK_DIR/rules.out" || fail "$what (above)"
  }
  # customer_pod NAME NODE: a customer's pod in namespace ml holding NODE's 8 GPUs until the file
  # $WORK_DIR/NAME.done appears.
  customer_pod() {
    kubectl apply -f - >/dev/null <<YAML || fail "apply the customer's pod $1 on $2"
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: ml}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  nodeSelector: {kubernetes.io/hostname: $2}
  containers:
    - name: train
      image: example.com/train:1
      command: [/bin/sh, -c, "while [ ! -e $WORK_DIR/$1.done ]; do sleep 0.1; done"]
      resources: {limits: {nvidia.com/gpu: "8"}}
YAML
  }
  # Scraped after completion, and at least a minute of samples for the rate() panels.
  want 'perfgate_validation_verdict{validation="fleet",verdict="Failed"}' \
    '{__name__="perfgate_validation_verdict",instance="127.0.0.1:'"$metrics_port"'",job="perfgate",validation="fleet",verdict="Failed"} 1'
  want 'sum(perfgate_nodes{verdict="passed"})' '{} 7'
  want 'sum(perfgate_nodes{verdict="failed"})' '{} 1'
  want 'sum by (state) (perfgate_validation_nodes{validation="fleet"})' '{state="pending"} 0'
  want 'sum by (state) (perfgate_validation_nodes{validation="fleet"})' '{state="passed"} 7'
  want 'count(perfgate_node_verdict == 1)' '{} 8'
  want 'max by (node, validation) (perfgate_node_verdict{verdict="failed"})' '{node="node-2",validation="fleet"} 1'
  want 'count(perfgate_node_verdict{verdict="failed"})' '{} 1'
  # The failing figure against its bound, per node, GPU (the synthetic test runs on the host),
  # test and metric.
  want 'perfgate_node_figure_bound{node="node-2"} - 90' '{device="host",instance="127.0.0.1:'"$metrics_port"'",job="perfgate",metric="bandwidthGBps",node="node-2",op=">=",statistic="median",test="synthetic"} 0'
  want 'count(perfgate_node_figure{node="node-2",metric="bandwidthGBps"} < 55 > 45)' '{} 1'
  want 'count(perfgate_node_figure < perfgate_node_figure_bound)' '{} 1'
  want 'max by (node, verdict) (perfgate_node_test_verdict{verdict="FAIL"})' '{node="node-2",verdict="FAIL"} 1'
  want 'count(perfgate_node_figure_lagging_ratio{node="node-5"} < 0.96 > 0.90)' '{} 1'
  want 'count by (node) (perfgate_node_figure_lagging_ratio)' '{node="node-5"} 1'
  want 'count(perfgate_node_figure_lagging_ratio)' '{} 1'
  want 'count(time() - perfgate_node_last_validated_timestamp_seconds < 300)' '{} 8'
  # status.regressions, per node: node-5 against its peers, nothing against a history.
  want 'count by (node, against, test, metric) (perfgate_node_regression_ratio{validation="fleet"} < 0.96 > 0.90)' \
    '{against="peers",metric="bandwidthGBps",node="node-5",test="synthetic"} 1'
  want 'count(perfgate_node_regression_ratio)' '{} 1'
  want 'count(perfgate_node_regression_interval_high{node="node-5"} < 0.97)' '{} 1'
  want 'count(perfgate_node_run_seconds >= 0)' '{} 8'
  # Cardinality: per node one verdict, one test verdict and one figure with its bound here;
  # nothing carries a run id or a sample.
  want 'count({__name__=~"perfgate_node_.*", run!=""}) or vector(0)' '{} 0'
  want 'count(count_over_time(perfgate_leader[1m]) >= 20)' '{} 1'
  # The recommended action of node-2's first FAIL of a host figure: test again.
  want 'perfgate_nodes_by_action' '{__name__="perfgate_nodes_by_action",action="retest",instance="127.0.0.1:'"$metrics_port"'",job="perfgate"} 1'
  want 'count by (node, action) (perfgate_node_recommended_action)' '{action="retest",node="node-2"} 1'

  # Yielding: a validation under disruption policy yield measures node-0 (6 samples of 1 s) when
  # a customer's pod asks for its 8 GPUs; the scheduler preempts the worker, the customer runs,
  # and what that cost shows in the yield series (and so in the dashboard's yield panels). When
  # the customer is done, node-0 is validated.
  kubectl create namespace ml >/dev/null || fail "create namespace ml"
  synthetic_spec yielding synthetic "" 100 0.01 1 "  disruption:
    policy: yield" none \
    | sed -e 's/^  nodeSelector:$/  nodes: [node-0]/' -e '/nvidia.com\/gpu.present/d' \
    | kubectl apply -f - >/dev/null || fail "apply the yielding validation"
  for i in $(seq 150); do
    [ "$(kubectl get pods -A -l perfgate.io/validation=yielding -o 'jsonpath={.items[*].status.phase}')" = Running ] && break
    sleep 0.2
  done
  [ "$(kubectl get pods -A -l perfgate.io/validation=yielding -o 'jsonpath={.items[*].status.phase}')" = Running ] \
    || fail "the yielding validation's worker is not running on node-0"
  sleep 1.5  # measuring: the GPU time it gives up reads as at least 1 s
  customer_pod customer node-0
  want 'perfgate_validation_yields{validation="yielding"}' \
    '{__name__="perfgate_validation_yields",instance="127.0.0.1:'"$metrics_port"'",job="perfgate",validation="yielding"} 1'
  want 'count(perfgate_validation_yield_lost_gpu_seconds{validation="yielding"} >= 8)' '{} 1'
  # The customer waited for the worker to go, within the worker pod's 10 s grace period.
  want 'count(perfgate_validation_yield_longest_wait_seconds{validation="yielding"} < 10)' '{} 1'
  want 'perfgate_node_yields{node="node-0"}' \
    '{__name__="perfgate_node_yields",instance="127.0.0.1:'"$metrics_port"'",job="perfgate",node="node-0",validation="yielding"} 1'
  [ "$(kubectl -n ml get pod customer -o 'jsonpath={.status.phase}')" = Running ] \
    || fail "the customer's pod is not running after the worker yielded"
  touch "$WORK_DIR/customer.done"
  for i in $(seq 300); do
    [ -n "$(kubectl get pval yielding -o 'jsonpath={.status.completionTime}')" ] && break
    sleep 0.2
  done
  [ "$(kubectl get pval yielding -o 'jsonpath={.status.verdict}')" = Passed ] \
    || { kubectl get pval yielding -o yaml >&2; fail "yielding: node-0 not validated after the customer"; }
  # What the run used beside what it lost: its passing worker's 6 s and more on 8 GPUs.
  want 'count(perfgate_validation_gpu_seconds{validation="yielding"} >= 48)' '{} 1'


  # Rolling re-validation: node-1 validated again every 5 s, one node at a time. A customer's
  # pod holds its GPUs when it falls due, so it is overdue: the series says so, and the alert
  # (which speaks after 30 minutes of it) is pending on the real series.
  synthetic_spec weekly synthetic "" 100 0.01 0 "  rolling:
    period: 5s
    maxConcurrent: 1" none \
    | sed -e 's/^  nodeSelector:$/  nodes: [node-1]/' -e '/nvidia.com\/gpu.present/d' \
    | kubectl apply -f - >/dev/null || fail "apply the rolling validation"
  for i in $(seq 300); do
    [ -n "$(kubectl get pval weekly -o 'jsonpath={.status.completionTime}')" ] && break
    sleep 0.2
  done
  [ "$(kubectl get pval weekly -o 'jsonpath={.status.verdict}')" = Passed ] \
    || { kubectl get pval weekly -o yaml >&2; fail "weekly: node-1 not validated"; }
  customer_pod customer-1 node-1
  want 'perfgate_validation_overdue_nodes{validation="weekly"}' \
    '{__name__="perfgate_validation_overdue_nodes",instance="127.0.0.1:'"$metrics_port"'",job="perfgate",validation="weekly"} 1'
  alerts_active "the overdue alert" PerfgateNodesOverdue:validation=weekly@pending
  touch "$WORK_DIR/customer-1.done"
  kubectl delete pval weekly --wait=false >/dev/null || fail "delete the rolling validation"

  # The alerts this scenario must raise, every rule loaded and healthy, every expression parsed.
  alerts_active "alert rules" PerfgateNodeFailed:node=node-2 \
    PerfgateValidationNotPassed:validation=fleet PerfgateNodeLagging:node=node-5 \
    PerfgateNodeRegressed:node=node-5
  $PROMQL "$url" dashboard "$DASHBOARD" || fail "dashboard queries (above)"

  # Failures that look systemic: a second validation fails 6 of the 8 nodes, and its brake on
  # mass quarantine lets it taint 25% of them (2): the other 4 keep their FAIL without the taint,
  # and the alert that says so fires.
  synthetic_spec systemic synthetic "node-0=50, node-1=50, node-3=50, node-4=50, node-6=50, node-7=50" \
    100 0.01 0 "" "taint
    maxQuarantined: \"25%\"" | kubectl apply -f - >/dev/null || fail "apply the systemic validation"
  for i in $(seq 600); do
    [ -n "$(kubectl get pval systemic -o 'jsonpath={.status.completionTime}')" ] && break
    sleep 0.2
  done
  [ -n "$(kubectl get pval systemic -o 'jsonpath={.status.completionTime}')" ] \
    || { kubectl get pval systemic -o yaml >&2; fail "systemic not complete in 120 s"; }
  [ "$(kubectl get pval systemic -o 'jsonpath={.status.conditions[?(@.type=="SystemicFailure")].status}')" = True ] \
    || { kubectl get pval systemic -o yaml >&2; fail "systemic: no SystemicFailure condition"; }
  want 'perfgate_validation_quarantine_held_nodes{validation="systemic"}' \
    '{__name__="perfgate_validation_quarantine_held_nodes",instance="127.0.0.1:'"$metrics_port"'",job="perfgate",validation="systemic"} 4'
  alerts_active "the systemic-failure alert" PerfgateSystemicFailure:validation=systemic
  if grep -Eq 'level=(error|warn)' "$WORK_DIR/prometheus.log"; then
    grep -E 'level=(error|warn)' "$WORK_DIR/prometheus.log" | head -5 >&2
    fail "prometheus logged errors or warnings (a scrape or a rule evaluation failed)"
  fi
  echo "prometheus e2e: ok"
}

case "${1:-}" in
  rules) step_rules ;;
  e2e) step_e2e ;;
  *) fail "usage: prometheus_test.sh rules|e2e" ;;
esac

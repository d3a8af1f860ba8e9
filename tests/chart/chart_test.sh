#!/usr/bin/env bash
# The chart's tests (CTest label integration, tests/chart/CMakeLists.txt):
#   chart_test.sh render-default   renders values.yaml's defaults; lint (chart-render --lint)
#   chart_test.sh render-readme    renders with the README's `helm install` overrides
#   chart_test.sh render-store     the results store in each mode: off (the default: no volume),
#                                  SQLite on a claim, PostgreSQL from a Secret
#   chart_test.sh render-schema    values.schema.json: every documented setting accepted, a
#                                  misspelt key or a wrong type refused, naming the key
#   chart_test.sh files-in-sync    the chart's CRDs and profiles are byte-identical copies
#   chart_test.sh kube-sim         kubectl apply into kube-sim; RBAC as the two service accounts
#   chart_test.sh bare-cluster     the default install on a cluster with no StorageClass: nothing
#                                  waits for a volume, the operator runs with the chart's flags and
#                                  a validation passes; NOTES, log and /metrics say results are
#                                  not kept (also needs OPERATOR_BIN, WORKER_BIN)
# Env: CHART_RENDER, KUBE_SIM, REPO_ROOT, WORK_DIR (scratch, emptied first).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${CHART_RENDER:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}"
CHART_DIR="$REPO_ROOT/charts/perfgate"
rm -rf "$WORK_DIR" && mkdir -p "$WORK_DIR"

# doc_of KIND NAME < stream: one rendered document.
doc_of() {
  awk -v kind="$1" -v name="$2" '
    /^---$/ { if (k && n) { print buf; exit } buf = ""; k = 0; n = 0; next }
    { buf = buf $0 "\n" }
    $0 == "kind: " kind { k = 1 }
    $0 == "  name: " name { n = 1 }
    END { if (k && n) print buf }'
}

# The --set/-f flags of the README's helm install command, else readme-install.args.
readme_flags() {
  local readme="$REPO_ROOT/README.md"
  if [ -f "$readme" ] && grep -q '^ *helm install' "$readme"; then
    awk '/^ *helm install/ { on = 1 } on { print; if ($0 !~ /\\$/) exit }' "$readme" \
      | tr ' \\' '\n\n' | awk '
          prev == "--set" || prev == "-f" || prev == "--values" { print prev; print $0 }
          /^--set=/ { sub(/^--set=/, ""); print "--set"; print $0 }
          NF { prev = $0 }'
  else
    grep -v '^#' "$(dirname "$0")/readme-install.args" | tr ' ' '\n' | grep -v '^$'
  fi
}

case "${1:-}" in
render-default)
  "$CHART_RENDER" --lint --include-crds --notes "$CHART_DIR" >"$WORK_DIR/out.yaml" 2>"$WORK_DIR/notes.txt" \
    || { cat "$WORK_DIR/notes.txt" >&2; fail "render with default values"; }
  grep -q 'kubectl wait pval/first-check --for=condition=Complete' "$WORK_DIR/notes.txt" \
    || fail "NOTES.txt does not tell the user how to wait for a validation"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/out.yaml")"
  [ -n "$deploy" ] || fail "no operator Deployment"
  for want in 'readOnlyRootFilesystem: true' 'runAsNonRoot: true' 'drop: \["ALL"\]' \
      'allowPrivilegeEscalation: false' 'path: /healthz' 'path: /readyz' \
      '--leader-elect=true' '--namespace=perfgate-system' '--worker-service-account=perfgate-worker' \
      '--yield-priority-class=perfgate-yield'; do
    grep -q -e "$want" <<<"$deploy" || fail "operator Deployment lacks $want"
  done
  # spec.disruption.policy yield's workers: a class below customers' that never preempts.
  yield_class="$(doc_of PriorityClass perfgate-yield <"$WORK_DIR/out.yaml")"
  for want in '^value: -1000$' '^preemptionPolicy: Never$' '^globalDefault: false$'; do
    grep -q -e "$want" <<<"$yield_class" || fail "PriorityClass perfgate-yield lacks $want"
  done
  # The admission policy must name the worker account that the Role binds.
  grep -q "system:serviceaccount:perfgate-system:perfgate-worker'" "$WORK_DIR/out.yaml" \
    || fail "the ValidatingAdmissionPolicy does not match the worker's service account"
  # Turning features off must leave their objects out, not render empty or broken ones.
  "$CHART_RENDER" --lint --set admissionPolicy.enabled=false --set metrics.service.enabled=false \
    --set 'profiles.install={h200-sxm-141gb}' "$CHART_DIR" >"$WORK_DIR/off.yaml" || fail "render with features off"
  ! grep -q 'kind: ValidatingAdmissionPolicy' "$WORK_DIR/off.yaml" || fail "policy rendered while disabled"
  ! grep -q 'kind: Service$' "$WORK_DIR/off.yaml" || fail "metrics Service rendered while disabled"
  [ "$(grep -c '^kind: PerfProfile' "$WORK_DIR/off.yaml")" = 1 ] || fail "profiles.install not honoured"
  # A profile name the chart does not carry is an install error, not a silent no-op.
  if "$CHART_RENDER" --set 'profiles.install={no-such-gpu}' "$CHART_DIR" >/dev/null 2>"$WORK_DIR/err"; then
    fail "an unknown profile name rendered"
  fi
  grep -q 'no-such-gpu' "$WORK_DIR/err" || fail "the unknown-profile error does not name it"
  # To a file, not a pipe: `grep -q` exits at the first match and, under pipefail, the
  # renderer's SIGPIPE would fail the step at random.
  "$CHART_RENDER" --lint --set metrics.serviceMonitor.enabled=true "$CHART_DIR" \
    >"$WORK_DIR/monitor.yaml" || fail "render with the ServiceMonitor enabled"
  grep -q 'kind: ServiceMonitor' "$WORK_DIR/monitor.yaml" || fail "ServiceMonitor not rendered when enabled"
  echo "render-default: ok"
  ;;
render-readme)
  mapfile -t flags < <(readme_flags)
  ((${#flags[@]})) || fail "no helm install overrides found"
  echo "render-readme: ${flags[*]}"
  ( cd "$REPO_ROOT" && "$CHART_RENDER" --lint "${flags[@]}" "$CHART_DIR" ) >"$WORK_DIR/out.yaml" \
    || fail "render with the README's overrides"
  # Every image the README names must reach the operator (its own image, and --worker-image).
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/out.yaml")"
  for ((i = 0; i < ${#flags[@]}; i += 2)); do
    [ "${flags[i]}" = "--set" ] || continue
    kv="${flags[i+1]}"
    case "${kv%%=*}" in
      operator.image.repository) grep -q "image: \"${kv#*=}:" <<<"$deploy" || fail "operator image ${kv#*=} not used" ;;
      worker.image.repository) grep -q -e "--worker-image=${kv#*=}[:@]" <<<"$deploy" || fail "worker image ${kv#*=} not passed" ;;
    esac
  done
  echo "render-readme: ok"
  ;;
render-store)
  # Default: off, so the chart installs where no StorageClass is: no claim, no store volume.
  "$CHART_RENDER" --lint "$CHART_DIR" >"$WORK_DIR/default.yaml" || fail "render with the default store"
  ! grep -q '^kind: PersistentVolumeClaim' "$WORK_DIR/default.yaml" || fail "the default install renders a claim"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/default.yaml")"
  grep -q -e '--store=off' <<<"$deploy" || fail "default store: --store=off not passed"
  ! grep -q -e 'persistentVolumeClaim:' -e 'name: store$' <<<"$deploy" || fail "default store: a store volume is mounted"
  # SQLite in a file on a PersistentVolumeClaim mounted where the flag points.
  "$CHART_RENDER" --lint --set store.mode=sqlite "$CHART_DIR" >"$WORK_DIR/sqlite.yaml" \
    || fail "render with store.mode sqlite"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/sqlite.yaml")"
  pvc="$(doc_of PersistentVolumeClaim perfgate-operator-store <"$WORK_DIR/sqlite.yaml")"
  [ -n "$pvc" ] || fail "store.mode sqlite: no PersistentVolumeClaim perfgate-operator-store"
  grep -q 'storage: 10Gi' <<<"$pvc" || fail "the claim does not request store.sqlite.size"
  for want in '--store=sqlite:///var/lib/perfgate/results.db' '--cluster-name=default' \
      'mountPath: /var/lib/perfgate' 'claimName: perfgate-operator-store'; do
    grep -q -e "$want" <<<"$deploy" || fail "store.mode sqlite: operator Deployment lacks $want"
  done
  ! grep -q 'storageClassName' <<<"$pvc" || fail "a StorageClass named in the claim while none was set"
  "$CHART_RENDER" --lint --set store.mode=sqlite --set store.sqlite.storageClassName=fast-ssd "$CHART_DIR" \
    >"$WORK_DIR/class.yaml" || fail "render with store.sqlite.storageClassName"
  grep -q 'storageClassName: fast-ssd' <<<"$(doc_of PersistentVolumeClaim perfgate-operator-store <"$WORK_DIR/class.yaml")" \
    || fail "store.sqlite.storageClassName not in the claim"
  # An existing claim is used, none created.
  "$CHART_RENDER" --lint --set store.mode=sqlite --set store.sqlite.existingClaim=results --set store.clusterName=gpu-east \
    "$CHART_DIR" >"$WORK_DIR/claim.yaml" || fail "render with store.sqlite.existingClaim"
  ! grep -q '^kind: PersistentVolumeClaim' "$WORK_DIR/claim.yaml" || fail "a claim rendered beside existingClaim"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/claim.yaml")"
  grep -q 'claimName: results' <<<"$deploy" || fail "existingClaim not mounted"
  grep -q -e '--cluster-name=gpu-east' <<<"$deploy" || fail "store.clusterName not passed"
  # PostgreSQL: the URL from the Secret's key, never in the arguments; no claim.
  "$CHART_RENDER" --lint --set store.mode=postgres --set store.postgres.existingSecret=perfgate-db \
    "$CHART_DIR" >"$WORK_DIR/postgres.yaml" || fail "render with store.mode postgres"
  ! grep -q '^kind: PersistentVolumeClaim' "$WORK_DIR/postgres.yaml" || fail "a claim rendered for postgres"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/postgres.yaml")"
  for want in '--store=postgres' 'name: PERFGATE_STORE_DSN' 'name: perfgate-db' 'key: dsn' \
      '--store-spool-dir=/var/lib/perfgate/spool' 'medium: Memory'; do
    grep -q -e "$want" <<<"$deploy" || fail "store.mode postgres: operator Deployment lacks $want"
  done
  # ... and without the Secret's name it is an install error that says which value is missing.
  if "$CHART_RENDER" --set store.mode=postgres "$CHART_DIR" >/dev/null 2>"$WORK_DIR/err"; then
    fail "store.mode postgres rendered without store.postgres.existingSecret"
  fi
  grep -q 'store.postgres.existingSecret' "$WORK_DIR/err" || fail "the missing-Secret error does not name the value"
  # Off, named: as the default. In a values file an unquoted `off` is YAML's false: still off.
  printf 'store:\n  mode: off\n' >"$WORK_DIR/unquoted-off.yaml"
  for how in "--set store.mode=off" "--values $WORK_DIR/unquoted-off.yaml"; do
    # shellcheck disable=SC2086 # $how is two words on purpose
    "$CHART_RENDER" --lint $how "$CHART_DIR" >"$WORK_DIR/off.yaml" || fail "render with $how"
    ! grep -q '^kind: PersistentVolumeClaim' "$WORK_DIR/off.yaml" || fail "$how: a claim rendered with the store off"
    deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/off.yaml")"
    grep -q -e '--store=off' <<<"$deploy" || fail "$how: --store=off not passed"
    ! grep -q 'name: store' <<<"$deploy" || fail "$how: a store volume is still mounted"
  done
  # NOTES say where results are kept, or that they are not.
  notes_of() { "$CHART_RENDER" --notes "$@" "$CHART_DIR" 2>&1 >/dev/null; }
  grep -q 'Results are NOT kept: store.mode is off' <<<"$(notes_of)" || fail "NOTES: the default does not say results are not kept"
  grep -q 'Results are kept in SQLite on the PersistentVolumeClaim perfgate-operator-store' \
    <<<"$(notes_of --set store.mode=sqlite)" || fail "NOTES: sqlite does not name the claim"
  grep -q 'Results are kept in PostgreSQL' \
    <<<"$(notes_of --set store.mode=postgres --set store.postgres.existingSecret=perfgate-db)" \
    || fail "NOTES: postgres does not say results are kept"
  # A mode the chart does not know is an error naming the value.
  if "$CHART_RENDER" --set store.mode=mysql "$CHART_DIR" >/dev/null 2>"$WORK_DIR/err"; then
    fail "store.mode mysql rendered"
  fi
  grep -q 'store.mode' "$WORK_DIR/err" || fail "the bad-mode error does not name store.mode"
  echo "render-store: ok"
  ;;
render-schema)
  [ -f "$CHART_DIR/values.schema.json" ] || fail "the chart has no values.schema.json"
  # Every setting values.yaml documents as one of a set, each accepted (lint also checks that
  # the schema describes every key of values.yaml and refuses unknown keys at every level).
  for set in store.mode=off store.mode=sqlite "store.mode=postgres store.postgres.existingSecret=db" \
      operator.logFormat=text operator.logFormat=json operator.image.pullPolicy=Always \
      operator.image.pullPolicy=Never admissionPolicy.failurePolicy=Ignore metrics.perNode=true \
      metrics.service.enabled=false \
      "metrics.serviceMonitor.enabled=true metrics.prometheusRule.enabled=true metrics.grafanaDashboard.enabled=true" \
      "operator.replicas=2 operator.extraArgs={--workers=8}" \
      "operator.tolerations[0].key=gpu operator.tolerations[0].operator=Exists" \
      "diagnostics.bundles.volume.hostPath.path=/var/log/perfgate imagePullSecrets[0].name=regcred"; do
    args=()
    for kv in $set; do args+=(--set "$kv"); done
    "$CHART_RENDER" --lint "${args[@]}" "$CHART_DIR" >/dev/null 2>"$WORK_DIR/err" \
      || { cat "$WORK_DIR/err" >&2; fail "refused: $set"; }
  done
  # refused WANT RENDER_ARGS...: the render fails and its message names the key as Helm does.
  refused() {
    local want="$1"; shift
    if "$CHART_RENDER" "$@" "$CHART_DIR" >/dev/null 2>"$WORK_DIR/err"; then
      fail "accepted: $*"
    fi
    grep -q "values don't meet the specifications of the schema(s)" "$WORK_DIR/err" \
      || { cat "$WORK_DIR/err" >&2; fail "$*: not refused by the schema"; }
    grep -qF -- "$want" "$WORK_DIR/err" || { cat "$WORK_DIR/err" >&2; fail "$*: the error lacks '$want'"; }
  }
  refused '- operator: Additional property imagee is not allowed' --set operator.imagee=x
  refused '- (root): Additional property operatorr is not allowed' --set operatorr.replicas=2
  refused '- store.sqlite: Additional property storageClass is not allowed' --set store.sqlite.storageClass=fast
  refused '- operator.replicas: Invalid type. Expected: integer, given: string' --set operator.replicas=two
  refused '- metrics.perNode: Invalid type. Expected: boolean, given: string' --set metrics.perNode=yes
  refused '- operator.logFormat: operator.logFormat must be one of the following' --set operator.logFormat=xml
  refused '- metrics.port: Must be less than or equal to 65535' --set metrics.port=80800
  # The same from a values file, as most installs pass them.
  printf 'metrics:\n  servicemonitor:\n    enabled: true\n' >"$WORK_DIR/typo.yaml"
  refused '- metrics: Additional property servicemonitor is not allowed' --values "$WORK_DIR/typo.yaml"
  printf 'operator:\n  leaderElect: "no"\n' >"$WORK_DIR/type.yaml"
  refused '- operator.leaderElect: Invalid type. Expected: boolean, given: string' --values "$WORK_DIR/type.yaml"
  echo "render-schema: ok"
  ;;
files-in-sync)
  "$REPO_ROOT/tests/chart/sync-chart-files.sh" --check
  [ -n "$(ls "$CHART_DIR"/crds/*.yaml 2>/dev/null)" ] || fail "the chart carries no CRDs"
  echo "files-in-sync: ok"
  ;;
kube-sim)
  : "${KUBE_SIM:?}"
  trap stop_kube_sim EXIT
  start_kube_sim "$WORK_DIR" --nodes 2
  install_chart "$WORK_DIR" perfgate-system
  for kind in deployment/perfgate-operator serviceaccount/perfgate-worker role/perfgate-worker \
      rolebinding/perfgate-operator; do
    kubectl -n perfgate-system get "$kind" >/dev/null || fail "$kind not created"
  done
  [ "$(kubectl get perfprofiles -o name | wc -l)" = 4 ] || fail "want the 4 built-in profiles"
  # RBAC as kube-sim enforces it, through each account's own token.
  op="$(kubectl -n perfgate-system create token perfgate-operator)"
  wk="$(kubectl -n perfgate-system create token perfgate-worker)"
  can() {  # can TOKEN yes|no VERB RESOURCE [flags]
    local token="$1" want="$2"; shift 2
    local got
    got="$(kubectl --token="$token" auth can-i "$@" 2>/dev/null || true)"
    [ "$got" = "$want" ] || fail "can-i $* as $( [ "$token" = "$op" ] && echo operator || echo worker): got '$got', want '$want'"
  }
  can "$op" yes create pods -n perfgate-system
  can "$op" yes get pods --subresource=log -n perfgate-system
  can "$op" no create pods -n default
  can "$op" yes watch perfvalidations.perfgate.io
  can "$op" yes update perfvalidations.perfgate.io --subresource=status
  can "$op" no create perfvalidations.perfgate.io
  can "$op" yes update nodes
  can "$op" no delete nodes
  can "$op" yes create events -n default
  can "$op" no create events -n kube-system
  can "$op" no get secrets -n perfgate-system
  can "$op" yes update leases.coordination.k8s.io -n perfgate-system
  can "$op" yes create services -n perfgate-system   # a gang's headless Service
  can "$op" yes list perfprofiles.perfgate.io          # profile: auto
  can "$op" no update perfprofiles.perfgate.io
  can "$op" yes get perfbaselines.perfgate.io          # baseline: thresholds
  can "$op" no create perfbaselines.perfgate.io
  can "$op" no delete services -n perfgate-system
  can "$op" yes delete perfresults.perfgate.io -n perfgate-system
  can "$op" yes create perfresults.perfgate.io -n perfgate-system
  can "$op" no create perfresults.perfgate.io -n default
  can "$wk" yes create perfresults.perfgate.io -n perfgate-system
  can "$wk" no create perfresults.perfgate.io -n default
  can "$wk" no get perfresults.perfgate.io -n perfgate-system
  can "$wk" no update perfresults.perfgate.io -n perfgate-system
  can "$wk" no list pods -n perfgate-system
  can "$wk" no get perfvalidations.perfgate.io
  kubectl get validatingadmissionpolicy perfgate-worker-own-node >/dev/null || fail "policy not stored"
  kubectl get validatingadmissionpolicybinding perfgate-worker-own-node >/dev/null || fail "binding not stored"
  # Applying again (helm upgrade with unchanged values) changes nothing and fails nothing.
  kubectl apply -f "$WORK_DIR/rendered.yaml" >"$WORK_DIR/reapply.log" 2>&1 \
    || { cat "$WORK_DIR/reapply.log" >&2; fail "second apply"; }
  echo "kube-sim: ok"
  ;;
bare-cluster)
  # kube-sim serves no StorageClass and binds no claim: like a bare GPU cluster where a claim
  # would stay Pending and the operator pod with it. The default install must need neither.
  : "${KUBE_SIM:?}" "${OPERATOR_BIN:?}" "${WORKER_BIN:?}"
  image=registry.example.com/perfgate/perfgate-worker
  operator_pid=""
  cleanup() {
    if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; wait "$operator_pid" 2>/dev/null || true; fi
    stop_kube_sim
  }
  trap cleanup EXIT
  start_kube_sim "$WORK_DIR" --nodes 2 --gpus-per-node 1 --image-map "$image=$WORKER_BIN"
  [ -z "$(kubectl get storageclasses -o name 2>/dev/null)" ] || fail "kube-sim has a StorageClass"
  # The defaults, less the worker image (which kube-sim maps to the worker binary).
  overrides=(--set worker.image.repository="$image" --set worker.image.tag=bare)
  install_chart "$WORK_DIR" perfgate-system "${overrides[@]}"
  "$CHART_RENDER" --notes "${overrides[@]}" "$CHART_DIR" 2>"$WORK_DIR/notes.txt" >/dev/null \
    || fail "render NOTES"
  # Nothing waits for a volume: no claim rendered or stored, and every volume of the operator's
  # pod is one the kubelet makes itself.
  ! grep -q '^kind: PersistentVolumeClaim' "$WORK_DIR/rendered.yaml" || fail "the default install renders a claim"
  [ -z "$(kubectl get pvc -A -o name)" ] || fail "a PersistentVolumeClaim was created"
  python3 - "$WORK_DIR/rendered.yaml" <<'PY' || fail "the operator's pod needs a volume a bare cluster cannot give"
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "Deployment":
        for v in doc["spec"]["template"]["spec"].get("volumes", []):
            kinds = set(v) - {"name"}
            if kinds - {"emptyDir", "configMap", "secret", "projected", "downwardAPI"}:
                sys.exit("volume %s: %s" % (v["name"], sorted(kinds)))
PY
  # The operator with exactly the chart's flags, as its own service account.
  operator_kubeconfig "$WORK_DIR/operator.kubeconfig"
  mapfile -t args < <(operator_args "$WORK_DIR/rendered.yaml" \
    | drop_flags --metrics-bind-address --health-probe-bind-address)
  printf '%s\n' "${args[@]}" | grep -qx -e '--store=off' || fail "the default install does not run with --store=off"
  health_port="$(free_port)"
  "$OPERATOR_BIN" "${args[@]}" --kubeconfig="$WORK_DIR/operator.kubeconfig" \
    --metrics-bind-address=0 --health-probe-bind-address="127.0.0.1:$health_port" \
    --enable-fixtures >"$WORK_DIR/operator.log" 2>&1 &
  operator_pid=$!
  wait_for curl -fsS "http://127.0.0.1:$health_port/readyz" \
    || { cat "$WORK_DIR/operator.log" >&2; fail "the operator is not ready in 10 s"; }
  synthetic_spec first-check synthetic "" 100 0.01 0 | kubectl apply -f - >/dev/null || fail "apply a validation"
  kubectl wait pval/first-check --for=condition=Complete --timeout=60s >/dev/null \
    || { tail -20 "$WORK_DIR/operator.log" >&2; kubectl get pval first-check -o yaml >&2; fail "validation not complete in 60 s"; }
  passed="$(kubectl get pval first-check -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
  [ "$passed" = True ] || { kubectl get pval first-check -o yaml >&2; fail "Passed=$passed, want True"; }
  [ "$(kubectl -n perfgate-system get perfresults -l perfgate.io/validation=first-check -o name | wc -l)" = 2 ] \
    || fail "want a PerfResult per node"
  # Where a person looks, each says results are not kept.
  grep -q 'Results are NOT kept: store.mode is off' "$WORK_DIR/notes.txt" || fail "NOTES do not say results are not kept"
  grep -q -- '--set store.mode=sqlite' "$WORK_DIR/notes.txt" || fail "NOTES do not say how to keep results"
  grep -q 'no results store (--store=off): completed results are not kept' "$WORK_DIR/operator.log" \
    || fail "the operator's log does not say results are not kept"
  curl -fsS "http://127.0.0.1:$health_port/metrics" >"$WORK_DIR/metrics.txt" || fail "/metrics"
  grep -qx 'perfgate_store_enabled 0' "$WORK_DIR/metrics.txt" || fail "/metrics lacks perfgate_store_enabled 0"
  echo "bare-cluster: ok"
  ;;
*)
  echo "usage: chart_test.sh render-default|render-readme|render-store|render-schema|files-in-sync|kube-sim|bare-cluster" >&2
  exit 2
  ;;
esac

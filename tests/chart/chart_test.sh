#!/usr/bin/env bash
# The chart's tests (CTest label integration, tests/chart/CMakeLists.txt):
#   chart_test.sh render-default   renders values.yaml's defaults; lint (chart-render --lint)
#   chart_test.sh render-readme    renders with the README's `helm install` overrides
#   chart_test.sh render-store     the results store in each mode: SQLite on a claim, PostgreSQL
#                                  from a Secret, off
#   chart_test.sh files-in-sync    the chart's CRDs and profiles are byte-identical copies
#   chart_test.sh kube-sim         kubectl apply into kube-sim; RBAC as the two service accounts
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
      '--leader-elect=true' '--namespace=perfgate-system' '--worker-service-account=perfgate-worker'; do
    grep -q -e "$want" <<<"$deploy" || fail "operator Deployment lacks $want"
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
  # Default: SQLite in a file on a PersistentVolumeClaim mounted where the flag points.
  "$CHART_RENDER" --lint "$CHART_DIR" >"$WORK_DIR/sqlite.yaml" || fail "render with the default store"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/sqlite.yaml")"
  pvc="$(doc_of PersistentVolumeClaim perfgate-operator-store <"$WORK_DIR/sqlite.yaml")"
  [ -n "$pvc" ] || fail "store.mode sqlite: no PersistentVolumeClaim perfgate-operator-store"
  grep -q 'storage: 10Gi' <<<"$pvc" || fail "the claim does not request store.sqlite.size"
  for want in '--store=sqlite:///var/lib/perfgate/results.db' '--cluster-name=default' \
      'mountPath: /var/lib/perfgate' 'claimName: perfgate-operator-store'; do
    grep -q -e "$want" <<<"$deploy" || fail "store.mode sqlite: operator Deployment lacks $want"
  done
  # An existing claim is used, none created.
  "$CHART_RENDER" --lint --set store.sqlite.existingClaim=results --set store.clusterName=gpu-east \
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
  # Off: no flag value but off, no claim, no store volume.
  "$CHART_RENDER" --lint --set store.mode=off "$CHART_DIR" >"$WORK_DIR/off.yaml" || fail "render with store.mode off"
  ! grep -q '^kind: PersistentVolumeClaim' "$WORK_DIR/off.yaml" || fail "a claim rendered with the store off"
  deploy="$(doc_of Deployment perfgate-operator <"$WORK_DIR/off.yaml")"
  grep -q -e '--store=off' <<<"$deploy" || fail "store.mode off: --store=off not passed"
  ! grep -q 'name: store' <<<"$deploy" || fail "store.mode off: a store volume is still mounted"
  # A mode the chart does not know is an error naming the value.
  if "$CHART_RENDER" --set store.mode=mysql "$CHART_DIR" >/dev/null 2>"$WORK_DIR/err"; then
    fail "store.mode mysql rendered"
  fi
  grep -q 'store.mode' "$WORK_DIR/err" || fail "the bad-mode error does not name store.mode"
  echo "render-store: ok"
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
*)
  echo "usage: chart_test.sh render-default|render-readme|render-store|files-in-sync|kube-sim" >&2
  exit 2
  ;;
esac

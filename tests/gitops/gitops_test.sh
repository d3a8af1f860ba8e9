#!/usr/bin/env bash
# GitOps gating tests (CTest, tests/gitops/CMakeLists.txt):
#   gitops_test.sh argocd-cm   the health script embedded in argocd-cm.yaml is the .lua file,
#                              and passes the same cases
#   gitops_test.sh ci-gate     deploy/gitops/ci/gate.sh and the Argo CD health check against
#                              PerfValidations stored in kube-sim (status written as the
#                              operator writes it), and the examples apply against the CRDs
# Env: REPO_ROOT, WORK_DIR; ci-gate also KUBE_SIM, CHART_RENDER.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../chart/lib.sh"
: "${REPO_ROOT:?}" "${WORK_DIR:?}"
CHART_DIR="$REPO_ROOT/charts/perfgate"
gitops="$REPO_ROOT/deploy/gitops"
rm -rf "$WORK_DIR" && mkdir -p "$WORK_DIR"

case "${1:-}" in
argocd-cm)
  key='resource.customizations.health.perfgate.io_PerfValidation: |'
  awk -v key="$key" 'on { if ($0 != "" && $0 !~ /^    /) exit; sub(/^    /, ""); print; next }
                     index($0, key) { on = 1 }' "$gitops/argocd/argocd-cm.yaml" >"$WORK_DIR/embedded.lua"
  diff -u "$gitops/argocd/perfvalidation-health.lua" "$WORK_DIR/embedded.lua" \
    || fail "argocd-cm.yaml's script differs from perfvalidation-health.lua"
  lua5.1 "$here/health_test.lua" "$WORK_DIR/embedded.lua" "$here/testdata" "$here/expected.txt"
  ;;
ci-gate)
  : "${KUBE_SIM:?}" "${CHART_RENDER:?}"
  trap stop_kube_sim EXIT
  start_kube_sim "$WORK_DIR" --nodes 1
  install_chart "$WORK_DIR" perfgate-system
  # The examples a user copies must be valid against the CRDs.
  kubectl apply -f "$gitops/argocd/gated-app/validation.yaml" >/dev/null || fail "example validation"
  for f in "$REPO_ROOT"/examples/*.yaml; do
    if grep -q '^kind: PerfValidation' "$f"; then
      kubectl apply -f "$f" >/dev/null || fail "examples/$(basename "$f") does not apply"
    fi
  done
  # set_status NAME FIXTURE: the status of tests/gitops/testdata/FIXTURE.json, written through
  # the status subresource as the operator writes it, at the object's current generation.
  set_status() {
    local gen
    gen="$(kubectl get pval "$1" -o 'jsonpath={.metadata.generation}')"
    lua5.1 "$here/status_patch.lua" "$here/testdata/$2.json" "$gen" >"$WORK_DIR/patch.json"
    kubectl patch pval "$1" --subresource=status --type=merge --patch-file "$WORK_DIR/patch.json" \
      >/dev/null || fail "status patch $1 <- $2"
  }
  new_pval() {
    { pval_head "$1"; printf '  profile: h200-sxm-141gb\n  level: quick\n'; } \
      | kubectl apply -f - >/dev/null || fail "create $1"
  }
  # gate NAME WANT_EXIT [TIMEOUT]
  gate() {
    local rc=0
    bash "$gitops/ci/gate.sh" "$1" "${3:-10s}" >"$WORK_DIR/gate-$1.log" 2>&1 || rc=$?
    [ "$rc" = "$2" ] || { cat "$WORK_DIR/gate-$1.log" >&2; fail "gate.sh $1: exit $rc, want $2"; }
  }
  # health NAME WANT: the Argo CD script on the object as the API server returns it.
  health() {
    kubectl get pval "$1" -o json >"$WORK_DIR/$1.json"
    local fixture_dir="$WORK_DIR/recorded-$1"
    mkdir -p "$fixture_dir" && cp "$WORK_DIR/$1.json" "$fixture_dir/$1.json"
    echo "$1 $2 " >"$fixture_dir/expected.txt"
    lua5.1 "$here/health_test.lua" "$gitops/argocd/perfvalidation-health.lua" "$fixture_dir" \
      "$fixture_dir/expected.txt" >/dev/null || fail "Argo CD health of stored $1: want $2"
  }
  for case in passed failed inconclusive node-error invalid-spec running; do
    new_pval "$case"
    set_status "$case" "$case"
  done
  new_pval fresh
  gate passed 0
  grep -q 'passed: all 4 nodes passed' "$WORK_DIR/gate-passed.log" || fail "gate.sh does not say why it passed"
  gate failed 1
  grep -q 'TestsFailed' "$WORK_DIR/gate-failed.log" || fail "gate.sh does not give the reason"
  gate inconclusive 1
  gate node-error 1
  gate invalid-spec 1
  gate running 2 2s
  gate fresh 2 2s
  gate no-such-validation 2
  # A spec change after the verdict: the old Complete must not open the gate.
  kubectl patch pval passed --type=merge -p '{"spec":{"level":"full"}}' >/dev/null
  gate passed 2 2s
  health passed Progressing
  set_status passed passed
  gate passed 0
  health passed Healthy
  health failed Degraded
  health running Progressing
  health fresh Progressing
  echo "ci-gate: ok"
  ;;
*)
  echo "usage: gitops_test.sh argocd-cm|ci-gate" >&2
  exit 2
  ;;
esac

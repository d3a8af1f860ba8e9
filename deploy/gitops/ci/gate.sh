#!/usr/bin/env bash
# CI gate on a PerfValidation: wait until it is Complete, then read Passed.
#   deploy/gitops/ci/gate.sh NAME [TIMEOUT (kubectl duration, default 60m)]
# Exit 0: passed. 1: completed, not passed (the reason and message are printed).
# 2: not complete within TIMEOUT, or the validation could not be read: treat as not passed.
# Needs kubectl with a context that may get perfvalidations.
set -uo pipefail
name="${1:?usage: gate.sh NAME [TIMEOUT]}"
timeout="${2:-60m}"
pval="perfvalidations.perfgate.io/$name"

# A validation the operator has not looked at yet (observedGeneration behind generation) may
# still carry a Complete condition from the previous generation: wait for the operator first.
generation="$(kubectl get "$pval" -o 'jsonpath={.metadata.generation}')" || exit 2
if ! kubectl wait "$pval" --for="jsonpath={.status.observedGeneration}=$generation" \
    --timeout="$timeout" >/dev/null; then
  echo "gate: $name: the operator did not observe generation $generation within $timeout" >&2
  exit 2
fi
if ! kubectl wait "$pval" --for=condition=Complete --timeout="$timeout" >/dev/null; then
  echo "gate: $name: not complete within $timeout" >&2
  exit 2
fi
passed="$(kubectl get "$pval" -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')" || exit 2
reason="$(kubectl get "$pval" -o 'jsonpath={.status.conditions[?(@.type=="Passed")].reason}')"
message="$(kubectl get "$pval" -o 'jsonpath={.status.conditions[?(@.type=="Passed")].message}')"
if [ "$passed" = "True" ]; then
  echo "gate: $name passed: $message"
  exit 0
fi
echo "gate: $name did not pass ($reason): $message" >&2
exit 1

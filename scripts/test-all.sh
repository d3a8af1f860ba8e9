#!/usr/bin/env bash
# Installs what is missing, builds everything once (warnings as errors), checks formatting,
# and runs every test: unit, integration and end-to-end suites (CTest), then the spec
# loader's fuzzer for a minute. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
bash scripts/install-deps.sh

echo "== format check"
bash scripts/check-format.sh

echo "== build (preset ci)"
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"

echo "== the operator without CUDA (preset nocuda: what the operator image holds)"
cmake --preset nocuda -DPERFGATE_TESTS=OFF >/dev/null
cmake --build --preset nocuda -j "$(nproc)" --target perfgate-operator perfgate-worker

echo "== tests"
ctest --preset ci -j "$(nproc)" --timeout 600

echo "== fuzz the spec loader (60 s)"
bash scripts/fuzz-spec.sh 60

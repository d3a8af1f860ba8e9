#!/usr/bin/env bash
# The newcomer's command: install what is missing, build, and run the local validation
# (examples/local.yaml) on this machine. Reports go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
bash scripts/install-deps.sh build
# Only what a run needs: no test suites (their dependencies are install-deps.sh test).
cmake --preset default -DPERFGATE_TESTS=OFF >/dev/null
cmake --build --preset default --target perfgate
mkdir -p out
exec build/cli/perfgate run "${1:-examples/local.yaml}" \
  --report-json out/local-report.json --junit out/local-junit.xml

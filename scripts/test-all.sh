#!/usr/bin/env bash
# Installs what is missing, checks formatting and the layers, builds everything once (warnings
# as errors), checks clang-tidy, and runs every test: unit, integration and end-to-end suites
# (CTest), then the spec loader's fuzzer for a minute. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
bash scripts/install-deps.sh test services

echo "== format check"
bash scripts/check-format.sh

echo "== layers check (each folder uses only the layers below it)"
bash scripts/check-layers.sh

echo "== build (preset ci)"
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"

echo "== clang-tidy (.clang-tidy) on the product sources"
bash scripts/check-tidy.sh build-ci

echo "== the product without CUDA or fixtures (preset nocuda: what the images hold)"
# Built to prove it builds, for the image tests and the Debian package test: -O1 without debug
# information, which compiles in about half the time of the preset's -O2 -g.
cmake --preset nocuda -DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" >/dev/null
cmake --build --preset nocuda -j "$(nproc)" --target perfgate-operator perfgate-worker perfgate

echo "== tests"
ctest --preset ci -j "$(nproc)" --timeout 600

echo "== fuzz the spec loader (60 s)"
bash scripts/fuzz-spec.sh 60

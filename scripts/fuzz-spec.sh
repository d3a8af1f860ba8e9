#!/usr/bin/env bash
# Fuzzes the spec loader and plan builder with libFuzzer for SECONDS (default 60).
# Builds its own clang tree (build-fuzz/): libFuzzer needs clang, the main build uses g++.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${2:-${1:-60}}"
[[ "$seconds" =~ ^[0-9]+$ ]] || seconds=60
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPERFGATE_CUDA=OFF \
  -DPERFGATE_FUZZ=ON -DPERFGATE_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target perfgate_spec_fuzz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/* tests/fuzz/regressions/* "$work/"
# -rss_limit_mb: a spec must not need much memory; -timeout: nor much time.
build-fuzz/tests/fuzz/perfgate_spec_fuzz "$work" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 2>&1 | tail -n 15

#!/usr/bin/env bash
# Installs the Debian 12 packages perfgate needs to build and test, if any are missing.
# The CUDA 13 toolkit (with cuBLAS and NCCL) is expected at /usr/local/cuda on GPU-build
# machines; without it the build turns CUDA off by itself.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libcpprest-dev libssl-dev libboost-system-dev
  libyaml-cpp-dev libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev nlohmann-json3-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # The results store: SQLite and libpq; the PostgreSQL server its tests start.
  libsqlite3-dev libpq-dev postgresql
  clang clang-format clang-tidy libclang-rt-14-dev
  # The CI preset links with lld (much faster than ld.bfd on the test binaries).
  lld
  # Chart, GitOps and image tests: chart-render (Go + sprig), Argo CD's Lua, debootstrap.
  golang-1.19-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev
  lua5.1 lua-cjson debootstrap curl python3
  # The HTML report's browser test.
  chromium fonts-dejavu-core
  # The metrics, alerting rules and dashboard checked against a real Prometheus and promtool.
  prometheus python3-yaml
)
missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# nvcc is found through PATH by CMake.
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "install-deps: note: add /usr/local/cuda/bin to PATH to build the CUDA kernels"
fi

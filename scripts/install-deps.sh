#!/usr/bin/env bash
# Installs the Debian 12 packages perfgate needs, if any are missing, by purpose:
#   build     building and running perfgate (the default): compilers, CMake, the libraries
#   test      the test suites: GoogleTest, clang-format/-tidy, lld, the chart renderer's Go,
#             Argo CD's Lua, debootstrap, umoci and skopeo, shells for the completion tests
#   services  the real servers some tests start on loopback: PostgreSQL, Prometheus, Chromium
#   bash scripts/install-deps.sh [build] [test] [services]
# The CUDA 13 toolkit (with cuBLAS and NCCL) is expected at /usr/local/cuda on GPU-build
# machines; without it the build turns CUDA off by itself.
set -euo pipefail

build=(
  build-essential cmake ninja-build pkg-config git
  libcpprest-dev libssl-dev libboost-system-dev
  libyaml-cpp-dev libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  # The results store: SQLite and libpq (the client library; the server is a service).
  libsqlite3-dev libpq-dev
)
test=(
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format clang-tidy libclang-rt-14-dev
  # The CI preset links with lld (much faster than ld.bfd on the test binaries).
  lld
  # Chart, GitOps and image tests: chart-render (Go + sprig), Argo CD's Lua, debootstrap; the
  # images and the release without a Docker engine (scripts/build-images.sh): umoci, skopeo.
  golang-1.19-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev golang-github-xeipuuv-gojsonschema-dev
  lua5.1 lua-cjson debootstrap curl python3 python3-yaml umoci skopeo
  # The Debian package test, and the completion tests' shells.
  dpkg-dev zsh
)
services=(
  # The store's PostgreSQL tests, the HTML report's browser test, the metrics and alerting
  # rules checked against a real Prometheus and promtool.
  postgresql chromium fonts-dejavu-core prometheus
)

purposes=("$@")
((${#purposes[@]})) || purposes=(build)
packages=()
for purpose in "${purposes[@]}"; do
  case "$purpose" in
    build) packages+=("${build[@]}") ;;
    test) packages+=("${build[@]}" "${test[@]}") ;;
    services) packages+=("${services[@]}") ;;
    *) echo "install-deps: unknown purpose '$purpose' (build, test, services)" >&2; exit 2 ;;
  esac
done
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

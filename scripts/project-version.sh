#!/usr/bin/env bash
# Prints perfgate's version, the one in the top-level CMakeLists.txt's project() (what the
# images, the chart's appVersion, the release's file names and the .deb carry).
set -euo pipefail
sed -n 's/^project(perfgate VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../CMakeLists.txt"

#!/usr/bin/env bash
# Fails when a C++ source differs from .clang-format (clang-format 14, Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
((${#files[@]})) || exit 0
clang-format --dry-run --Werror "${files[@]}"

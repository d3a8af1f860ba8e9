#!/usr/bin/env bash
# Copies the repository's CRDs (crds/) and built-in profiles (profiles/) into the chart, which
# must carry its own copies: Helm reads only files inside the chart, and a packaged chart
# travels without the repository. tests/chart checks that the copies are byte-identical.
# Usage: tests/chart/sync-chart-files.sh [--check]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
chart="$root/charts/perfgate"
check=0
[ "${1:-}" = "--check" ] && check=1
status=0
sync_dir() {  # sync_dir SRC DST
  local src="$1" dst="$2"
  mkdir -p "$dst"
  if ((check)); then
    if ! diff -r "$src" "$dst" >/dev/null; then
      echo "sync-chart-files: $dst differs from $src:" >&2
      diff -r "$src" "$dst" >&2 || true
      echo "sync-chart-files: run tests/chart/sync-chart-files.sh" >&2
      status=1
    fi
    return
  fi
  rm -f "$dst"/*.yaml
  cp -p "$src"/*.yaml "$dst"/
}
sync_dir "$root/crds" "$chart/crds"
sync_dir "$root/profiles" "$chart/files/profiles"
exit $status

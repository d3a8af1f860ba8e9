#!/usr/bin/env bash
# chart-render's own checks: gofmt clean, go vet clean, go test. Env: GO (the go binary) and
# the GOPATH-mode environment set by tests/chart/CMakeLists.txt.
set -euo pipefail
cd "$(dirname "$0")/render"
unformatted="$("$(dirname "$GO")/gofmt" -l .)"
[ -z "$unformatted" ] || { echo "gofmt: $unformatted" >&2; exit 1; }
"$GO" vet .
"$GO" test -count=1 .

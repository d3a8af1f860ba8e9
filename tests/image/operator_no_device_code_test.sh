#!/usr/bin/env bash
# The operator of a CUDA build links the tests' catalog, not their kernels (CTest label
# `image`): it loads no CUDA, cuBLAS or NCCL library, while the worker of the same build does
# (so the check can tell the two apart).
# Env: OPERATOR_BIN, WORKER_BIN.
set -euo pipefail
: "${OPERATOR_BIN:?}" "${WORKER_BIN:?}"
device_libs='lib(cudart|cublas|cublasLt|nccl)\.so'
# grep -q on a pipe would end ldd early with SIGPIPE, which pipefail reports as a failure.
grep -Eq "$device_libs" <<<"$(ldd "$WORKER_BIN")" \
  || { echo "FAIL: the worker loads no CUDA library: is this a CUDA build?" >&2; exit 1; }
if ldd "$OPERATOR_BIN" | grep -E "$device_libs"; then
  echo "FAIL: the operator loads device libraries (above): it should link perfgate_test_catalog" >&2
  exit 1
fi
echo "operator: no CUDA, cuBLAS or NCCL library; worker: $(ldd "$WORKER_BIN" | grep -Ec "$device_libs")"

#!/usr/bin/env bash
# Builds perfgate-worker (and the gpu-labelled device and NCCL tests) for the GPU machine and
# lays out a self-contained bundle in .bundle/ that travels there (64 MiB limit):
#   .bundle/bin/{perfgate-worker,gpu_device_test,nccl_gpu_test,workload_gpu_test}
#                                                    rpath $ORIGIN/../lib
#   .bundle/lib/                                     yaml-cpp, protobuf, libgomp, cudart, ... (small)
#   .bundle/lib-compat/                              libstdc++, libgcc_s: only for a machine whose
#                                                    own are older than the build's needs (they
#                                                    need glibc 2.36, so they are not in lib/)
#   .bundle/share/perfgate/profiles/*.yaml           built-in profiles (the worker's default dir)
#   .bundle/share/perfgate/examples/h200-node.yaml   the example gpu-check.sh runs
#   .bundle/scripts/gpu-check.sh                     runs from anywhere: finds the bundle it sits in
# cuBLASLt (541 MB) is NOT bundled: it is linked dynamically and found on the GPU machine in
# PyTorch's nvidia/*/lib folders (scripts/gpu-check.sh sets LD_LIBRARY_PATH).
#
# usage: scripts/bundle-worker.sh            (preset gpu-bundle; -j2 by default, JOBS=n to change)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
OUT=.bundle
BUILD=build-bundle
LIMIT_BYTES=$((64 * 1024 * 1024))

cmake --preset gpu-bundle >/dev/null
cmake --build --preset gpu-bundle -j "$JOBS" --target perfgate-worker gpu_device_test nccl_gpu_test \
  workload_gpu_test

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/lib-compat" "$OUT/share/perfgate/profiles" \
  "$OUT/share/perfgate/examples" "$OUT/scripts"
cp "$BUILD/worker/perfgate-worker" "$BUILD/tests/kernels/gpu_device_test" \
  "$BUILD/tests/nccl/nccl_gpu_test" "$BUILD/tests/kernels/workload_gpu_test" "$OUT/bin/"
strip --strip-unneeded "$OUT/bin/"*
cp profiles/*.yaml "$OUT/share/perfgate/profiles/"
cp examples/h200-node.yaml "$OUT/share/perfgate/examples/"
cp scripts/gpu-check.sh "$OUT/scripts/"

# Bundle every shared library the binaries need except the C runtime (glibc: the GPU machine's
# own must be used), the driver (libcuda, libnvidia-ml: dlopen'ed from the host) and the big
# CUDA math libraries that PyTorch's wheels provide there.
is_excluded() {
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*) return 0 ;;
    libcuda.so*|libnvidia-ml.so*|libcublas.so*|libcublasLt.so*|libnccl.so*) return 0 ;;
  esac
  return 1
}
# The C++ runtime goes to lib-compat/: Debian 12's libstdc++ needs glibc 2.36, while the
# binaries themselves need only GLIBCXX_3.4.29 / glibc 2.34 (e.g. Ubuntu 22.04's are enough).
is_compat() {
  case "$1" in libstdc++.so*|libgcc_s.so*) return 0 ;; esac
  return 1
}
for bin in "$OUT"/bin/*; do
  ldd "$bin" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if is_excluded "$name"; then continue; fi
    dest="$OUT/lib"
    if is_compat "$name"; then dest="$OUT/lib-compat"; fi
    if [ ! -e "$dest/$name" ]; then cp -L "$path" "$dest/$name"; fi
  done
done
strip --strip-unneeded "$OUT"/lib/*.so* "$OUT"/lib-compat/*.so* 2>/dev/null || true

# The rpath must point at the bundle's lib/ for the copies above to be used.
for bin in "$OUT"/bin/*; do
  if ! grep -q 'ORIGIN/../lib' <<<"$(readelf -d "$bin")"; then
    echo "bundle-worker: $bin lacks the \$ORIGIN/../lib rpath (PERFGATE_BUNDLE off?)" >&2
    exit 1
  fi
done

total=$(du -sb "$OUT" | cut -f1)
echo "bundle: $OUT, $((total / 1024 / 1024)) MiB ($total bytes)"
ls -la "$OUT/bin" "$OUT/lib" "$OUT/lib-compat"
for f in "$OUT"/bin/* "$OUT"/lib/*.so*; do
  objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*'
done | sort -uV | tail -1 | sed 's/^/bin and lib need at least /' 
if [ "$total" -gt "$LIMIT_BYTES" ]; then
  echo "bundle-worker: $total bytes is over the 64 MiB limit" >&2
  exit 1
fi

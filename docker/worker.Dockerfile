# syntax=docker/dockerfile:1
# perfgate-worker: built from source on the CUDA devel image, run on the matching CUDA runtime
# image, which carries cuBLAS and NCCL. NVML (libnvidia-ml.so.1) and libcuda come from the
# node's driver at run time: the NVIDIA container toolkit mounts them when the pod sets
# NVIDIA_DRIVER_CAPABILITIES=compute,utility (the operator's worker pods do).
#   docker buildx build -f docker/worker.Dockerfile --platform linux/amd64,linux/arm64 \
#     -t REGISTRY/perfgate-worker:TAG --push .
# arm64 is for Grace hosts (GH200, GB200). The CUDA images are Ubuntu, not Debian, so the
# image test that checks the operator image cannot check this one (docs/install.md).
ARG CUDA_VERSION=13.0.0
ARG CUDA_OS=ubuntu24.04
# A100 (80), H100/H200 and GH200 (90), B200 and GB200 (100).
ARG CUDA_ARCHITECTURES="80;90;100"

FROM nvidia/cuda:${CUDA_VERSION}-devel-${CUDA_OS} AS build
ARG CUDA_ARCHITECTURES
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build pkg-config g++ \
      libcpprest-dev libssl-dev libboost-system-dev \
      libyaml-cpp-dev libprotobuf-dev protobuf-compiler libcli11-dev \
      libspdlog-dev libfmt-dev nlohmann-json3-dev libpq-dev libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# PERFGATE_BUNDLE: $ORIGIN/../lib rpath, so the runtime stage needs no distribution packages
# beyond the CUDA base: the small libraries travel in /opt/perfgate/lib.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPERFGATE_CUDA=ON -DPERFGATE_BUNDLE=ON -DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
 && cmake --build /build --target perfgate-worker \
 && install -D -s /build/worker/perfgate-worker /opt/perfgate/bin/perfgate-worker \
 && mkdir -p /opt/perfgate/lib /opt/perfgate/share/perfgate/profiles \
 && cp profiles/*.yaml /opt/perfgate/share/perfgate/profiles/ \
 && ldd /opt/perfgate/bin/perfgate-worker | awk '/=>/ && $3 ~ /^\// {print $1, $3}' \
    | while read -r name path; do \
        case "$name" in \
          linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*) ;; \
          libstdc++.so*|libgcc_s.so*) ;; \
          libcuda.so*|libnvidia-ml.so*|libcublas*|libnccl*|libcudart*) ;; \
          *) cp -L "$path" "/opt/perfgate/lib/$name" ;; \
        esac; \
      done \
 && strip --strip-unneeded /opt/perfgate/lib/*.so*

FROM nvidia/cuda:${CUDA_VERSION}-runtime-${CUDA_OS}
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    PATH=/opt/perfgate/bin:${PATH}
COPY --from=build /opt/perfgate /opt/perfgate
USER 65532:65532
ENTRYPOINT ["/opt/perfgate/bin/perfgate-worker"]

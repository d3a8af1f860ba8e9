# syntax=docker/dockerfile:1
# perfgate-worker: built with CUDA on Debian 12 (the CUDA toolkit from NVIDIA's Debian 12
# repository), run on debian:bookworm-slim with the CUDA runtime libraries it links (cudart,
# cuBLAS/cuBLASLt, NCCL) copied from that toolkit. NVML (libnvidia-ml.so.1) and libcuda come
# from the node's driver at run time: the NVIDIA container toolkit mounts them when the pod sets
# NVIDIA_DRIVER_CAPABILITIES=compute,utility (the operator's worker pods do).
#   docker buildx build -f docker/worker.Dockerfile --platform linux/amd64,linux/arm64 \
#     -t REGISTRY/perfgate-worker:TAG --push .
# arm64 is for Grace hosts (GH200, GB200): its toolkit comes from NVIDIA's sbsa repository.
# The same image as scripts/build-images.sh builds without a Docker engine (the release's
# archive): the runtime packages, user, entrypoint, working directory and env below are that
# script's (`scripts/build-images.sh --describe worker`), and a test keeps them in step.

FROM debian:bookworm AS build
ARG TARGETARCH
# A100 (80), H100/H200 and GH200 (90), B200 and GB200 (100).
ARG CUDA_ARCHITECTURES="80;90;100"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl gnupg \
      build-essential cmake ninja-build pkg-config \
      libcpprest-dev libssl-dev libboost-system-dev \
      libyaml-cpp-dev libprotobuf-dev protobuf-compiler libcli11-dev \
      libspdlog-dev libfmt-dev nlohmann-json3-dev libpq-dev libsqlite3-dev \
 && case "${TARGETARCH}" in arm64) repo_arch=sbsa ;; *) repo_arch=x86_64 ;; esac \
 && curl -fsSLo /tmp/cuda-keyring.deb \
      "https://developer.download.nvidia.com/compute/cuda/repos/debian12/${repo_arch}/cuda-keyring_1.1-1_all.deb" \
 && dpkg -i /tmp/cuda-keyring.deb \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cuda-nvcc-13-0 cuda-cudart-dev-13-0 libcublas-dev-13-0 libnccl-dev cuda-nvml-dev-13-0 \
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/local/cuda/bin:${PATH}
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPERFGATE_CUDA=ON -DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
 && cmake --build /build --target perfgate-worker \
 && install -D -s /build/worker/perfgate-worker /out/usr/local/bin/perfgate-worker \
 && install -D -m 0644 -t /out/usr/local/share/perfgate/profiles profiles/*.yaml \
 && mkdir -p /out/usr/local/lib \
 && ldd /build/worker/perfgate-worker | awk '/=>/ && $3 ~ /^\/usr\/local\/cuda/ { print $3 }' \
    | xargs -r -I{} cp -L {} /out/usr/local/lib/ \
 && strip --strip-unneeded /out/usr/local/lib/*.so* 2>/dev/null || true

FROM debian:bookworm-slim
# Exactly the shared libraries perfgate-worker links from Debian (ldd), by their bookworm package.
ARG RUNTIME_PACKAGES="libcpprest2.10 libssl3 libyaml-cpp0.7 libprotobuf32 libspdlog1.10 libfmt9 libgomp1 libpq5 libsqlite3-0"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/* \
 && echo "perfgate:x:65532:" >>/etc/group \
 && echo "perfgate:x:65532:65532:perfgate:/var/lib/perfgate:/usr/sbin/nologin" >>/etc/passwd \
 && install -d -o 65532 -g 65532 /var/lib/perfgate
COPY --from=build /out/ /
RUN ldconfig
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 65532:65532
WORKDIR /var/lib/perfgate
ENTRYPOINT ["/usr/local/bin/perfgate-worker"]

# syntax=docker/dockerfile:1
# perfgate-operator: built without CUDA, run on debian:bookworm-slim as a non-root user.
#   docker buildx build -f docker/operator.Dockerfile --platform linux/amd64,linux/arm64 \
#     -t REGISTRY/perfgate-operator:TAG --push .
# Each platform compiles natively in its own build stage (arm64 under QEMU on an amd64 host:
# slow but exact; Debian 12 has every dependency for both).
# The same image as scripts/build-images.sh builds without a Docker engine (the release's
# archive): the runtime packages, user, entrypoint, working directory and env below are that
# script's (`scripts/build-images.sh --describe operator`), and a test keeps them in step.

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libcpprest-dev libssl-dev libboost-system-dev \
      libyaml-cpp-dev libprotobuf-dev protobuf-compiler libcli11-dev \
      libspdlog-dev libfmt-dev nlohmann-json3-dev libpq-dev libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPERFGATE_CUDA=OFF -DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF \
 && cmake --build /build --target perfgate-operator \
 && install -D -s /build/operator/perfgate-operator /out/usr/local/bin/perfgate-operator \
 && install -D -m 0644 -t /out/usr/local/share/perfgate/profiles profiles/*.yaml

FROM debian:bookworm-slim
# Exactly the shared libraries perfgate-operator links (ldd), by their bookworm package.
ARG RUNTIME_PACKAGES="libcpprest2.10 libssl3 libyaml-cpp0.7 libprotobuf32 libspdlog1.10 libfmt9 libgomp1 libpq5 libsqlite3-0"
# tzdata: the zone files a spec.timeZone names (read from /usr/share/zoneinfo).
ARG DATA_PACKAGES="tzdata"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ${RUNTIME_PACKAGES} ${DATA_PACKAGES} \
 && rm -rf /var/lib/apt/lists/* \
 && echo "perfgate:x:65532:" >>/etc/group \
 && echo "perfgate:x:65532:65532:perfgate:/var/lib/perfgate:/usr/sbin/nologin" >>/etc/passwd \
 && install -d -o 65532 -g 65532 /var/lib/perfgate
COPY --from=build /out/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Numeric, so the pod's runAsNonRoot can verify it (charts/perfgate: runAsUser 65532).
USER 65532:65532
WORKDIR /var/lib/perfgate
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/perfgate-operator"]

#!/usr/bin/env bash
# Builds perfgate's two container images, perfgate-operator and perfgate-worker, as OCI image
# archives without a Docker engine: a Debian bookworm minbase root (debootstrap, cached by
# scripts/debian-root.sh) with exactly the runtime packages below, the project's binaries and the
# built-in profiles, packed with umoci and written as an archive with skopeo.
#   OUT/perfgate-operator-VERSION-amd64.oci.tar   from OPERATOR_TREE (default build-nocuda)
#   OUT/perfgate-worker-VERSION-amd64.oci.tar     from WORKER_TREE: a CUDA build when one is
#       given, with the CUDA runtime libraries the worker links (cudart, cuBLAS/cuBLASLt, NCCL)
#       copied from the toolkit it was built with; libcuda and NVML are not in the image, the
#       node's driver provides them at run time (the NVIDIA container toolkit mounts them).
# Both trees must be product builds (PERFGATE_TESTS=OFF, PERFGATE_TEST_FIXTURES=OFF), as
# scripts/test-all.sh builds the `nocuda` preset. Only amd64: the binaries are this machine's.
#
# usage: scripts/build-images.sh [--out DIR] [--cache DIR] [--operator-tree DIR]
#                                [--worker-tree DIR] [--version V]
#        scripts/build-images.sh --describe operator|worker
# --describe prints what an image is made of (packages, user, entrypoint, working dir, env),
# one `key: value` a line: docker/*.Dockerfile describe the same images, and
# tests/image/dockerfiles_test.sh checks the two agree.
# Needs root, debootstrap, umoci and skopeo (scripts/install-deps.sh test) and a Debian mirror
# (PERFGATE_DEBIAN_MIRROR). Labels: PERFGATE_SOURCE_URL, the revision from git.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

# The images. The shared libraries both binaries link, by their bookworm package (ldd; the
# image test checks each is needed and nothing is missing).
LIB_PACKAGES="libcpprest2.10 libssl3 libyaml-cpp0.7 libprotobuf32 libspdlog1.10 libfmt9 libgomp1 libpq5 libsqlite3-0"
# Numeric, so a pod's runAsNonRoot can verify it (the chart and the worker pods: 65532).
IMAGE_USER="65532:65532"
IMAGE_WORKDIR="/var/lib/perfgate"
# Set, not left to the runtime: the worker pods run `perfgate-worker` through it.
IMAGE_PATH="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
describe() {
  case "$1" in
    operator)
      # tzdata: the zone files a spec.timeZone names (read from /usr/share/zoneinfo).
      echo "packages: $LIB_PACKAGES tzdata"
      echo "binary: /usr/local/bin/perfgate-operator"
      echo "entrypoint: /usr/local/bin/perfgate-operator"
      echo "env: $IMAGE_PATH"
      ;;
    worker)
      echo "packages: $LIB_PACKAGES"
      echo "binary: /usr/local/bin/perfgate-worker"
      echo "entrypoint: /usr/local/bin/perfgate-worker"
      # What the operator's worker pods set too: the driver's compute and NVML libraries.
      echo "env: $IMAGE_PATH NVIDIA_DRIVER_CAPABILITIES=compute,utility"
      ;;
    *)
      echo "build-images: no image '$1' (operator, worker)" >&2
      return 2
      ;;
  esac
  echo "user: $IMAGE_USER"
  echo "workdir: $IMAGE_WORKDIR"
  echo "profiles: /usr/local/share/perfgate/profiles"
}
field() { describe "$1" | sed -n "s/^$2: //p"; }

out="$repo/build-images"
cache=""
operator_tree="$repo/build-nocuda"
worker_tree="$repo/build-nocuda"
version="$(bash "$repo/scripts/project-version.sh")"
while (($#)); do
  case "$1" in
    --describe)
      describe "${2:?--describe operator|worker}"
      exit
      ;;
    --out) out="${2:?}"; shift 2 ;;
    --cache) cache="${2:?}"; shift 2 ;;
    --operator-tree) operator_tree="${2:?}"; shift 2 ;;
    --worker-tree) worker_tree="${2:?}"; shift 2 ;;
    --version) version="${2:?}"; shift 2 ;;
    *)
      echo "build-images: unknown argument '$1' (see the usage at the top of $0)" >&2
      exit 2
      ;;
  esac
done
cache="${cache:-$out/cache}"
fail() {
  echo "build-images: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, and files owned by the image's user)"
for tool in debootstrap umoci skopeo; do
  command -v "$tool" >/dev/null || fail "needs $tool (bash scripts/install-deps.sh test)"
done
# shellcheck source=scripts/debian-root.sh
source "$repo/scripts/debian-root.sh"

revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
if [ "$revision" != unknown ] && [ -n "$(git -C "$repo" status --porcelain -uno 2>/dev/null)" ]; then
  revision="$revision-dirty"
fi
# The image's creation time is the commit's, so a rebuild of one commit says the same.
created="$(date -u -d "@$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)" +%Y-%m-%dT%H:%M:%SZ)"
source_url="${PERFGATE_SOURCE_URL:-https://github.com/perfgate/perfgate}"
mkdir -p "$out" "$cache"

# assemble NAME BINARY: the image's root filesystem in $cache/NAME-rootfs.
assemble() {
  local name="$1" bin="$2" stage="$cache/$1-rootfs" base packages lib
  packages="$(field "$name" packages)"
  # shellcheck disable=SC2086  # the package list is meant to split into words
  base="$(debian_root "$cache" $packages)" || fail "the $name root (debootstrap, apt-get)"
  rm -rf --one-file-system "$stage"
  cp -a "$base" "$stage"
  # What debian:bookworm-slim leaves out too; the copyright files stay.
  find "$stage/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
  find "$stage/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$stage"/usr/share/{man,info,locale,lintian}/* "$stage"/var/cache/* "$stage"/var/log/* \
    "$stage"/var/lib/apt/lists/* "$stage"/tmp/* "$stage"/var/cache/debconf/*-old
  install -D -m 0755 "$bin" "$stage$(field "$name" binary)"
  strip --strip-unneeded "$stage$(field "$name" binary)"
  mkdir -p "$stage$(field "$name" profiles)"
  install -m 0644 "$repo"/profiles/*.yaml "$stage$(field "$name" profiles)/"
  # The CUDA runtime libraries the binary links from the toolkit (a CUDA build): beside the
  # distribution's, in /usr/local/lib (in ld.so.cache, which the NVIDIA container toolkit
  # rebuilds when it adds the driver's libraries).
  local cuda_libs=0
  while read -r lib; do
    cp -L "$lib" "$stage/usr/local/lib/$(basename "$lib")"
    strip --strip-unneeded "$stage/usr/local/lib/$(basename "$lib")" 2>/dev/null || true
    cuda_libs=$((cuda_libs + 1))
  done < <(ldd "$bin" | awk '/=>/ && $3 ~ /^\// { print $3 }' | grep '^/usr/local/cuda' || true)
  if ((cuda_libs)); then echo "build-images: $name: $cuda_libs CUDA runtime libraries" >&2; fi
  ldconfig -r "$stage"
  # The user the pods run as, named (tools print it), and its working directory.
  local uid="${IMAGE_USER%%:*}" gid="${IMAGE_USER##*:}"
  grep -q "^perfgate:" "$stage/etc/group" || echo "perfgate:x:$gid:" >>"$stage/etc/group"
  grep -q "^perfgate:" "$stage/etc/passwd" \
    || echo "perfgate:x:$uid:$gid:perfgate:$IMAGE_WORKDIR:/usr/sbin/nologin" >>"$stage/etc/passwd"
  install -d -o "$uid" -g "$gid" -m 0755 "$stage$IMAGE_WORKDIR"
}

# pack NAME: the OCI image from $cache/NAME-rootfs, as $out/perfgate-NAME-VERSION-amd64.oci.tar.
pack() {
  local name="$1" layout="$out/oci-$1" image="perfgate-$1" archive env
  archive="$out/perfgate-$name-$version-amd64.oci.tar"
  rm -rf "$layout" "$archive"
  umoci init --layout "$layout"
  umoci new --image "$layout:$version"
  umoci insert --image "$layout:$version" --history.created "$created" \
    --history.created_by "scripts/build-images.sh: Debian bookworm minbase and $image" \
    "$cache/$name-rootfs" /
  local args=(--config.user "$IMAGE_USER" --config.workingdir "$IMAGE_WORKDIR"
    --config.entrypoint "$(field "$name" entrypoint)" --os linux --architecture amd64
    --created "$created" --history.created "$created" --history.created_by "umoci config")
  for env in $(field "$name" env); do args+=(--config.env "$env"); done
  local key value
  for kv in "org.opencontainers.image.title=$image" "org.opencontainers.image.version=$version" \
    "org.opencontainers.image.revision=$revision" "org.opencontainers.image.source=$source_url" \
    "org.opencontainers.image.created=$created" "org.opencontainers.image.base.name=debian:bookworm"; do
    key="${kv%%=*}"
    value="${kv#*=}"
    args+=(--config.label "$key=$value" --manifest.annotation "$key=$value")
  done
  umoci config --image "$layout:$version" "${args[@]}"
  umoci gc --layout "$layout"
  skopeo copy -q "oci:$layout:$version" "oci-archive:$archive:$version"
  rm -rf "$layout"
  echo "build-images: $archive $(du -m "$archive" | cut -f1) MiB" >&2
}

for name in operator worker; do
  tree="$operator_tree"
  [ "$name" = worker ] && tree="$worker_tree"
  bin="$tree/$name/perfgate-$name"
  [ -x "$bin" ] || fail "no $bin: build the product first (cmake --preset nocuda \
-DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF && cmake --build --preset nocuda --target \
perfgate-operator perfgate-worker)"
  if grep -q '^PERFGATE_TEST_FIXTURES:BOOL=ON' "$tree/CMakeCache.txt" 2>/dev/null; then
    fail "$tree is built with the test fixtures: the images hold the product only"
  fi
  start=$SECONDS
  assemble "$name" "$bin"
  pack "$name"
  echo "build-images: $name took $((SECONDS - start)) s" >&2
done

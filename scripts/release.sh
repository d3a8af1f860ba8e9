#!/usr/bin/env bash
# Builds perfgate's release into one directory, everything a provider mirrors into a private
# (even air-gapped) registry and installs from there (docs/install.md, "Air-gapped install"):
#   perfgate-operator-VERSION-amd64.oci.tar   the operator image (OCI archive)
#   perfgate-worker-VERSION-amd64.oci.tar     the worker image (OCI archive)
#   perfgate-CHARTVERSION.tgz                 the Helm chart, as `helm package` lays it out,
#                                             byte for byte the same for the same commit
#   perfgate-crds-VERSION.yaml                the CustomResourceDefinitions
#   perfgate_VERSION_amd64.deb                the CLI (perfgate, kubectl-perfgate), CPack
#   SHA256SUMS                                the checksums of all of the above (sha256sum -c)
# The images are amd64 only: they hold this machine's binaries, and the CUDA toolkit here is
# x86_64 (docker/*.Dockerfile build arm64 images where Docker and an arm64 toolkit are).
#
# usage: scripts/release.sh [--out DIR] [--cache DIR] [--product-tree DIR] [--worker-tree DIR]
#        scripts/release.sh --chart-only --out DIR      (just the chart archive)
# Without --product-tree the `nocuda` preset is configured as a product (no tests, no fixtures)
# and built; without --worker-tree the worker is built with CUDA (all data-centre GPU
# architectures) in build-release-cuda, which needs nvcc. Given trees are used as they are.
# Needs what scripts/build-images.sh needs (root, debootstrap, umoci, skopeo), and dpkg-dev.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
version="$(bash "$repo/scripts/project-version.sh")"
out="$repo/build-release/perfgate-$version"
cache=""
product_tree=""
worker_tree=""
chart_only=0
while (($#)); do
  case "$1" in
    --out) out="${2:?}"; shift 2 ;;
    --cache) cache="${2:?}"; shift 2 ;;
    --product-tree) product_tree="${2:?}"; shift 2 ;;
    --worker-tree) worker_tree="${2:?}"; shift 2 ;;
    --chart-only) chart_only=1; shift ;;
    *)
      echo "release: unknown argument '$1' (see the usage at the top of $0)" >&2
      exit 2
      ;;
  esac
done
fail() {
  echo "release: $*" >&2
  exit 1
}
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cache="${cache:-$repo/build-release/cache}"
jobs="${JOBS:-$(nproc)}"
# Every file's time in the archives is the commit's, so the same commit gives the same bytes.
epoch="$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)"

# The chart archive as `helm package` makes it: CHART-VERSION.tgz holding CHART/..., Chart.yaml,
# values.yaml and values.schema.json first, the rest in name order, .helmignore's patterns left
# out; owner root, mode 0644 (directories 0755), one modification time, gzip without a name.
chart_archive() {
  local chart="$repo/charts/perfgate" name chart_version list
  name="$(sed -n 's/^name: *//p' "$chart/Chart.yaml")"
  chart_version="$(sed -n 's/^version: *//p' "$chart/Chart.yaml")"
  list="$(mktemp)"
  (
    cd "$chart"
    for f in Chart.yaml values.yaml values.schema.json; do [ -e "$f" ] && echo "$f"; done
    find . -type f | sed 's|^\./||' | LC_ALL=C sort \
      | grep -vxF -e Chart.yaml -e values.yaml -e values.schema.json \
      | while read -r f; do
        skip=""
        while read -r pattern; do
          case "$pattern" in '' | '#'*) continue ;; esac
          pattern="${pattern%/}"
          # shellcheck disable=SC2254  # the patterns are globs
          case "$f" in $pattern | $pattern/* | */$pattern | */$pattern/*) skip=1 ;; esac
        done <"$chart/.helmignore"
        [ -n "$skip" ] || echo "$f"
      done
  ) >"$list"
  tar -C "$chart" --transform "s|^|$name/|" --no-recursion --owner=0 --group=0 --numeric-owner \
    --mode='u=rwX,go=rX' --mtime="@$epoch" --format=ustar -cf - -T "$list" \
    | gzip -9 -n >"$out/$name-$chart_version.tgz"
  rm -f "$list"
  echo "release: $name-$chart_version.tgz" >&2
}
chart_archive
if ((chart_only)); then exit 0; fi

[ "$(id -u)" = 0 ] || fail "needs root (scripts/build-images.sh)"
if [ -z "$product_tree" ]; then
  product_tree="$repo/build-nocuda"
  cmake --preset nocuda -DPERFGATE_TESTS=OFF -DPERFGATE_TEST_FIXTURES=OFF >/dev/null
  cmake --build --preset nocuda -j "$jobs" --target perfgate-operator perfgate-worker perfgate
fi
if [ -z "$worker_tree" ]; then
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] \
    || fail "no nvcc: the worker image needs a CUDA build (or pass --worker-tree DIR)"
  worker_tree="$repo/build-release-cuda"
  PATH="$PATH:/usr/local/cuda/bin" cmake -S "$repo" -B "$worker_tree" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DPERFGATE_CUDA=ON -DPERFGATE_TESTS=OFF \
    -DPERFGATE_TEST_FIXTURES=OFF -DCMAKE_CUDA_ARCHITECTURES="80;90;100" >/dev/null
  PATH="$PATH:/usr/local/cuda/bin" cmake --build "$worker_tree" -j "$jobs" --target perfgate-worker
fi

bash "$repo/scripts/build-images.sh" --out "$out" --cache "$cache" --version "$version" \
  --operator-tree "$product_tree" --worker-tree "$worker_tree"


# The CRDs, one file for `kubectl apply -f`.
for crd in "$repo"/crds/*.yaml; do
  echo "---"
  cat "$crd"
done >"$out/perfgate-crds-$version.yaml"

# The CLI's Debian package, made by CPack in the product tree.
rm -rf "$out/deb" "$out"/perfgate_*.deb
mkdir -p "$out/deb"
(cd "$out/deb" && cpack -G DEB --config "$product_tree/CPackConfig.cmake" -B "$out/deb" \
  >"$out/deb/cpack.log" 2>&1) || { tail -20 "$out/deb/cpack.log" >&2; fail "cpack"; }
mv "$out"/deb/perfgate_*.deb "$out/"
rm -rf "$out/deb"

(cd "$out" && rm -f SHA256SUMS && sha256sum -- *.oci.tar *.tgz *.yaml *.deb >SHA256SUMS)
echo "release: $out" >&2
(cd "$out" && ls -l)

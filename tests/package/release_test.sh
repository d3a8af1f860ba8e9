#!/usr/bin/env bash
# The release as a provider gets it, and docs/install.md's air-gapped steps as far as this
# machine goes (CTest label `package`): scripts/release.sh writes the release directory from the
# product tree; then
#   - it holds exactly both image archives, the chart archive, the CRDs, the CLI's .deb and
#     SHA256SUMS, and `sha256sum -c SHA256SUMS` passes;
#   - the chart archive is what `helm package` lays out (perfgate/Chart.yaml first, every chart
#     file), made again it is the same bytes, and its appVersion is the images' tag;
#   - each image archive is copied with skopeo into a registry (a local OCI layout stands for
#     docker://REGISTRY) and keeps its digest;
#   - the chart from the archive, given the mirrored references (the operator pinned by digest,
#     the worker by tag), renders them and installs on kube-sim, whose Deployment names them.
# Needs what scripts/release.sh needs; exit 77 (skipped) without root, debootstrap, umoci or
# skopeo. Env: PRODUCT_TREE, KUBE_SIM, CHART_RENDER, REPO_ROOT, WORK_DIR, CACHE_DIR.
set -euo pipefail
# shellcheck source=tests/chart/lib.sh
source "$(dirname "$0")/../chart/lib.sh"
: "${PRODUCT_TREE:?}" "${KUBE_SIM:?}" "${CHART_RENDER:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}" "${CACHE_DIR:?}"
needs_root_and debootstrap umoci skopeo cpack
trap stop_kube_sim EXIT
rel="$WORK_DIR/release"
rm -rf "$rel" "$WORK_DIR/again" "$WORK_DIR/registry" "$WORK_DIR/chart"
mkdir -p "$WORK_DIR/registry"
mkdir -p "$WORK_DIR"
start=$SECONDS
run_logged scripts/release.sh "$WORK_DIR/release.log" bash "$REPO_ROOT/scripts/release.sh" --out "$rel" \
  --cache "$CACHE_DIR" --product-tree "$PRODUCT_TREE" --worker-tree "$PRODUCT_TREE"
echo "release: built in $((SECONDS - start)) s"
version="$(bash "$REPO_ROOT/scripts/project-version.sh")"
chart_version="$(sed -n 's/^version: *//p' "$REPO_ROOT/charts/perfgate/Chart.yaml")"
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$REPO_ROOT/charts/perfgate/Chart.yaml")"
[ "$app_version" = "$version" ] || fail "the chart's appVersion $app_version is not the images' tag $version"

expected="perfgate-$chart_version.tgz perfgate-crds-$version.yaml perfgate-operator-$version-amd64.oci.tar
perfgate-worker-$version-amd64.oci.tar perfgate_${version}_amd64.deb SHA256SUMS"
got="$(cd "$rel" && ls -A | sort | tr '\n' ' ')"
[ "$got" = "$(tr ' ' '\n' <<<"$expected" | sort | tr '\n' ' ')" ] \
  || fail "the release holds: $got; expected: $(tr '\n' ' ' <<<"$expected")"
(cd "$rel" && sha256sum -c --quiet SHA256SUMS) || fail "sha256sum -c SHA256SUMS"
[ "$(wc -l <"$rel/SHA256SUMS")" = 5 ] || fail "SHA256SUMS does not list all five artifacts"
[ "$(grep -c '^kind: CustomResourceDefinition' "$rel/perfgate-crds-$version.yaml")" = \
  "$(ls "$REPO_ROOT"/crds/*.yaml | wc -l)" ] || fail "the CRDs file lacks a CRD"
[ "$(dpkg-deb -f "$rel/perfgate_${version}_amd64.deb" Version)" = "$version" ] || fail "the .deb's version"

# The chart archive: helm's layout, reproducible.
tgz="$rel/perfgate-$chart_version.tgz"
[ "$(tar tzf "$tgz" | head -1)" = perfgate/Chart.yaml ] || fail "the chart archive does not start with perfgate/Chart.yaml"
mkdir -p "$WORK_DIR/chart"
tar xzf "$tgz" -C "$WORK_DIR/chart"
diff -r "$REPO_ROOT/charts/perfgate" "$WORK_DIR/chart/perfgate" >&2 || fail "the chart archive differs from charts/perfgate"
bash "$REPO_ROOT/scripts/release.sh" --chart-only --out "$WORK_DIR/again" 2>/dev/null
cmp "$tgz" "$WORK_DIR/again/perfgate-$chart_version.tgz" || fail "the chart archive is not reproducible"

# Mirror the images (docs/install.md: skopeo copy oci-archive:... docker://REGISTRY/...).
declare -A digest
for name in operator worker; do
  archive="$rel/perfgate-$name-$version-amd64.oci.tar"
  skopeo copy -q "oci-archive:$archive" "oci:$WORK_DIR/registry/perfgate-$name:$version" \
    || fail "skopeo copy $name"
  digest[$name]="$(skopeo inspect --format '{{.Digest}}' "oci:$WORK_DIR/registry/perfgate-$name:$version")"
  [ "${digest[$name]}" = "$(skopeo inspect --format '{{.Digest}}' "oci-archive:$archive")" ] \
    || fail "the $name image's digest changed in the copy"
done

# Install from the chart archive with the mirrored references.
registry=registry.example.com/perfgate
start_kube_sim "$WORK_DIR" --nodes 1
CHART_DIR="$WORK_DIR/chart/perfgate"  # install_chart (tests/chart/lib.sh) reads it
install_chart "$WORK_DIR" perfgate-system \
  --set "operator.image.repository=$registry/perfgate-operator" \
  --set "operator.image.digest=${digest[operator]}" \
  --set "worker.image.repository=$registry/perfgate-worker"
image="$(kubectl -n perfgate-system get deploy perfgate-operator -o 'jsonpath={.spec.template.spec.containers[0].image}')"
[ "$image" = "$registry/perfgate-operator@${digest[operator]}" ] \
  || fail "the installed Deployment runs $image, not the mirrored operator"
grep -qx -- "--worker-image=$registry/perfgate-worker:$version" <(operator_args "$WORK_DIR/rendered.yaml") \
  || fail "the operator is not given the mirrored worker image: $(operator_args "$WORK_DIR/rendered.yaml" | grep worker-image)"
echo "release: $(cd "$rel" && du -m -- * | tr '\t' ' ' | paste -sd, -); installed from the mirror in $((SECONDS - start)) s"

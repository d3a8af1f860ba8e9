#!/usr/bin/env bash
# The Debian package as a user gets it: `cpack -G DEB` in BUILD_DIR makes perfgate_*.deb; it is
# installed with apt (which resolves the dependencies the package declares) into a clean Debian
# bookworm minbase root, where no compiler and no build tree exist, and used there:
#   - `perfgate --help`, `perfgate list`, `perfgate plan examples/h200-node.yaml`, and
#     `perfgate run examples/local.yaml` (a verdict, exit 0) from the installed files only;
#   - `kubectl-perfgate` is installed beside it, the completion and man page where bash, zsh and
#     man look for them, and the built-in profiles under /usr/share/perfgate/profiles;
#   - bad input in the installed command: an unknown command, an unknown option, a missing file,
#     each exit 2 with a message that names it.
# The minbase root is cached in CACHE_DIR by scripts/debian-root.sh (the image tests' cache;
# PERFGATE_IMAGE_FRESH=1 makes it again). Needs root, debootstrap and a Debian mirror (PERFGATE_DEBIAN_MIRROR); exit 77
# (skipped) without root or debootstrap. Env: BUILD_DIR, REPO_ROOT, WORK_DIR, CACHE_DIR.
set -euo pipefail
: "${BUILD_DIR:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}" "${CACHE_DIR:?}"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
  echo "SKIP: needs root and debootstrap" >&2
  exit 77
fi
mkdir -p "$WORK_DIR"
root="$WORK_DIR/rootfs"
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount -R "$m" 2>/dev/null || true; done
}
trap cleanup EXIT

echo "package: cpack -G DEB"
(cd "$WORK_DIR" && rm -f perfgate_*.deb && cpack -G DEB --config "$BUILD_DIR/CPackConfig.cmake" \
  -B "$WORK_DIR" >"$WORK_DIR/cpack.log" 2>&1) || { tail -20 "$WORK_DIR/cpack.log" >&2; fail "cpack"; }
deb="$(ls "$WORK_DIR"/perfgate_*.deb)"
echo "package: $(basename "$deb") $(du -h "$deb" | cut -f1)"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "package: Depends: $depends"
for lib in libyaml-cpp0.7 libprotobuf32 libcpprest2.10 libspdlog1.10; do
  [[ "$depends" == *"$lib"* ]] || fail "the package does not declare $lib: $depends"
done
contents="$(dpkg-deb -c "$deb")"
for f in ./usr/bin/perfgate ./usr/bin/perfgate-worker ./usr/bin/kubectl-perfgate \
  ./usr/share/bash-completion/completions/perfgate ./usr/share/zsh/vendor-completions/_perfgate \
  ./usr/share/man/man1/perfgate.1 ./usr/share/perfgate/profiles/h200-sxm-141gb.yaml; do
  grep -q " $f\( \|$\)" <<<"$contents" || fail "the package lacks $f"
done
if grep -q 'perfgate-operator' <<<"$contents"; then fail "the CLI package holds the operator"; fi

# Each run starts from a copy of the cached minbase root: nothing of an earlier run is left.
# shellcheck source=scripts/debian-root.sh
source "$REPO_ROOT/scripts/debian-root.sh"
base="$(debian_minbase "$CACHE_DIR")" || fail "debootstrap"
umount -R "$root/proc" "$root/sys" 2>/dev/null || true
rm -rf --one-file-system "$root"
cp -a "$base" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
# sysfs itself (host-stream reads the CPUs' caches and NUMA nodes), not the mounts below it.
mount --bind /sys "$root/sys" && mounted+=("$root/sys")
mkdir -p "$root/tmp/pg"
cp "$deb" "$root/tmp/pg/"
cp "$REPO_ROOT/examples/local.yaml" "$REPO_ROOT/examples/h200-node.yaml" "$root/tmp/pg/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp/pg TERM=dumb "$@"; }
echo "package: apt-get install ./$(basename "$deb")"
in_root sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends /tmp/pg/$(basename "$deb")" >"$WORK_DIR/apt.log" 2>&1 \
  || { tail -20 "$WORK_DIR/apt.log" >&2; fail "apt-get install the package"; }
for tool in cc gcc c++ cmake nvcc; do
  if in_root sh -c "command -v $tool" >/dev/null; then fail "the clean root has $tool"; fi
done

out="$(in_root perfgate --help)" || fail "perfgate --help: $out"
for cmd in run plan list report compare export baseline store summary bundle rerun version; do
  grep -q "^  $cmd " <<<"$out" || fail "perfgate --help does not list $cmd"
done
out="$(in_root perfgate list)" || fail "perfgate list: $out"
grep -q '^host-stream  (host)' <<<"$out" || fail "perfgate list lacks host-stream: $out"
out="$(in_root sh -c 'cd /tmp/pg && perfgate plan h200-node.yaml --gpus 8')" \
  || fail "perfgate plan: $out"
grep -q 'profile h200-sxm-141gb' <<<"$out" || fail "the plan did not find the built-in profile: $out"
out="$(in_root sh -c 'cd /tmp/pg && perfgate run local.yaml --quiet 2>&1')" \
  || fail "perfgate run local.yaml exited $?: $out"
grep -q '^verdict: PASS' <<<"$out" || fail "perfgate run printed no PASS verdict: $out"
out="$(in_root kubectl-perfgate version)" || fail "kubectl-perfgate version: $out"
grep -q '^perfgate ' <<<"$out" || fail "kubectl-perfgate is not perfgate: $out"

expect_two() {
  local what="$1" needle="$2"
  shift 2
  local got rc=0
  got="$(in_root "$@" 2>&1)" || rc=$?
  [ "$rc" = 2 ] || fail "$what: exit $rc, not 2: $got"
  grep -qF -- "$needle" <<<"$got" || fail "$what: the message does not name '$needle': $got"
}
expect_two "an unknown command" 'unknown command "frobnicate"' perfgate frobnicate
expect_two "an unknown option" 'unknown option --colour' perfgate list --colour
expect_two "a missing file" '/tmp/pg/missing.yaml' perfgate run /tmp/pg/missing.yaml
expect_two "the agent's old plan" 'is now `perfgate plan`' perfgate-worker plan /tmp/pg/local.yaml
echo "package: installed into a clean bookworm root; list, plan and run work from it"

#!/usr/bin/env bash
# The operator image without a Docker engine (CTest label `image`): debootstrap a Debian
# bookworm minbase root (what debian:bookworm-slim is made from), install exactly the
# RUNTIME_PACKAGES that docker/operator.Dockerfile names, copy perfgate-operator in, and run
# it under chroot, as the image's non-root user 65532, against kube-sim on 127.0.0.1 with the
# chart's RBAC (the operator service account's token). Checks:
#   - every shared library resolves inside the root, and every listed package supplies one
#     (nothing missing, nothing extra);
#   - /healthz, /readyz and /metrics answer; the leader Lease is taken;
#   - a PerfValidation that selects no node completes, not passed (status written under RBAC);
#   - SIGTERM ends it with exit code 0.
# The root is cached in WORK_DIR/rootfs, keyed by the package list; PERFGATE_IMAGE_FRESH=1
# rebuilds it. Needs root, debootstrap, network access to a Debian mirror
# (PERFGATE_DEBIAN_MIRROR, default http://deb.debian.org/debian). Exit 77 (skipped) without
# root or debootstrap.
# Env: OPERATOR_BIN, KUBE_SIM, CHART_RENDER, REPO_ROOT, WORK_DIR.
set -euo pipefail
source "$(dirname "$0")/../chart/lib.sh"
: "${OPERATOR_BIN:?}" "${KUBE_SIM:?}" "${CHART_RENDER:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}"
CHART_DIR="$REPO_ROOT/charts/perfgate"
mirror="${PERFGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
  echo "SKIP: needs root and debootstrap" >&2
  exit 77
fi
[ -x "$OPERATOR_BIN" ] || fail "no operator binary at $OPERATOR_BIN (the image's is built without CUDA: cmake --preset nocuda && cmake --build --preset nocuda --target perfgate-operator)"

packages="$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$REPO_ROOT/docker/operator.Dockerfile")"
[ -n "$packages" ] || fail "no ARG RUNTIME_PACKAGES=\"...\" line in docker/operator.Dockerfile"
mkdir -p "$WORK_DIR"
root="$WORK_DIR/rootfs"
stamp="bookworm minbase $mirror: $packages"
proc_mounted=""
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; fi
  stop_kube_sim
  if [ -n "$proc_mounted" ]; then umount "$root/proc" 2>/dev/null || true; fi
}
trap cleanup EXIT

if [ "${PERFGATE_IMAGE_FRESH:-0}" = 1 ] || [ "$(cat "$root.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "image: debootstrap bookworm minbase ($mirror)"
  rm -rf "$root" "$root.stamp"
  start=$SECONDS
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$WORK_DIR/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK_DIR/debootstrap.log" >&2; fail "debootstrap"; }
  echo "image: debootstrap took $((SECONDS - start)) s"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc" && proc_mounted=1
  start=$SECONDS
  # shellcheck disable=SC2086  # the package list is meant to split into words
  chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends $packages && apt-get clean \
      && rm -rf /var/lib/apt/lists/*" >"$WORK_DIR/apt.log" 2>&1 \
    || { tail -20 "$WORK_DIR/apt.log" >&2; fail "apt-get install $packages"; }
  echo "image: runtime packages took $((SECONDS - start)) s"
  umount "$root/proc" && proc_mounted=""
  echo "$stamp" >"$root.stamp"
fi

install -D -m 0755 "$OPERATOR_BIN" "$root/usr/local/bin/perfgate-operator"
strip --strip-unneeded "$root/usr/local/bin/perfgate-operator" 2>/dev/null || true

# Libraries: all found in the root, and each listed package is one the binary loads from.
chroot "$root" ldd /usr/local/bin/perfgate-operator >"$WORK_DIR/ldd.txt" 2>&1 \
  || { cat "$WORK_DIR/ldd.txt" >&2; fail "ldd in the image root"; }
if grep -q 'not found' "$WORK_DIR/ldd.txt"; then
  grep 'not found' "$WORK_DIR/ldd.txt" >&2
  fail "libraries missing from the image: add their packages to RUNTIME_PACKAGES"
fi
awk '/=>/ && $3 ~ /^\// { n = split($3, p, "/"); print p[n] }' "$WORK_DIR/ldd.txt" | sort -u \
  >"$WORK_DIR/loaded.txt"
for pkg in $packages; do
  chroot "$root" dpkg -L "$pkg" | awk -F/ '{ print $NF }' | sort -u >"$WORK_DIR/pkg-files.txt"
  if [ -z "$(comm -12 "$WORK_DIR/loaded.txt" "$WORK_DIR/pkg-files.txt")" ]; then
    fail "RUNTIME_PACKAGES lists $pkg, but perfgate-operator loads no library from it"
  fi
done
echo "image: $(wc -l <"$WORK_DIR/loaded.txt") libraries resolve; packages: $packages"

# The cluster, with the chart installed; the operator gets its own service account's token.
start_kube_sim "$WORK_DIR" --nodes 2
install_chart "$WORK_DIR" perfgate-system
mkdir -p "$root/etc/perfgate"
operator_kubeconfig "$root/etc/perfgate/kubeconfig"
metrics_port="$(free_port)"
health_port="$(free_port)"
# The image's user, and the flags the chart's Deployment gives the operator.
mapfile -t args < <(operator_args "$WORK_DIR/rendered.yaml" \
  | drop_flags --metrics-bind-address --health-probe-bind-address)
((${#args[@]} >= 5)) || fail "no operator args in the rendered Deployment"
chroot --userspec=65532:65532 "$root" /usr/local/bin/perfgate-operator "${args[@]}" \
  --kubeconfig=/etc/perfgate/kubeconfig --metrics-bind-address="127.0.0.1:$metrics_port" \
  --health-probe-bind-address="127.0.0.1:$health_port" >"$WORK_DIR/operator.log" 2>&1 &
operator_pid=$!

ready=""
for _ in $(seq 150); do
  kill -0 "$operator_pid" 2>/dev/null || { cat "$WORK_DIR/operator.log" >&2; fail "operator exited"; }
  if curl -fsS "http://127.0.0.1:$health_port/readyz" >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || { tail -20 "$WORK_DIR/operator.log" >&2; fail "/readyz not 200 within 30 s"; }
curl -fsS "http://127.0.0.1:$health_port/healthz" >/dev/null || fail "/healthz"
curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$WORK_DIR/metrics.txt" || fail "/metrics"
grep -q '^perfgate_' "$WORK_DIR/metrics.txt" || fail "/metrics has no perfgate_ series"
wait_for kubectl -n perfgate-system get lease perfgate-operator-leader \
  || { tail -20 "$WORK_DIR/operator.log" >&2; fail "no leader Lease"; }

kubectl apply -f - >/dev/null <<'YAML'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: image-smoke
spec:
  nodeSelector:
    perfgate.io/no-such-label: "true"
  profile: h200-sxm-141gb
  level: quick
YAML
kubectl wait pval/image-smoke --for=condition=Complete --timeout=30s >/dev/null \
  || { tail -20 "$WORK_DIR/operator.log" >&2; kubectl get pval image-smoke -o yaml >&2; fail "validation not completed"; }
passed="$(kubectl get pval image-smoke -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = "False" ] || fail "a validation that selects no node must not pass (Passed=$passed)"
if grep -q '"code":403\|Forbidden' "$WORK_DIR/operator.log"; then
  grep -m5 '403\|Forbidden' "$WORK_DIR/operator.log" >&2
  fail "the operator hit RBAC denials under the chart's roles"
fi

kill -TERM "$operator_pid"
rc=0
wait "$operator_pid" || rc=$?
operator_pid=""
[ "$rc" = 0 ] || { tail -20 "$WORK_DIR/operator.log" >&2; fail "operator exit code $rc after SIGTERM"; }
echo "image: ok"

#!/usr/bin/env bash
# The two images as a cluster gets them (CTest label `image`): scripts/build-images.sh builds
# both OCI archives from the product tree; each is inspected, unpacked with umoci and run the
# way a kubelet runs it: its own root, its config's user, entrypoint, working directory and
# env, and the mounts of the chart's pods (the operator: a read-only root, /tmp an emptyDir, the
# service account's token where in-cluster config reads it; the worker: its plan read-only at
# /etc/perfgate, the pod-bound token of its service account, /dev/termination-log). Checks:
#   - config: the user is the chart's runAsUser (non-root, numeric), the entrypoint and working
#     directory are the script's, the labels and manifest annotations carry the version, the
#     source and this commit;
#   - every shared library resolves inside each image, and each runtime package supplies one;
#   - the worker image holds no compiler and no fixture test; `perfgate-worker list` lists
#     host-stream, and a local host-stream run passes;
#   - in cluster mode, the operator's worker pod (kube-sim's kubelet runs it from the worker
#     image, with the pod's env and mounts) runs a short host-stream on node-1 and writes its
#     PerfResult under the chart's worker Role and admission policy: read back, it names node-1
#     and says PASS, and the validation passes;
#   - the operator image, under the chart's RBAC against kube-sim: /readyz, /healthz and
#     /metrics answer, the leader Lease is taken, a validation that selects no node completes,
#     not passed, and says results are not kept (the default store.mode off); SIGTERM ends it 0.
# Image sizes are printed (docs/benchmarks.md). The Debian roots are cached in CACHE_DIR.
# Needs root, debootstrap, umoci, skopeo and a Debian mirror the first time; exit 77 (skipped)
# without root or those tools.
# Env: PRODUCT_TREE (nocuda, no fixtures), KUBE_SIM, CHART_RENDER, REPO_ROOT, WORK_DIR, CACHE_DIR;
# WORKER_TREE, a CUDA product tree for the worker image (default PRODUCT_TREE).
set -euo pipefail
# shellcheck source=tests/chart/lib.sh
source "$(dirname "$0")/../chart/lib.sh"
# shellcheck source=tests/image/lib.sh
source "$(dirname "$0")/lib.sh"
: "${PRODUCT_TREE:?}" "${KUBE_SIM:?}" "${CHART_RENDER:?}" "${REPO_ROOT:?}" "${WORK_DIR:?}" "${CACHE_DIR:?}"
CHART_DIR="$REPO_ROOT/charts/perfgate"
needs_root_and debootstrap umoci skopeo unshare
build_images="$REPO_ROOT/scripts/build-images.sh"
rm -rf "$WORK_DIR/out" "$WORK_DIR/unpacked" "$WORK_DIR/sim" "$WORK_DIR/kubeconfig"
mkdir -p "$WORK_DIR" "$WORK_DIR/unpacked"
operator_pid=""
cleanup() {
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; fi
  stop_kube_sim
}
trap cleanup EXIT

start=$SECONDS
run_logged scripts/build-images.sh "$WORK_DIR/build.log" bash "$build_images" --out "$WORK_DIR/out" \
  --cache "$CACHE_DIR" --operator-tree "$PRODUCT_TREE" --worker-tree "${WORKER_TREE:-$PRODUCT_TREE}"
echo "image: both archives built in $((SECONDS - start)) s"
version="$(bash "$REPO_ROOT/scripts/project-version.sh")"
revision="$(git -C "$REPO_ROOT" rev-parse HEAD)"
# The chart's pods run as this user (runAsNonRoot needs it numeric).
"$CHART_RENDER" --release perfgate --namespace perfgate-system "$CHART_DIR" >"$WORK_DIR/default.yaml" \
  || fail "chart-render"
chart_uid="$(awk '/^kind: Deployment$/ { d = 1 } d && /runAsUser:/ { print $2; exit }' "$WORK_DIR/default.yaml")"
[ -n "$chart_uid" ] || fail "no runAsUser in the chart's Deployment"

# inspect NAME ARCHIVE: the image config and manifest say what the script and the chart say.
inspect() {
  local name="$1" archive="$2"
  skopeo inspect --config "oci-archive:$archive" >"$WORK_DIR/$name-config.json" || fail "skopeo inspect $name"
  skopeo inspect --raw "oci-archive:$archive" >"$WORK_DIR/$name-manifest.json" || fail "skopeo inspect --raw $name"
  python3 - "$WORK_DIR/$name-config.json" "$WORK_DIR/$name-manifest.json" "$chart_uid" \
    "$(bash "$build_images" --describe "$name" | sed -n 's/^entrypoint: //p')" \
    "$(bash "$build_images" --describe "$name" | sed -n 's/^workdir: //p')" \
    "$version" "$revision" <<'PY' || fail "the $name image's config (above)"
import json, sys
config, manifest = (json.load(open(p)) for p in sys.argv[1:3])
uid, entrypoint, workdir, version, revision = sys.argv[3:]
c = config["config"]
errors = []
def want(what, got, expected):
    if got != expected:
        errors.append(f"{what}: {got!r}, not {expected!r}")
want("User", c.get("User"), f"{uid}:{uid}")
want("Entrypoint", c.get("Entrypoint"), [entrypoint])
want("WorkingDir", c.get("WorkingDir"), workdir)
want("architecture", config.get("architecture"), "amd64")
for where, labels in (("label", c.get("Labels") or {}), ("annotation", manifest.get("annotations") or {})):
    want(f"{where} version", labels.get("org.opencontainers.image.version"), version)
    got = labels.get("org.opencontainers.image.revision", "")
    if got.removesuffix("-dirty") != revision:
        errors.append(f"{where} revision: {got!r}, not this commit {revision}")
    if not labels.get("org.opencontainers.image.source", "").startswith("https://"):
        errors.append(f"{where} source: {labels.get('org.opencontainers.image.source')!r}")
if not any(e.startswith("PATH=") for e in c.get("Env") or []):
    errors.append(f"no PATH in Env: {c.get('Env')}")
for e in errors:
    print(f"  {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
}

# unpack NAME ARCHIVE: the image's bundle (rootfs and the runtime config) in unpacked/NAME.
unpack() {
  local name="$1" archive="$2"
  skopeo copy -q "oci-archive:$archive" "oci:$WORK_DIR/unpacked/layout-$name:image" || fail "skopeo copy $name"
  umoci unpack --image "$WORK_DIR/unpacked/layout-$name:image" "$WORK_DIR/unpacked/$name" \
    >"$WORK_DIR/unpack-$name.log" 2>&1 || { cat "$WORK_DIR/unpack-$name.log" >&2; fail "umoci unpack $name"; }
}

# Every library each binary loads is in the image, and each runtime package supplies one.
libraries() {
  local name="$1" root="$WORK_DIR/unpacked/$1/rootfs" bin packages
  bin="$(bash "$build_images" --describe "$name" | sed -n 's/^binary: //p')"
  : >"$WORK_DIR/$name-ldd.txt"
  for f in "$bin" $(cd "$root" && find usr/local/lib -name '*.so*' -type f -printf '/%p\n'); do
    chroot "$root" ldd "$f" >>"$WORK_DIR/$name-ldd.txt" 2>&1 || { cat "$WORK_DIR/$name-ldd.txt" >&2; fail "ldd $f in the $name image"; }
  done
  if grep 'not found' "$WORK_DIR/$name-ldd.txt" >&2; then
    fail "libraries missing from the $name image (above): add their packages in scripts/build-images.sh"
  fi
  awk '/=>/ && $3 ~ /^\// { n = split($3, p, "/"); print p[n] }' "$WORK_DIR/$name-ldd.txt" | sort -u \
    >"$WORK_DIR/$name-loaded.txt"
  packages="$(bash "$build_images" --describe "$name" | sed -n 's/^packages: //p')"
  for pkg in $packages; do
    [ "$pkg" = tzdata ] && continue  # data, not a library: read for spec.timeZone
    chroot "$root" dpkg -L "$pkg" | awk -F/ '{ print $NF }' | sort -u >"$WORK_DIR/pkg-files.txt"
    [ -n "$(comm -12 "$WORK_DIR/$name-loaded.txt" "$WORK_DIR/pkg-files.txt")" ] \
      || fail "the $name image installs $pkg, but nothing in it loads a library from it"
  done
  echo "image: $name: $(wc -l <"$WORK_DIR/$name-loaded.txt") libraries resolve inside the image"
}

for name in operator worker; do
  archive="$WORK_DIR/out/perfgate-$name-$version-amd64.oci.tar"
  [ -s "$archive" ] || fail "no $archive"
  inspect "$name" "$archive"
  unpack "$name" "$archive"
  libraries "$name"
  echo "image: $name: archive $(du -m "$archive" | cut -f1) MiB, unpacked \
$(du -sm "$WORK_DIR/unpacked/$name/rootfs" | cut -f1) MiB"
done

# The worker image: no compiler, no fixture test; list and a local run as a pod runs them.
wroot="$WORK_DIR/unpacked/worker/rootfs"
for tool in cc gcc g++ c++ cpp clang nvcc as ld make cmake; do
  if chroot "$wroot" sh -c "command -v $tool" >/dev/null; then fail "the worker image has $tool"; fi
done
[ ! -e "$wroot/usr/local/cuda" ] || fail "the worker image holds a CUDA toolkit"
for needle in MakeSyntheticTest MakeNcclCpuLoopbackTest 'TEST FIXTURE: samples'; do
  if grep -aq "$needle" "$wroot/usr/local/bin/perfgate-worker"; then fail "the worker image holds '$needle'"; fi
done
POD_ENV=()
out="$(in_pod worker RW "" -- perfgate-worker list --enable-fixtures 2>&1)" || fail "perfgate-worker list: $out"
grep -q '^host-stream ' <<<"$out" || fail "perfgate-worker list lacks host-stream: $out"
if grep -Eq '^(synthetic|nccl-cpu-loopback) ' <<<"$out"; then fail "the worker image lists a fixture test: $out"; fi
mkdir -p "$WORK_DIR/plan"
cat >"$WORK_DIR/plan/plan.yaml" <<'YAML'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: image-host-stream
spec:
  sampling: {warmup: 1, minRepeats: 3, maxRepeats: 10, maxSeconds: 20}
  tests:
    - type: host-stream
      thresholds:
        - {metric: triadBandwidthGBps, statistic: median, op: ">=", value: 1}
YAML
out="$(in_pod worker RW "$WORK_DIR/plan:/etc/perfgate:ro" -- perfgate-worker run /etc/perfgate/plan.yaml \
  --no-store 2>&1)" || fail "the worker's local host-stream run: $out"
grep -q 'PASS' <<<"$out" || fail "the worker's local run printed no PASS: $out"
echo "image: worker: list and a local host-stream run pass as user $(process worker | sed -n 1p)"

# The worker image in cluster mode, as a kubelet runs the operator's worker pod: kube-sim's
# kubelet runs the container of every pod of the chart's worker image through this stand-in
# (--image-map), which runs the unpacked image as the image's user with the pod's env (kube-sim
# resolves the downward API) and the pod's mounts as a kubelet makes them: the plan ConfigMap
# read-only at /etc/perfgate, the pod-bound token of the worker's service account (mode 0644,
# the kubelet's default) where in-cluster config reads it, and /dev/termination-log (0666).
worker_image="$(operator_args "$WORK_DIR/default.yaml" | sed -n 's/^--worker-image=//p')"
[ -n "$worker_image" ] || fail "no --worker-image in the chart's Deployment"
mkdir -p "$WORK_DIR/kubelet"
: >"$WORK_DIR/kubelet/ran.log"
{
  echo '#!/usr/bin/env bash'
  echo 'set -euo pipefail'
  printf 'WORK_DIR=%q\n' "$WORK_DIR"
  printf 'source %q\n' "$(cd "$(dirname "$0")" && pwd)/lib.sh"
  cat <<'EOF'
POD_ENV=()
while IFS= read -r -d '' kv; do
  case "${kv%%=*}" in
    PATH | HOME | KUBE_SIM_* | PERFGATE_POD_ROOT | PERFGATE_SERVICE_ACCOUNT_DIR) ;;
    *) POD_ENV+=("$kv") ;;
  esac
done </proc/$$/environ
sa="$KUBE_SIM_ROOT/kubelet-serviceaccount"
mkdir -p "$sa"
cp "$KUBE_SIM_SA_DIR"/* "$sa/"
chmod 0644 "$sa"/*
chmod 0666 "$KUBE_SIM_ROOT/dev/termination-log"
echo "$NODE_NAME: perfgate-worker $*" >>"$WORK_DIR/kubelet/ran.log"
in_pod worker RW "$KUBE_SIM_ROOT/etc/perfgate:/etc/perfgate:ro \
$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro \
$KUBE_SIM_ROOT/dev/termination-log:/dev/termination-log" -- perfgate-worker "$@"
EOF
} >"$WORK_DIR/kubelet/perfgate-worker"
chmod +x "$WORK_DIR/kubelet/perfgate-worker"

# The operator image under the chart's RBAC, configured in-cluster as a pod is: no kubeconfig
# and no HOME, only KUBERNETES_SERVICE_HOST/PORT and the service account's token, CA and namespace.
start_kube_sim "$WORK_DIR" --nodes 2 --image-map "$worker_image=$WORK_DIR/kubelet/perfgate-worker"
install_chart "$WORK_DIR" perfgate-system
mkdir -p "$WORK_DIR/sa"
kubectl -n perfgate-system create token perfgate-operator >"$WORK_DIR/sa/token" || fail "operator token"
kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}' \
  | base64 -d >"$WORK_DIR/sa/ca.crt"
echo perfgate-system >"$WORK_DIR/sa/namespace"
server="$(kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')"
api_port="${server##*:}"
metrics_port="$(free_port)"
health_port="$(free_port)"
mapfile -t args < <(operator_args "$WORK_DIR/rendered.yaml" \
  | drop_flags --metrics-bind-address --health-probe-bind-address)
((${#args[@]} >= 5)) || fail "no operator args in the rendered Deployment"
POD_ENV=(KUBERNETES_SERVICE_HOST=127.0.0.1 "KUBERNETES_SERVICE_PORT=$api_port" HOSTNAME=perfgate-operator-0)
entrypoint="$(bash "$build_images" --describe operator | sed -n 's/^entrypoint: //p')"
in_pod operator RO "$WORK_DIR/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" -- "$entrypoint" \
  "${args[@]}" --metrics-bind-address="127.0.0.1:$metrics_port" \
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
kept="$(kubectl get pval image-smoke -o 'jsonpath={.status.conditions[?(@.type=="Recorded")].reason}')"
[ "$kept" = StoreOff ] || fail "the default install (store.mode off) must say results are not kept: Recorded reason '$kept'"
if grep -q '"code":403\|Forbidden' "$WORK_DIR/operator.log"; then
  grep -m5 '403\|Forbidden' "$WORK_DIR/operator.log" >&2
  fail "the operator hit RBAC denials under the chart's roles"
fi

# The operator's worker pod on node-1, run from the worker image: a short host-stream, its
# PerfResult written by the worker (under the chart's worker Role and admission policy) and read
# back from kube-sim.
step=$SECONDS
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: perfgate.io/v1alpha1
kind: PerfValidation
metadata:
  name: image-worker
spec:
  nodeSelector:
    kubernetes.io/hostname: node-1
  sampling: {warmup: 1, minRepeats: 5, maxRepeats: 30, maxSeconds: 20}
  tests:
    - type: host-stream
      parameters: {arrayBytes: 16777216}
      thresholds:
        - {metric: triadBandwidthGBps, statistic: median, op: ">=", value: 1}
YAML
kubectl wait pval/image-worker --for=condition=Complete --timeout=90s >/dev/null || {
  tail -20 "$WORK_DIR/operator.log" >&2
  cat "$WORK_DIR"/sim/pods/*image-worker*/container.log >&2 || true
  kubectl get pval image-worker -o yaml >&2
  fail "the worker's validation did not complete"
}
grep -q '^node-1: perfgate-worker run /etc/perfgate/plan.yaml --result ' "$WORK_DIR/kubelet/ran.log" \
  || fail "the worker pod did not run from the worker image: $(cat "$WORK_DIR/kubelet/ran.log")"
kubectl -n perfgate-system get perfresults -l perfgate.io/validation=image-worker -o json \
  >"$WORK_DIR/worker-results.json" || fail "read the worker's PerfResult back"
python3 - "$WORK_DIR/worker-results.json" <<'PY' || fail "the worker's PerfResult (above)"
import json, sys
items = json.load(open(sys.argv[1]))["items"]
if len(items) != 1:
    sys.exit(f"  want one PerfResult, got {len(items)}")
meta, spec = items[0]["metadata"], items[0]["spec"]
report = spec.get("report", {})
errors = []
if spec.get("nodeName") != "node-1":
    errors.append(f"spec.nodeName {spec.get('nodeName')!r}, not node-1")
if (meta.get("labels") or {}).get("perfgate.io/node") != "node-1":
    errors.append(f"labels {meta.get('labels')}, not perfgate.io/node=node-1")
if "operator" in str(spec.get("writtenBy", "")):
    errors.append(f"written by the operator, not the worker: {spec.get('writtenBy')!r}")
if report.get("verdict") != "PASS":
    errors.append(f"verdict {report.get('verdict')!r}, not PASS: {report.get('reason')!r}")
tests = [t.get("name") for t in report.get("tests", [])]
if tests != ["host-stream"]:
    errors.append(f"tests {tests}, not [host-stream]")
for e in errors:
    print(f"  {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
passed="$(kubectl get pval image-worker -o 'jsonpath={.status.conditions[?(@.type=="Passed")].status}')"
[ "$passed" = True ] || fail "the worker's validation: Passed=$passed, want True"
echo "image: worker: the operator's worker pod ran host-stream from the image on node-1 (PASS) and \
wrote its PerfResult in $((SECONDS - step)) s"

kill -TERM "$operator_pid"
rc=0
wait "$operator_pid" || rc=$?
operator_pid=""
[ "$rc" = 0 ] || { tail -20 "$WORK_DIR/operator.log" >&2; fail "operator exit code $rc after SIGTERM"; }
echo "image: operator: ready in-cluster under the chart's RBAC, read-only root, user $(process operator | sed -n 1p)"
echo "image: ok in $((SECONDS - start)) s"

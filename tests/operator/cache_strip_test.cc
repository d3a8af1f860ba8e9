// What the operator's informers keep: every field a reconcile, a handler or /metrics reads of a
// cached Node, worker pod and PerfResult survives the strip; the bulk (managedFields, images,
// heartbeats, env, samples) does not.
#include "operator/runtime/cache_strip.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/gpu_model.h"
#include "operator/reconcile/reconciler.h"

namespace perfgate::op {
namespace {

using Json = nlohmann::json;
using Pointer = Json::json_pointer;

// A GPU node as a managed cluster serves it: GPU feature discovery's and the cloud's labels, a
// taint, kubelet and controller-manager managedFields, the node's image list and heartbeats.
const char kNode[] = R"json({
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "name": "gpu-a3-7",
    "uid": "6f1b3c2e-5d1a-4c7e-9a0b-1d2e3f4a5b6c",
    "resourceVersion": "918273",
    "creationTimestamp": "2026-11-02T08:14:55Z",
    "labels": {
      "kubernetes.io/hostname": "gpu-a3-7",
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      "node.kubernetes.io/instance-type": "a3-highgpu-8g",
      "topology.kubernetes.io/zone": "us-central1-a",
      "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
      "cloud.google.com/gke-nodepool": "a3-pool",
      "nvidia.com/gpu.present": "true",
      "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
      "nvidia.com/gpu.count": "8",
      "nvidia.com/gpu.memory": "81559",
      "nvidia.com/cuda.driver.major": "550",
      "perfgate.io/verdict": "passed"
    },
    "annotations": {
      "node.alpha.kubernetes.io/ttl": "0",
      "volumes.kubernetes.io/controller-managed-attach-detach": "true",
      "perfgate.io/verdict-by": "nightly",
      "perfgate.io/cordoned-by": "nightly",
      "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"labels\":{\"team\":\"ml\"},\"name\":\"gpu-a3-7\"}}\n"
    },
    "managedFields": [
      {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
       "time": "2026-12-01T10:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {"f:allocatable": {"f:nvidia.com/gpu": {}}, "f:conditions": {},
                    "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}},
      {"manager": "gpu-feature-discovery", "operation": "Update", "apiVersion": "v1",
       "time": "2026-11-02T08:20:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:labels": {"f:nvidia.com/gpu.product": {},
                    "f:nvidia.com/gpu.count": {}, "f:nvidia.com/gpu.memory": {}}}}},
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
       "time": "2026-11-02T08:15:10Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {"f:node.alpha.kubernetes.io/ttl": {}}},
                    "f:spec": {"f:podCIDR": {}, "f:podCIDRs": {}}}}
    ]
  },
  "spec": {
    "podCIDR": "10.8.7.0/24",
    "podCIDRs": ["10.8.7.0/24"],
    "providerID": "gce://proj/us-central1-a/gpu-a3-7",
    "unschedulable": true,
    "taints": [
      {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
      {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
       "timeAdded": "2026-12-01T09:00:00Z"}
    ]
  },
  "status": {
    "capacity": {"cpu": "208", "ephemeral-storage": "1967290088Ki", "hugepages-1Gi": "0",
                 "memory": "1901392680Ki", "nvidia.com/gpu": "8", "pods": "110"},
    "allocatable": {"cpu": "207690m", "ephemeral-storage": "1813034566Ki", "hugepages-1Gi": "0",
                    "memory": "1846223144Ki", "nvidia.com/gpu": "8", "pods": "110"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
       "message": "kubelet has sufficient memory available",
       "lastHeartbeatTime": "2026-12-01T10:00:00Z", "lastTransitionTime": "2026-11-02T08:15:00Z"},
      {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
       "message": "kubelet has no disk pressure",
       "lastHeartbeatTime": "2026-12-01T10:00:00Z", "lastTransitionTime": "2026-11-02T08:15:00Z"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady",
       "message": "kubelet is posting ready status",
       "lastHeartbeatTime": "2026-12-01T10:00:00Z", "lastTransitionTime": "2026-11-02T08:16:00Z"}
    ],
    "addresses": [{"type": "InternalIP", "address": "10.128.0.77"},
                  {"type": "Hostname", "address": "gpu-a3-7"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
    "nodeInfo": {"machineID": "8c2b0a4f", "systemUUID": "8c2b0a4f-aa", "bootID": "b0a4",
                 "kernelVersion": "6.1.100+", "osImage": "Container-Optimized OS",
                 "containerRuntimeVersion": "containerd://1.7.22", "kubeletVersion": "v1.31.4",
                 "kubeProxyVersion": "v1.31.4", "operatingSystem": "linux",
                 "architecture": "amd64"},
    "images": [
      {"names": ["nvcr.io/nvidia/k8s/dcgm-exporter@sha256:0f3a", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8"],
       "sizeBytes": 512345678},
      {"names": ["nvcr.io/nvidia/gpu-operator@sha256:77aa", "nvcr.io/nvidia/gpu-operator:v24.9.0"],
       "sizeBytes": 298765432},
      {"names": ["ghcr.io/perfgate/perfgate-worker@sha256:12cd", "ghcr.io/perfgate/perfgate-worker:latest"],
       "sizeBytes": 1987654321}
    ],
    "volumesInUse": ["kubernetes.io/csi/pd.csi.storage.gke.io^disk-1"]
  }
})json";

// A worker pod as the API server serves it back (the operator built it; the server added
// defaults, the scheduler placed it, the kubelet ran it and it failed).
const char kPod[] = R"json({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "pval-nightly-g3-gpu-a3-7",
    "namespace": "perfgate-system",
    "uid": "0a1b2c3d",
    "resourceVersion": "918300",
    "creationTimestamp": "2026-12-01T09:59:00Z",
    "deletionTimestamp": "2026-12-01T10:05:00Z",
    "labels": {"perfgate.io/validation": "nightly", "perfgate.io/run": "g3",
               "perfgate.io/node": "gpu-a3-7", "perfgate.io/gang": "nightly-g3-gang0"},
    "annotations": {"perfgate.io/spec-hash": "abc123"},
    "ownerReferences": [{"apiVersion": "perfgate.io/v1alpha1", "kind": "PerfValidation",
                         "name": "nightly", "uid": "9f8e", "controller": true,
                         "blockOwnerDeletion": true}],
    "managedFields": [
      {"manager": "perfgate-operator", "operation": "Update", "apiVersion": "v1",
       "time": "2026-12-01T09:59:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:spec": {"f:containers": {"k:{\"name\":\"worker\"}": {"f:env": {}}}}}},
      {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "subresource": "status",
       "time": "2026-12-01T10:01:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}}}}
    ]
  },
  "spec": {
    "nodeName": "gpu-a3-7",
    "restartPolicy": "Never",
    "serviceAccountName": "perfgate-worker",
    "activeDeadlineSeconds": 3600,
    "hostname": "nightly-g3-gang0-r0",
    "subdomain": "nightly-g3-gang0",
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
      "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                              "values": ["gpu-a3-7"]}]}]}}},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                     "effect": "NoSchedule"}],
    "containers": [{
      "name": "worker",
      "image": "ghcr.io/perfgate/perfgate-worker:latest",
      "imagePullPolicy": "IfNotPresent",
      "command": ["perfgate-worker"],
      "args": ["run", "/etc/perfgate/plan.yaml", "--report-cr"],
      "env": [
        {"name": "PERFGATE_VALIDATION", "value": "nightly"},
        {"name": "PERFGATE_VALIDATION_UID", "value": "9f8e"},
        {"name": "PERFGATE_RUN", "value": "g3"},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "NCCL_COMM_ID", "value": "nightly-g3-gang0-r0.nightly-g3-gang0.perfgate-system.svc:29500"},
        {"name": "PERFGATE_RANK", "value": "0"}
      ],
      "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}},
      "volumeMounts": [{"name": "plan", "mountPath": "/etc/perfgate"},
                       {"name": "dshm", "mountPath": "/dev/shm"}],
      "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
      "terminationMessagePath": "/dev/termination-log",
      "terminationMessagePolicy": "FallbackToLogsOnError"
    }],
    "volumes": [{"name": "plan", "configMap": {"name": "nightly-g3-plan"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
  },
  "status": {
    "phase": "Failed",
    "reason": "Error",
    "hostIP": "10.128.0.77",
    "podIP": "10.8.7.12",
    "startTime": "2026-12-01T09:59:02Z",
    "conditions": [
      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T09:59:01Z",
       "message": "0/12 nodes are available: 4 Insufficient nvidia.com/gpu."},
      {"type": "Ready", "status": "False", "reason": "PodFailed",
       "lastTransitionTime": "2026-12-01T10:01:00Z"}
    ],
    "containerStatuses": [{
      "name": "worker",
      "image": "ghcr.io/perfgate/perfgate-worker:latest",
      "imageID": "ghcr.io/perfgate/perfgate-worker@sha256:12cd",
      "containerID": "containerd://77ee",
      "ready": false,
      "restartCount": 0,
      "state": {"terminated": {"exitCode": 3, "reason": "Error",
                               "message": "hbm-stream: CUDA error 999 on GPU 5",
                               "startedAt": "2026-12-01T09:59:03Z",
                               "finishedAt": "2026-12-01T10:00:59Z"}}
    }]
  }
})json";

// A PerfResult as a worker writes it: the full report, samples and GPU identities included.
const char kResult[] = R"json({
  "apiVersion": "perfgate.io/v1alpha1",
  "kind": "PerfResult",
  "metadata": {
    "name": "pval-nightly-g3-gpu-a3-7",
    "namespace": "perfgate-system",
    "creationTimestamp": "2026-12-01T10:00:58Z",
    "resourceVersion": "918299",
    "labels": {"perfgate.io/validation": "nightly", "perfgate.io/run": "g3",
               "perfgate.io/node": "gpu-a3-7"},
    "ownerReferences": [{"apiVersion": "perfgate.io/v1alpha1", "kind": "PerfValidation",
                         "name": "nightly", "uid": "9f8e"}],
    "managedFields": [{"manager": "perfgate-worker", "operation": "Update",
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
  },
  "spec": {
    "validation": "nightly",
    "nodeName": "gpu-a3-7",
    "run": "g3",
    "worst": "hbm-stream triadBandwidthGBps median 2890.1 (>= 3000.00)",
    "writtenBy": "worker",
    "report": {
      "validation": "nightly",
      "profile": "h100-sxm-80gb",
      "verdict": "FAIL",
      "reason": "1 of 2 tests failed",
      "passed": 1,
      "failed": 1,
      "identity": {"hostname": "gpu-a3-7", "driverVersion": "550.90.07",
                   "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"},
                            {"index": 1, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-2"}],
                   "topology": "GPU0 GPU1\nGPU0 X NV18\nGPU1 NV18 X"},
      "tests": [
        {"name": "gemm-bf16", "type": "gemm", "device": "all", "verdict": "PASS",
         "metrics": [{"name": "tflops", "unit": "TFLOP/s",
                      "summary": {"n": 5, "median": 702.4},
                      "samples": [701.2, 702.4, 703.9, 699.8, 702.7]}],
         "parameters": {"m": "8192"}},
        {"name": "hbm-stream", "type": "hbm-stream", "device": "5", "verdict": "FAIL",
         "reason": "triad below its bound",
         "metrics": [{"name": "triadBandwidthGBps", "unit": "GB/s",
                      "samples": [2890.1, 2887.3, 2893.0]}],
         "thresholds": [{"bound": 3000, "observed": 2890.1, "verdict": "FAIL"}],
         "details": {"gpu": "5"}}
      ]
    }
  }
})json";

// Every pointer, as the operator reads it, has the same value after the strip.
void ExpectKept(const Json& before, const Json& after, const std::vector<std::string>& pointers) {
  for (const auto& p : pointers) {
    const Pointer ptr(p);
    ASSERT_TRUE(before.contains(ptr)) << "fixture lacks " << p;
    ASSERT_TRUE(after.contains(ptr)) << "stripped " << p << ", which the operator reads";
    EXPECT_EQ(after.at(ptr), before.at(ptr)) << p;
  }
}

void ExpectDropped(const Json& after, const std::vector<std::string>& pointers) {
  for (const auto& p : pointers) EXPECT_FALSE(after.contains(Pointer(p))) << "kept " << p;
}

TEST(CacheStripTest, ANodeKeepsWhatSelectionGpuModelsNodeActionsAndMetricsRead) {
  const Json node = Json::parse(kNode);
  Json stripped = node;
  StripNode(stripped);
  ExpectKept(
      node, stripped,
      {// name, selection by labels, GPU model labels, /metrics' verdict label
       "/metadata/name", "/metadata/labels", "/metadata/uid", "/metadata/resourceVersion",
       // perfgate's cordon, taint and verdict bookkeeping; and since a node action writes
       // the cached node back, every annotation (last-applied too) and the whole spec
       "/metadata/annotations", "/spec",
       // allocatable GPUs decide selection and spec.gpusPerNode
       "/status/allocatable/nvidia.com~1gpu", "/status/capacity/nvidia.com~1gpu",
       // the fault signals of spec.watchNodes: conditions by type and status, a reboot
       "/status/conditions/2/type", "/status/conditions/2/status", "/status/nodeInfo/bootID"});
  ExpectDropped(stripped, {"/metadata/managedFields", "/status/images",
                           "/status/conditions/2/lastHeartbeatTime", "/status/conditions/2/message",
                           "/status/nodeInfo/kernelVersion", "/status/addresses",
                           "/status/daemonEndpoints", "/status/volumesInUse"});
  // A heartbeat alone leaves the stripped node as it was (no reconcile for it).
  Json beat = node;
  beat["status"]["conditions"][2]["lastHeartbeatTime"] = "2026-12-01T10:00:10Z";
  StripNode(beat);
  EXPECT_EQ(beat, stripped);
  // What the operator decides from the node is unchanged.
  for (const char* spec : {R"({"nodeSelector": {"nvidia.com/gpu.present": "true"}})",
                           R"({"nodeSelector": {"cloud.google.com/gke-nodepool": "other"}})",
                           R"({"nodes": ["gpu-a3-7"]})", R"({})"}) {
    EXPECT_EQ(NodeSelected(Json::parse(spec), stripped), NodeSelected(Json::parse(spec), node))
        << spec;
  }
  auto labels = [](const Json& n) {
    return n["metadata"]["labels"].get<std::map<std::string, std::string>>();
  };
  auto model = GpuModelOfNode(labels(stripped));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->model, GpuModelOfNode(labels(node))->model);
  EXPECT_LT(stripped.dump().size(), node.dump().size() / 2);
}

TEST(CacheStripTest, AWorkerPodKeepsWhatClassifyingItsStateAndItsGangRead) {
  const Json pod = Json::parse(kPod);
  Json stripped = pod;
  StripWorkerPod(stripped);
  ExpectKept(pod, stripped,
             {"/metadata/name", "/metadata/namespace", "/metadata/labels", "/metadata/annotations",
              "/metadata/ownerReferences", "/metadata/creationTimestamp",
              "/metadata/deletionTimestamp", "/metadata/resourceVersion",
              // scheduled or not, and for which node
              "/spec/nodeName",
              "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
              "nodeSelectorTerms/0/matchFields/0/values/0",
              "/spec/containers/0/name",
              // the GPUs it holds: a yielding worker's lost GPU time
              "/spec/containers/0/resources/limits/nvidia.com~1gpu",
              // finished, why, and why it is not scheduled
              "/status/phase", "/status/reason", "/status/conditions",
              "/status/containerStatuses/0/state/terminated", "/status/containerStatuses/0/name"});
  // A new rank joins its gang at the address the live ranks carry.
  const Json env = stripped["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0], pod["spec"]["containers"][0]["env"][4]);
  ExpectDropped(
      stripped,
      {"/metadata/managedFields", "/spec/containers/0/image", "/spec/containers/0/command",
       "/spec/containers/0/args", "/spec/containers/0/resources/requests",
       "/spec/containers/0/volumeMounts", "/spec/volumes", "/spec/tolerations",
       "/status/containerStatuses/0/image", "/status/containerStatuses/0/imageID"});
  EXPECT_LT(stripped.dump().size(), pod.dump().size() * 2 / 3);

  // A pod without NCCL_COMM_ID keeps no env at all.
  Json plain = Json::parse(kPod);
  plain["spec"]["containers"][0]["env"].erase(4);
  StripWorkerPod(plain);
  EXPECT_FALSE(plain["spec"]["containers"][0].contains("env"));
}

TEST(CacheStripTest, AResultKeepsItsVerdictWorstTestRunAndIdentity) {
  const Json result = Json::parse(kResult);
  Json stripped = result;
  StripResult(stripped);
  ExpectKept(
      result, stripped,
      {"/metadata/name", "/metadata/labels", "/metadata/ownerReferences",
       "/metadata/creationTimestamp", "/spec/validation", "/spec/nodeName", "/spec/run",
       "/spec/worst", "/spec/writtenBy", "/spec/report/verdict", "/spec/report/reason",
       "/spec/report/tests/0/name", "/spec/report/tests/0/verdict", "/spec/report/tests/1/name",
       "/spec/report/tests/1/verdict", "/spec/report/tests/1/reason",
       // A changed node's identity (operator/policy/identity.h); which GPU a test's device is
       // (operator/policy/device_taints.h).
       "/spec/report/identity/driverVersion", "/spec/report/identity/gpus/0/uuid",
       "/spec/report/identity/gpus/1/uuid", "/spec/report/identity/gpus/0/index"});
  ExpectDropped(stripped, {"/metadata/managedFields", "/spec/report/identity/hostname",
                           "/spec/report/identity/topology", "/spec/report/identity/gpus/0/name",
                           "/spec/report/tests/0/metrics", "/spec/report/tests/1/thresholds",
                           "/spec/report/tests/1/details"});
}

TEST(CacheStripTest, WithFiguresAResultAlsoKeepsItsThresholdsAndGpuModel) {
  const Json result = Json::parse(kResult);
  Json stripped = result;
  StripResult(stripped, /*keep_figures=*/true);
  ExpectKept(
      result, stripped,
      {"/spec/nodeName", "/spec/report/verdict", "/spec/report/tests/1/verdict",
       "/spec/report/tests/1/thresholds/0/bound", "/spec/report/tests/1/thresholds/0/observed",
       "/spec/report/tests/1/thresholds/0/verdict", "/spec/report/identity/gpus/0/name",
       "/spec/report/identity/driverVersion", "/spec/report/identity/gpus/1/uuid"});
  ExpectDropped(stripped, {"/metadata/managedFields", "/spec/report/identity/hostname",
                           "/spec/report/identity/topology", "/spec/report/tests/0/metrics",
                           "/spec/report/tests/1/metrics", "/spec/report/tests/1/details"});
}

// The fleet comparison of consistency digests (fleet::FindDigestOutliers, on /metrics) reads a
// consistency test's digests and parameters and the node's CUDA version from the cache.
TEST(CacheStripTest, WithFiguresAConsistencyScreenKeepsItsDigestsAndWhatTheyWereComputedWith) {
  Json result = Json::parse(kResult);
  result["spec"]["report"]["identity"]["cudaVersion"] = "12.8";
  result["spec"]["report"]["tests"].push_back(Json::parse(R"json({
    "name": "consistency", "type": "consistency", "device": "node", "verdict": "PASS",
    "parameters": {"gemmSize": "2048", "seed": "1"},
    "details": {"digest.gemm-bf16": "0x3fd5c2a41b7e9d08", "digest.gemm-bf16.gpu3": "0x1",
                "screen": "sample 5: 8 GPUs agree", "inputs": "seed 1"}})json"));
  Json stripped = result;
  StripResult(stripped, /*keep_figures=*/true);
  ExpectKept(result, stripped,
             {"/spec/report/identity/cudaVersion", "/spec/report/tests/2/parameters",
              "/spec/report/tests/2/details/digest.gemm-bf16",
              "/spec/report/tests/2/details/digest.gemm-bf16.gpu3"});
  ExpectDropped(stripped,
                {"/spec/report/tests/2/details/screen", "/spec/report/tests/2/details/inputs",
                 "/spec/report/tests/0/parameters", "/spec/report/tests/1/details"});
  Json lean = result;
  StripResult(lean);
  ExpectDropped(lean, {"/spec/report/identity/cudaVersion", "/spec/report/tests/2/details",
                       "/spec/report/tests/2/parameters"});
}

TEST(CacheStripTest, AValidationLosesOnlyManagedFieldsAndTheLastAppliedCopy) {
  Json v = {{"metadata",
             {{"name", "nightly"},
              {"managedFields", Json::array({{{"manager", "kubectl"}}})},
              {"annotations",
               {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}, {"team", "ml"}}}}},
            {"spec", {{"tests", Json::array({{{"type", "gemm"}}})}}},
            {"status", {{"verdict", "Passed"}, {"completionTime", "2026-12-01T10:00:00Z"}}}};
  Json stripped = v;
  StripValidation(stripped);
  Json expected = v;
  expected["metadata"].erase("managedFields");
  expected["metadata"]["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  EXPECT_EQ(stripped, expected);
}

TEST(CacheStripTest, ObjectsOfUnexpectedShapeAreLeftAlone) {
  for (Json odd : {Json(nullptr), Json("x"), Json::object(),
                   Json{{"metadata", "not an object"}, {"spec", 3}, {"status", Json::array()}},
                   Json{{"spec", {{"containers", "none"}, {"affinity", 1}}}}}) {
    const Json before = odd;
    Json n = odd, p = odd, r = odd;
    StripNode(n);
    StripWorkerPod(p);
    StripResult(r);
    EXPECT_EQ(n, before);
    EXPECT_EQ(r, before);
    (void)p;  // a pod spec is reduced to what is read, whatever its shape; it must not throw
  }
}

}  // namespace
}  // namespace perfgate::op

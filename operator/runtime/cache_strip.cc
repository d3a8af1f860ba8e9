#include "operator/runtime/cache_strip.h"

#include <string>

namespace perfgate::op {
namespace {

using Json = nlohmann::json;

// The object member `key` when it is an object, else null.
Json* Member(Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

// The object member `key` when it is an array, else null.
Json* ArrayMember(Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? &*it : nullptr;
}

// Keeps only `keys` of the object `j` (nothing happens to a non-object).
void KeepOnly(Json& j, std::initializer_list<const char*> keys) {
  if (!j.is_object()) return;
  Json kept = Json::object();
  for (const char* k : keys) {
    auto it = j.find(k);
    if (it != j.end()) kept[k] = std::move(*it);
  }
  j = std::move(kept);
}

// The container environment variables a reconcile reads: the gang's rendezvous address, which
// a new rank of a running gang must share.
constexpr const char* kEnvRead[] = {"NCCL_COMM_ID"};

}  // namespace

void StripMetadata(Json& object) {
  Json* meta = Member(object, "metadata");
  if (meta == nullptr) return;
  meta->erase("managedFields");
  if (Json* ann = Member(*meta, "annotations")) {
    ann->erase("kubectl.kubernetes.io/last-applied-configuration");
    if (ann->empty()) meta->erase("annotations");
  }
}

void StripValidation(Json& validation) { StripMetadata(validation); }

void StripNode(Json& node) {
  if (Json* meta = Member(node, "metadata")) meta->erase("managedFields");
  Json* status = Member(node, "status");
  if (status == nullptr) return;
  KeepOnly(*status, {"capacity", "allocatable", "conditions", "nodeInfo"});
  // Conditions by type and status only (their heartbeat times change every few seconds: kept,
  // every heartbeat would look like a change), and the boot ID of the node's info (a reboot).
  if (Json* conditions = ArrayMember(*status, "conditions")) {
    for (Json& c : *conditions) {
      if (c.is_object()) KeepOnly(c, {"type", "status"});
    }
  }
  if (Json* info = Member(*status, "nodeInfo")) KeepOnly(*info, {"bootID"});
}

namespace {

// Keeps a container's name, the environment variables a reconcile reads and the GPUs it holds
// (limits nvidia.com/gpu: what a yielding worker's lost GPU time is counted in).
void StripContainer(Json& container) {
  KeepOnly(container, {"name", "env", "resources"});
  if (Json* resources = Member(container, "resources")) {
    KeepOnly(*resources, {"limits"});
    if (Json* limits = Member(*resources, "limits")) KeepOnly(*limits, {"nvidia.com/gpu"});
    if (resources->value("limits", Json::object()).empty()) container.erase("resources");
  }
  Json* env = ArrayMember(container, "env");
  if (env == nullptr) return;
  Json kept = Json::array();
  for (const Json& e : *env) {
    if (!e.is_object()) continue;
    const std::string name = e.value("name", "");
    for (const char* read : kEnvRead) {
      if (name == read) kept.push_back(e);
    }
  }
  if (kept.empty()) {
    container.erase("env");
  } else {
    env->swap(kept);
  }
}

}  // namespace

void StripWorkerPod(Json& pod) {
  StripMetadata(pod);
  if (Json* spec = Member(pod, "spec")) {
    KeepOnly(*spec, {"nodeName", "affinity", "containers"});
    if (Json* affinity = Member(*spec, "affinity")) KeepOnly(*affinity, {"nodeAffinity"});
    if (Json* containers = ArrayMember(*spec, "containers")) {
      for (Json& c : *containers) StripContainer(c);
    }
  }
  Json* status = Member(pod, "status");
  if (status == nullptr) return;
  for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
    Json* statuses = ArrayMember(*status, list);
    if (statuses == nullptr) continue;
    for (Json& cs : *statuses) {
      if (!cs.is_object()) continue;
      for (const char* k : {"image", "imageID", "containerID"}) cs.erase(k);
    }
  }
}

namespace {

// A threshold result's figure: its threshold's metric, statistic and op, the bound, the observed
// figure and the verdict.
void StripThreshold(Json& threshold) {
  KeepOnly(threshold, {"threshold", "bound", "observed", "verdict"});
  if (Json* t = Member(threshold, "threshold")) KeepOnly(*t, {"metric", "statistic", "op"});
}

}  // namespace

void StripResult(Json& result, bool keep_figures) {
  StripMetadata(result);
  Json* spec = Member(result, "spec");
  if (spec == nullptr) return;
  Json* report = Member(*spec, "report");
  if (report == nullptr) return;
  // Of the identity, what a changed node is told by (operator/policy/identity.h): the driver and
  // each GPU's UUID and VBIOS; with the figures also the GPU's name (its model). Each GPU's
  // index and PCI bus id find a failing GPU among the node's DRA devices
  // (operator/policy/device_taints.h).
  if (Json* identity = Member(*report, "identity")) {
    Json kept = Json::object();
    // The driver; with the figures also the CUDA version: consistency digests are compared
    // between nodes of the same model, driver and CUDA version (fleet::FindDigestOutliers).
    auto keep = [&](const char* key) {
      if (auto d = identity->find(key); d != identity->end() && d->is_string()) kept[key] = *d;
    };
    keep("driverVersion");
    if (keep_figures) keep("cudaVersion");
    if (Json* gpus = ArrayMember(*identity, "gpus")) {
      Json list = Json::array();
      for (Json& g : *gpus) {
        if (!g.is_object()) continue;
        if (keep_figures) {
          KeepOnly(g, {"index", "name", "uuid", "pciBusId", "vbios"});
        } else {
          KeepOnly(g, {"index", "uuid", "pciBusId", "vbios"});
        }
        if (!g.empty()) list.push_back(std::move(g));
      }
      if (!list.empty()) kept["gpus"] = std::move(list);
    }
    if (kept.empty()) {
      report->erase("identity");
    } else {
      *identity = std::move(kept);
    }
  }
  Json* tests = ArrayMember(*report, "tests");
  if (tests == nullptr) return;
  for (Json& t : *tests) {
    if (!keep_figures) {
      KeepOnly(t, {"name", "type", "device", "verdict", "reason"});
      continue;
    }
    KeepOnly(
        t, {"name", "type", "device", "verdict", "reason", "thresholds", "parameters", "details"});
    if (Json* thresholds = ArrayMember(t, "thresholds")) {
      for (Json& th : *thresholds) StripThreshold(th);
    }
    // Of the parameters and details, only a consistency screen's (its digests and what they
    // were computed with) are read from the cache.
    if (t.value("type", "") != "consistency") {
      t.erase("parameters");
      t.erase("details");
    } else if (Json* details = Member(t, "details")) {
      Json digests = Json::object();
      for (auto& [key, value] : details->items()) {
        if (key.rfind("digest.", 0) == 0) digests[key] = std::move(value);
      }
      *details = std::move(digests);
    }
  }
}

}  // namespace perfgate::op

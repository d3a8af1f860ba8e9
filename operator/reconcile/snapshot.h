// Observe: everything one reconcile decides from, read once into a Snapshot — the validation
// from the API (its spec parsed into the proto), its nodes, pods and results from the caches,
// and the few direct reads the caches cannot answer (a result the cache has not seen yet, a
// crashed worker's last log lines, the cluster's PerfProfiles). Blocking; no writes.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/spec.h"
#include "core/json_fields.h"
#include "core/resolve.h"
#include "kube/client.h"
#include "operator/reconcile/claims.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/store_view.h"

namespace perfgate::op {

// Read-only views of the informers' stores. Thread-safe, non-blocking.
struct Caches {
  std::function<std::vector<Json>()> nodes;
  // Worker pods in the operator's namespace by label perfgate.io/validation, by perfgate.io/node.
  std::function<std::vector<Json>(const std::string& validation)> pods_of;
  std::function<std::vector<Json>(const std::string& node)> pods_on;
  // PerfResults in the operator's namespace by label perfgate.io/validation.
  std::function<std::vector<Json>(const std::string& validation)> results_of;
};

// A worker pod of the validation, with what decide reads of it.
struct PodView {
  Json object;
  std::string name;
  std::string node;        // the node it is for: its required affinity (the label may be shortened)
  std::string run;         // its perfgate.io/run label
  std::string phase;       // status.phase
  bool terminal = false;   // Succeeded or Failed
  bool scheduled = false;  // spec.nodeName is set
  // status.containerStatuses[0].state.terminated ({} while it runs): exitCode, reason, message.
  Json terminated = Json::object();
  // The terminated worker's termination message ("" when none).
  std::string termination_message;
  // A failed worker without a termination message: its last log lines, when they could be read.
  std::optional<std::string> log_tail;
  // Terminal without a cached result, but the API has the result: the cache is behind.
  bool result_in_api = false;
};

// A pod of someone else's that holds GPUs (requests nvidia.com/gpu) on a node.
struct GpuPod {
  std::string name_space;
  std::string name;
  int gpus = 0;
  bool terminating = false;  // deletionTimestamp set: going, but its GPUs are not free yet
  // Not bound yet: the scheduler nominated it to the node (status.nominatedNodeName) after
  // preempting pods there, and holds the node's room for it.
  bool nominated = false;
  std::string Key() const { return name_space + "/" + name; }
};

struct Snapshot {
  bool exists = false;  // false: the validation is gone, nothing to do
  Json validation;      // as read from the API, status included
  std::string name;
  std::string uid;
  int64_t generation = 1;
  std::string run;  // RunId(generation, the rerun annotation)
  bool deleting = false;
  bool has_finalizer = false;
  // status.run is `run` and has a completionTime: nothing below is read.
  bool run_complete = false;
  // The spec, parsed once as the loader reads a file; `specError` when it does not parse.
  std::optional<spec::Loaded<v1alpha1::PerfValidation>> spec;
  Status spec_error;
  std::map<std::string, Json> nodes;  // every node in the cache, by name
  std::vector<PodView> pods;          // the validation's worker pods, every run
  std::vector<Json> results;          // the validation's PerfResults, every run
  // Nodes where another validation's worker is live: node -> that validation's label value.
  // Read for the selected nodes this validation may still start a pod on.
  std::map<std::string, std::string> busy_with;
  ClusterProfiles profiles;
  // The PerfBaselines the thresholds of the spec and its profiles name (not read once the run
  // is complete).
  ClusterBaselines baselines;
  // The results store (absent with --store=off).
  std::optional<StoreView> store;
  // Node claims by node (operator/reconcile/claims.h), read from the API: every claim Lease, with
  // whether its holder is gone.
  std::map<std::string, NodeClaim> claims;
  // Other pods holding GPUs (not terminal), by node, read for the selected nodes this
  // validation may start a worker on or is making free (operator/policy/disruption.h).
  std::map<std::string, std::vector<GpuPod>> gpu_pods;
  // Evictions the API server refused at this operator's last try, by "namespace/name": its
  // message (e.g. a PodDisruptionBudget's 429).
  std::map<std::string, std::string> eviction_refused;
};

// Reads the snapshot of validation `name`. Blocking; an error means "retry with backoff".
Result<Snapshot> Observe(kube::Client& client, const Caches& caches, const ReconcilerConfig& config,
                         const std::string& name);

// A PodView of a pod object (no direct reads).
PodView ViewOfPod(const Json& pod);

}  // namespace perfgate::op

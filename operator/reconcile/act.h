// Act and report: applies a Decision through the API client — deletes, creates, the operator's
// results, node verdicts, events — and writes the status (the one place that does). Blocking;
// every step is idempotent, so a reconcile that fails half-way is simply retried.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "kube/client.h"
#include "operator/policy/device_taints.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/recorder.h"
#include "operator/reconcile/snapshot.h"
#include "operator/runtime/expectations.h"

namespace perfgate::op {

// Counters the /metrics endpoint reads. Thread-safe.
struct ReconcileMetrics {
  std::atomic<uint64_t> reconciles{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> pods_created{0};
  std::atomic<uint64_t> results_written_by_operator{0};
};

// The pods of `pods` whose node is not in `unclaimed`; a gang's pods only if none of its nodes
// is (a gang starts whole).
std::vector<PodCreate> PodsOnClaimedNodes(const std::vector<PodCreate>& pods,
                                          const std::set<std::string>& unclaimed);

class Actor {
 public:
  Actor(std::shared_ptr<kube::Client> client, const ReconcilerConfig& config,
        ReconcileMetrics& metrics, std::shared_ptr<perfgate::Clock> clock);

  // Applies everything in `d` except the status and the events sent after it: the finalizer,
  // clean-up, the plan, operator results, Services and pods, node verdicts and releases.
  // Returns the validation as it now stands (the finalizer patch changes its resourceVersion).
  // Blocking; thread-safe for distinct validations.
  Result<Json> Apply(const Snapshot& s, const Decision& d);
  // Records the run's results in the results store, when there is one
  // (operator/reconcile/recorder.h). Returns whether the store's state changed, so the status is
  // looked at again. Blocking.
  bool Record(const Snapshot& s, const Decision& d);
  void SetRecorder(std::shared_ptr<Recorder> recorder) { recorder_ = std::move(recorder); }
  // Report: writes `status` unless the object carries it already. Blocking.
  Status Report(const Json& validation, const Json& status);
  // Sends the events of `d` that go out before (false) or after (true) the status. Failures
  // are logged, not returned. Blocking.
  void SendEvents(const Snapshot& s, const Decision& d, bool after_status);
  // True once after an Apply of `validation` that lost a node claim to someone faster (its pod
  // was not created: look again soon).
  bool TakeClaimLost(const std::string& validation);
  // The evictions refused at this validation's last tries, by "namespace/name" (operator/
  // disruption.h reads them from the snapshot).
  std::map<std::string, std::string> EvictionsRefused(const std::string& validation);
  // Names in `status` (failingNodes[].taintedDevices, or .deviceTaintRehearsal for
  // policy.deviceTaint None) the DRA devices this run of `validation` tainted instead of nodes.
  void NameTaintedDevices(const std::string& validation, const std::string& run, Json* status);
  // Pods and results created and not yet in the cache ("pods/<name>", "perfresults/<name>").
  Expectations& expectations() { return expectations_; }

 private:
  // The steps of Apply, in its order. Patches the validation's finalizers (resourceVersion
  // checked) and returns the object as patched.
  Result<Json> SetFinalizers(const Snapshot& s, const Json& obj, const Json& finalizers);
  // Deletes the pods, results and plan the decision drops.
  Status DeleteDropped(const Snapshot& s, const Decision& d);
  // Writes the run's plan ConfigMap (once), the results the operator writes, then deletes the
  // pods they end, then creates the gangs' Services.
  Status WriteObjects(const Decision& d);
  // Gives back the nodes whose test is over, then labels (and cordons) the nodes to test.
  Status EditNodesUnderTest(const Snapshot& s, const Decision& d);
  // Each node's verdict label (and quarantine), releases, provisioning actions.
  Status MarkNodes(const Snapshot& s, const Decision& d);
  Status Delete(const kube::GroupVersionResource& gvr, const std::string& name);
  Status CreatePods(const std::vector<PodCreate>& pods);
  // Makes `claims` in order (operator/reconcile/claims.cc); returns the nodes not obtained: a
  // create or takeover that lost (409) and every one after it, so two validations never each hold
  // part of what both need. A failed renewal is logged (the claim stays until it expires).
  Result<std::set<std::string>> MakeClaims(const std::string& validation,
                                           const std::vector<ClaimAction>& claims);
  // Deletes claims still as they were read; a changed or missing one is left alone.
  void ReleaseClaims(const std::string& validation, const std::vector<ClaimRelease>& releases);
  // `cached`: the informer's copy, tried first (a stale one costs a 409 and a GET).
  // With `device_taint` (policy.deviceTaint) set, a FAIL confined to GPUs the cluster publishes
  // as DRA devices taints those devices instead of the node (operator/policy/device_taints.h); a
  // PASS deletes the node's DeviceTaintRules. Each node's devices are looked up once per run
  // (remembered in device_quarantines_).
  Status MarkNode(const NodeVerdict& v, const std::string& validation, const std::string& run,
                  const std::string& on_failure, const std::string& device_taint,
                  const Json* cached);
  void ReleaseNode(const std::string& node);
  // Reads `node` (the cached copy first), applies `edit` and writes it back when it changed,
  // re-reading on a conflict. A missing node is fine.
  Status EditNode(const std::string& node, const Json* cached,
                  const std::function<bool(Json*)>& edit);
  // Evicts `evictions` of `validation`'s nodes; a refusal is remembered, never forced, and that
  // pod is asked again only kEvictionRetry after it, however often the reconcile runs between.
  void Evict(const std::string& validation, const std::vector<PodEviction>& evictions);

  std::shared_ptr<kube::Client> client_;
  DeviceTaints device_taints_;
  const ReconcilerConfig& config_;
  ReconcileMetrics& metrics_;
  std::shared_ptr<perfgate::Clock> clock_;  // its WallNow: the time validations see
  std::mutex mu_;
  std::set<std::string> config_maps_written_;
  // Events' onceKeys already sent (e.g. "<validation>/<run>" for Started).
  std::set<std::string> sent_once_;
  std::atomic<uint64_t> event_seq_{0};
  Expectations expectations_;
  std::set<std::string> claim_lost_;  // validations; guarded by mu_
  // What a run's FAIL confined to GPUs did, by validation, then "run/node": the devices tainted
  // ("" when the node was tainted instead) and whether it was a rehearsal. Guarded by mu_.
  struct DeviceQuarantine {
    std::string devices;
    bool rehearsal = false;
  };
  std::map<std::string, std::map<std::string, DeviceQuarantine>> device_quarantines_;
  struct Refusal {
    std::string message;
    std::chrono::system_clock::time_point at;  // when it was asked (the clock's WallNow)
  };
  // validation -> pod -> its last refusal; guarded by mu_
  std::map<std::string, std::map<std::string, Refusal>> eviction_refused_;
  // Each node as this operator last wrote it (stripped as the cache strips it), with the
  // resourceVersions its writes replaced: an edit starts from it while the cache still shows one
  // of those (the cache lags the write) instead of failing with a 409 and reading the node again.
  // An entry goes once the cache has moved on. Guarded by mu_.
  struct WrittenNode {
    std::set<std::string> behind;
    Json node;
  };
  std::map<std::string, WrittenNode> written_nodes_;
  std::shared_ptr<Recorder> recorder_;
};

}  // namespace perfgate::op

// Safe disruption (spec.disruption): which free nodes may start their worker now, which wait
// for other pods to give up their GPUs (or for their turn under maxUnavailable), which are
// cordoned or drained first, and which nodes are given back once their test is over. Pure:
// reads the snapshot, returns actions (docs/operator.md, "Safe disruption").
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {

// A refused eviction (a PodDisruptionBudget's 429) is asked again this long after, as
// `kubectl drain` does, whatever wakes the reconcile in between (Actor keeps the pace).
inline constexpr std::chrono::seconds kEvictionRetry{2};

struct DisruptionSettings {
  std::string policy = "wait";  // wait | cordon | drain | yield
  int timeout_seconds = 0;      // 0: no limit
  int max_unavailable = 0;      // nodes under test at once among the selected; 0: no limit
};

// `value` ("2", "25%", "" for all) of `selected` nodes: a count, or a percentage rounded down
// and at least 1, as a Deployment's maxUnavailable. kInvalidArgument naming the field.
Result<int> MaxUnavailable(const std::string& value, size_t selected);

// The same count or percentage for the spec field `field` (its name in the error).
Result<int> NodeCount(const std::string& value, size_t selected, const std::string& field);

// Why a worker under spec.disruption.policy yield gave its node away: the condition's reason
// when the scheduler preempted it or it was evicted (DisruptionTarget), "Deleted" when someone
// else deleted it, "GpusTaken" when it was never scheduled because other pods took the GPUs
// first; "" when it did not.
std::string YieldReason(const PodView& pod);

// The other pods holding `node`'s GPUs or nominated to it, as the status names them
// ("ns/a, ns/b"); "" when its GPUs are idle (or were not looked at).
std::string GpusHeldBy(const Snapshot& s, const std::string& node);

// spec.disruption checked for `selected` nodes; kInvalidArgument naming the field.
Result<DisruptionSettings> ParseDisruption(const v1alpha1::Disruption& spec, size_t selected);

struct DisruptionPlan {
  std::vector<std::string> start;    // free of other GPU pods and within maxUnavailable
  std::vector<std::string> waiting;  // "node (why)", for the status message
  // Nodes whose GPU pods outlived spec.disruption.timeoutSeconds: node -> the ERROR's reason.
  std::vector<std::pair<std::string, std::string>> timed_out;
  std::vector<NodeDisruption> disrupt;
  std::vector<PodEviction> evictions;
  // Evictions refused at the last try (a PodDisruptionBudget's message names it): node, pod
  // ("namespace/name"), the refusal.
  struct Refused {
    std::string node;
    std::string pod;
    std::string message;
  };
  std::vector<Refused> refused;
  // Nodes this validation keeps under test while they are made free.
  std::set<std::string> held;
};

// For the nodes in `candidates` (in selected order: no pod or result of this run, not claimed
// or busy with another validation), given the nodes of `selected` and those with a live worker
// of this run (`live`).
DisruptionPlan PlanDisruption(const Snapshot& s, const DisruptionSettings& settings,
                              const std::vector<std::string>& selected,
                              const std::vector<std::string>& candidates,
                              const std::set<std::string>& live,
                              std::chrono::system_clock::time_point now);

// The nodes labelled under test by validation `name` that it no longer holds; `keep_cordon`:
// those whose cordon stays as policy.onFailure taintAndCordon's.
std::vector<NodeRestore> NodesToGiveBack(const std::map<std::string, Json>& nodes,
                                         const std::string& name, const std::set<std::string>& held,
                                         const std::set<std::string>& keep_cordon);

// Node edits (in memory; Act writes them). Each returns whether anything changed.
// Labels `node` under test by validation `name`, records when it began, and cordons it
// (recording that perfgate did) when `cordon` and it is not cordoned already.
bool MarkUnderTest(Json* node, const std::string& name, bool cordon, const std::string& now);
// Removes what MarkUnderTest set for `name` (nothing when another validation's label is there);
// the cordon perfgate made is undone, or with `keep_cordon` kept as the FAIL cordon
// (perfgate.io/cordoned-by), which a later PASS lifts.
bool GiveBack(Json* node, const std::string& name, bool keep_cordon);

}  // namespace perfgate::op

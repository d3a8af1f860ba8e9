// The Decision: what one reconcile wants done — objects to create and delete, results the
// operator writes, node verdicts, events, the new status and when to look again. Plain data,
// produced by Decide (operator/reconcile/decide.h) and applied by Act (operator/reconcile/act.h).
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/verdict.h"
#include "core/json_fields.h"
#include "operator/policy/device_taints.h"
#include "operator/reconcile/claims.h"

namespace perfgate::op {

// Asks for the next look `after` from now, unless one is already asked for sooner (a requeue of 0
// is none asked): every part of a decision that needs a look again goes through this, so the
// soonest wins and none pushes another's later.
inline void RequeueSooner(std::chrono::milliseconds* requeue, std::chrono::milliseconds after) {
  if (requeue->count() == 0 || *requeue > after) *requeue = after;
}

// How one node stands in the current run.
struct NodeOutcome {
  std::string node;
  std::optional<verdict::Verdict> verdict;  // nullopt: not decided yet
  std::string test;                         // the first test that did not pass
  std::string figure;
  std::string reason;
  // The operator wrote its result (never scheduled, crashed, timed out): no worker of it runs.
  bool by_operator = false;
  // The report's recommended action (common/action.h): its step, "" while undecided, and the
  // evidence and devices behind it.
  std::string action{};
  std::vector<std::string> action_evidence{};
  bool action_on_gpu = false;
  // The GPUs a FAIL is confined to (operator/policy/device_taints.h); empty for a node-wide one.
  std::vector<FailingGpu> failing_gpus{};
};

// A PerfResult the operator writes itself (an ERROR it decided).
struct ResultWrite {
  Json result;
  // The node's pod, deleted once every result of the decision is written (a gang rank whose
  // peer is gone: without this it would wait in NCCL until its watchdog fires). Not before:
  // a deleted rank breaks its peers' rendezvous, and a peer whose worker then wrote its own
  // ERROR would keep that instead of the gang's reason). "" for none.
  std::string delete_pod_after;
};

struct PodCreate {
  Json pod;
  // Non-empty: a gang rank whose NCCL_COMM_ID is still to be chosen at
  // --gang-rendezvous-host; Act gives every rank of this gang id the same free port.
  std::string rendezvous_gang;
};

struct NodeVerdict {
  std::string node;
  verdict::Verdict verdict = verdict::Verdict::kError;
  // Whether the node fails repeatedly (label perfgate.io/repeated-failure set or removed);
  // nullopt: not known (no results store), the label is left as it is.
  std::optional<bool> repeated_failure;
  // False: a FAIL the brake on mass quarantine holds back (operator/policy/quarantine.h): its
  // verdict label, without policy.onFailure's taint or cordon.
  bool quarantine = true;
  // The recommended action (label perfgate.io/action, annotation perfgate.io/action-evidence),
  // escalated when the node keeps failing; "" leaves both as they are.
  std::string action{};
  std::string action_evidence{};
  bool action_on_gpu = false;
  // The GPUs a FAIL is confined to: with policy.deviceTaint set and the GPUs published as DRA
  // devices, they are tainted instead of the node.
  std::vector<FailingGpu> failing_gpus{};
};

// A node being made free for its test or given back (spec.disruption; docs/operator.md).
struct NodeDisruption {
  std::string node;
  // Label perfgate.io/under-test=<validation> and the time the disruption began.
  bool label = false;
  // Cordon it, recording that perfgate did (a node cordoned already is left as it is).
  bool cordon = false;
};

// A node given back: the under-test label goes, and the cordon perfgate made for the test is
// undone, or kept as the FAIL cordon of policy.onFailure taintAndCordon.
struct NodeRestore {
  std::string node;
  bool keep_cordon = false;
};

// spec.provisioningTaint or one of spec.remediationTaints on a node with a verdict: a PASS
// removes the taint and the `annotation` (perfgate.io/provisioning-failed or
// perfgate.io/remediation-failed); any other verdict keeps the taint and sets the annotation to
// `reason`.
struct ProvisioningAction {
  std::string node;
  std::string key;
  std::string value;   // "": any value
  std::string effect;  // "": any effect
  bool passed = false;
  std::string reason;
  std::string annotation;
};

struct PodEviction {
  std::string name_space;
  std::string name;
};

struct EventAction {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  // Sent only once the status is written (so a failed write does not announce twice).
  bool after_status = false;
  // Non-empty: sent at most once per key by this operator process (a retried reconcile must
  // not announce the same run again).
  std::string once_key;
};

// A worker pod whose yield finalizer (kYieldFinalizer) goes: nothing is left to record about it.
struct PodRelease {
  std::string name;
  std::string resource_version;  // as read: a pod changed since is looked at again
  Json finalizers;               // the pod's others, kept
};

struct Decision {
  // Metadata.
  bool add_finalizer = false;
  bool remove_finalizer = false;  // after the deletions and node releases below

  // Clean-up, first: pods of other runs (or all, when the validation is deleted), results of
  // runs past policy.keepResults, the previous run's plan (a refused delete is tolerated).
  std::vector<std::string> delete_pods;
  std::vector<std::string> delete_results;
  std::string delete_plan;
  // After the deletions: the worker pods let go (a deleted one is gone once its container ends).
  std::vector<PodRelease> release_pods;

  // The run's plan ConfigMap (created once; an existing one is kept).
  std::optional<Json> plan_config_map;
  std::vector<ResultWrite> results;
  // Deleted after the results are written, failures ignored (a pod unscheduled too long).
  std::vector<std::string> delete_pods_after_results;
  std::vector<Json> services;  // gangs' headless Services, before their pods
  // Node claims made, taken over or renewed before the pods, in node order; a pod (a gang:
  // every pod of it) whose node's claim fails is not created this time.
  std::vector<ClaimAction> claims;
  std::vector<PodCreate> pods;
  // Claims given up after the pods and node verdicts: nodes done, the run complete, the
  // validation deleted.
  std::vector<ClaimRelease> release_claims;

  // Node labels and taints (docs/operator.md, "Node actions"), with the policy's onFailure.
  std::vector<NodeVerdict> node_verdicts;
  std::string on_failure = "none";
  // spec.policy.deviceTaint: "" (off), NoSchedule, NoExecute or None (rehearse).
  std::string device_taint{};
  // Nodes whose verdict label this (deleted) validation set: label and annotation removed.
  std::vector<std::string> release_nodes;
  // spec.provisioningTaint and spec.remediationTaints, after the node verdicts.
  std::vector<ProvisioningAction> provisioning;

  // Safe disruption, before the claims and pods: nodes labelled and cordoned, GPU pods evicted
  // (a refused eviction is remembered for the next snapshot, never retried by deleting); after
  // the node verdicts: nodes given back.
  std::vector<NodeDisruption> disrupt_nodes;
  std::vector<PodEviction> evictions;
  std::vector<NodeRestore> restore_nodes;
  // The nodes this validation keeps under test (its live workers, the workers it starts, the
  // nodes it is making free); its other under-test labels are given back.
  std::set<std::string> under_test;

  std::vector<EventAction> events;
  // The status to write; nullopt: leave it as it is.
  std::optional<Json> status;
  // Per node, in selected-node order (empty before node outcomes are decided).
  std::vector<NodeOutcome> outcomes;
  // Why the run waits, if it waits (also in the status message).
  std::vector<std::string> waiting;
  std::chrono::milliseconds requeue_after{0};  // RequeueSooner sets it; 0: no look asked
  // Not OK: nothing is applied; the reconcile fails and is retried with backoff.
  Status retry;
};

}  // namespace perfgate::op

// New and changed nodes, and the provisioning taint (docs/lifecycle.md, "New and changed nodes"
// and "Node pools"). After a run completed, spec.watchNodes reopens it for a node that newly
// matches the selector or whose GPU Feature Discovery identity changed since its result was
// taken; spec.provisioningTaint is tolerated by the workers and removed from a node that PASSes.
// Pure: decide's part; Act applies the node edits.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/json_fields.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {

// Set on a node that did not pass with spec.provisioningTaint: "<verdict>: <reason>".
inline constexpr const char* kProvisioningFailedAnnotation = "perfgate.io/provisioning-failed";
// The same for a node that did not pass while carrying one of spec.remediationTaints.
inline constexpr const char* kRemediationFailedAnnotation = "perfgate.io/remediation-failed";

// A node's identity from its GPU Feature Discovery labels, e.g.
// "driver=550.54.15 product=NVIDIA-H100-80GB-HBM3 count=8"; "" when it has none of them.
std::string NodeIdentity(const Json& node);

// Whether the spec asks for nodes to be watched after the run completed (new nodes, identity
// changes, fault signals, remediation taints).
bool WatchesNodes(const v1alpha1::PerfValidationSpec& spec);

// Whether it names fault signals: spec.watchNodes conditions, taints or reboot, or
// spec.remediationTaints.
bool WatchesSignals(const v1alpha1::PerfValidationSpec& spec);

// The fault signals `node` shows now of those the spec names, sorted: "taint:<key>",
// "condition:<type>=<status>", "boot:<bootID>".
std::vector<std::string> NodeSignals(const v1alpha1::PerfValidationSpec& spec, const Json& node);

// The same for a validation object as the caches hold it (which completed validations a node
// event concerns).
bool WatchesNodes(const Json& validation);

// spec.watchNodes and spec.provisioningTaint checked (kInvalidArgument naming the field).
Status CheckWatchNodes(const v1alpha1::PerfValidationSpec& spec);

// The name of the worker pod (and of its PerfResult) of `node` in the current run: a node tested
// again after its identity changed gets "-r<k>" for its k-th re-test (status.retests).
std::string WorkerName(const Snapshot& s, const std::string& node);

// Each node's result in the current run: the one its newest worker (WorkerName) wrote.
std::map<std::string, const Json*> ResultsOfRun(const Snapshot& s);

// The run is complete: with spec.watchNodes, selected nodes without a result of the run (new,
// or carrying a remediation taint) and nodes whose identity is not the one recorded with their
// result, or that show a fault signal they did not show then (changed), reopen it. Returns true
// when it did: d->status is the run's status without its completion, the changed nodes' results
// and pods are deleted, and an event names each node. Either way `status`'s nodeSignals are
// brought up to date: a signal that went away counts again when it comes back.
bool DecideWatchNodes(const Snapshot& s, Json* status, Decision* d);

// status.nodeIdentities: each node with a verdict in d->outcomes and no identity recorded yet
// gets its current one (with spec.watchNodes.identityChange).
void RecordIdentities(const Snapshot& s, Decision* d);

// status.nodeSignals: each node with a verdict in d->outcomes and no signals recorded yet gets
// those it shows now.
void RecordSignals(const Snapshot& s, Decision* d);

// The workers' toleration of spec.provisioningTaint; null without one.
Json ProvisioningToleration(const v1alpha1::PerfValidationSpec& spec);

// The workers' tolerations of spec.remediationTaints and spec.watchNodes.taints (any value, any
// effect): a node handed over or flagged with one must still run its test.
Json SignalTolerations(const v1alpha1::PerfValidationSpec& spec);

// With spec.provisioningTaint, for each node verdict: PASS removes the taint (and an earlier
// provisioning-failed annotation), any other verdict keeps it and annotates the node. The same
// for each of spec.remediationTaints a node carries (annotation remediation-failed).
void DecideProvisioning(const Snapshot& s, Decision* d);

// Applies `a` to the node object. Returns whether anything changed.
bool ApplyProvisioning(Json* node, const ProvisioningAction& a);

}  // namespace perfgate::op

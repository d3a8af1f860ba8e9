// New and changed nodes, and the provisioning taint (docs/lifecycle.md, "New and changed nodes"
// and "Node pools"). After a run completed, spec.watchNodes reopens it for a node that newly
// matches the selector or whose GPU Feature Discovery identity changed since its result was
// taken; spec.provisioningTaint is tolerated by the workers and removed from a node that PASSes.
// Pure: decide's part; Act applies the node edits.
#pragma once

#include <string>

#include "common/result.h"
#include "core/json_fields.h"
#include "operator/actions.h"
#include "operator/snapshot.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {

// Set on a node that did not pass with spec.provisioningTaint: "<verdict>: <reason>".
inline constexpr const char* kProvisioningFailedAnnotation = "perfgate.io/provisioning-failed";

// A node's identity from its GPU Feature Discovery labels, e.g.
// "driver=550.54.15 product=NVIDIA-H100-80GB-HBM3 count=8"; "" when it has none of them.
std::string NodeIdentity(const Json& node);

// Whether the spec asks for nodes to be watched after the run completed.
bool WatchesNodes(const v1alpha1::PerfValidationSpec& spec);

// The same for a validation object as the caches hold it (which completed validations a node
// event concerns).
bool WatchesNodes(const Json& validation);

// spec.watchNodes and spec.provisioningTaint checked (kInvalidArgument naming the field).
Status CheckWatchNodes(const v1alpha1::PerfValidationSpec& spec);

// The name of the worker pod (and of its PerfResult) of `node` in the current run: a node tested
// again after its identity changed gets "-r<k>" for its k-th re-test (status.retests).
std::string WorkerName(const Snapshot& s, const std::string& node);

// The run is complete: with spec.watchNodes, selected nodes without a result of the run (new)
// and nodes whose identity is not the one recorded with their result (changed) reopen it.
// Returns true when it did: d->status is the run's status without its completion, the changed
// nodes' results and pods are deleted, and an event names each node.
bool DecideWatchNodes(const Snapshot& s, const Json& status, Decision* d);

// status.nodeIdentities: each node with a verdict in d->outcomes and no identity recorded yet
// gets its current one (with spec.watchNodes.identityChange).
void RecordIdentities(const Snapshot& s, Decision* d);

// The workers' toleration of spec.provisioningTaint; null without one.
Json ProvisioningToleration(const v1alpha1::PerfValidationSpec& spec);

// With spec.provisioningTaint, for each node verdict: PASS removes the taint (and an earlier
// provisioning-failed annotation), any other verdict keeps it and annotates the node.
void DecideProvisioning(const Snapshot& s, Decision* d);

// Applies `a` to the node object. Returns whether anything changed.
bool ApplyProvisioning(Json* node, const ProvisioningAction& a);

}  // namespace perfgate::op

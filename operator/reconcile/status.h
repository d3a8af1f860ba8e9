// The validation's status: its counts, message, verdict word and conditions (docs/operator.md,
// "Status, conditions, nodes"). Every condition is built here and nowhere else. Pure.
#pragma once

#include <string>
#include <vector>

#include "core/json_fields.h"
#include "operator/policy/regressions.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

// Running (or suspended): verdict Running/Suspended, Reconciling True (False when suspended).
Json RunningStatus(Json status, const Json& old_status, bool suspended, const std::string& message,
                   int64_t generation, const std::string& now);

// Complete before any node was measured: `reason` InvalidSpec or NoNodesSelected, the verdict
// word `verdict`, completionTime now.
Json StoppedStatus(Json status, const Json& old_status, const std::string& reason,
                   const std::string& verdict, const std::string& message, int64_t generation,
                   const std::string& now);

// Counts of `outcomes` (passed, failed, inconclusive, errors, pending, passedNodes, progress:
// nodes decided of nodes selected) and the nodes that did not pass (at most 20), into `status`.
// Returns the number pending.
int CountOutcomes(const std::vector<NodeOutcome>& outcomes, Json* status);

// Complete after every node is decided: Passed, or the worst node verdict (Failed, Error,
// Inconclusive) with a message naming the nodes (and the narrowed-down suspects);
// completionTime set when it was not.
Json CompleteStatus(Json status, const Json& old_status, const std::vector<NodeOutcome>& outcomes,
                    int64_t generation, const std::string& now);

// Sets the condition `type` of `status` (replacing one of that type; the message cut to 1000
// characters), keeping its lastTransitionTime when its status did not change from `old_status`.
void SetStatusCondition(Json* status, const Json& old_status, const char* type, const char* value,
                        const std::string& reason, const std::string& message, int64_t generation,
                        const std::string& now);

// Keeps the condition `type` of `old_status` in `status` when `status` has none of that type
// (a run in progress showing what its last completion set).
void CarryCondition(Json* status, const Json& old_status, const std::string& type);

// The condition Recorded from the results store's state (operator/reconcile/recorder.h): True
// (Recorded) while it takes every result, False (StoreUnavailable) while results wait in the spool
// or it cannot be reached. Replaces any earlier Recorded condition in `status`.
void SetRecordedCondition(Json* status, const Json& old_status, const StoreView& store,
                          int64_t generation, const std::string& now);

// The condition Recorded when the operator runs without a results store (--store=off): False
// (StoreOff), with a message saying how to keep results.
void SetStoreOffCondition(Json* status, const Json& old_status, int64_t generation,
                          const std::string& now);

// The condition Regressed once a run is decided and something was compared: True
// (RegressionsFound) naming the nodes, else False (NoRegressions).
void SetRegressedCondition(Json* status, const Json& old_status, const RegressionCheck& check,
                           int64_t generation, const std::string& now);

}  // namespace perfgate::op

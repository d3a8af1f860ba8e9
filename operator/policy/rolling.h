// A rolling period (spec.rolling; docs/operator.md, "Rolling re-validation"): each selected
// node is tested again once its last verdict in this validation is older than the period, the
// oldest first (never tested first), at most maxConcurrent nodes at once, each only while its
// GPUs are idle (the disruption policy wait or yield decides that). When each node was last
// tested lives in the status (status.rolling.nodes), so a restarted operator picks up where
// it was. Pure: decide's part.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/json_fields.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"
#include "perfgate/v1alpha1/validation.pb.h"

namespace perfgate::op {

// The status condition that says whether every node's verdict is within the period.
inline constexpr const char* kCurrentCondition = "Current";

// A period as spec.rolling.period spells it: numbers with a unit each (s, m, h, d, w), e.g.
// "7d", "12h", "1d12h", "90s". kInvalidArgument naming the field.
Result<std::chrono::seconds> ParsePeriod(const std::string& text);

struct RollingSettings {
  std::chrono::seconds period{0};
  int max_concurrent = 0;
};

// Whether the spec sets spec.rolling (any of its fields).
bool IsRolling(const v1alpha1::PerfValidationSpec& spec);

// spec.rolling checked: a period that parses and is not zero, maxConcurrent at least 1, and
// nothing that contradicts it (spec.schedule, spec.gang, a disruption policy that takes busy
// nodes). kInvalidArgument naming the field; OK without spec.rolling.
Status CheckRolling(const v1alpha1::PerfValidationSpec& spec);

// The spec's rolling settings; nullopt without spec.rolling or when CheckRolling fails.
std::optional<RollingSettings> RollingOf(const v1alpha1::PerfValidationSpec& spec);

// `nodes` reordered for their turn: those `status` (status.rolling.nodes) has no verdict for
// first, then the oldest last verdict first; ties keep their order.
void OrderOldestFirst(const Json& status, std::vector<std::string>* nodes);

// With spec.rolling: the nodes whose verdict of the current run is due (its nextDue passed)
// are tested again: their results and pods are deleted, status.retests counts the new test
// (the worker's name), the run is reopened if it was complete. Returns true when it did:
// d->status is the new status and the next look starts their workers.
bool DecideRollingDue(const Snapshot& s, std::chrono::system_clock::time_point now, Json* status,
                      Decision* d);

// With spec.rolling, on every status written: each node with a verdict in d->outcomes whose
// result is not recorded yet gets lastValidated (its result's time), nextDue and lastVerdict
// in status.rolling.nodes; the counts of current and overdue nodes, the condition Current, and
// a look again when the next node falls due.
void RecordRolling(const Snapshot& s, std::chrono::system_clock::time_point now, Decision* d);

}  // namespace perfgate::op

// What to do with a node that did not pass: one step of a short ladder, from the evidence of
// its test results (docs/diagnostics.md, "Recommended action"):
//
//   none < retest < reset-gpu < reboot-node < reseat < rma
//
// Every failure class the tests and health checks produce maps to one step with the reason for
// it (ClassTable); a node's step is the worst of its findings. A node that keeps failing climbs
// the ladder (Escalate), but never to rma: a part goes back to its vendor on evidence of a
// hardware fault, not on a count of failures. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::action {

enum class Step { kNone, kRetest, kResetGpu, kRebootNode, kReseat, kRma };

// "none", "retest", "reset-gpu", "reboot-node", "reseat", "rma".
std::string_view StepName(Step step);
std::optional<Step> ParseStep(std::string_view name);

// One failure class: a metric whose threshold failed (or an XID, or a verdict without a failing
// threshold), the step it calls for, and why.
struct FailureClass {
  std::string what;  // "metric eccUncorrectedVolatileCount", "XID 79", "an ERROR", ...
  Step step;
  std::string why;
};

// Every class, in the order docs/diagnostics.md lists them.
const std::vector<FailureClass>& ClassTable();

// The step a failed threshold on `metric` calls for; nullopt for a metric no class names (a
// performance figure: retest).
std::optional<FailureClass> MetricClass(std::string_view metric);

// The step an XID reported by the driver calls for.
FailureClass XidClass(unsigned long long xid);

// The recommended action of a finished report: none for a PASS; otherwise the worst step of
// every test that did not pass, with its evidence.
v1alpha1::Action Recommend(const v1alpha1::Report& report);

// `step` after `earlier_failures` FAILs of the node in a row before this one: one step up the
// ladder per earlier FAIL, skipping reset-gpu when no GPU is concerned, at most reseat. none and
// rma stay as they are.
Step Escalate(Step step, int earlier_failures, bool gpu_concerned);

}  // namespace perfgate::action

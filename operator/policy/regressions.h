// Regressions, even when nodes pass: when a run is decided, every node that passed is compared
// with its own earlier results in the results store (store/compare.h: the ratio of the
// Hodges-Lehmann shift on log samples, with its interval, listed when the interval lies wholly
// beyond the spec's margin on the worse side) and with its peers of the same GPU model in the
// same run (listed when it lags them as `perfgate summary` and /metrics say: common/compare.h,
// with the spec's margin). Listed nodes are in the status; the policy may make that a failure.
// Pure.
#pragma once

#include <string>
#include <vector>

#include "core/json_fields.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

// A node's worst regressed metric against one reference.
struct Regression {
  std::string node;
  std::string against;  // "history" | "peers"
  std::string test, device, metric, unit;
  double ratio = 0, low = 0, high = 0;  // now / reference (peers: their median), its interval
  double confidence = 0;
  int compared = 0;  // earlier runs (history) or peer nodes (peers)
  int metrics = 0;   // how many of the node's metrics regressed against this reference
};

struct RegressionCheck {
  std::vector<Regression> found;  // worst ratio first
  int compared = 0;               // metric comparisons made
  double margin = 0.03;
  bool history_read = false;  // the store's history was available to compare with
};

// Compares the passing nodes of `outcomes` (the current run of `s`, every node decided).
RegressionCheck FindRegressions(const Snapshot& s, const std::vector<NodeOutcome>& outcomes);

// status.regressions: the rows, at most 20.
Json RegressionsJson(const RegressionCheck& check);
// "synthetic [gpu0] bandwidthGBps 0.920 of its peers (interval 0.915-0.925, 3 peers)".
std::string DescribeRegression(const Regression& r);

// policy.failOnRegression: each regressed node's PASS becomes FAIL, the regression its reason.
void FailRegressed(const RegressionCheck& check, std::vector<NodeOutcome>* outcomes);

}  // namespace perfgate::op

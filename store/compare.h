// Comparisons of one node result's figures with a reference: the node's own earlier results in
// the store, or its peers in the same run. Both are the ratio now / reference of the samples'
// Hodges-Lehmann shift on log figures with its interval, flagged when the whole interval lies
// beyond a practical margin. Pure; shared by local runs (worker/history.h) and the operator.
#pragma once

#include <string>
#include <vector>

#include "common/stats.h"
#include "perfgate/v1alpha1/report.pb.h"
#include "store/store.h"

namespace perfgate::store {

// How one metric of one result compares with the same test, device and metric in its reference.
struct MetricComparison {
  std::string test, device, metric, unit;
  bool higher_is_better = true;
  double now_median = 0;     // this result's median
  double before_median = 0;  // median of the reference's medians (earlier runs' or peers')
  int runs_before = 0;       // earlier runs (history) or peer nodes (peers) it was compared with
  stats::Shift ratio;        // now / reference, Hodges-Lehmann on log samples
  // +1 better, -1 worse (the whole interval beyond the margin), 0 within it or unsure.
  int flag = 0;
};

// `now` against `before` (earlier results' metric records with their samples), matched by test,
// device and metric. Metrics without samples above zero on either side are left out.
std::vector<MetricComparison> CompareWithHistory(const v1alpha1::Report& now,
                                                 const std::vector<MetricRecord>& before,
                                                 double confidence, double margin);

// `now` against `peers` (other nodes' results of the same run and GPU model), matched by test
// and metric: each device of `now` against the samples of every device of every peer. Needs at
// least `min_peers` peers with the metric (fewer cannot say which side is slow); metrics with
// fewer are left out.
std::vector<MetricComparison> CompareWithPeers(const v1alpha1::Report& now,
                                               const std::vector<const v1alpha1::Report*>& peers,
                                               double confidence, double margin, int min_peers = 2);

}  // namespace perfgate::store

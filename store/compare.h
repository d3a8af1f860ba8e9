// A node result's figures against its own earlier results in the store: per metric, the ratio
// now / before of the samples (common/compare.h: the Hodges-Lehmann shift on log figures with
// its interval), flagged when the whole interval lies beyond a practical margin. Pure; shared by
// local runs (worker/history.h) and the operator. How a node compares with its peers is
// "lags its peers" (common/compare.h, through fleet::FindLagging).
#pragma once

#include <string>
#include <vector>

#include "common/stats.h"
#include "perfgate/v1alpha1/report.pb.h"
#include "store/store.h"

namespace perfgate::store {

// How one metric of one result compares with the same test, device and metric in earlier runs.
struct MetricComparison {
  std::string test, device, metric, unit;
  bool higher_is_better = true;
  double now_median = 0;     // this result's median
  double before_median = 0;  // median of the earlier runs' medians
  int runs_before = 0;       // earlier runs it was compared with
  stats::Shift ratio;        // now / reference, Hodges-Lehmann on log samples
  // +1 better, -1 worse (the whole interval beyond the margin), 0 within it or unsure.
  int flag = 0;
};

// `now` against `before` (earlier results' metric records with their samples), matched by test,
// device and metric. Metrics without samples above zero on either side are left out.
std::vector<MetricComparison> CompareWithHistory(const v1alpha1::Report& now,
                                                 const std::vector<MetricRecord>& before,
                                                 double confidence, double margin);

}  // namespace perfgate::store

// A local run's memory: every run recorded in the results store (store/store.h), each new
// run compared with the runs before it on this machine, and named baselines built from stored
// results for thresholds relative to them.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/stats.h"
#include "perfgate/v1alpha1/report.pb.h"
#include "store/compare.h"
#include "store/store.h"

namespace perfgate::worker {

struct HistoryOptions {
  bool record = true;     // --no-store: false
  std::string store_url;  // --store URL; empty: SQLite at store::DefaultLocalPath()
  int previous_runs = 3;  // the runs a new one is compared with, newest first
  double confidence = 0.95;
  double margin = 0.03;  // a shift flagged once its whole interval lies beyond this
};

// The store a local command uses: `url`, else the default SQLite file.
std::string LocalStoreUrl(const std::string& url);

// How one metric of this run compares with earlier runs (store/compare.h).
using store::CompareWithHistory;
using store::MetricComparison;

// The comparison as people read it: a table, then a line per flagged metric.
std::string FormatComparison(const std::vector<MetricComparison>& rows, int runs_before,
                             const std::string& validation, double confidence, double margin);

// After a local run: reads the earlier runs of this validation and profile on this node,
// records `report` (spooled beside the SQLite file if the store cannot take it now: written at
// the next run), and writes the comparison to `out`. A store that cannot be used is a warning
// on `err`, never a failed run.
void RecordLocalRun(const v1alpha1::Report& report, const HistoryOptions& options,
                    std::ostream& out, std::ostream& err);

// `perfgate baseline create|show|list|delete`: named baselines in the store.
struct BaselineArgs {
  std::string verb;       // create, show, list or delete
  std::string name;       // all but list
  std::string store_url;  // empty: the local SQLite store
  std::string from;       // create: the selection, KEY=VALUE,...
  std::string nodes;      // create: only these nodes, comma-separated
  bool any_verdict = false;
  std::string output;  // create, show: "", yaml or json (the PerfBaseline object)
};
int Baseline(const BaselineArgs& args, std::ostream& out, std::ostream& err);

// `perfgate store prune`: retention; at least one of the two bounds is set.
struct PruneArgs {
  double older_than_days = 0;
  int keep_per_node = 0;
  std::string store_url;
};
int PruneStore(const PruneArgs& args, std::ostream& out, std::ostream& err);

// The bound a `baseline: NAME` threshold takes before its fraction: the baseline's value for
// this GPU model and profile version, test (display name), metric and statistic.
Result<double> BaselineValue(store::Store& store, const std::string& baseline,
                             const std::string& gpu_model, const std::string& profile_version,
                             const std::string& test, const std::string& metric,
                             const std::string& statistic);

// PlanOptions::baseline_value for a local run: the store at LocalStoreUrl(store_url), opened
// on first use, and the GPU model of this machine's first GPU ("" without GPUs).
std::function<Result<double>(const std::string&, const std::string&, const std::string&,
                             const std::string&, const std::string&)>
LocalBaselineLookup(const std::string& store_url);

}  // namespace perfgate::worker

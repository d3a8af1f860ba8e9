// What the results store says for one reconcile (operator/reconcile/recorder.h), read in observe so
// that decide stays pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/verdict.h"
#include "core/resolve.h"
#include "store/store.h"

namespace perfgate::op {

// Its baselines (StoreBaselines) are what plan resolution (core/resolve.h) reads of it.
struct StoreView : StoreBaselines {
  std::string describe;    // the store's URL, any password left out
  bool available = false;  // reachable now, and nothing waits in the spool
  std::string error;       // why not, when not available
  int spooled = 0;         // results waiting in the spool for the store
  // The current run's reports in full, by node (the caches keep only a summary of each
  // PerfResult): read from the API once per run and node.
  std::map<std::string, v1alpha1::Report> reports;
  // Earlier results of this run's nodes (this cluster, the same profile, other runs), by node;
  // a node without an entry has no history or it could not be read.
  std::map<std::string, std::vector<store::MetricRecord>> history;
  // The verdicts of the earlier validations of this run's nodes (this cluster, any validation,
  // not this run), newest first, as many as the repeated-failure window; a node without an
  // entry could not be read.
  std::map<std::string, std::vector<verdict::Verdict>> recent_verdicts;
};

}  // namespace perfgate::op

// The operator's results store (docs/store.md): every completed PerfResult recorded once,
// keyed by cluster, validation, run and node; results the store cannot take now wait in a
// spool and are written when it is back. Observe reads what decide needs from the store (its
// state, the nodes' history); act records. Verdicts never wait for the store.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/verdict.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"
#include "store/spool.h"
#include "store/store.h"

namespace perfgate::op {

struct RecorderOptions {
  std::string url;        // store::Open's URL
  std::string cluster;    // --cluster-name: the cluster column of every result
  std::string spool_dir;  // empty: store::DefaultSpoolDir(url)
  int history_runs = 3;   // earlier results of a node its new one is compared with
  // A store that could not be opened is not tried again sooner than this.
  std::chrono::milliseconds reopen_after{std::chrono::seconds(10)};
};

class Recorder {
 public:
  // `clock` (null: the real one) paces the store's reopening (its Now).
  explicit Recorder(RecorderOptions options, std::shared_ptr<perfgate::Clock> clock = nullptr);

  // Observe: writes what waits in the spool, then fills s->store: the store's state, the
  // history of every node with a result in the current run (read once per run and node) and
  // the baselines its thresholds name (read once per run).
  // Blocking (store I/O); thread-safe.
  // The full PerfResults are read through `client` from namespace `ns`.
  void Observe(kube::Client& client, const std::string& ns, Snapshot* s);
  // Act: records the current run's results of `s` and the operator's own results of `d` that
  // are not recorded yet; a result the store cannot take is spooled. Returns whether the
  // store's state changed (available <-> not), so the status is looked at again. Blocking;
  // thread-safe.
  bool Record(const Snapshot& s, const Decision& d);

 private:
  // Opens the store when it is closed and may be tried again. Holds mu_.
  void EnsureOpen();
  // A call on the store failed with `st`: recoverable errors close it until the next try.
  void Failed(const Status& st);
  bool Available() const { return store_ != nullptr && spool_.Pending() == 0; }
  // The parts of Observe, each holding mu_: the current run's reports in full, read once per
  // node; the spool written to a store that is back; the baselines the spec names; each node's
  // earlier figures; each node's earlier verdicts (the repeated-failure rule).
  const std::map<std::string, v1alpha1::Report>& ReadReports(kube::Client& client,
                                                             const std::string& ns,
                                                             const Snapshot& s);
  void CatchUp();
  void ReadBaselines(const Snapshot& s, StoreView* view);
  void ReadHistory(const Snapshot& s, const std::map<std::string, v1alpha1::Report>& full,
                   StoreView* view);
  void ReadRecentVerdicts(const Snapshot& s, const std::map<std::string, v1alpha1::Report>& full,
                          StoreView* view);

  RecorderOptions options_;
  std::shared_ptr<perfgate::Clock> clock_;
  std::mutex mu_;
  std::unique_ptr<store::Store> store_;
  std::string describe_;
  std::string error_;
  std::chrono::steady_clock::time_point next_open_{};
  store::Spool spool_;
  // Per validation: the run whose results are recorded and its nodes done (kept for the newest
  // run only).
  std::map<std::string, std::pair<std::string, std::set<std::string>>> recorded_;
  // Per validation: the run whose full reports were read, and those reports by node.
  std::map<std::string, std::pair<std::string, std::map<std::string, v1alpha1::Report>>> reports_;
  // Per validation: the run whose nodes' history was read, and that history by node.
  std::map<std::string,
           std::pair<std::string, std::map<std::string, std::vector<store::MetricRecord>>>>
      history_;
  // Per validation: the run whose baselines were read, and those baselines by name (frozen, so
  // a run keeps the figures it started with).
  std::map<std::string, std::pair<std::string, std::map<std::string, store::Baseline>>> baselines_;
  // Per validation: the run whose nodes' earlier verdicts were read, and those by node.
  std::map<std::string,
           std::pair<std::string, std::map<std::string, std::vector<verdict::Verdict>>>>
      verdicts_;
};

}  // namespace perfgate::op

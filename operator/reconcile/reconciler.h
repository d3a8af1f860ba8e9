// The PerfValidation reconciler: level-triggered and idempotent. Each call observes the
// validation, its nodes, pods and results (operator/reconcile/snapshot.h), decides in a pure
// function what moves the world one step towards "every selected node has a PerfResult for this run
// and the status, node labels and taints say what they mean" (operator/reconcile/decide.h), applies
// that (operator/reconcile/act.h) and writes the status (docs/operator.md, "One reconcile").
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "kube/client.h"
// What callers of the reconciler use: its config, caches and metrics, and the naming and
// selection rules its tests check.
#include "core/names.h"
#include "core/selection.h"
#include "operator/policy/gangs.h"
#include "operator/reconcile/act.h"
#include "operator/reconcile/config.h"
#include "operator/reconcile/pods.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

struct ReconcileResult {
  // 0: nothing to wait for (events will trigger the next reconcile).
  std::chrono::milliseconds requeue_after{0};
};

class Reconciler {
 public:
  // `clock` (null: the real one) gives the time validations see (its WallNow).
  Reconciler(std::shared_ptr<kube::Client> client, Caches caches, ReconcilerConfig config,
             std::shared_ptr<perfgate::Clock> clock = nullptr);

  // One reconcile of the validation `name`. Blocking (API calls); thread-safe for distinct
  // names (the work queue never hands one name to two workers). An error means "retry with
  // backoff".
  Result<ReconcileResult> Reconcile(const std::string& name);

  ReconcileMetrics& metrics() { return metrics_; }
  // Records results in, and reads history from, this results store (--store). Call before the
  // first reconcile.
  void SetRecorder(std::shared_ptr<Recorder> recorder);

 private:
  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  ReconcilerConfig config_;
  std::shared_ptr<perfgate::Clock> clock_;
  ReconcileMetrics metrics_;
  Actor actor_;
  std::shared_ptr<Recorder> recorder_;
  // Per validation: the run and the PerfBaselines it first read, by name. A run keeps the
  // objects it started with (edited or deleted mid-run, its bounds do not move).
  std::mutex baselines_mu_;
  std::map<std::string, std::pair<std::string, std::map<std::string, Json>>> baselines_;
  void FreezeBaselines(Snapshot* s);
};

}  // namespace perfgate::op

#include "operator/reconcile/reconciler.h"

#include "operator/reconcile/decide.h"
#include "operator/reconcile/live_pods.h"

namespace perfgate::op {

Reconciler::Reconciler(std::shared_ptr<kube::Client> client, Caches caches, ReconcilerConfig config,
                       std::shared_ptr<perfgate::Clock> clock)
    : client_(std::move(client)),
      caches_(std::move(caches)),
      config_(std::move(config)),
      clock_(clock ? std::move(clock) : RealClock()),
      actor_(client_, config_, metrics_, clock_) {}

Result<ReconcileResult> Reconciler::Reconcile(const std::string& name) {
  metrics_.reconciles++;
  // Observe: the validation from the API, the rest from the caches.
  Result<Snapshot> snapshot = Observe(*client_, caches_, config_, name);
  if (!snapshot.ok()) {
    metrics_.errors++;
    return snapshot.status();
  }
  if (!snapshot->exists) return ReconcileResult{};
  FreezeBaselines(&*snapshot);
  snapshot->eviction_refused = actor_.EvictionsRefused(name);
  if (recorder_ != nullptr && !snapshot->deleting)
    recorder_->Observe(*client_, config_.name_space, &*snapshot);
  // A pod unscheduled for the scheduling timeout is judged from the API, not the cache.
  const auto now = clock_->WallNow();
  if (Status confirmed = ConfirmUnscheduled(*client_, config_, now, &*snapshot); !confirmed.ok()) {
    metrics_.errors++;
    return confirmed;
  }
  // Decide: pure.
  const Decision decision = Decide(*snapshot, config_, now);
  if (!decision.retry.ok()) {
    metrics_.errors++;
    return decision.retry;
  }
  // Act, then report: the status is written once, after what it describes was applied.
  ASSIGN_OR_RETURN(Json validation, actor_.Apply(*snapshot, decision));
  // The store's state changed while recording: the status says so at the next look, soon.
  const bool store_changed = actor_.Record(*snapshot, decision);
  if (decision.status) {
    Json status = *decision.status;
    actor_.NameTaintedDevices(name, snapshot->run, &status);
    RETURN_IF_ERROR(actor_.Report(validation, status));
  }
  actor_.SendEvents(*snapshot, decision, /*after_status=*/true);
  if (store_changed) return ReconcileResult{std::chrono::milliseconds(100)};
  ReconcileResult result{decision.requeue_after};
  // A node claimed by a faster validation: the next look shows it waiting (or free again).
  if (actor_.TakeClaimLost(name)) RequeueSooner(&result.requeue_after, std::chrono::seconds(1));
  return result;
}

void Reconciler::FreezeBaselines(Snapshot* s) {
  std::lock_guard<std::mutex> lock(baselines_mu_);
  if (s->run_complete || s->deleting) {
    baselines_.erase(s->name);
    return;
  }
  auto& [run, known] = baselines_[s->name];
  if (run != s->run) {
    run = s->run;
    known.clear();
  }
  for (const auto& [name, object] : s->baselines.by_name) known.emplace(name, object);
  s->baselines.by_name = known;
}

void Reconciler::SetRecorder(std::shared_ptr<Recorder> recorder) {
  recorder_ = recorder;
  actor_.SetRecorder(std::move(recorder));
}

}  // namespace perfgate::op

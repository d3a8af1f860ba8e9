// The controller: a work queue of validation names, the informer handlers that fill it, the
// workers that hand each name to a reconcile function, the requeue policy and shutdown. The
// reconcile is a function, so tests drive the loop with a fake one (docs/operator.md).
//
// Requeue policy (controller-runtime's): a reconcile that fails is retried after the key's next
// backoff (5 ms, 10 ms, ... 1000 s); one that succeeds resets the key's backoff and, when it
// asks for it, runs again after its requeueAfter. A key is never handed to two workers at once;
// a key added while it is being reconciled is reconciled again afterwards.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/result.h"
#include "kube/informer.h"
#include "kube/workqueue.h"
#include "operator/reconcile/reconciler.h"

namespace perfgate::op {

// One reconcile of `key`. Blocking; called from many workers at once, never twice at once for
// one key. An error means "retry with backoff".
using ReconcileFunc = std::function<Result<ReconcileResult>(const std::string& key)>;

// The keys an informer event's object makes ready (may be none). Must be quick and thread-safe:
// it runs on the informer's handler thread.
using KeysOf = std::function<std::vector<std::string>(const nlohmann::json& object)>;

struct ControllerOptions {
  int workers = 4;
  // Backoff of failed keys, and the queue's clock (null: the real one).
  kube::WorkQueueOptions queue;
  std::shared_ptr<perfgate::Clock> clock;
  // How often the wait for the caches re-checks whether Stop was called.
  std::chrono::milliseconds sync_poll_interval{200};
};

class Controller {
 public:
  explicit Controller(ReconcileFunc reconcile, ControllerOptions options = {});
  ~Controller();  // Stops.
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Handlers that enqueue keys_of(object) on every add, update (resyncs included) and delete.
  // With `skip_unchanged`, an update whose object differs from the old one in nothing but
  // metadata.resourceVersion enqueues nothing (a resync, or a write to fields the cache drops).
  // Register them before the informer starts; the controller must outlive the informer's
  // handler thread (stop the informer first).
  kube::InformerHandlers EnqueueFor(const KeysOf& keys_of, bool skip_unchanged = false);
  // Makes `key` ready now. Thread-safe, non-blocking; ignored after Stop.
  void Enqueue(const std::string& key);

  // Starts `caches`, waits until every one has synced, then starts the workers: all on threads
  // the controller owns (Stop joins them), so it returns at once and may be called from a
  // leader elector's callback. Call once; later calls and calls after Stop do nothing.
  void Start(std::vector<kube::Informer*> caches);
  // Ends the wait for the caches, lets reconciles in flight finish, and joins every thread the
  // controller started. No reconcile starts once Stop has returned; keys still queued are
  // dropped. Blocking; thread-safe; idempotent.
  void Stop();

  // Whether the caches have synced and the workers run. Thread-safe, non-blocking.
  bool Synced() const { return synced_.load(); }
  // Keys ready to be handed out. Thread-safe, non-blocking.
  size_t QueueDepth() const { return queue_.Len(); }
  // Workers handling a key now, from taking it until its requeue is decided. Thread-safe,
  // non-blocking.
  int ActiveWorkers() const { return active_.load(); }

 private:
  void Run(const std::vector<kube::Informer*>& caches);
  void Work();
  void Handle(const std::string& key);

  ReconcileFunc reconcile_;
  ControllerOptions options_;
  kube::WorkQueue queue_;
  perfgate::Cancellation cancel_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};

  std::mutex stop_mu_;  // held for the whole of Stop
  std::mutex mu_;       // guards started_, stopped_, starter_, workers_
  bool started_ = false;
  bool stopped_ = false;
  std::thread starter_;
  std::vector<std::thread> workers_;
};

// The informers whose events make a validation's key ready.
struct ValidationInformers {
  kube::Informer* validations = nullptr;
  kube::Informer* pods = nullptr;     // worker pods
  kube::Informer* results = nullptr;  // PerfResults
  kube::Informer* nodes = nullptr;
};

// Registers the operator's handlers: a validation's own events enqueue it; a worker pod's or a
// PerfResult's enqueue the validation that owns it; a node's change (GPUs, cordon, labels, taints)
// enqueues every validation not yet complete, whose selection it may change. Call before the
// informers start (and after any index whose handlers a reconcile reads: handlers run in order).
void EnqueueValidationsOn(Controller& controller, const ValidationInformers& informers);

// The validation an object belongs to: its PerfValidation owner reference, which names it in
// full, else its perfgate.io/validation label (which may be shortened). Empty when neither.
std::vector<std::string> OwningValidation(const nlohmann::json& object);

}  // namespace perfgate::op

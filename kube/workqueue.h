// A rate-limited work queue of string keys with client-go's guarantees:
// duplicates collapse (a dirty set), one key is never handed to two workers at
// once (a processing set; a key added while processing is re-queued when Done),
// per-key exponential backoff, delayed adds.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/clock.h"

namespace perfgate::kube {

struct WorkQueueOptions {
  // Per-key backoff for AddRateLimited: baseDelay * 2^failures, capped
  // (controller-runtime's defaults 5 ms .. 1000 s).
  std::chrono::nanoseconds baseDelay = std::chrono::milliseconds(5);
  std::chrono::nanoseconds maxDelay = std::chrono::seconds(1000);
  // How often a blocked Get re-reads the clock while delayed keys wait (matters
  // only for a fake clock; a real clock wakes on time).
  std::chrono::milliseconds pollInterval{20};
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {}, std::shared_ptr<Clock> clock = nullptr);

  // Marks `key` as needing work. A key already waiting is not added twice; a
  // key being processed is queued again when its worker calls Done. Ignored
  // after ShutDown. Thread-safe, non-blocking.
  void Add(const std::string& key);
  // Adds `key` after `delay` (<= 0: now). An earlier pending delay for the key
  // wins. Thread-safe.
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  // AddAfter with the key's next backoff (5 ms, 10 ms, ... 1000 s) and counts a
  // failure.
  void AddRateLimited(const std::string& key);
  // Resets the key's failure count (call on success). Thread-safe.
  void Forget(const std::string& key);
  // Failures counted for `key` since the last Forget. Thread-safe.
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready (returns it, now owned by the caller until
  // Done) or the queue is shut down and drained of ready keys (returns
  // nullopt). Thread-safe: many workers may wait.
  std::optional<std::string> Get();
  // Like Get but never blocks: nullopt when no key is ready now. Thread-safe.
  std::optional<std::string> TryGet();
  // Ends processing of `key`; re-queues it if it was added meanwhile.
  // Thread-safe.
  void Done(const std::string& key);
  // Wakes every Get: they return nullopt once no ready key is left.
  // Thread-safe; idempotent.
  void ShutDown();
  bool ShuttingDown() const;
  // Keys ready to be handed out (not counting delayed or processing ones).
  // Thread-safe.
  size_t Len() const;

 private:
  void AddLocked(const std::string& key);
  void PromoteDueLocked();

  WorkQueueOptions options_;
  std::shared_ptr<Clock> clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  // Delayed adds: key -> due time, plus the ordered index.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> waiting_;
  std::multimap<std::chrono::steady_clock::time_point, std::string> waiting_by_time_;
  std::unordered_map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace perfgate::kube

// Time and cancellation behind small interfaces: the one clock every timed part of perfgate
// takes (the Kubernetes client's backoff, rate limiting, resync, work queue and leader
// election; the operator's view of the time; the worker's sampling budget and result-write
// retries; the NCCL watchdog), so tests drive time instead of sleeping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace perfgate {

// A one-shot cancellation flag shared by the canceller and the cancelled (a
// watch, a backoff sleep, an elector's loop). Thread-safe.
class Cancellation {
 public:
  // Sets the flag, wakes every SleepFor waiting on it and runs the registered
  // callbacks once. Thread-safe; callbacks run on the calling thread.
  void Cancel();
  // Thread-safe, non-blocking.
  bool cancelled() const;
  // Registers `fn` to run on Cancel (at once, on this thread, if already
  // cancelled). Returns an id for Unregister. Thread-safe.
  uint64_t OnCancel(std::function<void()> fn) const;
  // Removes a callback; after it returns the callback will not start.
  // Thread-safe.
  void Unregister(uint64_t id) const;
  // Blocks up to `timeout` (real time) or until cancelled. Returns true if
  // cancelled.
  bool WaitFor(std::chrono::nanoseconds timeout) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool cancelled_ = false;
  // Registration is const: a watch registers on a cancellation it may only
  // observe.
  mutable uint64_t next_id_ = 1;
  mutable std::map<uint64_t, std::function<void()>> callbacks_;
};

// Monotonic and wall time plus an interruptible sleep. Implementations are
// thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time for deadlines and intervals. Non-blocking.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Wall-clock time for timestamps written to the API (Lease renewTime).
  // Non-blocking.
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
  // Blocks for `duration` or until `cancel` (may be null) is cancelled; returns
  // false when cancelled. A fake clock advances its time by `duration` and
  // returns at once.
  virtual bool SleepFor(std::chrono::nanoseconds duration, const Cancellation* cancel) = 0;

  // Now() in seconds from the clock's origin, for intervals kept as numbers. Non-blocking.
  double NowSeconds() const {
    return std::chrono::duration<double>(Now().time_since_epoch()).count();
  }
  // SleepFor(seconds) without a cancellation; 0 or less yields the thread. Blocking.
  void SleepSeconds(double seconds) {
    SleepFor(std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::duration<double>(seconds > 0 ? seconds : 0)),
             nullptr);
  }
};

// The process-wide real clock (steady_clock / system_clock). Never null.
std::shared_ptr<Clock> RealClock();

}  // namespace perfgate

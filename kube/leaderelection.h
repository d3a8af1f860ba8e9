// Leader election on a coordination.k8s.io/v1 Lease, with client-go's timing
// (lease duration 15 s, renew deadline 10 s, retry period 2 s) and optimistic
// concurrency on resourceVersion. Losing the lease (no successful renew within
// the renew deadline) calls OnStoppedLeading: the operator then exits, as
// controller-runtime's managers do.
//
// The renew deadline is kept by the clock, not by the API calls: each attempt
// runs on a helper thread while the elector's thread waits for it only until
// the deadline, so a request stuck in the client's retries or in a frozen API
// server cannot keep a leader acting. A renewal counts from when its attempt
// started (the API server cannot have written it earlier), so a leader stops at
// most renewDeadline after the last renewal another replica can have seen,
// before that replica's leaseDuration runs out.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/result.h"
#include "kube/client.h"

namespace perfgate::kube {

// The fields of a Lease spec that election uses.
struct LeaseRecord {
  std::string holderIdentity;
  int32_t leaseDurationSeconds = 0;
  std::chrono::system_clock::time_point acquireTime{};
  std::chrono::system_clock::time_point renewTime{};
  int32_t leaseTransitions = 0;
  std::string resourceVersion;  // of the Lease object (optimistic concurrency)
};

// MicroTime as the API writes it: "2026-11-30T07:15:39.123456Z". And back.
std::string FormatMicroTime(std::chrono::system_clock::time_point t);
Result<std::chrono::system_clock::time_point> ParseMicroTime(const std::string& text);

// Where the lease lives. Implementations are thread-safe and blocking.
class LeaseLock {
 public:
  virtual ~LeaseLock() = default;
  // The current record; kNotFound when no Lease exists.
  virtual Result<LeaseRecord> Get() = 0;
  // Creates the Lease with `record`; kAlreadyExists when someone was faster.
  virtual Result<LeaseRecord> Create(const LeaseRecord& record) = 0;
  // Replaces it if record.resourceVersion is still current; kAborted (409)
  // otherwise.
  virtual Result<LeaseRecord> Update(const LeaseRecord& record) = 0;
  // "namespace/name", for logs.
  virtual std::string Describe() const = 0;
};

// A LeaseLock on a real Lease through `client`. Its requests retry at most 4
// times, at most 1 s apart (a longer Retry-After is cut to 1 s), and each try
// waits at most 5 s for an answer, so a read and a write fit in one attempt's
// renew deadline whatever the API server answers.
std::shared_ptr<LeaseLock> NewLeaseLock(const std::shared_ptr<Client>& client, std::string ns,
                                        std::string name);

struct LeaderElectionConfig {
  std::string identity;  // unique per candidate: pod name + random suffix
  std::chrono::milliseconds leaseDuration{15000};
  std::chrono::milliseconds renewDeadline{10000};
  std::chrono::milliseconds retryPeriod{2000};
  // On shutdown while leading, write an expired lease so a successor need not
  // wait.
  bool releaseOnCancel = true;
  // Called once on the elector's thread when we become leader; must return
  // quickly (start the workers and return) because renewing waits for it.
  std::function<void()> onStartedLeading;
  // Called once when leadership ends (lost or released), on the elector's
  // thread.
  std::function<void()> onStoppedLeading;
  // Called when the observed holder changes (including to us), on the thread
  // that made the attempt.
  std::function<void(const std::string& identity)> onNewLeader;
};

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<LeaseLock> lock, LeaderElectionConfig config,
                std::shared_ptr<Clock> clock = nullptr);
  // Waits for an attempt still waiting on the API server (one Run gave up on).
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Tries to acquire until `stop` fires, then leads: renews every retryPeriod
  // until renewDeadline has passed on the clock since the start of the last
  // successful attempt (lost: onStoppedLeading at that instant, even while an
  // attempt is still waiting for the API server) or `stop` fires (then
  // onStoppedLeading, then the lease is released if configured). Blocking: run
  // on its own thread. Returns when it has stopped leading or was stopped before
  // leading. The clock's sleeps must block until their time comes (the real
  // clock, or a test clock advanced by another thread), as attempts run
  // concurrently with the wait.
  void Run(const Cancellation& stop);

  // One acquire-or-renew attempt, as client-go's tryAcquireOrRenew: true when
  // we hold the lease afterwards. Blocking (one or two API calls). Not
  // thread-safe against Run.
  bool TryAcquireOrRenew();
  // Writes a released lease if we hold it. Blocking.
  Status Release();

  bool IsLeader() const { return leader_.load(); }
  std::string ObservedHolder() const;

 private:
  struct AttemptState;
  enum class Outcome { kHeld, kNotHeld, kTimedOut };
  // TryAcquireOrRenew on the attempt thread, waited for until `deadline` (on the
  // clock) or `stop`. An attempt not back by then is abandoned: it writes
  // nothing more once it notices.
  Outcome Attempt(std::chrono::steady_clock::time_point deadline, const Cancellation& stop);
  // True when `state`'s attempt returned before `deadline` and `stop`.
  bool WaitForAttempt(const AttemptState& state, std::chrono::steady_clock::time_point deadline,
                      const Cancellation& stop);
  bool TryAcquireOrRenew(const Cancellation* abandoned);
  // Records `current` as observed (when it changed; the holder observed before goes into
  // `previous_holder`) and says whether another identity holds it and its lease has not run out
  // since it was observed; a new holder is announced (config_.onNewLeader).
  bool HeldByLiveOther(const LeaseRecord& current, std::string* previous_holder);

  std::shared_ptr<LeaseLock> lock_;
  LeaderElectionConfig config_;
  std::shared_ptr<Clock> clock_;
  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;
  std::optional<LeaseRecord> observed_;
  // When we (locally, monotonic) last saw the record change: expiry is judged
  // from this, not from the holder's wall-clock renewTime, so clock skew
  // between nodes does not matter.
  std::chrono::steady_clock::time_point observed_at_{};
  // The attempt in flight or last made (Run's thread only).
  std::thread attempt_thread_;
  std::shared_ptr<AttemptState> attempt_;
};

}  // namespace perfgate::kube

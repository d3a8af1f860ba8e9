// Time points written as RFC 3339, for operator tests that set their clock.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/time.h"

namespace perfgate::op {

inline std::chrono::system_clock::time_point At(const std::string& rfc3339) {
  return *ParseRfc3339(rfc3339);
}

// The clock of the reconcile tests.
inline const std::chrono::system_clock::time_point kT0 = At("2026-12-01T12:00:00Z");

// A clock that shows the time the test sets (`now`); its monotonic time moves with it, and a
// sleep moves both. Not thread-safe: for tests that drive one reconcile at a time.
class SetClock final : public Clock {
 public:
  explicit SetClock(std::chrono::system_clock::time_point at) : now(at) {}
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(now.time_since_epoch());
  }
  std::chrono::system_clock::time_point WallNow() const override { return now; }
  bool SleepFor(std::chrono::nanoseconds duration, const Cancellation* cancel) override {
    now += std::chrono::duration_cast<std::chrono::system_clock::duration>(duration);
    return cancel == nullptr || !cancel->cancelled();
  }

  std::chrono::system_clock::time_point now;
};

inline std::shared_ptr<SetClock> WallClockAt(std::chrono::system_clock::time_point at) {
  return std::make_shared<SetClock>(at);
}

}  // namespace perfgate::op

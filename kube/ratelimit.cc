#include "kube/ratelimit.h"

#include <algorithm>
#include <utility>

namespace perfgate::kube {

TokenBucket::TokenBucket(double qps, int burst, std::shared_ptr<Clock> clock)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(clock ? std::move(clock) : RealClock()),
      tokens_(burst_),
      last_(clock_->Now()) {}

void TokenBucket::RefillLocked() {
  auto now = clock_->Now();
  if (now > last_) {
    double elapsed_s = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed_s * qps_);
    last_ = now;
  }
}

std::chrono::nanoseconds TokenBucket::Reserve() {
  std::lock_guard lock(mu_);
  RefillLocked();
  // Tokens may go negative: each waiter reserves its own future token, so
  // concurrent callers queue up behind each other instead of all waking for the
  // same one.
  tokens_ -= 1.0;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

bool TokenBucket::Acquire(const Cancellation* cancel) {
  if (qps_ <= 0) return cancel == nullptr || !cancel->cancelled();
  auto wait = Reserve();
  if (wait.count() <= 0) return cancel == nullptr || !cancel->cancelled();
  if (!clock_->SleepFor(wait, cancel)) {
    std::lock_guard lock(mu_);
    tokens_ += 1.0;  // give back the reservation we will not use
    return false;
  }
  return true;
}

bool TokenBucket::TryAcquire() {
  if (qps_ <= 0) return true;
  std::lock_guard lock(mu_);
  RefillLocked();
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

}  // namespace perfgate::kube

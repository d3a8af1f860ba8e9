// Client-side rate limiting: a token bucket like client-go's flowcontrol (QPS
// and burst).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "common/clock.h"

namespace perfgate::kube {

class TokenBucket {
 public:
  // `qps` tokens per second refill a bucket of `burst` tokens (starts full).
  // qps <= 0: unlimited.
  TokenBucket(double qps, int burst, std::shared_ptr<Clock> clock);
  // Takes one token, sleeping (through the clock) until one is available.
  // Returns false if `cancel` (may be null) fired first. Blocking; thread-safe;
  // callers are served by reservation order, so the bucket never over-spends.
  bool Acquire(const Cancellation* cancel = nullptr);
  // Takes a token only if one is available now. Non-blocking; thread-safe.
  bool TryAcquire();

 private:
  // Adds the tokens earned since the last refill, up to the burst. Call with mu_ held.
  void RefillLocked();
  // Reserves a token and returns how long the caller must wait for it.
  std::chrono::nanoseconds Reserve();

  const double qps_;
  const double burst_;
  std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace perfgate::kube

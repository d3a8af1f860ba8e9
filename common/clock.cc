#include "common/clock.h"

#include <thread>
#include <utility>
#include <vector>

namespace perfgate {

void Cancellation::Cancel() {
  std::map<uint64_t, std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& [id, fn] : callbacks) fn();
}

bool Cancellation::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

uint64_t Cancellation::OnCancel(std::function<void()> fn) const {
  {
    std::lock_guard lock(mu_);
    if (!cancelled_) {
      uint64_t id = next_id_++;
      callbacks_.emplace(id, std::move(fn));
      return id;
    }
  }
  fn();
  return 0;
}

void Cancellation::Unregister(uint64_t id) const {
  std::lock_guard lock(mu_);
  callbacks_.erase(id);
}

bool Cancellation::WaitFor(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return cancelled_; });
}

namespace {

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
  bool SleepFor(std::chrono::nanoseconds duration, const Cancellation* cancel) override {
    if (cancel == nullptr) {
      if (duration.count() > 0) {
        std::this_thread::sleep_for(duration);
      } else {
        std::this_thread::yield();
      }
      return true;
    }
    if (duration.count() <= 0) return !cancel->cancelled();
    return !cancel->WaitFor(duration);
  }
};

}  // namespace

std::shared_ptr<Clock> RealClock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace perfgate

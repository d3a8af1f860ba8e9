#include "kube/workqueue.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace perfgate::kube {

WorkQueue::WorkQueue(WorkQueueOptions options, std::shared_ptr<Clock> clock)
    : options_(options), clock_(clock ? std::move(clock) : RealClock()) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return;
  if (dirty_.contains(key)) return;  // already waiting: collapse
  dirty_.insert(key);
  if (processing_.contains(key)) return;  // Done() will queue it
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (delay.count() <= 0) {
    AddLocked(key);
    return;
  }
  auto due = clock_->Now() + delay;
  auto it = waiting_.find(key);
  if (it != waiting_.end()) {
    if (it->second <= due) return;  // the earlier one stands
    auto range = waiting_by_time_.equal_range(it->second);
    for (auto r = range.first; r != range.second; ++r) {
      if (r->second == key) {
        waiting_by_time_.erase(r);
        break;
      }
    }
    it->second = due;
  } else {
    waiting_.emplace(key, due);
  }
  waiting_by_time_.emplace(due, key);
  cv_.notify_all();  // a waiting Get may need to wake earlier
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::nanoseconds delay;
  {
    std::lock_guard lock(mu_);
    int failures = failures_[key]++;
    // base * 2^failures, computed in double so large counts saturate at the
    // cap, not overflow.
    double d =
        static_cast<double>(options_.baseDelay.count()) * std::pow(2.0, std::min(failures, 62));
    auto cap = static_cast<double>(options_.maxDelay.count());
    delay = std::chrono::nanoseconds(static_cast<int64_t>(std::min(d, cap)));
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked() {
  auto now = clock_->Now();
  while (!waiting_by_time_.empty() && waiting_by_time_.begin()->first <= now) {
    std::string key = std::move(waiting_by_time_.begin()->second);
    waiting_by_time_.erase(waiting_by_time_.begin());
    waiting_.erase(key);
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  while (true) {
    PromoteDueLocked();
    if (!queue_.empty()) break;
    if (shutting_down_) return std::nullopt;
    if (waiting_by_time_.empty()) {
      cv_.wait(lock);
    } else {
      auto until_due = waiting_by_time_.begin()->first - clock_->Now();
      cv_.wait_for(lock, std::min<std::chrono::nanoseconds>(until_due, options_.pollInterval));
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

std::optional<std::string> WorkQueue::TryGet() {
  std::lock_guard lock(mu_);
  PromoteDueLocked();
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.contains(key)) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    waiting_.clear();
    waiting_by_time_.clear();
  }
  cv_.notify_all();
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace perfgate::kube

#include "operator/runtime/expectations.h"

namespace perfgate::op {

void Expectations::Created(const std::string& key, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  created_[key] = now;
}

void Expectations::Observed(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  created_.erase(key);
}

bool Expectations::Pending(const std::string& key, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = created_.find(key);
  if (it == created_.end()) return false;
  if (now - it->second >= ttl_) {
    created_.erase(it);
    return false;
  }
  return true;
}

size_t Expectations::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return created_.size();
}

}  // namespace perfgate::op

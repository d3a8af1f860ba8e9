// Expectations: what this operator created and its informer cache does not show yet. A
// reconcile that runs on a cache behind the API (right after a status write, say) would see
// no pod and POST it again; Act asks here first and skips what is already on its way, as
// controller-runtime's expectations do. An expectation ends when the cache shows the object,
// or after `ttl` (the object was deleted before the cache ever saw it). Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace perfgate::op {

class Expectations {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Expectations(Clock::duration ttl = std::chrono::minutes(5)) : ttl_(ttl) {}

  // `key` ("pods/<name>") was created (or found existing) at `now`.
  void Created(const std::string& key, Clock::time_point now);
  // The cache shows `key`: nothing more to expect.
  void Observed(const std::string& key);
  // True while `key` was created and the cache has not shown it (and `ttl` has not passed).
  bool Pending(const std::string& key, Clock::time_point now);
  // How many are pending (for tests and logs).
  size_t size();

 private:
  Clock::duration ttl_;
  std::mutex mu_;
  std::map<std::string, Clock::time_point> created_;
};

}  // namespace perfgate::op

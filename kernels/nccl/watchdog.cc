#include "kernels/nccl/watchdog.h"

#include <chrono>
#include <cstdio>
#include <thread>

namespace perfgate::kernels::nccl {
namespace {

class SteadyClockImpl final : public Clock {
 public:
  double NowSeconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void Sleep(double seconds) override {
    if (seconds <= 0) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
};

std::string Seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", s);
  return buffer;
}

}  // namespace

Clock& SteadyClock() {
  static SteadyClockImpl clock;
  return clock;
}

Status WaitWithWatchdog(const std::string& what, const WatchdogOptions& options,
                        const std::function<Result<bool>()>& poll,
                        const std::function<void(const std::string& reason)>& abort, Clock& clock) {
  const double start = clock.NowSeconds();
  while (true) {
    Result<bool> done = poll();
    if (!done.ok()) return done.status().WithContext(what);
    if (*done) return Status::Ok();
    const double waited = clock.NowSeconds() - start;
    if (waited >= options.timeout_seconds) {
      const std::string reason = what + ": not done after " + Seconds(waited) + " s (timeout " +
                                 Seconds(options.timeout_seconds) + " s); aborted by the watchdog";
      abort(reason);
      return DeadlineExceeded(reason);
    }
    clock.Sleep(options.poll_interval_seconds);
  }
}

}  // namespace perfgate::kernels::nccl

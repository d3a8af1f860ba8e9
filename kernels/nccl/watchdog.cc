#include "kernels/nccl/watchdog.h"

#include <cstdio>

namespace perfgate::kernels::nccl {
namespace {

std::string Seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", s);
  return buffer;
}

}  // namespace

Status WaitWithWatchdog(const std::string& what, const WatchdogOptions& options,
                        const std::function<Result<bool>()>& poll,
                        const std::function<void(const std::string& reason)>& abort,
                        perfgate::Clock& clock) {
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
    clock.SleepSeconds(options.poll_interval_seconds);
  }
}

}  // namespace perfgate::kernels::nccl

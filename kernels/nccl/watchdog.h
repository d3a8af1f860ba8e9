// The watchdog: NCCL calls can wait forever (a peer that never comes, a link that dies), so
// every wait on a non-blocking communicator polls its progress against a deadline and, once the
// deadline passes, aborts the communicator (ncclCommAbort, or closing the CPU stand-in's
// sockets) and returns DeadlineExceeded with the reason. The poll runs in the waiting thread:
// NCCL's non-blocking API is made for exactly this, and no second thread touches the
// communicator while the first is inside NCCL.
#pragma once

#include <functional>
#include <string>

#include "common/clock.h"
#include "common/result.h"

namespace perfgate::kernels::nccl {

struct WatchdogOptions {
  double timeout_seconds = 300;
  // Pause between polls: 0 for the timed collectives (a sleep would add to the time), a
  // millisecond for rendezvous and init.
  double poll_interval_seconds = 0;
};

// Calls poll() until it returns true (done) or an error, or until `timeout_seconds` have passed
// since the call; then calls abort(reason) once and returns DeadlineExceeded(reason), where the
// reason reads "<what>: not done after <t> s; aborted by the watchdog". An error from poll() is
// returned with `what` as context (and abort is not called: the caller owns that path).
// Blocking; `poll` and `abort` run in the calling thread.
Status WaitWithWatchdog(const std::string& what, const WatchdogOptions& options,
                        const std::function<Result<bool>()>& poll,
                        const std::function<void(const std::string& reason)>& abort,
                        perfgate::Clock& clock = *RealClock());

}  // namespace perfgate::kernels::nccl

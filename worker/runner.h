// Runs a plan on this machine: every test on every target (the host, or each GPU at once, one
// host thread per device), warm-up then samples until the verdict is decided or the budget is
// spent, thresholds evaluated, one Report.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "common/clock.h"
#include "core/plan.h"
#include "kernels/devices.h"
#include "perfgate/v1alpha1/report.pb.h"

namespace perfgate::worker {

class TimelineRecorder;

struct RunOptions {
  // Progress lines while it works (may be null). Written under a lock.
  std::ostream* progress = nullptr;
  // 0: plain lines for a log (each test's start and end, each target that did not pass); a
  // terminal's width: also a status line rewritten in place while a test runs.
  int progress_columns = 0;
  // Raw samples kept per metric in the report.
  int sample_cap = 16;
  // The clock the sampling budget and each test's seconds are measured on; null: RealClock().
  std::shared_ptr<Clock> clock;
  // GPU discovery (injectable for tests).
  std::function<Result<std::vector<kernels::GpuDevice>>()> list_gpus = kernels::ListCudaDevices;
  // The identity block (host, CPU, GPUs); filled by FillIdentity() unless tests replace it.
  std::function<void(v1alpha1::Identity*)> identity;
  // When set, samples the GPUs of each GPU test while it runs (capture on failure,
  // worker/diagnostics.h).
  TimelineRecorder* timeline = nullptr;
};

v1alpha1::Report RunPlan(const Plan& plan, const RunOptions& options);

// The stop rule after measured sample `n`: empty to take another sample, else the stop reason
// (report.proto's stopReason vocabulary). Any plan stops when `failed_for_good`
// (verdict::FailedForGood of the samples so far: a count above its bound, which no later
// sample can mend). Otherwise a fixed plan runs to maxRepeats; a sequential one stops when
// `assessment` (Assess of the samples so far, not final; unread for a fixed plan) says so, on a
// decided FAIL once minRepeats are in, at maxRepeats, or when `out_of_time`.
std::string StopReason(const verdict::Sampling& sampling, int n, bool out_of_time,
                       const verdict::Assessment* assessment, bool failed_for_good);

// Local exit codes (docs/operator.md, "Verdict words"): 0 passed, 1 a threshold failed, 3
// inconclusive or error. (2, invalid input, is decided before a run.)
int ExitCode(const v1alpha1::Report& report);

// Host identity: hostname, CPU model and cores, memory, kernel, CUDA versions, GPUs.
void FillIdentity(v1alpha1::Identity* identity);

}  // namespace perfgate::worker

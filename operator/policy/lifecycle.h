// A validation over time (docs/lifecycle.md): scheduled re-runs as CronJob starts jobs
// (spec.schedule, spec.timeZone, spec.startingDeadlineSeconds; never two runs at once) and the
// bounded history of runs in the status. Pure: the time comes in as an argument.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/result.h"
#include "core/json_fields.h"
#include "operator/reconcile/actions.h"
#include "operator/reconcile/snapshot.h"

namespace perfgate::op {

// Runs kept in status.history, newest last.
inline constexpr size_t kHistoryLimit = 10;

// The status condition naming the nodes that fail repeatedly.
inline constexpr const char* kRepeatedFailuresCondition = "RepeatedFailures";

// What the schedule asks for at `now`.
struct ScheduleStep {
  using TimePoint = std::chrono::system_clock::time_point;
  // Start a run for this scheduled time now (it becomes status.lastScheduleTime, and with it
  // the run id).
  std::optional<TimePoint> start;
  // The latest scheduled time left unrun: past spec.startingDeadlineSeconds.
  std::optional<TimePoint> skipped;
  // Scheduled times missed and never to run (beside the one started, if any).
  int missed = 0;
  // The next scheduled time after `now`.
  std::optional<TimePoint> next;
};

// The schedule's step from the validation's `status` (lastScheduleTime, lastSkippedScheduleTime,
// startTime) at `now`. A run in progress (or a suspended validation) starts nothing: the time
// it covers is looked at again when it ends, like a CronJob with concurrencyPolicy Forbid.
// Only the latest missed time can start, once; older ones are counted as missed. Not OK: the
// schedule does not parse.
Result<ScheduleStep> StepSchedule(const v1alpha1::PerfValidationSpec& spec, const Json& status,
                                  std::chrono::system_clock::time_point now, bool running);

// The spec's schedule checked (kInvalidArgument naming spec.schedule / spec.timeZone); OK when
// there is none.
Status CheckSchedule(const v1alpha1::PerfValidationSpec& spec);

// The run id token the schedule adds to the rerun annotation's: "" before the first scheduled
// run.
std::string ScheduleToken(const Json& status);

// A new run's status: what outlives a run (the schedule's fields, the history, with the old run
// added as Superseded if it never completed) carried from `old_status`, and how the run began
// (status.trigger: created, spec, rerun or schedule).
Json NewRunStatus(const Json& old_status, const std::string& run, int64_t generation,
                  const std::string& now);

// At a run's completion, with a results store: each node's verdict and its earlier ones
// (StoreView::recentVerdicts) against spec.policy's repeated-failure rule
// (operator/policy/repeated_failures.h): NodeVerdict::repeatedFailure, status.repeatedFailures[]
// and a RepeatedFailure event per node flagged, and the condition RepeatedFailures: True naming the
// flagged nodes, False when none of the nodes whose history was read is (a run in progress
// keeps the condition of the last completion).
void DecideRepeatedFailures(const Snapshot& s, const std::string& now, Decision* d);

// Schedules the next run and keeps the history: the finished run added to status.history,
// the schedule's fields and events, a look again at the next scheduled time, and (at
// completion) DecideRepeatedFailures. For every decision that writes a status.
void DecideLifecycle(const Snapshot& s, std::chrono::system_clock::time_point now, Decision* d);

}  // namespace perfgate::op

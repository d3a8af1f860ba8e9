#include "operator/policy/lifecycle.h"

#include <algorithm>

#include "common/action.h"
#include "common/time.h"
#include "core/names.h"
#include "operator/policy/repeated_failures.h"
#include "operator/policy/schedule.h"
#include "operator/reconcile/status.h"

namespace perfgate::op {
namespace {

using Clock = std::chrono::system_clock;

// The status fields a run leaves to the next.
constexpr const char* kCarried[] = {
    "lastScheduleTime", "nextScheduleTime", "lastSkippedScheduleTime",
    "missedSchedules",  "history",          "rolling"};

std::optional<Clock::time_point> TimeField(const Json& status, const char* key) {
  const std::string v = status.value(key, "");
  if (v.empty()) return std::nullopt;
  return ParseRfc3339(v);
}

// The validation's status as observed (none in a snapshot without the object).
Json OldStatus(const Snapshot& s) {
  return s.validation.is_object() ? s.validation.value("status", Json::object()) : Json::object();
}

// The history entry of the run `status` describes.
Json HistoryEntry(const Json& status, const std::string& verdict) {
  Json e = {{"run", status.value("run", "")},
            {"trigger", status.value("trigger", "created")},
            {"startTime", status.value("startTime", "")},
            {"verdict", verdict}};
  if (!status.value("scheduledTime", "").empty()) e["scheduledTime"] = status["scheduledTime"];
  if (!status.value("completionTime", "").empty()) e["completionTime"] = status["completionTime"];
  for (const char* k : {"nodes", "passed", "failed", "inconclusive", "errors"}) {
    if (status.contains(k) && status[k].is_number_integer()) e[k] = status[k];
  }
  return e;
}

void AddHistory(Json* status, Json entry) {
  Json history = status->value("history", Json::array());
  for (auto& h : history) {
    // A run completed again (spec.watchNodes tested a node that joined or changed): its
    // latest completion.
    if (h.value("run", "") == entry.value("run", "")) {
      h = std::move(entry);
      (*status)["history"] = std::move(history);
      return;
    }
  }
  history.push_back(std::move(entry));
  while (history.size() > kHistoryLimit) history.erase(history.begin());
  (*status)["history"] = std::move(history);
}

}  // namespace

Status CheckSchedule(const v1alpha1::PerfValidationSpec& spec) {
  if (spec.schedule().empty()) {
    if (!spec.timezone().empty() || spec.startingdeadlineseconds() != 0) {
      return Status(Code::kInvalidArgument,
                    "spec.timeZone and spec.startingDeadlineSeconds need spec.schedule");
    }
    return Status();
  }
  if (spec.startingdeadlineseconds() < 0) {
    return Status(Code::kInvalidArgument, "spec.startingDeadlineSeconds must not be negative");
  }
  auto parsed = CronSchedule::Parse(spec.schedule(), spec.timezone());
  if (!parsed.ok())
    return Status(Code::kInvalidArgument, "spec.schedule: " + parsed.status().message());
  return Status();
}

Result<ScheduleStep> StepSchedule(const v1alpha1::PerfValidationSpec& spec, const Json& status,
                                  Clock::time_point now, bool running) {
  ScheduleStep step;
  if (spec.schedule().empty()) return step;
  auto schedule = CronSchedule::Parse(spec.schedule(), spec.timezone());
  if (!schedule.ok()) return schedule.status();
  step.next = schedule->Next(now);
  if (running || spec.suspend()) return step;
  // Times up to the reference are accounted for: run, skipped, or covered by a run that
  // started after them (the first run, a rerun, a changed spec).
  std::optional<Clock::time_point> reference;
  for (const char* k : {"lastScheduleTime", "lastSkippedScheduleTime", "startTime"}) {
    if (auto t = TimeField(status, k); t && (!reference || *t > *reference)) reference = t;
  }
  if (!reference) return step;
  const auto missed = schedule->LatestIn(*reference, now);
  if (!missed) return step;
  const int deadline = spec.startingdeadlineseconds();
  if (deadline > 0 && now - missed->latest > std::chrono::seconds(deadline)) {
    step.skipped = missed->latest;
    step.missed = missed->count;
  } else {
    step.start = missed->latest;
    step.missed = missed->count - 1;
  }
  return step;
}

std::string ScheduleToken(const Json& status) {
  const std::string t = status.value("lastScheduleTime", "");
  return t.empty() ? "" : "schedule@" + t;
}

Json NewRunStatus(const Json& old_status, const std::string& run, int64_t generation,
                  const std::string& now) {
  Json status = {{"run", run}, {"startTime", now}};
  for (const char* k : kCarried) {
    if (old_status.contains(k)) status[k] = old_status[k];
  }
  const std::string old_run = old_status.value("run", "");
  if (!old_run.empty() && old_status.value("completionTime", "").empty()) {
    AddHistory(&status, HistoryEntry(old_status, "Superseded"));
  }
  const auto scheduled = TimeField(old_status, "lastScheduleTime");
  const auto old_start = TimeField(old_status, "startTime");
  if (old_run.empty()) {
    status["trigger"] = "created";
  } else if (scheduled && old_start && *scheduled > *old_start) {
    status["trigger"] = "schedule";
    status["scheduledTime"] = old_status["lastScheduleTime"];
  } else if (old_status.value("observedGeneration", int64_t{0}) != generation) {
    status["trigger"] = "spec";
  } else {
    status["trigger"] = "rerun";
  }
  return status;
}

namespace {

// A node that failed before, in a row, climbs the action ladder (common/action.h).
// Returns whether it climbed.
bool EscalateAction(const std::vector<verdict::Verdict>& earlier_newest_first, NodeVerdict* v) {
  if (v->verdict == verdict::Verdict::kPass) return false;
  const auto step = action::ParseStep(v->action);
  if (!step) return false;
  int in_a_row = 0;
  for (verdict::Verdict e : earlier_newest_first) {
    if (e != verdict::Verdict::kFail) break;
    ++in_a_row;
  }
  const action::Step escalated = action::Escalate(*step, in_a_row, v->action_on_gpu);
  if (escalated == *step) return false;
  v->action_evidence = "escalated from " + v->action + " after " + std::to_string(in_a_row) +
                       " earlier FAIL" + (in_a_row == 1 ? "" : "s") + " in a row; " +
                       v->action_evidence;
  v->action = std::string(action::StepName(escalated));
  return true;
}

}  // namespace

void DecideRepeatedFailures(const Snapshot& s, const std::string& now, Decision* d) {
  if (!s.store || !s.spec || d->node_verdicts.empty() || !d->status) return;
  const auto& policy = s.spec->doc.spec().policy();
  const RepeatedFailureRule rule =
      RuleOrDefaults(policy.repeatedfailurethreshold(), policy.repeatedfailurewindow());
  Json flagged = Json::array();
  int read = 0;
  std::string names;
  for (auto& v : d->node_verdicts) {
    auto earlier = s.store->recent_verdicts.find(v.node);
    if (earlier == s.store->recent_verdicts.end()) continue;  // not read: label left alone
    read++;
    std::vector<verdict::Verdict> verdicts = {v.verdict};
    verdicts.insert(verdicts.end(), earlier->second.begin(), earlier->second.end());
    v.repeated_failure = FailsRepeatedly(verdicts, rule);
    if (auto failing = d->status->find("failingNodes");
        EscalateAction(earlier->second, &v) && failing != d->status->end()) {
      for (auto& f : *failing) {
        if (f.value("node", "") == v.node) f["action"] = v.action;
      }
    }
    if (!*v.repeated_failure) continue;
    const int failures = RecentFailures(verdicts, rule);
    const int seen =
        static_cast<int>(std::min<size_t>(verdicts.size(), static_cast<size_t>(rule.window)));
    if (flagged.size() < 20) {
      flagged.push_back({{"node", v.node}, {"failures", failures}, {"validations", seen}});
    }
    if (names.size() < 800) {
      names += (names.empty() ? "" : "; ") + v.node + " failed " + std::to_string(failures) +
               " of its last " + std::to_string(seen);
    }
    d->events.push_back({"Warning", "RepeatedFailure",
                         v.node + " failed " + std::to_string(failures) + " of its last " +
                             std::to_string(seen) + " validations: labelled " +
                             kRepeatedFailureLabel + "=true, for repair rather than another test",
                         true, s.name + "/" + s.run + "/repeated/" + v.node});
  }
  d->status->erase("repeatedFailures");
  if (!flagged.empty()) (*d->status)["repeatedFailures"] = flagged;
  if (read == 0) return;  // nothing known: the condition stays as it was
  const Json old_status = OldStatus(s);
  if (flagged.empty()) {
    SetStatusCondition(&*d->status, old_status, kRepeatedFailuresCondition, "False",
                       "NoRepeatedFailures",
                       "no node failed " + std::to_string(rule.failures) + " of its last " +
                           std::to_string(rule.window) + " validations",
                       s.generation, now);
    return;
  }
  SetStatusCondition(&*d->status, old_status, kRepeatedFailuresCondition, "True",
                     "RepeatedFailures",
                     names + " validations (spec.policy: " + std::to_string(rule.failures) +
                         " of " + std::to_string(rule.window) + "): labelled " +
                         kRepeatedFailureLabel + "=true, for repair",
                     s.generation, now);
}

void DecideLifecycle(const Snapshot& s, Clock::time_point now, Decision* d) {
  if (!d->status || !s.spec) return;
  Json& status = *d->status;
  const bool complete = !status.value("completionTime", "").empty();
  if (complete) DecideRepeatedFailures(s, FormatRfc3339(now), d);
  // A run in progress shows the RepeatedFailures condition its last completion set: the nodes
  // keep their label until they are decided again.
  CarryCondition(&status, OldStatus(s), kRepeatedFailuresCondition);
  if (complete) AddHistory(&status, HistoryEntry(status, status.value("verdict", "")));
  const v1alpha1::PerfValidationSpec& spec = s.spec->doc.spec();
  if (spec.schedule().empty()) {
    status.erase("nextScheduleTime");
    return;
  }
  auto step = StepSchedule(spec, status, now, !complete);
  if (!step.ok()) return;  // the run's status says InvalidSpec
  if (step->next) {
    status["nextScheduleTime"] = FormatRfc3339(*step->next);
  } else {
    status.erase("nextScheduleTime");
  }
  if (step->missed > 0) {
    status["missedSchedules"] = status.value("missedSchedules", 0) + step->missed;
  }
  auto look_again = [d](std::chrono::milliseconds after) {
    RequeueSooner(&d->requeue_after, after);
  };
  if (step->skipped) {
    const std::string t = FormatRfc3339(*step->skipped);
    status["lastSkippedScheduleTime"] = t;
    d->events.push_back(
        {"Warning", "MissedSchedule",
         "scheduled run of " + t + " skipped: more than spec.startingDeadlineSeconds=" +
             std::to_string(spec.startingdeadlineseconds()) + "s late" +
             (step->missed > 1
                  ? " (" + std::to_string(step->missed) + " scheduled times missed in all)"
                  : ""),
         true, s.name + "/skip/" + t});
  }
  if (step->start) {
    const std::string t = FormatRfc3339(*step->start);
    status["lastScheduleTime"] = t;
    d->events.push_back({"Normal", "Scheduled",
                         "scheduled run of " + t + " starting" +
                             (step->missed > 0 ? "; " + std::to_string(step->missed) +
                                                     " earlier scheduled times missed"
                                               : ""),
                         true, s.name + "/schedule/" + t});
    // The new lastScheduleTime makes the next reconcile's run id: look again at once.
    look_again(std::chrono::milliseconds(10));
    return;
  }
  if (complete && step->next) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*step->next - now) +
                std::chrono::milliseconds(20);
    look_again(std::min<std::chrono::milliseconds>(wait, std::chrono::hours(1)));
  }
}

}  // namespace perfgate::op

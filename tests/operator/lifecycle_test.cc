// A validation over time: when a schedule starts a run, skips one, or waits for the run in
// progress, and the history of runs the status keeps.
#include "operator/policy/lifecycle.h"
#include "common/node_verdict.h"

#include <gtest/gtest.h>

#include "common/time.h"
#include "core/names.h"
#include "operator/policy/node_actions.h"
#include "tests/operator/time_at.h"

namespace perfgate::op {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

v1alpha1::PerfValidationSpec Hourly(int deadline = 0) {
  v1alpha1::PerfValidationSpec spec;
  spec.set_schedule("0 * * * *");
  spec.set_startingdeadlineseconds(deadline);
  return spec;
}

Json Done(const std::string& start, const std::string& last_schedule = "") {
  Json s = {{"run", "g1"}, {"startTime", start}, {"completionTime", start}, {"verdict", "Passed"}};
  if (!last_schedule.empty()) s["lastScheduleTime"] = last_schedule;
  return s;
}

TEST(ScheduleStep, StartsAtTheScheduledTime) {
  auto step =
      StepSchedule(Hourly(), Done("2026-03-01T09:30:00Z"), At("2026-03-01T10:00:05Z"), false);
  ASSERT_TRUE(step.ok());
  ASSERT_TRUE(step->start.has_value());
  EXPECT_EQ(FormatRfc3339(*step->start), "2026-03-01T10:00:00Z");
  EXPECT_EQ(step->missed, 0);
  EXPECT_EQ(FormatRfc3339(*step->next), "2026-03-01T11:00:00Z");
  // Before it: nothing, and when to look again.
  step = StepSchedule(Hourly(), Done("2026-03-01T09:30:00Z"), At("2026-03-01T09:59:00Z"), false);
  EXPECT_FALSE(step->start.has_value());
  EXPECT_FALSE(step->skipped.has_value());
  EXPECT_EQ(FormatRfc3339(*step->next), "2026-03-01T10:00:00Z");
}

TEST(ScheduleStep, AfterAnOutageOneCatchUpRunForTheLatestTime) {
  // Down from 10:00 to 13:20: 11:00, 12:00 and 13:00 missed; only 13:00 runs.
  auto step = StepSchedule(Hourly(), Done("2026-03-01T10:00:01Z", "2026-03-01T10:00:00Z"),
                           At("2026-03-01T13:20:00Z"), false);
  ASSERT_TRUE(step->start.has_value());
  EXPECT_EQ(FormatRfc3339(*step->start), "2026-03-01T13:00:00Z");
  EXPECT_EQ(step->missed, 2);
}

TEST(ScheduleStep, PastTheStartingDeadlineTheMissedTimeIsSkipped) {
  const Json status = Done("2026-03-01T10:00:01Z", "2026-03-01T10:00:00Z");
  auto step = StepSchedule(Hourly(600), status, At("2026-03-01T12:30:00Z"), false);
  EXPECT_FALSE(step->start.has_value());
  ASSERT_TRUE(step->skipped.has_value());
  EXPECT_EQ(FormatRfc3339(*step->skipped), "2026-03-01T12:00:00Z");
  EXPECT_EQ(step->missed, 2);
  // Within the deadline it starts.
  step = StepSchedule(Hourly(600), status, At("2026-03-01T12:09:00Z"), false);
  ASSERT_TRUE(step->start.has_value());
  EXPECT_EQ(FormatRfc3339(*step->start), "2026-03-01T12:00:00Z");
  // A skipped time is not looked at again.
  Json skipped = status;
  skipped["lastSkippedScheduleTime"] = "2026-03-01T12:00:00Z";
  step = StepSchedule(Hourly(600), skipped, At("2026-03-01T12:40:00Z"), false);
  EXPECT_FALSE(step->start.has_value());
  EXPECT_FALSE(step->skipped.has_value());
}

TEST(ScheduleStep, ARunInProgressIsNotPiledOnButCaughtUpWhenItEnds) {
  Json running = {{"run", "g1"},
                  {"startTime", "2026-03-01T10:00:01Z"},
                  {"lastScheduleTime", "2026-03-01T10:00:00Z"}};
  auto step = StepSchedule(Hourly(), running, At("2026-03-01T11:00:30Z"), true);
  EXPECT_FALSE(step->start.has_value());
  EXPECT_FALSE(step->skipped.has_value());
  // It ended at 11:05: the 11:00 run starts then (no deadline), once.
  Json done = running;
  done["completionTime"] = "2026-03-01T11:05:00Z";
  step = StepSchedule(Hourly(), done, At("2026-03-01T11:05:00Z"), false);
  ASSERT_TRUE(step->start.has_value());
  EXPECT_EQ(FormatRfc3339(*step->start), "2026-03-01T11:00:00Z");
  // With a 60 s deadline it is skipped instead.
  step = StepSchedule(Hourly(60), done, At("2026-03-01T11:05:00Z"), false);
  EXPECT_FALSE(step->start.has_value());
  EXPECT_TRUE(step->skipped.has_value());
}

TEST(ScheduleStep, ARunStartedAfterAScheduledTimeCoversIt) {
  // The spec changed at 12:30 (a new run then): 11:00 and 12:00 are not caught up after it.
  Json status = Done("2026-03-01T12:30:00Z", "2026-03-01T10:00:00Z");
  auto step = StepSchedule(Hourly(), status, At("2026-03-01T12:35:00Z"), false);
  EXPECT_FALSE(step->start.has_value());
  EXPECT_FALSE(step->skipped.has_value());
}

TEST(ScheduleStep, SuspendedStartsNothing) {
  auto spec = Hourly();
  spec.set_suspend(true);
  auto step = StepSchedule(spec, Done("2026-03-01T09:30:00Z"), At("2026-03-01T10:00:05Z"), false);
  EXPECT_FALSE(step->start.has_value());
}

TEST(ScheduleCheck, NamesTheField) {
  v1alpha1::PerfValidationSpec spec;
  spec.set_schedule("0 25 * * *");
  EXPECT_NE(CheckSchedule(spec).message().find("spec.schedule"), std::string::npos);
  spec.set_schedule("0 1 * * *");
  spec.set_timezone("Nowhere/Land");
  EXPECT_NE(CheckSchedule(spec).message().find("unknown time zone"), std::string::npos);
  v1alpha1::PerfValidationSpec none;
  none.set_timezone("Europe/Berlin");
  EXPECT_FALSE(CheckSchedule(none).ok());
  EXPECT_TRUE(CheckSchedule(Hourly(30)).ok());
}

TEST(RunStatus, NewRunsSayWhatStartedThemAndCarryTheHistory) {
  Json first = NewRunStatus(Json::object(), "g1", 1, "2026-03-01T09:30:00Z");
  EXPECT_EQ(first["trigger"], "created");
  Json done = first;
  done["completionTime"] = "2026-03-01T09:31:00Z";
  done["observedGeneration"] = 1;
  done["history"] = Json::array({{{"run", "g1"}, {"verdict", "Passed"}}});
  done["lastScheduleTime"] = "2026-03-01T10:00:00Z";  // set by the tick
  Json scheduled = NewRunStatus(done, "g1-aaaa", 1, "2026-03-01T10:00:01Z");
  EXPECT_EQ(scheduled["trigger"], "schedule");
  EXPECT_EQ(scheduled["scheduledTime"], "2026-03-01T10:00:00Z");
  EXPECT_EQ(scheduled["lastScheduleTime"], "2026-03-01T10:00:00Z");
  EXPECT_EQ(scheduled["history"].size(), 1U);
  EXPECT_FALSE(scheduled.contains("completionTime"));
  // A run replaced before it completed is in the history as Superseded.
  scheduled["observedGeneration"] = 1;
  Json edited = NewRunStatus(scheduled, "g2-bbbb", 2, "2026-03-01T10:00:30Z");
  EXPECT_EQ(edited["trigger"], "spec");
  ASSERT_EQ(edited["history"].size(), 2U);
  EXPECT_EQ(edited["history"][1]["run"], "g1-aaaa");
  EXPECT_EQ(edited["history"][1]["verdict"], "Superseded");
  edited["observedGeneration"] = 2;
  edited["completionTime"] = "2026-03-01T10:01:00Z";
  EXPECT_EQ(NewRunStatus(edited, "g2-cccc", 2, "2026-03-01T10:02:00Z")["trigger"], "rerun");
}

Snapshot Scheduled(const std::string& schedule, int deadline, Json status) {
  Snapshot s;
  s.exists = true;
  s.name = "nightly";
  spec::Loaded<v1alpha1::PerfValidation> loaded;
  loaded.doc.mutable_spec()->set_schedule(schedule);
  loaded.doc.mutable_spec()->set_startingdeadlineseconds(deadline);
  s.spec = loaded;
  s.validation = {{"status", std::move(status)}};
  return s;
}

TEST(DecideLifecycle, CompletedRunsGoToABoundedHistoryAndTheNextTimeIsShown) {
  Json status = Done("2026-03-01T09:30:00Z");
  status["nodes"] = 4;
  status["passed"] = 4;
  status["failed"] = 0;
  Json history = Json::array();
  for (int i = 0; i < 12; ++i) history.push_back({{"run", "old" + std::to_string(i)}});
  status["history"] = history;
  const Snapshot s = Scheduled("0 * * * *", 0, status);
  Decision d;
  d.status = status;
  DecideLifecycle(s, At("2026-03-01T09:40:00Z"), &d);
  const Json& h = (*d.status)["history"];
  ASSERT_EQ(h.size(), kHistoryLimit);
  EXPECT_EQ(h.back()["run"], "g1");
  EXPECT_EQ(h.back()["verdict"], "Passed");
  EXPECT_EQ(h.back()["passed"], 4);
  EXPECT_EQ(h.front()["run"], "old3");
  EXPECT_EQ((*d.status)["nextScheduleTime"], "2026-03-01T10:00:00Z");
  // Looked at again at the next time (20 minutes, and a little).
  EXPECT_GE(d.requeue_after, std::chrono::minutes(20));
  EXPECT_LT(d.requeue_after, std::chrono::minutes(21));
  EXPECT_TRUE(d.events.empty());
}

TEST(DecideLifecycle, ATickSetsLastScheduleTimeAndAnnouncesIt) {
  const Json status = Done("2026-03-01T09:30:00Z");
  const Snapshot s = Scheduled("0 * * * *", 0, status);
  Decision d;
  d.status = status;
  DecideLifecycle(s, At("2026-03-01T10:00:01Z"), &d);
  EXPECT_EQ((*d.status)["lastScheduleTime"], "2026-03-01T10:00:00Z");
  EXPECT_NE(ScheduleToken(*d.status), ScheduleToken(status));
  ASSERT_EQ(d.events.size(), 1U);
  EXPECT_EQ(d.events[0].reason, "Scheduled");
  EXPECT_LE(d.requeue_after, std::chrono::milliseconds(100));
}

TEST(DecideLifecycle, ASkipIsRecordedAndAnnouncedOnce) {
  const Json status = Done("2026-03-01T10:00:01Z", "2026-03-01T10:00:00Z");
  const Snapshot s = Scheduled("0 * * * *", 300, status);
  Decision d;
  d.status = status;
  DecideLifecycle(s, At("2026-03-01T12:30:00Z"), &d);
  EXPECT_EQ((*d.status)["lastSkippedScheduleTime"], "2026-03-01T12:00:00Z");
  EXPECT_EQ((*d.status)["missedSchedules"], 2);
  EXPECT_EQ((*d.status)["lastScheduleTime"], "2026-03-01T10:00:00Z");
  ASSERT_EQ(d.events.size(), 1U);
  EXPECT_EQ(d.events[0].reason, "MissedSchedule");
  EXPECT_EQ(d.events[0].type, "Warning");
  // The next look (status written) records nothing more.
  Decision again;
  again.status = *d.status;
  const Snapshot s2 = Scheduled("0 * * * *", 300, *d.status);
  DecideLifecycle(s2, At("2026-03-01T12:31:00Z"), &again);
  EXPECT_TRUE(again.events.empty());
  EXPECT_EQ((*again.status)["missedSchedules"], 2);
}

Snapshot WithStore(int threshold, int window,
                   std::map<std::string, std::vector<verdict::Verdict>> earlier) {
  Snapshot s;
  s.exists = true;
  s.name = "acceptance";
  s.run = "g4";
  spec::Loaded<v1alpha1::PerfValidation> loaded;
  loaded.doc.mutable_spec()->mutable_policy()->set_repeatedfailurethreshold(threshold);
  loaded.doc.mutable_spec()->mutable_policy()->set_repeatedfailurewindow(window);
  s.spec = loaded;
  s.store = StoreView{};
  s.store->recent_verdicts = std::move(earlier);
  return s;
}

TEST(RepeatedFailures, ACompletedRunFlagsNodesFailingKOfTheirLastN) {
  // Defaults 3 of 5: node-a fails now and twice before; node-b once before; node-c's history
  // could not be read.
  const Snapshot s =
      WithStore(0, 0,
                {{"node-a",
                  {verdict::Verdict::kPass, verdict::Verdict::kFail, verdict::Verdict::kPass,
                   verdict::Verdict::kFail, verdict::Verdict::kFail}},
                 {"node-b",
                  {verdict::Verdict::kFail, verdict::Verdict::kPass, verdict::Verdict::kPass,
                   verdict::Verdict::kPass}}});
  Decision d;
  d.status = Done("2026-03-01T09:30:00Z");
  d.node_verdicts = {{"node-a", verdict::Verdict::kFail, std::nullopt},
                     {"node-b", verdict::Verdict::kFail, std::nullopt},
                     {"node-c", verdict::Verdict::kFail, std::nullopt}};
  DecideLifecycle(s, At("2026-03-01T09:40:00Z"), &d);
  ASSERT_TRUE(d.node_verdicts[0].repeated_failure.has_value());
  EXPECT_TRUE(*d.node_verdicts[0].repeated_failure);
  ASSERT_TRUE(d.node_verdicts[1].repeated_failure.has_value());
  EXPECT_FALSE(*d.node_verdicts[1].repeated_failure);
  EXPECT_FALSE(d.node_verdicts[2].repeated_failure.has_value());
  const Json flagged = (*d.status)["repeatedFailures"];
  ASSERT_EQ(flagged.size(), 1U);
  EXPECT_EQ(flagged[0]["node"], "node-a");
  EXPECT_EQ(flagged[0]["failures"], 3);
  EXPECT_EQ(flagged[0]["validations"], 5);
  ASSERT_EQ(d.events.size(), 1U);
  EXPECT_EQ(d.events[0].reason, "RepeatedFailure");
  EXPECT_NE(d.events[0].message.find("node-a failed 3 of its last 5"), std::string::npos);
}

TEST(RepeatedFailures, ThePolicySetsKAndN) {
  const Snapshot s =
      WithStore(1, 1, {{"node-a", {verdict::Verdict::kFail, verdict::Verdict::kFail}}});
  Decision d;
  d.status = Done("2026-03-01T09:30:00Z");
  d.node_verdicts = {{"node-a", verdict::Verdict::kPass, std::nullopt}};
  DecideLifecycle(s, At("2026-03-01T09:40:00Z"), &d);
  // 1 of 1: only the current PASS is looked at.
  EXPECT_FALSE(*d.node_verdicts[0].repeated_failure);
  EXPECT_FALSE(d.status->contains("repeatedFailures"));
}

// The condition of `type` in `status`, or null.
Json ConditionOf(const Json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return Json();
}

TEST(RepeatedFailures, TheConditionNamesTheFlaggedNodesAndTurnsFalseWhenTheyPass) {
  Snapshot s = WithStore(2, 3,
                         {{"node-a", {verdict::Verdict::kFail, verdict::Verdict::kPass}},
                          {"node-b", {verdict::Verdict::kPass}}});
  Decision d;
  d.status = Done("2026-03-01T09:30:00Z");
  d.node_verdicts = {{"node-a", verdict::Verdict::kFail, std::nullopt},
                     {"node-b", verdict::Verdict::kPass, std::nullopt}};
  DecideLifecycle(s, At("2026-03-01T09:40:00Z"), &d);
  Json c = ConditionOf(*d.status, kRepeatedFailuresCondition);
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "RepeatedFailures");
  EXPECT_NE(c["message"].get<std::string>().find("node-a failed 2 of its last 3"),
            std::string::npos);
  EXPECT_EQ(c["message"].get<std::string>().find("node-b"), std::string::npos);

  // The next run, in progress: the condition stays while node-a keeps its label.
  s.validation["status"] = *d.status;
  Decision running;
  running.status = Json{{"run", "g5"}, {"startTime", "2026-03-01T10:00:00Z"}};
  DecideLifecycle(s, At("2026-03-01T10:00:05Z"), &running);
  EXPECT_EQ(ConditionOf(*running.status, kRepeatedFailuresCondition)["status"], "True");

  // node-a passes twice more: no longer 2 of its last 3, the condition turns False.
  s.store->recent_verdicts = {
      {"node-a", {verdict::Verdict::kPass, verdict::Verdict::kFail, verdict::Verdict::kFail}},
      {"node-b", {verdict::Verdict::kPass}}};
  Decision passed;
  passed.status = Done("2026-03-01T10:30:00Z");
  passed.node_verdicts = {{"node-a", verdict::Verdict::kPass, std::nullopt},
                          {"node-b", verdict::Verdict::kPass, std::nullopt}};
  DecideLifecycle(s, At("2026-03-01T10:40:00Z"), &passed);
  EXPECT_FALSE(*passed.node_verdicts[0].repeated_failure);
  c = ConditionOf(*passed.status, kRepeatedFailuresCondition);
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "NoRepeatedFailures");
  EXPECT_FALSE(passed.status->contains("repeatedFailures"));
}

TEST(RepeatedFailures, NoConditionWithoutHistory) {
  const Snapshot s = WithStore(0, 0, {});
  Decision d;
  d.status = Done("2026-03-01T09:30:00Z");
  d.node_verdicts = {{"node-a", verdict::Verdict::kFail, std::nullopt}};
  DecideLifecycle(s, At("2026-03-01T09:40:00Z"), &d);
  EXPECT_TRUE(ConditionOf(*d.status, kRepeatedFailuresCondition).is_null());
}

TEST(RepeatedFailures, TheNodeLabelIsSetAndRemoved) {
  Json node = {{"metadata", {{"name", "node-a"}}}};
  EXPECT_TRUE(MarkNode(&node, verdict::Verdict::kFail, "v", "none", true));
  EXPECT_EQ(node["metadata"]["labels"].value(kRepeatedFailureLabel, ""), "true");
  EXPECT_TRUE(MarkNode(&node, verdict::Verdict::kPass, "v", "none", false));
  EXPECT_FALSE(node["metadata"]["labels"].contains(kRepeatedFailureLabel));
  // Unknown (no store): left as it is.
  MarkNode(&node, verdict::Verdict::kFail, "v", "none", true);
  MarkNode(&node, verdict::Verdict::kPass, "v", "none", std::nullopt);
  EXPECT_EQ(node["metadata"]["labels"].value(kRepeatedFailureLabel, ""), "true");
}

}  // namespace
}  // namespace perfgate::op

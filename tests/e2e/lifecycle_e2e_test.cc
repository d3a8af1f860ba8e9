// A validation over time in kube-sim: a schedule runs at its times, and after operator outages
// a missed time is skipped past its starting deadline or caught up once within it. The
// operator's clock is set with --clock-start, so hours of schedule pass in seconds.
#include "tests/e2e/e2e_fixture.h"

namespace perfgate::e2e {
namespace {

// The operator stopped and started again at `clock` (the time validations see).
void RestartAt(OperatorProcess& op, const kubesim::KubeSim& sim, const std::string& clock) {
  op.Kill(SIGTERM);
  op.Start(sim, {"--clock-start=" + clock});
}

// Empty until the operator has written a status (a const Json's operator[] must not be asked
// for a key it lacks).
Json History(const Json& v) {
  return v.value("status", Json::object()).value("history", Json::array());
}

TEST_F(E2E, ScheduleRunsAtItsTimesAndSkipsOrCatchesUpAfterOutages) {
  // Eight seconds before 10:00Z. "30 * * * *" in Asia/Kolkata (UTC+05:30) is every hour on
  // the hour in UTC.
  RestartAt(op_, *sim_, "2020-01-06T09:59:52Z");
  Apply(SyntheticSpec("hourly", "", "    onFailure: none\n    keepResults: 5\n",
                      "  schedule: \"30 * * * *\"\n"
                      "  timeZone: Asia/Kolkata\n"
                      "  startingDeadlineSeconds: 600\n"));
  // The run at creation, then the 10:00 run.
  ASSERT_TRUE(Eventually(
      [&] {
        const Json h = History(Validation("hourly"));
        return h.size() == 2 && h[1].value("verdict", "") == "Passed";
      },
      60))
      << Validation("hourly").dump(2);
  Json v = Validation("hourly");
  Json h = History(v);
  EXPECT_EQ(h[0].value("trigger", ""), "created");
  EXPECT_EQ(h[0].value("verdict", ""), "Passed");
  EXPECT_EQ(h[1].value("trigger", ""), "schedule");
  EXPECT_EQ(h[1].value("scheduledTime", ""), "2020-01-06T10:00:00Z");
  EXPECT_EQ(h[1].value("passed", 0), 4);
  EXPECT_NE(h[0].value("run", ""), h[1].value("run", ""));
  EXPECT_EQ(v["status"].value("lastScheduleTime", ""), "2020-01-06T10:00:00Z");
  EXPECT_EQ(v["status"].value("nextScheduleTime", ""), "2020-01-06T11:00:00Z");
  EXPECT_EQ(v["status"].value("run", ""), h[1].value("run", ""));
  // Each run had its own worker pods and results.
  std::set<std::string> runs;
  for (const auto& r : Results("hourly")) runs.insert(r["metadata"]["labels"]["perfgate.io/run"]);
  EXPECT_EQ(runs.size(), 2u);

  // Down from 10:00 to 12:30: 11:00 and 12:00 missed, 12:00 is 30 minutes late, past the
  // 10-minute deadline: skipped, no run.
  RestartAt(op_, *sim_, "2020-01-06T12:30:00Z");
  ASSERT_TRUE(Eventually(
      [&] {
        return Validation("hourly")["status"].value("lastSkippedScheduleTime", "") ==
               "2020-01-06T12:00:00Z";
      },
      30))
      << Validation("hourly").dump(2);
  v = Validation("hourly");
  EXPECT_EQ(v["status"].value("missedSchedules", 0), 2);
  EXPECT_EQ(History(v).size(), 2u);
  EXPECT_EQ(v["status"].value("lastScheduleTime", ""), "2020-01-06T10:00:00Z");
  EXPECT_EQ(v["status"].value("nextScheduleTime", ""), "2020-01-06T13:00:00Z");
  auto events = Kubectl(*sim_, {"get", "events", "-n", "default", "--field-selector",
                                "reason=MissedSchedule", "-o", "jsonpath={.items[*].message}"});
  EXPECT_NE(events.out.find("2020-01-06T12:00:00Z skipped"), std::string::npos) << events.out;

  // Down again until 13:02: 13:00 is two minutes late, within the deadline: one catch-up run.
  RestartAt(op_, *sim_, "2020-01-06T13:02:00Z");
  ASSERT_TRUE(Eventually(
      [&] {
        const Json hh = History(Validation("hourly"));
        return hh.size() == 3 && !hh[2].value("completionTime", "").empty();
      },
      60))
      << Validation("hourly").dump(2);
  v = Validation("hourly");
  h = History(v);
  EXPECT_EQ(h[2].value("trigger", ""), "schedule");
  EXPECT_EQ(h[2].value("scheduledTime", ""), "2020-01-06T13:00:00Z");
  EXPECT_EQ(h[2].value("verdict", ""), "Passed");
  EXPECT_EQ(v["status"].value("lastScheduleTime", ""), "2020-01-06T13:00:00Z");
  EXPECT_EQ(v["status"].value("nextScheduleTime", ""), "2020-01-06T14:00:00Z");
  EXPECT_EQ(v["status"].value("missedSchedules", 0), 2);
  runs.clear();
  for (const auto& r : Results("hourly")) runs.insert(r["metadata"]["labels"]["perfgate.io/run"]);
  EXPECT_EQ(runs.size(), 3u);
}

TEST_F(E2E, ABadScheduleIsAnInvalidSpec) {
  const std::string msg = ApplyExpectingInvalidSpec(
      "badcron",
      SyntheticSpec("badcron", "", "    onFailure: none\n", "  schedule: \"0 25 * * *\"\n"));
  EXPECT_NE(msg.find("spec.schedule"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hour field"), std::string::npos) << msg;
}

}  // namespace
}  // namespace perfgate::e2e

// Cron schedules: fields, names, ranges, steps, the day-of-month/day-of-week OR rule, macros,
// time zones from the database and from POSIX rules, and daylight saving time.
#include "operator/policy/schedule.h"

#include <gtest/gtest.h>

#include "common/time.h"
#include "tests/operator/time_at.h"

namespace perfgate::op {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

std::string NextOf(const std::string& expr, const std::string& after, const std::string& tz = "") {
  auto s = CronSchedule::Parse(expr, tz);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return "parse error";
  auto n = s->Next(At(after));
  return n ? FormatRfc3339(*n) : "never";
}

// The first `count` times after `after`.
std::vector<std::string> Times(const std::string& expr, const std::string& after, int count,
                               const std::string& tz = "") {
  auto s = CronSchedule::Parse(expr, tz);
  EXPECT_TRUE(s.ok()) << s.status().message();
  std::vector<std::string> out;
  TimePoint t = At(after);
  for (int i = 0; s.ok() && i < count; ++i) {
    auto n = s->Next(t);
    if (!n) break;
    out.push_back(FormatRfc3339(*n));
    t = *n;
  }
  return out;
}

TEST(Schedule, EveryMinuteIsStrictlyAfter) {
  EXPECT_EQ(NextOf("* * * * *", "2026-03-01T10:00:00Z"), "2026-03-01T10:01:00Z");
  EXPECT_EQ(NextOf("* * * * *", "2026-03-01T10:00:59Z"), "2026-03-01T10:01:00Z");
  EXPECT_EQ(NextOf("* * * * *", "2026-12-31T23:59:30Z"), "2027-01-01T00:00:00Z");
}

TEST(Schedule, ListsRangesAndSteps) {
  EXPECT_EQ(Times("0,30 9-10 * * *", "2026-03-01T00:00:00Z", 5),
            (std::vector<std::string>{"2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z",
                                      "2026-03-01T10:00:00Z", "2026-03-01T10:30:00Z",
                                      "2026-03-02T09:00:00Z"}));
  EXPECT_EQ(Times("*/20 * * * *", "2026-03-01T10:05:00Z", 3),
            (std::vector<std::string>{"2026-03-01T10:20:00Z", "2026-03-01T10:40:00Z",
                                      "2026-03-01T11:00:00Z"}));
  // a-b/n and a/n (from a to the end).
  EXPECT_EQ(Times("10-30/10 * * * *", "2026-03-01T10:00:00Z", 4),
            (std::vector<std::string>{"2026-03-01T10:10:00Z", "2026-03-01T10:20:00Z",
                                      "2026-03-01T10:30:00Z", "2026-03-01T11:10:00Z"}));
  EXPECT_EQ(Times("45/5 * * * *", "2026-03-01T10:00:00Z", 4),
            (std::vector<std::string>{"2026-03-01T10:45:00Z", "2026-03-01T10:50:00Z",
                                      "2026-03-01T10:55:00Z", "2026-03-01T11:45:00Z"}));
  EXPECT_EQ(NextOf("0 0 1 */3 *", "2026-02-10T00:00:00Z"), "2026-04-01T00:00:00Z");
}

TEST(Schedule, MonthAndDayNamesInAnyCase) {
  // 2026-03-02 is a Monday.
  EXPECT_EQ(Times("0 6 * * MON-fri", "2026-03-06T07:00:00Z", 2),
            (std::vector<std::string>{"2026-03-09T06:00:00Z", "2026-03-10T06:00:00Z"}));
  EXPECT_EQ(NextOf("0 0 1 jun,Dec *", "2026-07-01T00:00:00Z"), "2026-12-01T00:00:00Z");
  // 0 and 7 are both Sunday.
  EXPECT_EQ(NextOf("0 12 * * 7", "2026-03-02T00:00:00Z"), "2026-03-08T12:00:00Z");
  EXPECT_EQ(NextOf("0 12 * * 0", "2026-03-02T00:00:00Z"), "2026-03-08T12:00:00Z");
}

TEST(Schedule, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // The 13th, or any Friday: Fri 2026-03-06, Fri 03-13 (also the 13th), Fri 03-20.
  EXPECT_EQ(Times("0 0 13 * 5", "2026-03-01T00:00:00Z", 3),
            (std::vector<std::string>{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z",
                                      "2026-03-20T00:00:00Z"}));
  // The 1st and 15th (day-of-week "*": only the day of month counts).
  EXPECT_EQ(Times("0 0 1,15 * *", "2026-03-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-03-15T00:00:00Z", "2026-04-01T00:00:00Z"}));
  // Mondays only ("?" is "*" for a day field).
  EXPECT_EQ(Times("0 0 ? * 1", "2026-03-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"}));
  // A step is a restriction, as CronJob reads it: the 1st, 11th, 21st, 31st OR Mondays.
  EXPECT_EQ(Times("0 0 */10 * 1", "2026-03-01T00:00:00Z", 3),
            (std::vector<std::string>{"2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z",
                                      "2026-03-11T00:00:00Z"}));
}

TEST(Schedule, Macros) {
  EXPECT_EQ(NextOf("@hourly", "2026-03-01T10:00:00Z"), "2026-03-01T11:00:00Z");
  EXPECT_EQ(NextOf("@daily", "2026-03-01T10:00:00Z"), "2026-03-02T00:00:00Z");
  EXPECT_EQ(NextOf("@midnight", "2026-03-01T10:00:00Z"), "2026-03-02T00:00:00Z");
  EXPECT_EQ(NextOf("@weekly", "2026-03-01T10:00:00Z"), "2026-03-08T00:00:00Z");
  EXPECT_EQ(NextOf("@monthly", "2026-03-01T10:00:00Z"), "2026-04-01T00:00:00Z");
  EXPECT_EQ(NextOf("@yearly", "2026-03-01T10:00:00Z"), "2027-01-01T00:00:00Z");
  EXPECT_EQ(NextOf("@annually", "2026-03-01T10:00:00Z"), "2027-01-01T00:00:00Z");
}

TEST(Schedule, LeapDaysAndImpossibleDates) {
  EXPECT_EQ(NextOf("0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
  EXPECT_EQ(NextOf("0 0 31 * *", "2026-04-01T00:00:00Z"), "2026-05-31T00:00:00Z");
  EXPECT_EQ(NextOf("0 0 30 2 *", "2026-03-01T00:00:00Z"), "never");
}

TEST(Schedule, RefusesMalformedFieldsNamingThem) {
  struct Case {
    const char* expr;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{{"* * * *", "expected 5 fields"},
                                         {"60 * * * *", "minute field"},
                                         {"* 24 * * *", "hour field"},
                                         {"* * 0 * *", "day-of-month field"},
                                         {"* * * 13 *", "month field"},
                                         {"* * * * 8", "day-of-week field"},
                                         {"5-1 * * * *", "range starts after it ends"},
                                         {"*/0 * * * *", "step"},
                                         {"* * * foo *", "month field"},
                                         {"1,,2 * * * *", "empty list item"},
                                         {"@every 5m", "unknown macro"},
                                         {"@fortnightly", "unknown macro"}}) {
    auto s = CronSchedule::Parse(c.expr);
    ASSERT_FALSE(s.ok()) << c.expr;
    EXPECT_NE(s.status().message().find(c.says), std::string::npos)
        << c.expr << ": " << s.status().message();
  }
}

TEST(Schedule, TimeZonesFromTheFieldOrThePrefix) {
  // 03:00 in Berlin is 02:00Z in winter (CET) and 01:00Z in summer (CEST).
  EXPECT_EQ(NextOf("0 3 * * *", "2026-01-10T12:00:00Z", "Europe/Berlin"), "2026-01-11T02:00:00Z");
  EXPECT_EQ(NextOf("0 3 * * *", "2026-07-10T12:00:00Z", "Europe/Berlin"), "2026-07-11T01:00:00Z");
  EXPECT_EQ(NextOf("CRON_TZ=Europe/Berlin 0 3 * * *", "2026-07-10T12:00:00Z"),
            "2026-07-11T01:00:00Z");
  EXPECT_EQ(NextOf("TZ=America/New_York 0 3 * * *", "2026-01-10T12:00:00Z"),
            "2026-01-11T08:00:00Z");
  EXPECT_EQ(NextOf("CRON_TZ=UTC 0 3 * * *", "2026-01-10T12:00:00Z"), "2026-01-11T03:00:00Z");
  // The day fields are the zone's days: Monday 00:30 in Tokyo is Sunday 15:30Z.
  EXPECT_EQ(NextOf("30 0 * * mon", "2026-03-01T00:00:00Z", "Asia/Tokyo"), "2026-03-01T15:30:00Z");

  auto both = CronSchedule::Parse("CRON_TZ=Europe/Berlin 0 3 * * *", "Asia/Tokyo");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("keep one"), std::string::npos);
  for (const char* zone : {"Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime"}) {
    auto bad = CronSchedule::Parse("0 3 * * *", zone);
    ASSERT_FALSE(bad.ok()) << zone;
    EXPECT_NE(bad.status().message().find("unknown time zone"), std::string::npos);
  }
}

TEST(Schedule, SpringForwardRunsSkippedTimesAtTheJump) {
  // Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z). 02:30 does not exist that day:
  // it fires at the jump, once.
  EXPECT_EQ(Times("30 2 * * *", "2026-03-28T00:00:00Z", 3, "Europe/Berlin"),
            (std::vector<std::string>{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z",
                                      "2026-03-30T00:30:00Z"}));
  // Every 15 minutes: the four times of the missing hour are one run at the jump.
  EXPECT_EQ(Times("*/15 * * * *", "2026-03-29T00:40:00Z", 4, "Europe/Berlin"),
            (std::vector<std::string>{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z",
                                      "2026-03-29T01:15:00Z", "2026-03-29T01:30:00Z"}));
}

TEST(Schedule, FallBackRunsARepeatedTimeOnce) {
  // Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens at 00:30Z and 01:30Z.
  EXPECT_EQ(Times("30 2 * * *", "2026-10-24T12:00:00Z", 2, "Europe/Berlin"),
            (std::vector<std::string>{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
  // Asked from within the second 02:xx hour, the repeated 02:30 does not fire again.
  EXPECT_EQ(NextOf("30 2 * * *", "2026-10-25T01:10:00Z", "Europe/Berlin"), "2026-10-26T01:30:00Z");
}

TEST(Schedule, SouthernHemisphereAndUnitedStatesRules) {
  // Sydney: daylight time (UTC+11) in January, standard (UTC+10) in July.
  EXPECT_EQ(NextOf("0 9 * * *", "2026-01-10T00:00:00Z", "Australia/Sydney"),
            "2026-01-10T22:00:00Z");
  EXPECT_EQ(NextOf("0 9 * * *", "2026-07-10T00:00:00Z", "Australia/Sydney"),
            "2026-07-10T23:00:00Z");
  // New York 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00Z).
  EXPECT_EQ(NextOf("30 2 * * *", "2026-03-08T00:00:00Z", "America/New_York"),
            "2026-03-08T07:00:00Z");
}

TEST(TimeZone, PosixRulesBeyondTheTransitions) {
  auto berlin = TimeZone::FromPosix("CET-1CEST,M3.5.0,M10.5.0/3");
  ASSERT_TRUE(berlin.ok()) << berlin.status().message();
  const auto secs = [](const std::string& t) {
    return std::chrono::duration_cast<std::chrono::seconds>(At(t).time_since_epoch()).count();
  };
  // 2040: last Sunday of March is the 25th, of October the 28th.
  EXPECT_EQ(berlin->OffsetAt(secs("2040-03-25T00:59:59Z")), 3600);
  EXPECT_EQ(berlin->OffsetAt(secs("2040-03-25T01:00:00Z")), 7200);
  EXPECT_EQ(berlin->OffsetAt(secs("2040-10-28T00:59:59Z")), 7200);
  EXPECT_EQ(berlin->OffsetAt(secs("2040-10-28T01:00:00Z")), 3600);
  auto sydney = TimeZone::FromPosix("AEST-10AEDT,M10.1.0,M4.1.0/3");
  ASSERT_TRUE(sydney.ok());
  EXPECT_EQ(sydney->OffsetAt(secs("2040-01-01T00:00:00Z")), 11 * 3600);
  EXPECT_EQ(sydney->OffsetAt(secs("2040-07-01T00:00:00Z")), 10 * 3600);
  auto india = TimeZone::FromPosix("<+0530>-5:30");
  ASSERT_TRUE(india.ok());
  EXPECT_EQ(india->OffsetAt(secs("2040-07-01T00:00:00Z")), 5 * 3600 + 1800);
  auto loaded = TimeZone::Load("Europe/Berlin");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->OffsetAt(secs("2040-07-01T00:00:00Z")), 7200);
  EXPECT_EQ(loaded->OffsetAt(secs("1990-01-01T00:00:00Z")), 3600);
  EXPECT_FALSE(TimeZone::FromPosix("CET-1CEST,M3.5").ok());
  EXPECT_FALSE(TimeZone::FromTzif("x", "not a zone file").ok());
}

TEST(Schedule, LatestMissedTimeAndHowMany) {
  auto s = CronSchedule::Parse("0 * * * *");
  ASSERT_TRUE(s.ok());
  auto m = s->LatestIn(At("2026-03-01T10:00:00Z"), At("2026-03-01T13:30:00Z"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(FormatRfc3339(m->latest), "2026-03-01T13:00:00Z");
  EXPECT_EQ(m->count, 3);
  EXPECT_FALSE(s->LatestIn(At("2026-03-01T10:00:00Z"), At("2026-03-01T10:59:00Z")).has_value());
  // A long outage: counted up to the cap, the latest still exact.
  auto every = CronSchedule::Parse("* * * * *");
  auto many = every->LatestIn(At("2026-01-01T00:00:00Z"), At("2026-03-01T10:00:30Z"), 100);
  ASSERT_TRUE(many.has_value());
  EXPECT_EQ(many->count, 100);
  EXPECT_EQ(FormatRfc3339(many->latest), "2026-03-01T10:00:00Z");
}

}  // namespace
}  // namespace perfgate::op

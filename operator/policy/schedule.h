// Cron schedules with a time zone, as Kubernetes CronJob reads them (docs/lifecycle.md):
// five fields (minute hour day-of-month month day-of-week) with lists, ranges, steps and names,
// the @hourly/@daily/@weekly/@monthly/@yearly macros, and a time zone from the IANA database
// (spec.timeZone, or a CRON_TZ= / TZ= prefix). Pure apart from reading the zone's file.
#pragma once

#include <bitset>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::op {

// A time zone's UTC offsets over time: the transitions of its TZif file, then the POSIX rule
// of the file's footer for the years after them.
class TimeZone {
 public:
  // UTC.
  TimeZone() = default;
  // "", "UTC" and "Etc/UTC": UTC. Otherwise the file `name` under $TZDIR (default
  // /usr/share/zoneinfo). kInvalidArgument for an unknown or malformed zone.
  static Result<TimeZone> Load(const std::string& name);
  // A zone from the bytes of a TZif file.
  static Result<TimeZone> FromTzif(const std::string& name, const std::string& bytes);
  // A zone from a POSIX TZ rule alone, e.g. "CET-1CEST,M3.5.0,M10.5.0/3".
  static Result<TimeZone> FromPosix(const std::string& rule);

  // The offset from UTC, in seconds, at `utc` (seconds since the epoch).
  int OffsetAt(int64_t utc) const;
  // The instant of local wall-clock time `local` (seconds since the epoch as if local were UTC).
  // A local time that occurs twice (clocks going back) gives its first occurrence; one that does
  // not occur (clocks going forward) gives the instant the clocks jumped.
  int64_t ToUtc(int64_t local) const;
  const std::string& name() const { return name_; }

  // A POSIX rule's date: Mm.w.d (month, week 1-5, weekday), Jn (1-365, no Feb 29) or n (0-365).
  struct RuleDate {
    char kind = 'M';
    int month = 0, week = 0, day = 0, number = 0;
    int time = 7200;  // seconds after local midnight
  };
  struct PosixRule {
    int std_offset = 0;
    int dst_offset = 0;
    bool has_dst = false;
    RuleDate start, end;
  };

 private:
  std::string name_ = "UTC";
  std::vector<int64_t> transitions_;
  std::vector<int> offsets_;  // the offset from transitions_[i] on
  int initial_ = 0;           // before the first transition
  std::optional<PosixRule> rule_;
};

class CronSchedule {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // `expr`: five fields or a macro, optionally prefixed "CRON_TZ=<zone> " or "TZ=<zone> ";
  // `time_zone`: spec.timeZone ("" for UTC unless the prefix names one; both is an error).
  // kInvalidArgument with the field at fault.
  static Result<CronSchedule> Parse(const std::string& expr, const std::string& time_zone = "");

  // The first time strictly after `after` the schedule fires; nullopt if none within five years
  // (e.g. "0 0 30 2 *").
  std::optional<TimePoint> Next(TimePoint after) const;
  // The latest time in (after, until] the schedule fires and how many times it fires there
  // (counted up to `cap`); nullopt when it does not.
  struct Missed {
    TimePoint latest;
    int count = 0;
  };
  std::optional<Missed> LatestIn(TimePoint after, TimePoint until, int cap = 1000) const;

  const TimeZone& zone() const { return zone_; }

 private:
  bool DayMatches(int64_t days) const;

  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;
  std::bitset<13> months_;
  std::bitset<7> days_of_week_;
  // The day fields as "*" (or "?"): with both restricted a day matches either (cron's OR rule).
  bool dom_star_ = false;
  bool dow_star_ = false;
  TimeZone zone_;
};

}  // namespace perfgate::op

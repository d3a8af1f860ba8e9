#include "operator/policy/schedule.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace perfgate::op {
namespace {

constexpr int64_t kDay = 86400;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::chrono::year_month_day CivilOf(int64_t days) {
  return std::chrono::year_month_day(std::chrono::sys_days(std::chrono::days(days)));
}

int64_t DaysOf(int y, unsigned m, unsigned d) {
  return std::chrono::sys_days(std::chrono::year(y) / std::chrono::month(m) / std::chrono::day(d))
      .time_since_epoch()
      .count();
}

// ---- POSIX TZ rules ----

struct Cursor {
  const std::string& s;
  size_t i = 0;
  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
};

bool ParseZoneName(Cursor& c) {
  if (c.peek() == '<') {
    const size_t end = c.s.find('>', c.i);
    if (end == std::string::npos) return false;
    c.i = end + 1;
    return true;
  }
  const size_t start = c.i;
  while (std::isalpha(static_cast<unsigned char>(c.peek())) != 0) c.i++;
  return c.i - start >= 3;
}

bool ParseNumber(Cursor& c, int* out) {
  if (std::isdigit(static_cast<unsigned char>(c.peek())) == 0) return false;
  int v = 0;
  while (std::isdigit(static_cast<unsigned char>(c.peek())) != 0 && v < 100000) {
    v = v * 10 + (c.s[c.i++] - '0');
  }
  *out = v;
  return true;
}

// [+-]hh[:mm[:ss]] in seconds.
bool ParseHms(Cursor& c, int* out) {
  int sign = 1;
  if (c.peek() == '+' || c.peek() == '-') sign = c.s[c.i++] == '-' ? -1 : 1;
  int h = 0;
  int m = 0;
  int sec = 0;
  if (!ParseNumber(c, &h)) return false;
  if (c.peek() == ':') {
    c.i++;
    if (!ParseNumber(c, &m)) return false;
    if (c.peek() == ':') {
      c.i++;
      if (!ParseNumber(c, &sec)) return false;
    }
  }
  *out = sign * (h * 3600 + m * 60 + sec);
  return true;
}

bool ParseRuleDate(Cursor& c, TimeZone::RuleDate* d) {
  if (c.peek() == 'M') {
    c.i++;
    d->kind = 'M';
    if (!ParseNumber(c, &d->month) || c.peek() != '.') return false;
    c.i++;
    if (!ParseNumber(c, &d->week) || c.peek() != '.') return false;
    c.i++;
    if (!ParseNumber(c, &d->day)) return false;
    if (d->month < 1 || d->month > 12 || d->week < 1 || d->week > 5 || d->day > 6) return false;
  } else if (c.peek() == 'J') {
    c.i++;
    d->kind = 'J';
    if (!ParseNumber(c, &d->number) || d->number < 1 || d->number > 365) return false;
  } else {
    d->kind = 'N';
    if (!ParseNumber(c, &d->number) || d->number > 365) return false;
  }
  if (c.peek() == '/') {
    c.i++;
    return ParseHms(c, &d->time);
  }
  return true;
}

// The local midnight (in days since the epoch) of a rule's date in `year`.
int64_t RuleDay(const TimeZone::RuleDate& d, int year) {
  const int64_t jan1 = DaysOf(year, 1, 1);
  const bool leap = std::chrono::year(year).is_leap();
  if (d.kind == 'J') return jan1 + d.number - 1 + ((leap && d.number >= 60) ? 1 : 0);
  if (d.kind == 'N') return jan1 + d.number;
  const int64_t first = DaysOf(year, static_cast<unsigned>(d.month), 1);
  const unsigned wd0 =
      std::chrono::weekday(std::chrono::sys_days(std::chrono::days(first))).c_encoding();
  int64_t day = first + (d.day - static_cast<int>(wd0) + 7) % 7 + int64_t{d.week - 1} * 7;
  const auto last = std::chrono::year_month_day_last(
      std::chrono::year(year), std::chrono::month_day_last(std::chrono::month(d.month)));
  const int64_t last_day = std::chrono::sys_days(last).time_since_epoch().count();
  while (day > last_day) day -= 7;
  return day;
}

int RuleOffsetAt(const TimeZone::PosixRule& r, int64_t utc) {
  if (!r.has_dst) return r.std_offset;
  const int year = static_cast<int>(CivilOf(FloorDiv(utc + r.std_offset, kDay)).year());
  const int64_t start = RuleDay(r.start, year) * kDay + r.start.time - r.std_offset;
  const int64_t end = RuleDay(r.end, year) * kDay + r.end.time - r.dst_offset;
  const bool dst = start < end ? (utc >= start && utc < end) : !(utc >= end && utc < start);
  return dst ? r.dst_offset : r.std_offset;
}

Result<TimeZone::PosixRule> ParsePosix(const std::string& text) {
  Cursor c{text};
  TimeZone::PosixRule r;
  auto bad = [&] {
    return Status(Code::kInvalidArgument, "malformed POSIX TZ rule \"" + text + "\"");
  };
  int off = 0;
  if (!ParseZoneName(c) || !ParseHms(c, &off)) return bad();
  r.std_offset = -off;
  r.dst_offset = r.std_offset;
  if (c.done()) return r;
  if (!ParseZoneName(c)) return bad();
  r.has_dst = true;
  r.dst_offset = r.std_offset + 3600;
  if (c.peek() != ',' && !c.done()) {
    if (!ParseHms(c, &off)) return bad();
    r.dst_offset = -off;
  }
  if (c.done()) {
    // No rule: POSIX leaves it to the implementation; the US rule is the usual one.
    r.start = {'M', 3, 2, 0, 0, 7200};
    r.end = {'M', 11, 1, 0, 0, 7200};
    return r;
  }
  if (c.peek() != ',') return bad();
  c.i++;
  if (!ParseRuleDate(c, &r.start) || c.peek() != ',') return bad();
  c.i++;
  if (!ParseRuleDate(c, &r.end) || !c.done()) return bad();
  return r;
}

uint32_t Be32(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(b[at + k]);
  return v;
}

int64_t Be64(const std::string& b, size_t at) {
  uint64_t v = 0;
  for (size_t k = 0; k < 8; ++k) v = (v << 8) | static_cast<unsigned char>(b[at + k]);
  return static_cast<int64_t>(v);
}

// ---- cron fields ----

struct FieldSpec {
  const char* name;
  int min;
  int max;
  const std::array<const char*, 12>* names;  // names[i] is min + i
  int name_count;
};

constexpr std::array<const char*, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 12> kDayNames = {"sun", "mon", "tue", "wed", "thu", "fri",
                                                   "sat", "",    "",    "",    "",    ""};

Result<int> FieldValue(const FieldSpec& f, const std::string& text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
        return std::isdigit(static_cast<unsigned char>(ch));
      })) {
    if (text.size() > 4) return Status(Code::kInvalidArgument, "");
    return std::atoi(text.c_str());
  }
  if (f.names != nullptr) {
    std::string lower = text;
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (int i = 0; i < f.name_count; ++i) {
      if (lower == (*f.names)[static_cast<size_t>(i)]) return f.min + i;
    }
  }
  return Status(Code::kInvalidArgument, "");
}

// Sets the bits of one field; `star`: the field is "*" or "?".
Status ParseField(const FieldSpec& f, const std::string& text, std::vector<bool>* bits,
                  bool* star) {
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, std::string(f.name) + " field \"" + text + "\": " + why);
  };
  *star = text == "*" || text == "?" || text == "*/1";
  if (text.empty()) return bad("empty");
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    if (part.empty()) return bad("empty list item");
    int step = 1;
    std::string range = part;
    if (const size_t slash = part.find('/'); slash != std::string::npos) {
      const std::string s = part.substr(slash + 1);
      range = part.substr(0, slash);
      auto v = FieldValue(FieldSpec{f.name, 0, 0, nullptr, 0}, s);
      if (!v.ok() || *v <= 0) return bad("step \"" + s + "\" is not a positive number");
      step = *v;
    }
    int lo = f.min;
    int hi = f.max;
    if (range == "*" || range == "?") {
      // every value
    } else if (const size_t dash = range.find('-'); dash != std::string::npos) {
      auto a = FieldValue(f, range.substr(0, dash));
      auto b = FieldValue(f, range.substr(dash + 1));
      if (!a.ok() || !b.ok()) return bad("\"" + range + "\" is not a range of values");
      lo = *a;
      hi = *b;
      if (lo > hi) return bad("range starts after it ends");
    } else {
      auto a = FieldValue(f, range);
      if (!a.ok()) return bad("\"" + range + "\" is not a value");
      lo = *a;
      // "5/15": from 5 to the end, every 15.
      hi = part.find('/') != std::string::npos ? f.max : lo;
    }
    if (lo < f.min || hi > f.max) {
      return bad("values are " + std::to_string(f.min) + "-" + std::to_string(f.max));
    }
    for (int v = lo; v <= hi; v += step) (*bits)[static_cast<size_t>(v)] = true;
  }
  return Status();
}

template <size_t N>
std::bitset<N> ToBits(const std::vector<bool>& v) {
  std::bitset<N> b;
  for (size_t i = 0; i < N && i < v.size(); ++i) b[i] = v[i];
  return b;
}

}  // namespace

// ---- TimeZone ----

Result<TimeZone> TimeZone::Load(const std::string& name) {
  if (name.empty() || name == "UTC" || name == "Etc/UTC") return TimeZone();
  const bool safe = name[0] != '/' && name.find("..") == std::string::npos &&
                    std::all_of(name.begin(), name.end(), [](char ch) {
                      return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '/' ||
                             ch == '_' || ch == '-' || ch == '+';
                    });
  if (!safe) return Status(Code::kInvalidArgument, "unknown time zone \"" + name + "\"");
  const char* dir = std::getenv("TZDIR");
  const std::string path =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo") + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::kInvalidArgument,
                  "unknown time zone \"" + name + "\" (no " + path + " in the time zone database)");
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return FromTzif(name, buf.str());
}

Result<TimeZone> TimeZone::FromTzif(const std::string& name, const std::string& b) {
  auto bad = [&] {
    return Status(Code::kInvalidArgument, "time zone \"" + name + "\": not a TZif file");
  };
  if (b.size() < 44 || b.compare(0, 4, "TZif") != 0) return bad();
  auto counts = [&](size_t at, std::array<uint32_t, 6>* c) {
    if (b.size() < at + 44) return false;
    for (size_t k = 0; k < 6; ++k) (*c)[k] = Be32(b, at + 20 + 4 * k);
    return true;
  };
  std::array<uint32_t, 6> c{};  // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
  if (!counts(0, &c)) return bad();
  size_t at = 44;
  size_t tsize = 4;
  const bool v2 = b[4] >= '2';
  if (v2) {
    at += size_t{c[3]} * 5 + size_t{c[4]} * 6 + c[5] + size_t{c[2]} * 8 + c[1] + c[0];
    if (!counts(at, &c)) return bad();
    at += 44;
    tsize = 8;
  }
  const size_t need = size_t{c[3]} * tsize + c[3] + size_t{c[4]} * 6 + c[5] +
                      size_t{c[2]} * (tsize + 4) + c[1] + c[0];
  if (b.size() < at + need || c[4] == 0) return bad();
  TimeZone z;
  z.name_ = name;
  std::vector<int> type_offsets(c[4]);
  const size_t types_at = at + c[3] * tsize + c[3];
  for (size_t k = 0; k < c[4]; ++k) {
    type_offsets[k] = static_cast<int32_t>(Be32(b, types_at + 6 * k));
  }
  for (size_t k = 0; k < c[3]; ++k) {
    const int64_t t = tsize == 8 ? Be64(b, at + 8 * k)
                                 : static_cast<int64_t>(static_cast<int32_t>(Be32(b, at + 4 * k)));
    const auto type = static_cast<unsigned char>(b[at + c[3] * tsize + k]);
    if (type >= c[4]) return bad();
    z.transitions_.push_back(t);
    z.offsets_.push_back(type_offsets[type]);
  }
  z.initial_ = type_offsets[0];
  if (v2) {
    const size_t footer = at + need;
    if (footer < b.size() && b[footer] == '\n') {
      const size_t end = b.find('\n', footer + 1);
      const std::string text =
          b.substr(footer + 1, end == std::string::npos ? std::string::npos : end - footer - 1);
      if (!text.empty()) {
        auto rule = ParsePosix(text);
        if (!rule.ok()) return rule.status();
        z.rule_ = *rule;
      }
    }
  }
  return z;
}

Result<TimeZone> TimeZone::FromPosix(const std::string& rule) {
  auto r = ParsePosix(rule);
  if (!r.ok()) return r.status();
  TimeZone z;
  z.name_ = rule;
  z.initial_ = r->std_offset;
  z.rule_ = *r;
  return z;
}

int TimeZone::OffsetAt(int64_t utc) const {
  if (transitions_.empty() || utc < transitions_.front()) {
    return transitions_.empty() && rule_ ? RuleOffsetAt(*rule_, utc) : initial_;
  }
  if (rule_ && utc >= transitions_.back()) return RuleOffsetAt(*rule_, utc);
  const auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc);
  return offsets_[static_cast<size_t>(it - transitions_.begin()) - 1];
}

int64_t TimeZone::ToUtc(int64_t local) const {
  const int before = OffsetAt(local - kDay);
  const int after = OffsetAt(local + kDay);
  const int64_t u1 = local - before;
  const int64_t u2 = local - after;
  const bool ok1 = OffsetAt(u1) == before;
  const bool ok2 = OffsetAt(u2) == after;
  if (ok1 && ok2) return std::min(u1, u2);
  if (ok1) return u1;
  if (ok2) return u2;
  // In the gap: the first instant with the later offset.
  int64_t lo = std::min(u1, u2);
  int64_t hi = std::max(u1, u2);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (OffsetAt(mid) == after) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// ---- CronSchedule ----

Result<CronSchedule> CronSchedule::Parse(const std::string& expr, const std::string& time_zone) {
  std::vector<std::string> tokens;
  {
    std::stringstream in(expr);
    std::string t;
    while (in >> t) tokens.push_back(t);
  }
  std::string zone = time_zone;
  if (!tokens.empty()) {
    for (const char* prefix : {"CRON_TZ=", "TZ="}) {
      if (tokens[0].rfind(prefix, 0) != 0) continue;
      if (!time_zone.empty()) {
        return Status(Code::kInvalidArgument, "schedule \"" + expr + "\": both " + prefix +
                                                  " and spec.timeZone name a time zone; keep one");
      }
      zone = tokens[0].substr(std::string(prefix).size());
      tokens.erase(tokens.begin());
      break;
    }
  }
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, "schedule \"" + expr + "\": " + why);
  };
  if (!tokens.empty() && tokens[0][0] == '@') {
    static const std::array<std::pair<const char*, const char*>, 7> kMacros = {{
        {"@yearly", "0 0 1 1 *"},
        {"@annually", "0 0 1 1 *"},
        {"@monthly", "0 0 1 * *"},
        {"@weekly", "0 0 * * 0"},
        {"@daily", "0 0 * * *"},
        {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"},
    }};
    const auto* m = std::find_if(kMacros.begin(), kMacros.end(),
                                 [&](const auto& p) { return tokens[0] == p.first; });
    if (m == kMacros.end() || tokens.size() != 1) return bad("unknown macro " + tokens[0]);
    std::stringstream in(m->second);
    tokens.clear();
    std::string t;
    while (in >> t) tokens.push_back(t);
  }
  if (tokens.size() != 5) {
    return bad("expected 5 fields (minute hour day-of-month month day-of-week), got " +
               std::to_string(tokens.size()));
  }
  static const std::array<FieldSpec, 5> kFields = {{
      {"minute", 0, 59, nullptr, 0},
      {"hour", 0, 23, nullptr, 0},
      {"day-of-month", 1, 31, nullptr, 0},
      {"month", 1, 12, &kMonthNames, 12},
      {"day-of-week", 0, 7, &kDayNames, 7},
  }};
  CronSchedule s;
  std::array<std::vector<bool>, 5> bits;
  std::array<bool, 5> star{};
  for (size_t k = 0; k < 5; ++k) {
    bits[k].assign(static_cast<size_t>(kFields[k].max) + 1, false);
    if (Status st = ParseField(kFields[k], tokens[k], &bits[k], &star[k]); !st.ok()) {
      return bad(st.message());
    }
  }
  if (bits[4][7]) bits[4][0] = true;  // 7 is Sunday too
  s.minutes_ = ToBits<60>(bits[0]);
  s.hours_ = ToBits<24>(bits[1]);
  s.days_of_month_ = ToBits<32>(bits[2]);
  s.months_ = ToBits<13>(bits[3]);
  s.days_of_week_ = ToBits<7>(bits[4]);
  s.dom_star_ = star[2];
  s.dow_star_ = star[4];
  auto z = TimeZone::Load(zone);
  if (!z.ok()) return bad(z.status().message());
  s.zone_ = *z;
  return s;
}

bool CronSchedule::DayMatches(int64_t days) const {
  const std::chrono::year_month_day ymd = CivilOf(days);
  const bool dom = days_of_month_[static_cast<unsigned>(ymd.day())];
  const bool dow =
      days_of_week_[std::chrono::weekday(std::chrono::sys_days(std::chrono::days(days)))
                        .c_encoding()];
  if (dom_star_ || dow_star_) return dom && dow;
  return dom || dow;
}

std::optional<CronSchedule::TimePoint> CronSchedule::Next(TimePoint after) const {
  const int64_t a = std::chrono::floor<std::chrono::seconds>(after.time_since_epoch()).count();
  // Local wall-clock minutes from the one after `after`'s.
  const int64_t local = FloorDiv(a + zone_.OffsetAt(a), 60) * 60 + 60;
  int64_t day = FloorDiv(local, kDay);
  int minute_of_day = static_cast<int>(local - day * kDay) / 60;
  const int64_t limit = day + int64_t{5} * 366 + 1;
  while (day < limit) {
    const std::chrono::year_month_day ymd = CivilOf(day);
    if (!months_[static_cast<unsigned>(ymd.month())]) {
      const auto next_month =
          std::chrono::year_month(ymd.year(), ymd.month()) + std::chrono::months(1);
      day = std::chrono::sys_days(next_month / std::chrono::day(1)).time_since_epoch().count();
      minute_of_day = 0;
      continue;
    }
    if (DayMatches(day)) {
      for (int h = minute_of_day / 60; h < 24; ++h) {
        if (!hours_[static_cast<size_t>(h)]) continue;
        for (int m = h == minute_of_day / 60 ? minute_of_day % 60 : 0; m < 60; ++m) {
          if (!minutes_[static_cast<size_t>(m)]) continue;
          const int64_t u = zone_.ToUtc(day * kDay + int64_t{h} * 3600 + int64_t{m} * 60);
          // A time in a repeated hour already passed, or several times in a skipped hour that
          // all map to the jump: fired once.
          if (u > a) return TimePoint(std::chrono::seconds(u));
        }
      }
    }
    day++;
    minute_of_day = 0;
  }
  return std::nullopt;
}

std::optional<CronSchedule::Missed> CronSchedule::LatestIn(TimePoint after, TimePoint until,
                                                           int cap) const {
  std::optional<Missed> out;
  TimePoint t = after;
  while (!out || out->count < cap) {
    const std::optional<TimePoint> n = Next(t);
    if (!n || *n > until) return out;
    if (!out) out = Missed{};
    out->latest = *n;
    out->count++;
    t = *n;
  }
  // Too many to walk: the latest from the shortest window before `until` that has one.
  for (const auto window : {std::chrono::hours(2), std::chrono::hours(48),
                            std::chrono::hours(24 * 40), std::chrono::hours(24 * 400)}) {
    TimePoint from = std::max(t, until - window);
    std::optional<TimePoint> n = Next(from);
    if (!n || *n > until) continue;
    while (n && *n <= until) {
      out->latest = *n;
      n = Next(*n);
    }
    break;
  }
  return out;
}

}  // namespace perfgate::op

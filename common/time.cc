#include "common/time.h"

#include <ctime>

namespace perfgate {

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NowRfc3339() { return FormatRfc3339(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  if (text.size() < 19 || strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace perfgate

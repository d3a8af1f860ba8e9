// RFC 3339 timestamps to the second, in UTC, as Kubernetes writes metav1.Time
// ("2026-11-30T10:57:40Z"): report times, status and event times, kube-sim's objects.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace perfgate {

std::string FormatRfc3339(std::chrono::system_clock::time_point t);
std::string NowRfc3339();
// The time of "2026-11-30T10:57:40Z" (anything after the seconds is ignored: Kubernetes writes
// UTC); nullopt when the text is not such a timestamp.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text);

}  // namespace perfgate

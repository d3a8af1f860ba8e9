// How a TestRun says more about a metric than its samples do, through entries of its Details().
// Why a metric has no value: the runner then decides a threshold on that metric from the
// reason instead of "no samples": SKIPPED when the metric does not apply to this machine
// (NVLink on one GPU), ERROR when the reading was refused (a refusal says nothing about the
// hardware: never a FAIL, never a PASS). What a count counted (unit "count": the errors'
// addresses, the settings that differ): the runner adds it to the reason of a FAIL of a bound
// on that count, so the failure names what was found as well as how many.
#pragma once

#include <string>
#include <string_view>

namespace perfgate::kernels {

inline constexpr std::string_view kNotApplicablePrefix = "notApplicable.";
inline constexpr std::string_view kNotMeasuredPrefix = "notMeasured.";
inline constexpr std::string_view kCountedPrefix = "counted.";

inline std::string NotApplicableKey(std::string_view metric) {
  return std::string(kNotApplicablePrefix) + std::string(metric);
}
inline std::string NotMeasuredKey(std::string_view metric) {
  return std::string(kNotMeasuredPrefix) + std::string(metric);
}

inline std::string CountedKey(std::string_view metric) {
  return std::string(kCountedPrefix) + std::string(metric);
}

}  // namespace perfgate::kernels

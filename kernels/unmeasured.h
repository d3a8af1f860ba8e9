// How a TestRun says why a metric it declares has no value in its samples, through entries of
// its Details(). The runner then decides a threshold on that metric from the reason instead of
// "no samples": SKIPPED when the metric does not apply to this machine (NVLink on one GPU),
// ERROR when the reading was refused (a refusal says nothing about the hardware: never a FAIL,
// never a PASS).
#pragma once

#include <string>
#include <string_view>

namespace perfgate::kernels {

inline constexpr std::string_view kNotApplicablePrefix = "notApplicable.";
inline constexpr std::string_view kNotMeasuredPrefix = "notMeasured.";

inline std::string NotApplicableKey(std::string_view metric) {
  return std::string(kNotApplicablePrefix) + std::string(metric);
}
inline std::string NotMeasuredKey(std::string_view metric) {
  return std::string(kNotMeasuredPrefix) + std::string(metric);
}

}  // namespace perfgate::kernels

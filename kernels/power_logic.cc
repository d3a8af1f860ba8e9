#include "kernels/power_logic.h"

#include <algorithm>
#include <cstdio>

#include "common/stats.h"
#include "kernels/nvml/nvml.h"
#include "kernels/nvml/readings.h"

namespace perfgate::kernels::power {
namespace {

std::string Fixed(double value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

bool IsHardwareReason(const std::string& name) { return name.rfind("Hw", 0) == 0; }

}  // namespace

PowerAnalysis AnalyzePowerTimeline(const std::vector<PowerSample>& timeline, double power_limit_w,
                                   double warmup_seconds) {
  PowerAnalysis a;
  std::vector<double> clocks;
  std::vector<double> powers;
  std::map<std::string, int> reason_counts;
  int with_reasons = 0;
  for (const PowerSample& s : timeline) {
    if (s.seconds < warmup_seconds) continue;
    ++a.samples;
    if (s.sm_clock_mhz) clocks.push_back(*s.sm_clock_mhz);
    if (s.power_w) powers.push_back(*s.power_w);
    if (s.temperature_c) a.max_temperature_c = std::max(a.max_temperature_c, *s.temperature_c);
    if (s.reasons) {
      ++with_reasons;
      for (const std::string& name : nvml::ClocksEventReasonNames(*s.reasons)) {
        ++reason_counts[name];
      }
    }
  }
  a.sustained_sm_clock_mhz = stats::Median(clocks);
  a.power_w = stats::Median(powers);
  if (power_limit_w > 0) a.power_to_limit = a.power_w / power_limit_w;
  for (const auto& [name, count] : reason_counts) {
    a.reason_percent[name] = 100.0 * count / with_reasons;
  }
  return a;
}

std::string ReasonSummary(const PowerAnalysis& a) {
  std::vector<std::pair<std::string, double>> reasons;
  for (const auto& [name, percent] : a.reason_percent) {
    if (name != "GpuIdle" && percent >= 1.0) reasons.emplace_back(name, percent);
  }
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& x, const auto& y) {
    if (IsHardwareReason(x.first) != IsHardwareReason(y.first)) return IsHardwareReason(x.first);
    return x.second > y.second;
  });
  std::string text;
  for (const auto& [name, percent] : reasons) {
    text += (text.empty() ? "" : ", ") + name + " " + Fixed(percent, 0) + "%";
  }
  return text.empty() ? "none" : text;
}

Status CheckPower(const PowerAnalysis& a, double max_sm_clock_mhz, double power_limit_w,
                  double min_fraction) {
  if (a.samples == 0 || a.sustained_sm_clock_mhz <= 0) {
    return Unavailable("power: NVML gave no SM clock after the warm-up");
  }
  if (min_fraction <= 0 || max_sm_clock_mhz <= 0) return Status::Ok();
  const double fraction = a.sustained_sm_clock_mhz / max_sm_clock_mhz;
  if (fraction >= min_fraction) return Status::Ok();
  std::string message =
      "power: sustained SM clock " + Fixed(a.sustained_sm_clock_mhz, 0) + " MHz under load is " +
      Fixed(100 * fraction, 0) + "% of the " + Fixed(max_sm_clock_mhz, 0) +
      " MHz maximum, below the bound " + Fixed(100 * min_fraction, 0) +
      "%; clock-event reasons: " + ReasonSummary(a) + "; power " + Fixed(a.power_w, 0) + " W";
  if (power_limit_w > 0) message += " of " + Fixed(power_limit_w, 0) + " W";
  message += ", max " + Fixed(a.max_temperature_c, 0) + " C";
  return DataLoss(message);
}

}  // namespace perfgate::kernels::power

// The power test's analysis, apart from CUDA and NVML so unit tests run it on recorded
// timelines: from samples of power, SM clock, temperature and clock-event (throttle) reasons
// taken while a GEMM holds the GPU at its power limit, the clock it sustains, the share of
// time in each throttle reason, and power against the limit; and the verdict, which names
// the reasons when the clock is well below its bound.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace perfgate::kernels::power {

struct PowerSample {
  double seconds = 0;  // since the load started
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<std::uint64_t> reasons;  // NVML clock-event reason bits
};

struct PowerAnalysis {
  int samples = 0;                    // after the warm-up
  double sustained_sm_clock_mhz = 0;  // median SM clock after the warm-up
  double power_w = 0;                 // median power after the warm-up
  double power_to_limit = 0;          // power_w / limit (0 when the limit is unknown)
  double max_temperature_c = 0;
  // Reason name ("SwPowerCap", "HwSlowdown", ...) -> percent of samples with it set.
  std::map<std::string, double> reason_percent;
};

// Samples before `warmup_seconds` are left out (clocks and power settle). Pure.
PowerAnalysis AnalyzePowerTimeline(const std::vector<PowerSample>& timeline, double power_limit_w,
                                   double warmup_seconds);

// "HwSlowdown 80%, SwPowerCap 100%": reasons held at least 1% of the time, hardware ones
// (HwSlowdown, HwThermalSlowdown, HwPowerBrakeSlowdown) first, then by share; "none" if none.
std::string ReasonSummary(const PowerAnalysis& a);

// OK when the sustained clock is at least min_fraction of max_sm_clock_mhz (or either is 0);
// DataLoss("power: sustained SM clock 1210 MHz under load is 61% of the 1980 MHz maximum,
// below the bound 75%; clock-event reasons: HwSlowdown 80%, SwPowerCap 100%; power 690 W of
// 700 W, max 87 C") otherwise; Unavailable when no sample had a clock.
Status CheckPower(const PowerAnalysis& a, double max_sm_clock_mhz, double power_limit_w,
                  double min_fraction);

}  // namespace perfgate::kernels::power

// The power test's analysis on recorded timelines (100 ms NVML samples under a GEMM at the
// power limit): a healthy H200 held by its power cap passes; a GPU in HW slowdown, or one
// thermally throttled, FAILs with the reasons named.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/nvml/nvml.h"
#include "kernels/power_logic.h"

namespace perfgate::kernels::power {
namespace {

// `seconds` of samples every 0.1 s: the first 5 s warm (boost clock, below the cap), then
// `clock` MHz at `watts` with `reasons`.
std::vector<PowerSample> Timeline(double seconds, double clock, double watts, std::uint64_t reasons,
                                  double temperature = 70) {
  std::vector<PowerSample> t;
  for (int i = 1; i * 0.1 <= seconds; ++i) {
    const double s = i * 0.1;
    if (s < 5) {
      t.push_back({s, 450.0, 1980.0, 50.0, 0});
    } else {
      t.push_back({s, watts, clock, temperature, reasons});
    }
  }
  return t;
}

TEST(PowerAnalysis, HealthyH200HeldByItsPowerCapPasses) {
  const auto a =
      AnalyzePowerTimeline(Timeline(30, 1755, 698, nvml::kClocksEventSwPowerCap), 700, 5);
  EXPECT_GT(a.samples, 240);  // 25 s after the warm-up, every 0.1 s
  EXPECT_DOUBLE_EQ(a.sustained_sm_clock_mhz, 1755);
  EXPECT_NEAR(a.power_to_limit, 698.0 / 700, 1e-9);
  EXPECT_DOUBLE_EQ(a.reason_percent.at("SwPowerCap"), 100);
  EXPECT_EQ(ReasonSummary(a), "SwPowerCap 100%");
  EXPECT_TRUE(CheckPower(a, 1980, 700, 0.75).ok());
}

TEST(PowerAnalysis, HardwareSlowdownFailsAndIsNamedFirst) {
  // A failing power supply or board asserts HW slowdown: the clock halves at low power.
  auto t = Timeline(30, 990, 380, nvml::kClocksEventHwSlowdown | nvml::kClocksEventSwPowerCap);
  const auto a = AnalyzePowerTimeline(t, 700, 5);
  const Status s = CheckPower(a, 1980, 700, 0.75);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_EQ(s.message(),
            "power: sustained SM clock 990 MHz under load is 50% of the 1980 MHz maximum, below "
            "the bound 75%; clock-event reasons: HwSlowdown 100%, SwPowerCap 100%; power 380 W "
            "of 700 W, max 70 C");
}

TEST(PowerAnalysis, ThermalThrottlingPartOfTheTimeIsShownAsAShare) {
  auto t = Timeline(30, 1300, 600, nvml::kClocksEventSwThermalSlowdown, 89);
  for (std::size_t i = 0; i < t.size(); i += 2) {
    if (t[i].seconds >= 5) t[i].reasons = *t[i].reasons | nvml::kClocksEventHwThermalSlowdown;
  }
  const auto a = AnalyzePowerTimeline(t, 700, 5);
  EXPECT_NEAR(a.reason_percent.at("HwThermalSlowdown"), 50, 1);
  const Status s = CheckPower(a, 1980, 700, 0.75);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("HwThermalSlowdown 5"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("SwThermalSlowdown 100%"), std::string::npos);
  EXPECT_NE(s.message().find("max 89 C"), std::string::npos);
}

TEST(PowerAnalysis, NoBoundMeansNoVerdictOnTheClock) {
  const auto a = AnalyzePowerTimeline(Timeline(10, 800, 300, 0), 700, 5);
  EXPECT_TRUE(CheckPower(a, 1980, 700, 0).ok());
  EXPECT_EQ(ReasonSummary(a), "none");
}

TEST(PowerAnalysis, NoClockReadingsCannotPass) {
  std::vector<PowerSample> t = {{6, 500.0, std::nullopt, 60.0, 0}};
  const Status s = CheckPower(AnalyzePowerTimeline(t, 700, 5), 1980, 700, 0.75);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kUnavailable);
}

}  // namespace
}  // namespace perfgate::kernels::power

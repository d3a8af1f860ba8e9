// Bounds and profiles that mean something: numbers that are not numbers, bounds that cannot
// bind, and a profile named for another GPU model are invalid input, each naming the file, the
// line and the field.
#include "core/plan_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/plan.h"
#include "tests/worker/plan_of.h"

namespace perfgate::worker {
namespace {

using ::testing::HasSubstr;

void ExpectInvalid(const std::string& spec_body, const std::string& expected,
                   const PlanOptions& options = {}) {
  auto plan = PlanOf(spec_body, options);
  ASSERT_FALSE(plan.ok()) << "accepted:\n" << spec_body;
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr(expected)) << spec_body;
}

// One host-stream threshold (line 9 onward) with `bound` written under the metric.
std::string Threshold(const std::string& bound) {
  return "  tests:\n    - type: host-stream\n      thresholds:\n"
         "        - metric: triadBandwidthGBps\n" +
         bound;
}

TEST(PlanChecks, NonFiniteNumbersAreInvalidWhereverTheyAre) {
  ExpectInvalid(Threshold("          value: .inf\n"),
                "s.yaml:10: spec.tests[0].thresholds[0].value: expected a finite number, got .inf");
  ExpectInvalid(Threshold("          value: 1e400\n"),
                "s.yaml:10: spec.tests[0].thresholds[0].value: expected a finite number");
  ExpectInvalid(Threshold("          reference: .nan\n          fraction: 0.5\n"),
                "s.yaml:10: spec.tests[0].thresholds[0].reference: expected a finite number");
  ExpectInvalid(Threshold("          reference: 100\n          fraction: -.inf\n"),
                "s.yaml:11: spec.tests[0].thresholds[0].fraction: expected a finite number");
  ExpectInvalid("  sampling:\n    maxSeconds: .inf\n  tests:\n    - type: host-stream\n",
                "s.yaml:7: spec.sampling.maxSeconds: expected a finite number, got .inf");
  ExpectInvalid("  sampling:\n    confidence: .NaN\n  tests:\n    - type: host-stream\n",
                "s.yaml:7: spec.sampling.confidence: expected a finite number");
  ExpectInvalid("  tests:\n    - type: host-stream\n      parameters:\n        arrayBytes: .inf\n",
                "s.yaml:9: spec.tests[0].parameters.arrayBytes: expected a finite number");
}

TEST(PlanChecks, AFloorAtOrBelowZeroOnARateCannotFailAndIsRefused) {
  ExpectInvalid(Threshold("          value: 0\n"),
                "s.yaml:10: spec.tests[0].thresholds[0].value: a \">=\" bound of 0 on "
                "triadBandwidthGBps (GB/s, never negative) passes whatever is measured");
  ExpectInvalid(Threshold("          op: \">\"\n          value: -5\n"),
                "spec.tests[0].thresholds[0].value: a \">\" bound of -5");
  ExpectInvalid(Threshold("          reference: 0\n          fraction: 0.5\n"),
                "s.yaml:10: spec.tests[0].thresholds[0].reference: a \">=\" bound of 0");
  ExpectInvalid(Threshold("          op: \"<=\"\n          value: -1\n"),
                "fails whatever is measured");
}

TEST(PlanChecks, AFractionOfTheReferenceLiesInZeroToOne) {
  ExpectInvalid(Threshold("          reference: 100\n          fraction: 1.5\n"),
                "s.yaml:11: spec.tests[0].thresholds[0].fraction: fraction 1.5 asks for more "
                "than the reference");
  ExpectInvalid(Threshold("          reference: 100\n          fraction: 0\n"),
                "s.yaml:11: spec.tests[0].thresholds[0].fraction: must be more than 0");
}

TEST(PlanChecks, BoundsThatBindAreAccepted) {
  for (const std::string bound :
       {"          value: 0.1\n", "          op: \">\"\n          value: 0\n",
        "          reference: 100\n          fraction: 1\n",
        "          op: \"<\"\n          value: 0.1\n"}) {
    auto plan = PlanOf(Threshold(bound));
    EXPECT_TRUE(plan.ok()) << bound << plan.status().ToString();
  }
}

// A "<" 0 on a rate reads like a ceiling but no figure is below 0: every run would FAIL.
TEST(PlanChecks, ACeilingAtOrBelowZeroOnARateCannotPassAndIsRefused) {
  ExpectInvalid(Threshold("          op: \"<\"\n          value: 0\n"),
                "s.yaml:11: spec.tests[0].thresholds[0].value: a \"<\" bound of 0 on "
                "triadBandwidthGBps (GB/s, never negative) fails whatever is measured: give a "
                "bound above 0");
}

// One memtest threshold on memoryErrorCount (a count: never negative), `bound` below it.
std::string CountThreshold(const std::string& bound) {
  return "  tests:\n    - type: memtest\n      thresholds:\n"
         "        - metric: memoryErrorCount\n          statistic: max\n" +
         bound;
}

TEST(PlanChecks, ABoundOnACountMustFallInsideWhatCanBeCounted) {
  ExpectInvalid(CountThreshold("          op: \">=\"\n          value: 0\n"),
                "spec.tests[0].thresholds[0].value: a \">=\" bound of 0 on memoryErrorCount "
                "(count, never negative) passes whatever is measured: give a bound above 0");
  ExpectInvalid(CountThreshold("          op: \"<\"\n          value: 0\n"),
                "a \"<\" bound of 0 on memoryErrorCount (count, never negative) fails whatever "
                "is measured: give a bound above 0");
  ExpectInvalid(CountThreshold("          op: \"<=\"\n          value: -1\n"),
                "fails whatever is measured: give a bound at or above 0");
  for (const std::string bound :
       {"          op: \"<=\"\n          value: 0\n", "          op: \"<\"\n          value: 1\n",
        "          op: \"<=\"\n          value: 100\n"}) {
    auto plan = PlanOf(CountThreshold(bound));
    EXPECT_TRUE(plan.ok()) << bound << plan.status().ToString();
  }
}

TEST(PlanChecks, AFlagIsZeroOrOne) {
  const std::string burn =
      "  tests:\n    - type: burn\n      thresholds:\n"
      "        - metric: hardwareSlowdown\n          statistic: max\n          op: \"<=\"\n";
  ExpectInvalid(burn + "          value: 1\n",
                "a \"<=\" bound of 1 on hardwareSlowdown (bool, 0 or 1) passes whatever is "
                "measured: give a bound below 1");
  EXPECT_TRUE(PlanOf(burn + "          value: 0\n").ok());
}

// A count that cannot exceed a value by construction (a test that reports failures another
// way and the count as 0): a "<=" bound at or above it can never FAIL, so it is refused.
TEST(PlanChecks, ABoundACountCanNeverExceedIsRefused) {
  v1alpha1::TestSpec test;
  test.set_type("t");
  auto* th = test.add_thresholds();
  th->set_metric("alwaysZeroCount");
  th->set_statistic("max");
  th->set_op("<=");
  th->set_value(0);
  kernels::MetricInfo always_zero{"alwaysZeroCount", "count", false, ""};
  always_zero.highest = 0;
  Status s = CheckThresholdsBind(test, {always_zero}, "spec.tests[0]", spec::SourceMap());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("spec.tests[0].thresholds[0].value: a \"<=\" bound of 0 on "
                        "alwaysZeroCount (count, always 0) passes whatever is measured: no bound "
                        "can bind a metric that cannot vary: drop the threshold"));

  // One that reaches at most 3: "<= 5" cannot FAIL, "<= 2" can.
  kernels::MetricInfo at_most_three{"alwaysZeroCount", "count", false, ""};
  at_most_three.highest = 3;
  th->set_value(5);
  s = CheckThresholdsBind(test, {at_most_three}, "spec.tests[0]", spec::SourceMap());
  EXPECT_THAT(s.message(), HasSubstr("(count, from 0 to 3) passes whatever is measured: give a "
                                     "bound below 3"));
  th->set_value(2);
  EXPECT_TRUE(CheckThresholdsBind(test, {at_most_three}, "spec.tests[0]", spec::SourceMap()).ok());
}

TEST(PlanChecks, EveryBuiltInProfileBinds) {
  auto profiles = LoadProfiles({std::string(PERFGATE_SOURCE_DIR) + "/profiles"});
  ASSERT_TRUE(profiles.ok()) << profiles.status().ToString();
  ASSERT_GE(profiles->size(), 4u);
  PlanOptions options;
  options.profile_dirs = {std::string(PERFGATE_SOURCE_DIR) + "/profiles"};
  for (const auto& p : *profiles) {
    for (const std::string level : {"quick", "full"}) {
      auto plan =
          PlanOf("  profile: " + p.doc.metadata().name() + "\n  level: " + level + "\n", options);
      EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    }
  }
}

class NamedProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("perfgate-named-profile-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "h100-sxm-80gb.yaml") << R"(apiVersion: perfgate.io/v1alpha1
kind: PerfProfile
metadata:
  name: h100-sxm-80gb
spec:
  version: "1"
  gpuModels: ["H100 80GB HBM3"]
  quick:
    tests:
      - type: host-stream
)";
    options_.profile_dirs = {dir_.string()};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void GpusAre(std::vector<std::string> names) {
    options_.gpu_names = [names]() -> Result<std::vector<std::string>> { return names; };
  }
  std::filesystem::path dir_;
  PlanOptions options_;
};

TEST_F(NamedProfile, ForAnotherGpuModelIsInvalidNamingBothModels) {
  GpusAre({"NVIDIA H200", "NVIDIA H200"});
  ExpectInvalid("  profile: h100-sxm-80gb\n",
                "s.yaml:6: spec.profile: profile \"h100-sxm-80gb\" is for GPU models "
                "H100 80GB HBM3, and the GPU here is \"NVIDIA H200\"",
                options_);
  // An H100 PCIe is an H100, but not the SXM part whose bounds the profile holds.
  GpusAre({"NVIDIA H100 PCIe"});
  ExpectInvalid("  profile: h100-sxm-80gb\n", "the GPU here is \"NVIDIA H100 PCIe\"", options_);
}

TEST_F(NamedProfile, ForThisGpuModelOrWithoutAGpuBuilds) {
  GpusAre({"NVIDIA H100 80GB HBM3"});
  EXPECT_TRUE(PlanOf("  profile: h100-sxm-80gb\n", options_).ok());
  options_.gpu_names = []() -> Result<std::vector<std::string>> {
    return Status(Code::kUnavailable, "no CUDA device");
  };
  EXPECT_TRUE(PlanOf("  profile: h100-sxm-80gb\n", options_).ok());
}

}  // namespace
}  // namespace perfgate::worker

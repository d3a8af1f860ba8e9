// The workload tests as a user meets them without a GPU: `perfgate-worker list` shows each
// with its parameters and metrics, and Prepare refuses with "no CUDA device: ..."
// (Unavailable) instead of crashing. On a machine with a GPU the refusal cases skip;
// workload_gpu_test covers that machine.
#include <gtest/gtest.h>

#include <set>

#include "kernels/cuda/device.h"
#include "kernels/registry.h"
#include "kernels/workloads/workload_factories.h"
#include "tests/gpu_presence.h"
#include "tests/kernels/gpu_test_params.h"

namespace perfgate::kernels {
namespace {

struct Case {
  const char* type;
  std::unique_ptr<Test> (*make)();
  Scope scope;
  std::vector<std::string> params;   // some that must be declared
  std::vector<std::string> metrics;  // some that must be declared
};

std::vector<Case> Cases() {
  return {
      {"training-step",
       MakeTrainingStepTest,
       Scope::kAllGpus,
       {"hidden", "sequence", "microBatch", "tensorParallel", "dtype", "bucketMB"},
       {"stepMs", "tflops", "overlapShare", "efficiency", "predictedStepMs", "lostOverlapMs"}},
      {"decode-step",
       MakeDecodeStepTest,
       Scope::kGpu,
       {"hidden", "layers", "batch", "kvTokens", "dtype"},
       {"tokensPerSecond", "achievedGBps", "efficiency"}},
      {"sequence-search",
       MakeSequenceSearchTest,
       Scope::kGpu,
       {"queries", "queryLength", "targets", "gapOpen", "gapExtend", "verifyPairs"},
       {"gcups"}},
  };
}

class WorkloadTests : public ::testing::TestWithParam<Case> {};

TEST_P(WorkloadTests, AreListedWithTheirParametersAndMetrics) {
  const kernels::Test* listed = FindTest(GetParam().type);
  ASSERT_NE(listed, nullptr) << GetParam().type << " is not in the registry";
  const TestInfo& info = listed->Info();
  EXPECT_EQ(info.scope, GetParam().scope);
  EXPECT_FALSE(info.description.empty());
  std::set<std::string> params;
  for (const ParamInfo& p : info.params) {
    params.insert(p.name);
    EXPECT_FALSE(p.description.empty()) << p.name;
    if (p.type == kernels::ParamType::kInt || p.type == kernels::ParamType::kDouble) {
      const double value = std::stod(p.default_value);
      EXPECT_GE(value, p.min) << p.name;
      EXPECT_LE(value, p.max) << p.name;
    }
  }
  for (const std::string& p : GetParam().params) EXPECT_EQ(params.count(p), 1u) << p;
  std::set<std::string> metrics;
  for (const MetricInfo& m : info.metrics) {
    EXPECT_TRUE(metrics.insert(m.name).second) << "duplicate metric " << m.name;
    EXPECT_FALSE(m.unit.empty()) << m.name;
  }
  for (const std::string& m : GetParam().metrics) EXPECT_EQ(metrics.count(m), 1u) << m;
  // With the defaults, the plan prices a sample at a positive, finite time.
  const Params defaults = testing::DefaultParams(info);
  const double seconds = listed->SampleSeconds(defaults, 8);
  EXPECT_GT(seconds, 0);
  EXPECT_LT(seconds, 600);
  for (const MetricInfo& m : listed->Metrics(defaults)) EXPECT_EQ(metrics.count(m.name), 1u);
}

TEST_P(WorkloadTests, WithoutADeviceRefuseWithCudasText) {
  SKIP_WITH_CUDA_DEVICE();
  const auto test = GetParam().make();
  Target target;
  target.scope = GetParam().scope;
  target.devices = {0};
  auto run = test->Prepare(testing::DefaultParams(test->Info()), target);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kUnavailable) << run.status().ToString();
  EXPECT_EQ(run.status().message().rfind("no CUDA device: ", 0), 0u) << run.status().message();
}

INSTANTIATE_TEST_SUITE_P(All, WorkloadTests, ::testing::ValuesIn(Cases()),
                         [](const auto& param_info) {
                           std::string name = param_info.param.type;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace perfgate::kernels

// The six GPU tests as a user meets them without a GPU: listed with parameters and metrics,
// and Prepare refuses with "no CUDA device: <CUDA's text>" (Unavailable, so the runner says
// ERROR, or SKIPPED when optional) instead of crashing. On a machine with a GPU the refusal
// cases skip; gpu_device_test covers that machine.
#include <gtest/gtest.h>

#include <set>

#include "kernels/cuda/device.h"
#include "kernels/nvml/identity.h"
#include "kernels/test_factories.h"
#include "tests/gpu_presence.h"
#include "tests/kernels/gpu_test_params.h"

namespace perfgate::kernels {
namespace {

struct Case {
  const char* type;
  std::unique_ptr<Test> (*make)();
  Scope scope;
};

const Case kCases[] = {
    {"hbm-stream", MakeHbmStreamTest, Scope::kGpu},
    {"gemm", MakeGemmTest, Scope::kGpu},
    {"h2d-d2h", MakeH2dD2hTest, Scope::kGpu},
    {"p2p", MakeP2pTest, Scope::kAllGpus},
    {"burn", MakeBurnTest, Scope::kGpu},
    {"health", MakeHealthTest, Scope::kGpu},
};

class GpuTests : public ::testing::TestWithParam<Case> {};

TEST_P(GpuTests, DescribeThemselves) {
  const auto test = GetParam().make();
  const TestInfo& info = test->Info();
  EXPECT_EQ(info.type, GetParam().type);
  EXPECT_EQ(info.scope, GetParam().scope);
  EXPECT_FALSE(info.description.empty());
  ASSERT_FALSE(info.metrics.empty());
  std::set<std::string> names;
  for (const MetricInfo& m : info.metrics) {
    EXPECT_TRUE(names.insert(m.name).second) << "duplicate metric " << m.name;
    EXPECT_FALSE(m.unit.empty()) << m.name;
    EXPECT_TRUE(std::islower(static_cast<unsigned char>(m.name[0]))) << m.name;
  }
  for (const ParamInfo& p : info.params) {
    EXPECT_FALSE(p.default_value.empty()) << p.name;
    EXPECT_FALSE(p.description.empty()) << p.name;
    if (p.type == kernels::ParamType::kInt || p.type == kernels::ParamType::kDouble) {
      const double value = std::stod(p.default_value);
      EXPECT_GE(value, p.min) << p.name;
      EXPECT_LE(value, p.max) << p.name;
    }
  }
  // Defaults parse and every metric Metrics() names with them is declared.
  const Params params = testing::DefaultParams(info);
  for (const MetricInfo& m : test->Metrics(params)) {
    EXPECT_EQ(names.count(m.name), 1u) << m.name;
  }
}

TEST_P(GpuTests, WithoutADeviceRefuseWithCudasText) {
  SKIP_WITH_CUDA_DEVICE();
  const auto test = GetParam().make();
  Target target;
  target.scope = GetParam().scope;
  target.devices = {0};
  if (GetParam().scope == Scope::kAllGpus) target.devices = {0, 1};
  auto run = test->Prepare(testing::DefaultParams(test->Info()), target);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kUnavailable) << run.status().ToString();
  EXPECT_EQ(run.status().message().rfind("no CUDA device: ", 0), 0u) << run.status().message();
  // CUDA's own words follow, not an empty reason.
  EXPECT_GT(run.status().message().size(), std::string("no CUDA device: ").size() + 5);
}

TEST_P(GpuTests, TargetWithoutDevicesStillNamesTheCudaCause) {
  SKIP_WITH_CUDA_DEVICE();
  const auto test = GetParam().make();
  Target target;
  target.scope = GetParam().scope;
  auto run = test->Prepare(testing::DefaultParams(test->Info()), target);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kUnavailable) << run.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(All, GpuTests, ::testing::ValuesIn(kCases), [](const auto& param_info) {
  std::string name = param_info.param.type;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
});

TEST(GemmMetrics, FollowTheRequestedDtypes) {
  const auto gemm = MakeGemmTest();
  const Params params =
      testing::DefaultParams(gemm->Info(), {{"dtypes", std::vector<std::string>{"bf16", "fp8"}}});
  const auto metrics = gemm->Metrics(params);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0].name, "bf16Tflops");
  EXPECT_EQ(metrics[1].name, "fp8Tflops");
}

TEST(GpuIdentity, WithoutADeviceIsUnavailable) {
  SKIP_WITH_CUDA_DEVICE();
  auto id = ReadGpuIdentity(0);
  EXPECT_EQ(id.status().code(), Code::kUnavailable);
  EXPECT_EQ(id.status().message().rfind("no CUDA device: ", 0), 0u);
}

}  // namespace
}  // namespace perfgate::kernels

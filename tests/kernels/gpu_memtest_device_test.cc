// memtest's kernels on a real GPU (label gpu; each case skips without a device): a healthy
// GPU's memory reads back every pattern, and the device answers match the host's pattern
// functions.
#include <gtest/gtest.h>

#include "kernels/cuda/device.h"
#include "kernels/cuda/memtest.h"
#include "tests/gpu_presence.h"

namespace perfgate::kernels::cuda {
namespace {

TEST(MemtestDevice, EveryPatternReadsBackOnAHealthyGpu) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto tester = CreateMemTester(0, 0.5, std::int64_t{256} << 20);
  ASSERT_TRUE(tester.ok()) << tester.status().message();
  EXPECT_EQ((*tester)->Bytes(), std::int64_t{256} << 20);
  for (memtest::Pattern p : {memtest::Pattern::kWalkingOnes, memtest::Pattern::kWalkingZeros,
                             memtest::Pattern::kMarchCMinus, memtest::Pattern::kRandom}) {
    // March C-'s elements read what the ones before them wrote: all of them, in order.
    const int stride = p == memtest::Pattern::kMarchCMinus ? 1 : 7;
    for (int step = 0; step < memtest::PatternSteps(p); step += stride) {
      const double hold = step == memtest::RetentionStep(p) ? 0.05 : 0;
      auto result = (*tester)->RunStep(p, step, 11, 16, hold);
      ASSERT_TRUE(result.ok()) << result.status().message();
      EXPECT_EQ(result->errors, 0U) << "pattern " << static_cast<int>(p) << " step " << step;
      EXPECT_TRUE(result->listed.empty());
      EXPECT_GT(result->seconds, 0);
    }
  }
}

TEST(MemtestDevice, WithoutADeviceItSaysSo) {
  SKIP_WITH_CUDA_DEVICE();
  auto tester = CreateMemTester(0, 0.5, 1 << 20);
  ASSERT_FALSE(tester.ok());
  EXPECT_EQ(tester.status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace perfgate::kernels::cuda

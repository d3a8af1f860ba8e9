// The consistency screen's kernels on real GPUs (label gpu; each case skips without a device):
// the same GPU screened twice, and run after run, computes the same bits (the computations are
// deterministic, or the screen would accuse healthy GPUs); the node's GPUs agree with each
// other; the outputs are real numbers, not an untouched buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/consistency_logic.h"
#include "kernels/cuda/consistency.h"
#include "kernels/cuda/device.h"
#include "kernels/registry.h"
#include "tests/gpu_presence.h"

namespace perfgate::kernels::consistency {
namespace {

cuda::ConsistencyConfig Small(std::vector<int> devices) {
  cuda::ConsistencyConfig config;
  config.devices = std::move(devices);
  config.gemm_dtypes = cuda::ConsistencyGemmDtypes();
  config.gemm_size = 256;
  config.vector_elements = 64 * 4096;
  return config;
}

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("screen" + std::to_string(i));
  return names;
}

TEST(ConsistencyDevice, OneGpuScreenedTwiceAgreesWithItselfRunAfterRun) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto runner = cuda::CreateConsistencyRunner(Small({0, 0}));
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  const auto& computations = (*runner)->Computations();
  ASSERT_EQ(computations.size(), 6U);
  auto first = (*runner)->Run();
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = (*runner)->Run();
  ASSERT_TRUE(second.ok()) << second.status().message();
  for (std::size_t c = 0; c < computations.size(); ++c) {
    EXPECT_EQ((*first)[0].chunks[c], (*first)[1].chunks[c]) << computations[c].name;
    EXPECT_EQ((*first)[0].chunks[c], (*second)[0].chunks[c]) << computations[c].name;
  }
  EXPECT_GT((*first)[0].seconds, 0);
  auto screen = JudgeScreen(computations, Names(2), *first,
                            [&](int gpu, int c, std::int64_t from, std::int64_t count) {
                              return (*runner)->ReadElements(gpu, c, from, count);
                            });
  ASSERT_TRUE(screen.ok()) << screen.status().message();
  EXPECT_EQ(screen->verdict, verdict::Verdict::kPass) << screen->reason;
  // Every output holds finite numbers, most of them not zero.
  for (std::size_t c = 0; c < computations.size(); ++c) {
    auto bits = (*runner)->ReadElements(0, static_cast<int>(c), 0, 64);
    ASSERT_TRUE(bits.ok()) << bits.status().message();
    int nonzero = 0;
    for (std::uint64_t b : *bits) {
      double v = 0;
      if (computations[c].type == cuda::ElementType::kF64) {
        std::memcpy(&v, &b, sizeof(v));
      } else {
        float f = 0;
        const auto word = static_cast<std::uint32_t>(b);
        std::memcpy(&f, &word, sizeof(f));
        v = f;
      }
      EXPECT_TRUE(std::isfinite(v)) << computations[c].name;
      nonzero += v != 0;
    }
    EXPECT_GT(nonzero, 32) << computations[c].name;
  }
}

TEST(ConsistencyDevice, TheNodesGpusAgreeThroughTheRegisteredTest) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto count = cuda::CudaDeviceCount();
  ASSERT_TRUE(count.ok());
  const kernels::Test* test = FindTest("consistency");
  ASSERT_NE(test, nullptr);
  Params params({{"gemmDtypes", cuda::ConsistencyGemmDtypes()},
                 {"gemmSize", std::int64_t{256}},
                 {"vectorElements", std::int64_t{64 * 4096}},
                 {"seed", std::int64_t{1}}});
  Target target;
  target.scope = Scope::kAllGpus;
  for (int i = 0; i < *count; ++i) target.devices.push_back(i);
  auto run = test->Prepare(params, target);
  if (*count < 2) {
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().code(), Code::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_GT(sample->at("screenSeconds"), 0);
}

}  // namespace
}  // namespace perfgate::kernels::consistency

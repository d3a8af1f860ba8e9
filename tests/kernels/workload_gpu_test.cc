// On a machine with a GPU (label gpu): each workload test runs a small configuration end to
// end and its own verification passes. Every case skips cleanly without a device. Figures are
// measured by scripts/gpu-check.sh, not asserted here.
#include <gtest/gtest.h>

#include "kernels/cuda/device.h"
#include "kernels/workloads/alignment.h"
#include "kernels/workloads/workload_backend.h"
#include "kernels/workloads/workload_factories.h"
#include "tests/gpu_presence.h"
#include "tests/kernels/gpu_test_params.h"

namespace perfgate::kernels {
namespace {

Target Gpu0() {
  Target t;
  t.scope = Scope::kGpu;
  t.devices = {0};
  return t;
}

TEST(WorkloadGpu, SequenceSearchScoresEqualTheHostScorer) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeSequenceSearchTest();
  const Params params =
      testing::DefaultParams(test->Info(), {{"queries", std::int64_t{2}},
                                            {"targets", std::int64_t{1000}},
                                            {"verifyPairs", std::int64_t{2000}}});  // every pair
  auto run = test->Prepare(params, Gpu0());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("gcups"), 0);
}

TEST(WorkloadGpu, SequenceSearchAlignerMatchesOnEveryPairOfSmallSets) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const align::SequenceSet queries = align::SyntheticSequences(3, 4, 1, 300);
  const align::SequenceSet targets = align::SyntheticSequences(4, 300, 0, 200);
  const align::Scoring scoring{10, 2};
  auto aligner = workloads::CreateSwAligner(0, queries, targets, scoring);
  ASSERT_TRUE(aligner.ok()) << aligner.status().ToString();
  ASSERT_TRUE((*aligner)->Run().ok());
  auto scores = (*aligner)->Scores();
  ASSERT_TRUE(scores.ok());
  for (std::size_t q = 0; q < queries.size(); ++q) {
    for (std::size_t t = 0; t < targets.size(); ++t) {
      ASSERT_EQ((*scores)[q * targets.size() + t],
                align::LocalAlignmentScore(queries.data(q), queries.length(q), targets.data(t),
                                           targets.length(t), align::Blosum62(), scoring))
          << q << " x " << t;
    }
  }
}

TEST(WorkloadGpu, TrainingStepReducesGradientsAndReportsTheModel) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  auto count = cuda::CudaDeviceCount();
  ASSERT_TRUE(count.ok());
  Target all;
  all.scope = Scope::kAllGpus;
  for (int d = 0; d < *count; ++d) all.devices.push_back(d);
  const auto test = MakeTrainingStepTest();
  const Params params = testing::DefaultParams(test->Info(), {{"hidden", std::int64_t{1024}},
                                                              {"sequence", std::int64_t{1024}},
                                                              {"layers", std::int64_t{2}},
                                                              {"bucketMB", std::int64_t{4}},
                                                              {"stepsPerSample", std::int64_t{2}}});
  auto run = test->Prepare(params, all);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("stepMs"), 0);
  EXPECT_GT(sample->at("tflops"), 0);
  EXPECT_GT(sample->at("efficiency"), 0);
  EXPECT_NE((*run)->Details().at("speedOfLight").find("bottleneck"), std::string::npos);
}

TEST(WorkloadGpu, DecodeStepOutputsAreExact) {
  SKIP_WITHOUT_CUDA_DEVICE(0);
  const auto test = MakeDecodeStepTest();
  const Params params = testing::DefaultParams(test->Info(), {{"hidden", std::int64_t{1024}},
                                                              {"layers", std::int64_t{2}},
                                                              {"batch", std::int64_t{4}},
                                                              {"kvTokens", std::int64_t{512}},
                                                              {"stepsPerSample", std::int64_t{2}},
                                                              {"verifySamples", std::int64_t{64}}});
  auto run = test->Prepare(params, Gpu0());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto sample = (*run)->RunSample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_GT(sample->at("tokensPerSecond"), 0);
  EXPECT_GT(sample->at("achievedGBps"), 0);
}

}  // namespace
}  // namespace perfgate::kernels

// The consistency screen on host outputs standing in for the GPUs': a planted one-bit
// difference on one GPU of 8 is FAIL naming the GPU, the computation and the element with both
// values; identical outputs PASS; a 4 vs 4 split is ERROR saying there is no majority; one GPU
// cannot be screened. Then the test as the worker runs it: through the registry on this machine
// (no GPU), and through the runner, whose result keeps the digests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernels/consistency_logic.h"
#include "kernels/cuda/consistency_digest.h"
#include "kernels/devices.h"
#include "kernels/registry.h"
#include "tests/gpu_presence.h"
#include "worker/runner.h"

namespace perfgate::kernels::consistency {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using verdict::Verdict;

// Small sizes: the same list of computations the device runs, in milliseconds on the host.
cuda::ConsistencyConfig SmallConfig(int gpus) {
  cuda::ConsistencyConfig config;
  for (int i = 0; i < gpus; ++i) config.devices.push_back(i);
  config.gemm_dtypes = cuda::ConsistencyGemmDtypes();
  config.gemm_size = 64;
  config.vector_elements = 3 * 4096;
  return config;
}

std::vector<std::string> GpuNames(int gpus) {
  std::vector<std::string> names;
  for (int i = 0; i < gpus; ++i) names.push_back("gpu" + std::to_string(i));
  return names;
}

int IndexOf(const std::vector<cuda::Computation>& computations, const std::string& name) {
  for (std::size_t i = 0; i < computations.size(); ++i) {
    if (computations[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no computation " << name;
  return 0;
}

// Runs the host runner once and judges its digests.
Screen ScreenOf(int gpus, const std::vector<PlantedFlip>& flips,
                std::map<std::string, std::string>* details = nullptr) {
  const auto computations = cuda::ConsistencyComputations(SmallConfig(gpus));
  auto runner = MakeHostConsistencyRunner(gpus, computations, flips);
  auto digests = runner->Run();
  EXPECT_TRUE(digests.ok()) << digests.status().message();
  auto screen = JudgeScreen(computations, GpuNames(gpus), *digests,
                            [&](int gpu, int c, std::int64_t first, std::int64_t count) {
                              return runner->ReadElements(gpu, c, first, count);
                            });
  EXPECT_TRUE(screen.ok()) << screen.status().message();
  if (details != nullptr) *details = DigestDetails(computations, GpuNames(gpus), *digests);
  return *screen;
}

TEST(ConsistencyScreen, IdenticalOutputsPass) {
  std::map<std::string, std::string> details;
  const Screen s = ScreenOf(8, {}, &details);
  EXPECT_EQ(s.verdict, Verdict::kPass);
  EXPECT_THAT(s.reason, HasSubstr("all 8 GPUs computed the same bits in 6 computations"));
  EXPECT_TRUE(s.suspects.empty());
  // One digest per computation, no GPU named: all have the majority's.
  EXPECT_EQ(details.size(), 6U);
  EXPECT_EQ(details.count("digest.gemm-bf16"), 1U);
  EXPECT_EQ(details["digest.gemm-bf16"].size(), 18U);  // 0x and 16 hex digits
}

TEST(ConsistencyScreen, OneFlippedBitOnOneGpuOfEightFailsNamingGpuComputationAndElement) {
  const auto computations = cuda::ConsistencyComputations(SmallConfig(8));
  const int bf16 = IndexOf(computations, "gemm-bf16");
  // Element 4000 of a 64 x 64 matrix: row 62, column 32.
  std::map<std::string, std::string> details;
  const Screen s = ScreenOf(8, {{3, bf16, 4000, 0}}, &details);
  EXPECT_EQ(s.verdict, Verdict::kFail);
  EXPECT_THAT(s.reason, HasSubstr("silent data corruption suspected: gpu3 differs from the "
                                  "majority (7 of 8 GPUs) in gemm-bf16: first differing element "
                                  "4000 (row 62, column 32): "));
  EXPECT_THAT(s.reason, HasSubstr(" on gpu3, "));
  EXPECT_THAT(s.reason, HasSubstr(" on the other 7 GPUs"));
  EXPECT_EQ(s.suspects, std::vector<std::string>{"gpu3"});
  // Only gemm-bf16 is named: the other computations agree.
  EXPECT_THAT(s.reason, Not(HasSubstr("gemm-fp32")));
  // The two values' bits differ in bit 0 only: "(0x...N)" vs "(0x...N^1)".
  const std::size_t odd = s.reason.find(" on gpu3");
  const std::size_t good = s.reason.find(" on the other");
  const std::string odd_bits = s.reason.substr(odd - 11, 10);
  const std::string good_bits = s.reason.substr(good - 11, 10);
  EXPECT_EQ(std::stoul(odd_bits, nullptr, 16) ^ std::stoul(good_bits, nullptr, 16), 1UL)
      << odd_bits << " vs " << good_bits;
  // The result keeps the majority's digest and the odd GPU's.
  EXPECT_EQ(details.count("digest.gemm-bf16"), 1U);
  EXPECT_EQ(details.count("digest.gemm-bf16.gpu3"), 1U);
  EXPECT_NE(details["digest.gemm-bf16"], details["digest.gemm-bf16.gpu3"]);
  EXPECT_EQ(details.count("digest.gemm-bf16.gpu0"), 0U);
  EXPECT_EQ(details.count("digest.gemm-fp32.gpu3"), 0U);
}

TEST(ConsistencyScreen, AFlipInAVectorAndInFp64IsNamedByIndexAndFullBits) {
  const auto computations = cuda::ConsistencyComputations(SmallConfig(8));
  const int fp64 = IndexOf(computations, "gemm-fp64");
  const int map = IndexOf(computations, "transcendental-fp32");
  const Screen s = ScreenOf(8, {{6, map, 9000, 31}, {1, fp64, 5, 52}});
  EXPECT_EQ(s.verdict, Verdict::kFail);
  EXPECT_THAT(s.reason, HasSubstr("gpu6 differs from the majority (7 of 8 GPUs) in "
                                  "transcendental-fp32: first differing element 9000: "));
  EXPECT_THAT(s.reason, HasSubstr("gpu1 differs from the majority (7 of 8 GPUs) in gemm-fp64: "
                                  "first differing element 5 (row 0, column 5): "));
  EXPECT_THAT(s.reason, ::testing::ContainsRegex("\\(0x[0-9a-f]{16}\\) on gpu1"));
  EXPECT_EQ(s.suspects, (std::vector<std::string>{"gpu1", "gpu6"}));
}

TEST(ConsistencyScreen, FourAgainstFourIsAnErrorSayingThereIsNoMajority) {
  const auto computations = cuda::ConsistencyComputations(SmallConfig(8));
  const int reduce = IndexOf(computations, "reduce-fp32");
  std::vector<PlantedFlip> flips;
  for (int g = 4; g < 8; ++g) flips.push_back({g, reduce, 2, 7});
  std::map<std::string, std::string> details;
  const Screen s = ScreenOf(8, flips, &details);
  EXPECT_EQ(s.verdict, Verdict::kError);
  EXPECT_THAT(s.reason, HasSubstr("no strict majority among the 8 GPUs in reduce-fp32 (gpu0, "
                                  "gpu1, gpu2, gpu3 give 0x"));
  EXPECT_THAT(s.reason, HasSubstr(" vs gpu4, gpu5, gpu6, gpu7 give 0x"));
  EXPECT_THAT(s.reason, HasSubstr("cannot name the wrong GPU"));
  EXPECT_TRUE(s.suspects.empty());
  // No majority digest for it; every GPU's own.
  EXPECT_EQ(details.count("digest.reduce-fp32"), 0U);
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(details.count("digest.reduce-fp32.gpu" + std::to_string(g)), 1U);
}

TEST(ConsistencyScreen, TwoGpusThatDisagreeAreAnErrorAndTwoThatAgreePass) {
  const auto computations = cuda::ConsistencyComputations(SmallConfig(2));
  Screen s = ScreenOf(2, {{1, 0, 0, 3}});
  EXPECT_EQ(s.verdict, Verdict::kError);
  EXPECT_THAT(s.reason,
              HasSubstr("no strict majority among the 2 GPUs in gemm-fp64 (gpu0 gives 0x"));
  s = ScreenOf(2, {});
  EXPECT_EQ(s.verdict, Verdict::kPass);
}

TEST(ConsistencyScreen, ThreeGpusAreEnoughToNameTheOddOne) {
  const Screen s = ScreenOf(3, {{0, 1, 100, 22}});
  EXPECT_EQ(s.verdict, Verdict::kFail);
  EXPECT_THAT(s.reason, HasSubstr("gpu0 differs from the majority (2 of 3 GPUs) in gemm-fp32"));
  EXPECT_THAT(s.reason, HasSubstr(" on the other 2 GPUs"));
}

TEST(ConsistencyScreen, OneGpuCannotBeScreened) {
  const Screen s = ScreenOf(1, {});
  EXPECT_EQ(s.verdict, Verdict::kSkipped);
  EXPECT_THAT(s.reason, HasSubstr("one GPU cannot be screened against peers"));
}

TEST(ConsistencyDigest, EveryBitOfAnElementChangesItsChunkDigest) {
  const std::uint64_t word = 0x3ff0000000000001ULL;
  for (std::uint64_t index : {0ULL, 4095ULL, 123456ULL}) {
    for (unsigned bit = 0; bit < 64; ++bit) {
      EXPECT_NE(ElementDigest(index, word), ElementDigest(index, word ^ (1ULL << bit)))
          << index << " " << bit;
    }
    // The same bits elsewhere digest differently: a swap of two elements is seen.
    EXPECT_NE(ElementDigest(index, word), ElementDigest(index + 1, word));
  }
  EXPECT_EQ(DigestChunks(4096), 1);
  EXPECT_EQ(DigestChunks(4097), 2);
}

// ---- the test as the worker runs it --------------------------------------------------------

Params SmallParams() {
  return Params({{"gemmDtypes", cuda::ConsistencyGemmDtypes()},
                 {"gemmSize", std::int64_t{64}},
                 {"vectorElements", std::int64_t{3 * 4096}},
                 {"seed", std::int64_t{1}}});
}

std::unique_ptr<kernels::Test> HostTest(std::vector<PlantedFlip> flips) {
  return MakeConsistencyTestWith(
      [flips](const cuda::ConsistencyConfig& config)
          -> Result<std::unique_ptr<cuda::ConsistencyRunner>> {
        return MakeHostConsistencyRunner(static_cast<int>(config.devices.size()),
                                         cuda::ConsistencyComputations(config), flips);
      },
      false);
}

Target AllGpus(int gpus) {
  Target t;
  t.scope = Scope::kAllGpus;
  for (int i = 0; i < gpus; ++i) t.devices.push_back(i);
  return t;
}

TEST(ConsistencyTest, IsRegisteredForAllGpusAndSaysWhyItCannotRunWithoutOne) {
  SKIP_WITH_CUDA_DEVICE();  // with one: tests/kernels/gpu_device_test.cc
  const kernels::Test* test = FindTest("consistency");
  ASSERT_NE(test, nullptr);
  EXPECT_EQ(test->Info().scope, Scope::kAllGpus);
  auto run = test->Prepare(SmallParams(), AllGpus(8));
  ASSERT_FALSE(run.ok());  // no GPU on a CI machine: CUDA's text, never a verdict on invented data
  EXPECT_EQ(run.status().code(), Code::kUnavailable);
  EXPECT_THAT(run.status().message(), HasSubstr("no CUDA device"));
}

TEST(ConsistencyTest, APlantedFlipIsAWrongAnswerAndTheDigestsAreKept) {
  auto test = HostTest({{5, 3, 17, 12}});
  auto run = test->Prepare(SmallParams(), AllGpus(8));
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto sample = (*run)->RunSample();
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.status().code(), Code::kDataLoss);  // the runner's FAIL
  EXPECT_THAT(sample.status().message(),
              HasSubstr("silent data corruption suspected: gpu5 differs from the majority (7 of "
                        "8 GPUs) in gemm-bf16: first differing element 17 (row 0, column 17)"));
  const auto details = (*run)->Details();
  EXPECT_EQ(details.count("digest.gemm-bf16.gpu5"), 1U);
  EXPECT_EQ(details.count("digest.reduce-fp32"), 1U);
  EXPECT_THAT(details.at("computations"), HasSubstr("gemm-fp64, gemm-fp32, gemm-fp16, gemm-bf16, "
                                                    "reduce-fp32, transcendental-fp32"));
}

TEST(ConsistencyTest, OneGpuIsNotApplicableAndBadSizesAreRefused) {
  auto test = HostTest({});
  auto run = test->Prepare(SmallParams(), AllGpus(1));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Code::kFailedPrecondition);  // the runner's SKIPPED
  EXPECT_THAT(run.status().message(), HasSubstr("cannot be screened against peers"));
  Params odd = SmallParams();
  auto values = odd.values();
  values["gemmSize"] = std::int64_t{100};
  run = test->Prepare(Params(values), AllGpus(8));
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.status().message(), HasSubstr("multiple of 64"));
}

worker::Plan PlanOf(const kernels::Test& test) {
  worker::PlannedTest t;
  t.name = "consistency";
  t.type = "consistency";
  t.test = &test;
  t.params = SmallParams();
  t.metrics = test.Info().metrics;
  t.sampling.warmup = 1;
  t.sampling.min_repeats = 3;
  t.sampling.max_repeats = 3;
  t.sampling.max_seconds = 1e9;
  worker::Plan plan;
  plan.validation = "v";
  plan.tests.push_back(t);
  return plan;
}

worker::RunOptions EightGpus() {
  worker::RunOptions o;
  o.identity = [](v1alpha1::Identity* id) { id->set_hostname("test-host"); };
  o.list_gpus = []() -> Result<std::vector<GpuDevice>> {
    std::vector<GpuDevice> v(8);
    for (int i = 0; i < 8; ++i) v[i].ordinal = i;
    return v;
  };
  return o;
}

TEST(ConsistencyTest, TheRunnerFailsTheNodeNamingTheGpuAndKeepsTheDigestsInTheResult) {
  auto test = HostTest({{3, 3, 4000, 0}});
  const v1alpha1::Report r = worker::RunPlan(PlanOf(*test), EightGpus());
  ASSERT_EQ(r.tests_size(), 1);
  const auto& result = r.tests(0);
  EXPECT_EQ(result.device(), "gpus0-7");
  EXPECT_EQ(result.verdict(), v1alpha1::FAIL);
  EXPECT_THAT(result.reason(), HasSubstr("silent data corruption suspected: gpu3"));
  EXPECT_THAT(result.reason(), HasSubstr("gemm-bf16: first differing element 4000"));
  EXPECT_EQ(result.details().count("digest.gemm-bf16"), 1U);
  EXPECT_EQ(result.details().count("digest.gemm-bf16.gpu3"), 1U);
  EXPECT_EQ(r.verdict(), v1alpha1::FAIL);
}

TEST(ConsistencyTest, TheRunnerPassesIdenticalGpusWithTheirDigests) {
  auto test = HostTest({});
  const v1alpha1::Report r = worker::RunPlan(PlanOf(*test), EightGpus());
  ASSERT_EQ(r.tests_size(), 1);
  EXPECT_EQ(r.tests(0).verdict(), v1alpha1::PASS) << r.tests(0).reason();
  EXPECT_EQ(r.tests(0).samples(), 3);
  EXPECT_EQ(r.tests(0).details().count("digest.transcendental-fp32"), 1U);
  EXPECT_THAT(r.tests(0).details().at("screen"), HasSubstr("PASS: all 8 GPUs"));
}

}  // namespace
}  // namespace perfgate::kernels::consistency

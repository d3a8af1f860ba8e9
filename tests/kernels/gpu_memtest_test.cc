// memtest on host memory standing in for a GPU's: the patterns' contracts, a clean region that
// passes, and stuck cells that are counted, named with their addresses, expected and found
// words, and FAIL the GPU through the profile's bound on the count.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernels/cuda/memtest_patterns.h"
#include "kernels/memtest_logic.h"
#include "kernels/unmeasured.h"
#include "tests/kernels/profile_bound.h"

namespace perfgate::kernels::memtest {
namespace {

Params Defaults(std::vector<std::string> patterns = {"walking-ones", "walking-zeros",
                                                     "moving-inversions", "random"}) {
  return Params({{"memoryFraction", 0.9},
                 {"maxBytes", std::int64_t{0}},
                 {"patterns", std::move(patterns)},
                 {"seed", std::int64_t{7}},
                 {"maxListedErrors", std::int64_t{4}}});
}

// One sample, and what the run's Details say about the errors it counted ("" when none).
Result<Sample> RunOn(std::int64_t bytes, std::vector<StuckBits> stuck,
                     const Params& params = Defaults(), std::string* counted = nullptr) {
  auto test = MakeMemtestTestWith(
      [bytes, stuck](int, double, std::int64_t) -> Result<std::unique_ptr<cuda::MemTester>> {
        return MakeHostMemTester(bytes, stuck);
      },
      false);
  Target target;
  target.scope = Scope::kGpu;
  target.devices = {0};
  auto run = test->Prepare(params, target);
  if (!run.ok()) return run.status();
  auto sample = (*run)->RunSample();
  if (counted != nullptr) {
    const auto details = (*run)->Details();
    auto it = details.find(CountedKey("memoryErrorCount"));
    *counted = it == details.end() ? "" : it->second;
  }
  return sample;
}

// The full level's bound (memtest runs there only): max memoryErrorCount <= 0.
verdict::Outcome ProfileVerdict(const Sample& sample) {
  return testing::Decide(
      testing::ProfileBound("h200-sxm-141gb", "full", "memtest", "memoryErrorCount"), {sample});
}

TEST(MemtestPatterns, WalkingBitsVisitEveryBitOfEveryWord) {
  for (std::uint64_t word : {0ULL, 1ULL, 63ULL, 1000ULL}) {
    std::uint64_t ones = 0;
    std::uint64_t zeros = 0;
    for (int step = 0; step < PatternSteps(Pattern::kWalkingOnes); ++step) {
      const std::uint64_t one = PatternWord(Pattern::kWalkingOnes, step, word, 0);
      EXPECT_EQ(__builtin_popcountll(one), 1);
      ones |= one;
      zeros |= ~PatternWord(Pattern::kWalkingZeros, step, word, 0);
    }
    EXPECT_EQ(ones, ~0ULL);
    EXPECT_EQ(zeros, ~0ULL);
  }
}

TEST(MemtestPatterns, InversionsFlipEveryBitAndRandomDependsOnSeed) {
  EXPECT_EQ(PatternWord(Pattern::kMovingInversions, 0, 5, 0),
            ~PatternWord(Pattern::kMovingInversions, 1, 5, 0));
  EXPECT_EQ(PatternWord(Pattern::kRandom, 0, 9, 3), ~PatternWord(Pattern::kRandom, 1, 9, 3));
  EXPECT_NE(PatternWord(Pattern::kRandom, 0, 9, 3), PatternWord(Pattern::kRandom, 0, 9, 4));
  std::set<std::uint64_t> values;
  for (std::uint64_t i = 0; i < 1000; ++i) values.insert(PatternWord(Pattern::kRandom, 0, i, 1));
  EXPECT_EQ(values.size(), 1000U);
}

TEST(Memtest, CleanMemoryPasses) {
  std::string counted;
  auto sample = RunOn(1 << 16, {}, Defaults(), &counted);
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_EQ(sample->at("memoryErrorCount"), 0);
  EXPECT_EQ(counted, "");
  EXPECT_EQ(ProfileVerdict(*sample).verdict, verdict::Verdict::kPass);
}

TEST(Memtest, StuckAtZeroBitIsCountedNamedAndFailsTheProfileBound) {
  // Bit 4 of word 100 (offset 0x320) stuck at 0: walking ones finds it once, walking zeros
  // never, inversions and random whenever the bit should be 1.
  std::string counted;
  auto sample = RunOn(1 << 16, {{100, 0x10, 0}}, Defaults({"walking-ones"}), &counted);
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_EQ(sample->at("memoryErrorCount"), 1);
  EXPECT_EQ(counted,
            "1 memory errors (walking-ones step 32: 1 errors); flipped bits 0x10; at offset "
            "0x320 expected 0x10 found 0x0");
  const verdict::Outcome outcome = ProfileVerdict(*sample);
  EXPECT_EQ(outcome.verdict, verdict::Verdict::kFail) << outcome.reason;
  EXPECT_EQ(outcome.observed, 1);
}

TEST(Memtest, ManyErrorsAreCountedButTheListIsBounded) {
  std::vector<StuckBits> stuck;
  for (std::uint64_t w = 0; w < 64; ++w) stuck.push_back({w, ~0ULL, 0xFFFF0000FFFF0000ULL});
  std::string message;
  auto sample = RunOn(1 << 12, stuck, Defaults({"moving-inversions"}), &message);
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  // Every step finds every stuck word; the text names 4 addresses (maxListedErrors).
  EXPECT_EQ(sample->at("memoryErrorCount"), 256);
  EXPECT_EQ(ProfileVerdict(*sample).verdict, verdict::Verdict::kFail);
  EXPECT_EQ(message.rfind("256 memory errors", 0), 0U) << message;
  std::size_t listed = 0;
  for (std::size_t at = message.find("at offset"); at != std::string::npos;
       at = message.find("at offset", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, 4U);
  EXPECT_NE(message.find("at offset 0x0 expected"), std::string::npos);
}

TEST(Memtest, UnknownPatternIsRefused) {
  auto sample = RunOn(1 << 12, {}, Defaults({"checkerboard"}));
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.status().code(), Code::kInvalidArgument);
}

TEST(Memtest, ErrorReportKeepsOneEntryPerAddressInOrder) {
  ErrorReport report;
  report.max_listed = 3;
  cuda::MemStepResult a;
  a.errors = 2;
  a.listed = {{0x40, 1, 0}, {0x8, 2, 0}};
  cuda::MemStepResult b;
  b.errors = 2;
  b.listed = {{0x40, 4, 0}, {0x10, 8, 0}};
  report.Add(Pattern::kRandom, 0, a);
  report.Add(Pattern::kRandom, 1, b);
  EXPECT_EQ(report.errors, 4U);
  ASSERT_EQ(report.listed.size(), 3U);
  EXPECT_EQ(report.listed[0].offset_bytes, 0x8U);
  EXPECT_EQ(report.listed[2].offset_bytes, 0x40U);
  EXPECT_EQ(report.flipped_bits, 0xFU);
}

}  // namespace
}  // namespace perfgate::kernels::memtest

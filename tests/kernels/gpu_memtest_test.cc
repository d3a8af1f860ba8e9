// memtest on host memory standing in for a GPU's: the patterns' contracts, a clean region that
// passes, and stuck cells that are counted, named with their addresses, expected and found
// words, and FAIL the GPU through the profile's bound on the count.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "kernels/cuda/memtest_patterns.h"
#include "kernels/memtest_logic.h"
#include "kernels/unmeasured.h"
#include "tests/kernels/profile_bound.h"

namespace perfgate::kernels::memtest {
namespace {

Params Defaults(std::vector<std::string> patterns = {"walking-ones", "walking-zeros", "march-c-",
                                                     "random"},
                double retention_seconds = 1.0) {
  return Params({{"memoryFraction", 0.9},
                 {"maxBytes", std::int64_t{0}},
                 {"patterns", std::move(patterns)},
                 {"retentionSeconds", retention_seconds},
                 {"seed", std::int64_t{7}},
                 {"maxListedErrors", std::int64_t{4}}});
}

// One sample, and what the run's Details say about the errors it counted ("" when none).
Result<Sample> RunOn(std::int64_t bytes, MemFaults faults, const Params& params = Defaults(),
                     std::string* counted = nullptr) {
  auto test = MakeMemtestTestWith(
      [bytes, faults](int, double, std::int64_t) -> Result<std::unique_ptr<cuda::MemTester>> {
        return MakeHostMemTester(bytes, faults);
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

TEST(MemtestPatterns, RandomIsInvertedAndDependsOnSeed) {
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
  auto sample = RunOn(1 << 16, {{{100, 0x10, 0}}, {}, {}}, Defaults({"walking-ones"}), &counted);
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
  auto sample = RunOn(1 << 12, {stuck, {}, {}}, Defaults({"march-c-"}), &message);
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  // Each of March C-'s five reads finds every stuck word (half its bits are wrong whether it
  // expects 0s or 1s); the text names 4 addresses (maxListedErrors).
  EXPECT_EQ(sample->at("memoryErrorCount"), 5 * 64);
  EXPECT_EQ(ProfileVerdict(*sample).verdict, verdict::Verdict::kFail);
  EXPECT_EQ(message.rfind("320 memory errors", 0), 0U) << message;
  std::size_t listed = 0;
  for (std::size_t at = message.find("at offset"); at != std::string::npos;
       at = message.find("at offset", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, 4U);
  EXPECT_NE(message.find("at offset 0x0 expected"), std::string::npos);
}

// March C- over simulated memory: its six elements in order, as a sample runs them.
std::uint64_t MarchErrors(MemFaults faults, std::vector<cuda::MemWordError>* listed = nullptr) {
  auto tester = MakeHostMemTester(64 * 8, std::move(faults));
  std::uint64_t errors = 0;
  for (int step = 0; step < PatternSteps(Pattern::kMarchCMinus); ++step) {
    auto result = tester->RunStep(Pattern::kMarchCMinus, step, 0, 16, 0);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return 0;
    errors += result->errors;
    if (listed != nullptr)
      listed->insert(listed->end(), result->listed.begin(), result->listed.end());
  }
  return errors;
}

TEST(MarchCMinus, IsTheSixElementsOfTheLiterature) {
  // {⇕(w0); ⇑(r0,w1); ⇑(r1,w0); ⇓(r0,w1); ⇓(r1,w0); ⇕(r0)}
  ASSERT_EQ(PatternSteps(Pattern::kMarchCMinus), 6);
  const char* expected[] = {"*w0", "^r0w1", "^r1w0", "vr0w1", "vr1w0", "*r0"};
  for (int e = 0; e < 6; ++e) {
    const MarchElement& element = kMarchCMinus[e];
    std::string text = element.order == MarchOrder::kUp     ? "^"
                       : element.order == MarchOrder::kDown ? "v"
                                                            : "*";
    for (int k = 0; k < element.count; ++k) {
      text += std::string(element.ops[k].read ? "r" : "w") + (element.ops[k].ones ? "1" : "0");
    }
    EXPECT_EQ(text, expected[e]) << "element " << e;
  }
  EXPECT_EQ(RetentionStep(Pattern::kMarchCMinus), 1);
}

TEST(MarchCMinus, CleanMemoryCountsNothing) { EXPECT_EQ(MarchErrors({}), 0U); }

TEST(MarchCMinus, FindsStuckAtCells) {
  // Stuck at 0: wrong at both r1 reads; stuck at 1: wrong at the three r0 reads.
  std::vector<cuda::MemWordError> listed;
  EXPECT_EQ(MarchErrors({{{9, 0x100, 0}}, {}, {}}, &listed), 2U);
  ASSERT_EQ(listed.size(), 2U);
  EXPECT_EQ(listed[0].offset_bytes, 9U * 8);
  EXPECT_EQ(listed[0].expected, ~0ULL);
  EXPECT_EQ(listed[0].found, ~0x100ULL);
  EXPECT_EQ(MarchErrors({{{9, 0x100, 0x100}}, {}, {}}), 3U);
}

TEST(MarchCMinus, FindsTransitionFaults) {
  // A bit that cannot rise reads 0 at both r1 reads; one that cannot fall reads 1 at the r0
  // reads after a w0 (the first r0 still sees the initial 0).
  EXPECT_EQ(MarchErrors({{}, {{20, 0x1, true}}, {}}), 2U);
  EXPECT_EQ(MarchErrors({{}, {{20, 0x1, false}}, {}}), 2U);
}

TEST(MarchCMinus, FindsCouplingFaultsInBothAddressOrders) {
  // The aggressor's rising bit forces a victim bit to 0 (or its falling bit forces it to 1),
  // with the victim above and below the aggressor: each is caught by one of the ascending or
  // descending elements.
  for (std::uint64_t victim : {3ULL, 40ULL}) {
    EXPECT_GT(MarchErrors({{}, {}, {{17, 0x4, true, victim, 0x80, 0}}}), 0U) << victim;
    EXPECT_GT(MarchErrors({{}, {}, {{17, 0x4, false, victim, 0x80, 0x80}}}), 0U) << victim;
    EXPECT_GT(MarchErrors({{}, {}, {{17, 0x4, true, victim, 0x80, 0x80}}}), 0U) << victim;
    EXPECT_GT(MarchErrors({{}, {}, {{17, 0x4, false, victim, 0x80, 0}}}), 0U) << victim;
  }
}

TEST(MarchCMinus, APlantedFaultFailsTheProfileBound) {
  std::string counted;
  auto sample =
      RunOn(1 << 12, {{}, {}, {{17, 0x4, true, 40, 0x80, 0}}}, Defaults({"march-c-"}), &counted);
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_GT(sample->at("memoryErrorCount"), 0);
  EXPECT_NE(counted.find("march-c- step"), std::string::npos) << counted;
  EXPECT_EQ(ProfileVerdict(*sample).verdict, verdict::Verdict::kFail);
}

// Records the hold each step asked for; memory always clean.
class HoldRecorder final : public cuda::MemTester {
 public:
  explicit HoldRecorder(std::vector<std::string>* holds) : holds_(holds) {}
  Result<cuda::MemStepResult> RunStep(Pattern pattern, int step, std::uint64_t, int,
                                      double hold_seconds) override {
    if (hold_seconds > 0) {
      holds_->push_back(std::string(PatternName(pattern)) + " " + std::to_string(step) + " " +
                        std::to_string(hold_seconds));
    }
    return cuda::MemStepResult{};
  }
  std::int64_t Bytes() const override { return 4096; }

 private:
  std::vector<std::string>* holds_;
};

TEST(Memtest, RetentionDelayComesOncePerPatternBeforeItsFirstRead) {
  std::vector<std::string> holds;
  auto test = MakeMemtestTestWith(
      [&holds](int, double, std::int64_t) -> Result<std::unique_ptr<cuda::MemTester>> {
        return std::unique_ptr<cuda::MemTester>(std::make_unique<HoldRecorder>(&holds));
      },
      false);
  // Documented among the parameters `perfgate list` shows, with its default.
  const auto& params = test->Info().params;
  const auto it = std::find_if(params.begin(), params.end(),
                               [](const ParamInfo& p) { return p.name == "retentionSeconds"; });
  ASSERT_NE(it, params.end());
  EXPECT_EQ(it->default_value, "1");
  const std::vector<std::string> all = {"walking-ones", "walking-zeros", "march-c-", "random"};
  const Params p = Defaults(all, 2.5);
  Target target;
  target.scope = Scope::kGpu;
  target.devices = {0};
  auto run = test->Prepare(p, target);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE((*run)->RunSample().ok());
  EXPECT_EQ(holds, (std::vector<std::string>{"walking-ones 0 2.500000", "walking-zeros 0 2.500000",
                                             "march-c- 1 2.500000", "random 0 2.500000"}));
  // The waits are in the price of a sample.
  const Params none = Defaults(all, 0.0);
  EXPECT_NEAR(test->SampleSeconds(p, 1) - test->SampleSeconds(none, 1), 4 * 2.5, 1e-9);
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

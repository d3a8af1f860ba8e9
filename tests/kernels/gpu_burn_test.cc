// burn's windows over a scripted GemmRunner: a clean GPU counts no wrong elements, and one
// that computes a wrong element counts it, names the window in Details, and FAILs the
// profile's bound on computeErrorCount. The device side is gpu_device_test's.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "kernels/burn_logic.h"
#include "kernels/unmeasured.h"
#include "tests/kernels/profile_bound.h"

namespace perfgate::kernels {
namespace {

// Passes that take no time, with `wrong` elements planted in every call once `planted` is set.
class ScriptedRunner final : public cuda::GemmRunner {
 public:
  explicit ScriptedRunner(std::shared_ptr<std::atomic<std::int64_t>> planted)
      : planted_(std::move(planted)) {}
  Result<double> Time(int iterations) override { return 1e-4 * iterations; }
  Result<cuda::GemmSample> Sample(int /*count*/) override { return cuda::GemmSample{}; }
  Status Snapshot() override { return Status::Ok(); }
  Result<std::int64_t> CountDifferences(double /*rel_tol*/) override { return planted_->load(); }
  Result<cuda::CheckedPasses> RunCheckedPasses(int passes, double /*rel_tol*/) override {
    cuda::CheckedPasses done;
    done.matmuls = passes;
    done.matmul_seconds = 1e-4 * passes;
    done.total_seconds = 1.2e-4 * passes;
    done.wrong = planted_->load();
    return done;
  }
  std::string Description() const override { return "scripted"; }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> planted_;
};

struct Burn {
  std::shared_ptr<std::atomic<std::int64_t>> planted =
      std::make_shared<std::atomic<std::int64_t>>(0);
  std::unique_ptr<TestRun> run = burn::MakeBurnRun(
      std::make_unique<ScriptedRunner>(planted), *gpu::FindGemmDtype("bf16"), 256, 256, 256, 0.02);
};

verdict::Outcome ProfileVerdict(const std::vector<Sample>& samples, const std::string& level) {
  return testing::Decide(
      testing::ProfileBound("h200-sxm-141gb", level, "burn", "computeErrorCount"), samples);
}

TEST(BurnWindows, CleanWindowsCountNoErrorAndPass) {
  Burn burn;
  std::vector<Sample> samples;
  for (int i = 0; i < 3; ++i) {
    auto sample = burn.run->RunSample();
    ASSERT_TRUE(sample.ok()) << sample.status().ToString();
    EXPECT_EQ(sample->at("computeErrorCount"), 0);
    EXPECT_GT(sample->at("tflops"), 0);
    samples.push_back(*sample);
  }
  EXPECT_EQ(burn.run->Details().count(CountedKey("computeErrorCount")), 0U);
  EXPECT_EQ(ProfileVerdict(samples, "quick").verdict, verdict::Verdict::kPass);
}

TEST(BurnWindows, AWrongElementIsCountedNamedAndFailsTheProfileBound) {
  Burn burn;
  std::vector<Sample> samples;
  auto clean = burn.run->RunSample();
  ASSERT_TRUE(clean.ok());
  samples.push_back(*clean);
  burn.planted->store(3);  // every pass of the second window gets 3 wrong elements
  auto wrong = burn.run->RunSample();
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  samples.push_back(*wrong);
  // Three per call: the count is a multiple of 3, at least one call's.
  EXPECT_GE(wrong->at("computeErrorCount"), 3);
  EXPECT_EQ(static_cast<std::int64_t>(wrong->at("computeErrorCount")) % 3, 0);
  const auto details = burn.run->Details();
  ASSERT_EQ(details.count(CountedKey("computeErrorCount")), 1U);
  const std::string& named = details.at(CountedKey("computeErrorCount"));
  EXPECT_EQ(named.rfind("window 2: ", 0), 0U) << named;
  EXPECT_NE(named.find("output elements differ from the first result"), std::string::npos);
  EXPECT_NE(named.find("tolerance"), std::string::npos);
  for (const std::string level : {"quick", "full"}) {
    const verdict::Outcome outcome = ProfileVerdict(samples, level);
    EXPECT_EQ(outcome.verdict, verdict::Verdict::kFail) << level << ": " << outcome.reason;
    EXPECT_EQ(outcome.observed, wrong->at("computeErrorCount"));
  }
}

}  // namespace
}  // namespace perfgate::kernels

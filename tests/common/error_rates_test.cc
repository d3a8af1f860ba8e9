// Both error rates a user is promised (README: per node at most 1 - confidence false PASS and
// at most 1 - confidence false FAIL), measured by Monte Carlo with the worker's own procedure
// (tests/bench/error_rates.h: Assess after every sample, the runner's StopReason) and the
// sampling the shipped quick level sets. The CI-sized version of the table in
// docs/methodology.md ("Both error rates, measured"), which perfgate-error-rates prints.
//
// Each cell runs kTrials seeded trials. A wrong-verdict count passes when it is at most what
// a true rate equal to the promise gives with probability 1 - kRisk (MostConsistentErrors, a
// binomial upper quantile), so the allowance is the Monte Carlo's and nothing else. The rule
// is judged under a one-check budget (fail_alpha = pass_alpha = 1 - confidence): the same
// code as under a node's Bonferroni share, at a level these trial counts can resolve.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "core/plan.h"
#include "tests/bench/error_rates.h"

namespace perfgate::sim {
namespace {

using verdict::Op;
using verdict::Statistic;

constexpr int kTrials = 150;
constexpr double kRisk = 0.001;

TEST(MostConsistentErrors, BinomialUpperQuantile) {
  // Binomial(10, 1/2): P(X >= 9) = 11/1024 <= 0.05 < P(X >= 8) = 56/1024.
  EXPECT_EQ(MostConsistentErrors(10, 0.5, 0.05), 8);
  // Binomial(100, 0.05): P(X > 13) < 0.001 <= P(X > 12).
  EXPECT_EQ(MostConsistentErrors(100, 0.05, 0.001), 13);
  EXPECT_EQ(MostConsistentErrors(100, 0.0, 0.001), 0);
}

TEST(TrueStatistic, OfTheNoiseMixture) {
  const Noise clean{0.03, 0};
  EXPECT_NEAR(TrueStatistic(Statistic::kMedian, Op::kGe, clean), 1.0, 1e-12);
  EXPECT_NEAR(TrueStatistic(Statistic::kMean, Op::kGe, clean), 1.0, 1e-12);
  // The normal's 5% quantile: 1 - 1.6449 cv.
  EXPECT_NEAR(TrueStatistic(Statistic::kP05, Op::kGe, clean), 1 - 1.6448536 * 0.03, 1e-6);
  EXPECT_NEAR(TrueStatistic(Statistic::kP95, Op::kLe, clean), 1 + 1.6448536 * 0.03, 1e-6);
  // 2% at half speed: the mean loses 1%; the median m solves
  // 0.98 Phi((m - 1) / 0.03) + 0.02 Phi((m - 0.5) / 0.015) = 1/2.
  const Noise slow{0.03, 0.02};
  EXPECT_NEAR(TrueStatistic(Statistic::kMean, Op::kGe, slow), 0.99, 1e-12);
  EXPECT_NEAR(TrueStatistic(Statistic::kMean, Op::kLe, slow), 1.02, 1e-12);
  const double m = TrueStatistic(Statistic::kMedian, Op::kGe, slow);
  auto phi = [](double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); };
  EXPECT_NEAR(0.98 * phi((m - 1) / 0.03) + 0.02 * phi((m - 0.5) / 0.015), 0.5, 1e-12);
  EXPECT_LT(m, 1.0);
}

// The sequential plan of the quick level of the profile the README shows, as shipped.
verdict::Sampling QuickSampling() {
  auto plan =
      ProfilePlan(std::string(PERFGATE_SOURCE_DIR) + "/profiles", "h200-sxm-141gb", "quick", 8);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  for (const worker::PlannedTest& t : plan->tests) {
    if (worker::StatisticalThresholds(t) > 0 && !t.sampling.fixed) return t.sampling;
  }
  ADD_FAILURE() << "no sequential test with a statistical threshold in the quick level";
  return {};
}

struct Case {
  Statistic statistic;
  Op op;
  Noise noise;
};

std::string Name(const Case& c, double margin) {
  return std::string(verdict::StatisticName(c.statistic)) + " " + verdict::OpName(c.op) + ", CV " +
         std::to_string(c.noise.cv) + ", slow share " + std::to_string(c.noise.slow_share) +
         ", truth " + std::to_string(margin) + " x bound clear";
}

// False PASS on the bound and 1% beyond it, false FAIL on the bound and 1% and 3% clear of it.
void ExpectBothRatesHold(const Case& c, std::uint64_t seed) {
  const verdict::Sampling sampling = QuickSampling();
  const verdict::ErrorBudget budget = verdict::SplitBudget(sampling.confidence, 1);
  const int pass_allowed = MostConsistentErrors(kTrials, budget.pass_alpha, kRisk);
  const int fail_allowed = MostConsistentErrors(kTrials, budget.fail_alpha, kRisk);
  for (double margin : {0.0, -0.01, 0.01, 0.03}) {
    Scenario s;
    s.threshold.metric = "figure";
    s.threshold.statistic = c.statistic;
    s.threshold.op = c.op;
    s.threshold.bound = 100;
    s.noise = c.noise;
    s.margin = margin;
    const Tally t = RunTrials(s, sampling, budget, 0, kTrials, seed);
    ASSERT_EQ(t.trials, kTrials);
    if (margin <= 0) {
      EXPECT_LE(t.pass, pass_allowed) << "false PASS: " << Name(c, margin);
    }
    if (margin >= 0) {
      EXPECT_LE(t.fail, fail_allowed) << "false FAIL: " << Name(c, margin);
    }
  }
}

TEST(ErrorRates, MedianCleanFigures) {
  for (double cv : {0.01, 0.03, 0.08}) {
    ExpectBothRatesHold({Statistic::kMedian, Op::kGe, {cv, 0}}, 11);
  }
}

TEST(ErrorRates, MedianWithRareHalfSpeedSamples) {
  for (double cv : {0.01, 0.03, 0.08}) {
    ExpectBothRatesHold({Statistic::kMedian, Op::kGe, {cv, 0.02}}, 12);
  }
}

// The mean's t rule assumes roughly normal figures (docs/methodology.md): here they are.
TEST(ErrorRates, MeanNormalFigures) {
  for (double cv : {0.01, 0.03, 0.08}) {
    ExpectBothRatesHold({Statistic::kMean, Op::kGe, {cv, 0}}, 13);
  }
}

// Rare slow samples a short run never draws: the mean waits until they are ruled out.
TEST(ErrorRates, MeanWithRareHalfSpeedSamples) {
  for (double cv : {0.01, 0.03}) {
    ExpectBothRatesHold({Statistic::kMean, Op::kGe, {cv, 0.02}}, 16);
  }
}

TEST(ErrorRates, TailQuantilesAnyShape) {
  for (double slow : {0.0, 0.02}) {
    ExpectBothRatesHold({Statistic::kP05, Op::kGe, {0.03, slow}}, 14);
    ExpectBothRatesHold({Statistic::kP95, Op::kLe, {0.03, slow}}, 15);
  }
}

}  // namespace
}  // namespace perfgate::sim

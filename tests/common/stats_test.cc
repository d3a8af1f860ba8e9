#include "common/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace perfgate::stats {
namespace {

// Published two-sided Student-t critical values (any t-table, three decimals).
TEST(StudentT, QuantileMatchesPublishedTable) {
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.706, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 4), 2.776, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 9), 2.262, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.975, 29), 2.045, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.995, 10), 3.169, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.95, 7), 1.895, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.9995, 5), 6.869, 5e-4);
  EXPECT_NEAR(StudentTQuantile(0.025, 9), -2.262, 5e-4);
  EXPECT_DOUBLE_EQ(StudentTQuantile(0.5, 3), 0.0);
}

TEST(StudentT, CdfInvertsQuantile) {
  for (double dof : {1.0, 2.0, 3.5, 9.0, 30.0, 200.0}) {
    for (double p : {1e-6, 0.001, 0.025, 0.3, 0.5, 0.8, 0.975, 0.9999, 1 - 1e-7}) {
      const double t = StudentTQuantile(p, dof);
      EXPECT_NEAR(StudentTCdf(t, dof), p, 1e-9 * std::max(1.0, p / (1 - p)))
          << "dof " << dof << " p " << p;
    }
  }
}

TEST(StudentT, CdfClosedForms) {
  // dof 1 is Cauchy: F(t) = 1/2 + atan(t) / pi; dof 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
  for (double t : {-30.0, -2.0, -0.3, 0.0, 0.7, 4.0, 100.0}) {
    EXPECT_NEAR(StudentTCdf(t, 1), 0.5 + std::atan(t) / M_PI, 1e-12) << t;
    EXPECT_NEAR(StudentTCdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
  }
}

TEST(StudentT, LargeDofApproachesNormal) {
  EXPECT_NEAR(StudentTQuantile(0.975, 1e7), 1.959964, 1e-5);
}

TEST(Normal, QuantileMatchesKnownValues) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.995), 2.575829303548901, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.999), 3.090232306167814, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.05), -1.644853626951472, 1e-12);
  EXPECT_DOUBLE_EQ(NormalQuantile(0.5), 0.0);
  EXPECT_TRUE(std::isinf(NormalQuantile(0.0)));
}

TEST(Normal, QuantileRoundTripsThroughErfcDeepInTheTails) {
  for (double p : {1e-300, 1e-100, 1e-12, 1e-6, 0.01, 0.2, 0.49}) {
    const double z = NormalQuantile(p);
    EXPECT_NEAR(0.5 * std::erfc(-z / std::sqrt(2.0)) / p, 1.0, 1e-12) << p;
  }
  // Symmetry, where 1 - p is representable well enough to mean the mirror of p.
  for (double p : {0.01, 0.2, 0.49}) {
    EXPECT_NEAR(NormalQuantile(1 - p), -NormalQuantile(p), 1e-12) << p;
  }
}

TEST(Beta, IncompleteBetaClosedForms) {
  // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b.
  for (double x : {0.0, 0.1, 0.5, 0.93, 1.0}) {
    EXPECT_NEAR(RegularizedIncompleteBeta(1, 1, x), x, 1e-14);
    EXPECT_NEAR(RegularizedIncompleteBeta(3.5, 1, x), std::pow(x, 3.5), 1e-13);
    EXPECT_NEAR(RegularizedIncompleteBeta(1, 7, x), 1 - std::pow(1 - x, 7), 1e-13);
  }
}

TEST(Binomial, CdfMatchesCountedTerms) {
  // Binomial(10, 1/2): P(X <= 1) = 11/1024, P(X <= 8) = 1013/1024.
  EXPECT_NEAR(BinomialCdf(1, 10, 0.5), 11.0 / 1024, 1e-14);
  EXPECT_NEAR(BinomialCdf(8, 10, 0.5), 1013.0 / 1024, 1e-14);
  EXPECT_DOUBLE_EQ(BinomialCdf(-1, 10, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(BinomialCdf(10, 10, 0.5), 1.0);
  // Binomial(20, 0.05): P(X = 0) = 0.95^20.
  EXPECT_NEAR(BinomialCdf(0, 20, 0.05), std::pow(0.95, 20), 1e-14);
}

// numpy.quantile's default (type 7), worked by hand: h = (n - 1) q, interpolate between the
// order statistics floor(h) and floor(h) + 1 (0-based).
TEST(Quantile, Type7ByHand) {
  const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(Quantile(x, 0.5), 4.5);     // h = 3.5: (4 + 5) / 2
  EXPECT_NEAR(Quantile(x, 0.05), 2.7, 1e-12);  // h = 0.35: 2 + 0.35 * 2
  EXPECT_NEAR(Quantile(x, 0.95), 8.3, 1e-12);  // h = 6.65: 7 + 0.65 * 2
  EXPECT_DOUBLE_EQ(Quantile(x, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(Quantile(x, 1.0), 9.0);
  const std::vector<double> one = {3.5};
  EXPECT_DOUBLE_EQ(Quantile(one, 0.95), 3.5);
}

// The one median (a baseline's figure, a compare row, a burn's sustained clock): any order in,
// the middle value of an odd count, the mean of the two middle ones of an even count, the same
// figure Summarize reports, and 0 for no values.
TEST(Median, MiddleOfAnyOrderAndZeroForNone) {
  EXPECT_DOUBLE_EQ(Median({9, 2, 5}), 5.0);
  EXPECT_DOUBLE_EQ(Median({9, 2, 5, 4}), 4.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7.0);
  EXPECT_DOUBLE_EQ(Median({}), 0.0);
  const std::vector<double> x = {5, 2, 9, 4, 4, 7, 4, 5};
  EXPECT_DOUBLE_EQ(Median(x), Summarize(x).median);
}

TEST(Summarize, HandWorkedSample) {
  // Sum 40, mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; sd = sqrt(32 / 7).
  const std::vector<double> x = {5, 9, 4, 2, 4, 7, 4, 5};
  const Summary s = Summarize(x, 0.95);
  EXPECT_EQ(s.n, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7), 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_NEAR(s.p05, 2.7, 1e-12);
  EXPECT_NEAR(s.p95, 8.3, 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(32.0 / 7) / 5, 1e-12);
  // t_{0.975,7} = 2.365 (table): half width 2.365 * 2.1381 / sqrt(8) = 1.788.
  EXPECT_NEAR(s.mean_ci.low, 5 - 1.788, 2e-3);
  EXPECT_NEAR(s.mean_ci.high, 5 + 1.788, 2e-3);
  EXPECT_EQ(s.mean_ci.method, "student-t");
  // n = 8 at 95%: ranks 2 and 7 (P(S <= 1) = 9/256 > 0.025, so rank 1 and 8: [2, 9]).
  EXPECT_DOUBLE_EQ(s.median_ci.low, 2.0);
  EXPECT_DOUBLE_EQ(s.median_ci.high, 9.0);
  EXPECT_NEAR(s.median_ci.confidence, 1 - 2.0 / 256, 1e-12);
  EXPECT_EQ(s.outliers, 0);
}

TEST(Summarize, EmptyAndSingle) {
  const Summary empty = Summarize(std::vector<double>{}, 0.95);
  EXPECT_EQ(empty.n, 0);
  EXPECT_EQ(empty.mean, 0);
  const Summary one = Summarize(std::vector<double>{7.5}, 0.95);
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.median, 7.5);
  EXPECT_DOUBLE_EQ(one.mean_ci.low, 7.5);
  EXPECT_DOUBLE_EQ(one.mean_ci.high, 7.5);
  EXPECT_DOUBLE_EQ(one.median_ci.low, 7.5);
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
}

TEST(Summarize, CountsFarOutliersWithoutDroppingThem) {
  // Quartiles (type 7) 3.25 and 7.75, IQR 4.5: far fences -10.25 and 21.25.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 100};
  const Summary s = Summarize(x, 0.95);
  EXPECT_EQ(s.outliers, 1);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.mean, 14.5);
  const std::vector<double> y = {1, 2, 3, 4, 5, 6, 7, 8, 9, 21};
  EXPECT_EQ(Summarize(y, 0.95).outliers, 0);
}

TEST(QuantileInterval, MedianOfTenAt95UsesRanksTwoAndNine) {
  std::vector<double> x = {10, 3, 7, 1, 9, 2, 8, 5, 4, 6};
  const Interval iv = QuantileInterval(x, 0.5, 0.95);
  EXPECT_DOUBLE_EQ(iv.low, 2.0);
  EXPECT_DOUBLE_EQ(iv.high, 9.0);
  // P(2 <= S <= 8), S ~ Binomial(10, 1/2) = 1002 / 1024.
  EXPECT_NEAR(iv.confidence, 0.978515625, 1e-12);
  EXPECT_EQ(iv.method, "order-statistic");
}

TEST(QuantileInterval, TooFewSamplesGiveRangeWithItsTrueCoverage) {
  const std::vector<double> x = {4, 1, 3, 2, 5};
  const Interval iv = QuantileInterval(x, 0.5, 0.95);
  EXPECT_DOUBLE_EQ(iv.low, 1.0);
  EXPECT_DOUBLE_EQ(iv.high, 5.0);
  EXPECT_NEAR(iv.confidence, 1 - 2.0 / 32, 1e-12);
}

// Coverage in simulation. 2,000 replications: a binomial standard error of at most
// sqrt(0.05 * 0.95 / 2000) = 0.0049 on a 95% level; the tolerance is 3 SE (0.015).
constexpr int kReps = 2000;
constexpr double kTolerance95 = 0.015;

TEST(Coverage, StudentTMeanIntervalOnNormalData) {
  std::mt19937_64 rng(12345);
  std::normal_distribution<double> noise(100.0, 3.0);
  int covered = 0;
  for (int r = 0; r < kReps; ++r) {
    std::vector<double> x(10);
    for (double& v : x) v = noise(rng);
    const Interval iv = MeanInterval(x, 0.95);
    covered += iv.low <= 100.0 && 100.0 <= iv.high;
  }
  EXPECT_GE(covered / double(kReps), 0.95 - kTolerance95);
  EXPECT_LE(covered / double(kReps), 0.95 + kTolerance95);  // exact for normal data
}

TEST(Coverage, OrderStatisticMedianIntervalOnSkewedData) {
  // Distribution-free: lognormal samples, true median e^0 = 1. Exact coverage at n = 10 is
  // 0.9785 (the method's discreteness), so it must reach 0.9785 - 3 SE (SE = 0.0032).
  std::mt19937_64 rng(777);
  std::lognormal_distribution<double> noise(0.0, 0.5);
  int covered = 0;
  for (int r = 0; r < kReps; ++r) {
    std::vector<double> x(10);
    for (double& v : x) v = noise(rng);
    const Interval iv = QuantileInterval(x, 0.5, 0.95);
    covered += iv.low <= 1.0 && 1.0 <= iv.high;
  }
  EXPECT_GE(covered / double(kReps), 0.9785 - 3 * 0.0032);
}

TEST(Coverage, QuantileConfidenceSequenceHoldsAtEveryLook) {
  // The sequence must cover the true median at every n from 1 to 60 at once, in at least
  // 90% of runs (each side 5%). A fixed-n interval re-read after every sample would not.
  std::mt19937_64 rng(4242);
  std::normal_distribution<double> noise(0.0, 1.0);
  int always_covered = 0;
  for (int r = 0; r < kReps; ++r) {
    std::vector<double> x;
    bool ok = true;
    for (int n = 1; n <= 60 && ok; ++n) {
      x.push_back(noise(rng));
      const Interval iv = QuantileConfidenceSequence(x, 0.5, 0.90);
      ok = iv.low <= 0.0 && 0.0 <= iv.high;
    }
    always_covered += ok;
  }
  // SE at 0.90 over 2,000 runs: 0.0067; tolerance 3 SE.
  EXPECT_GE(always_covered / double(kReps), 0.90 - 0.02);
}

TEST(Coverage, RepeatedFixedIntervalsDoNotHoldAtEveryLook) {
  // Why the sequential rule exists: the same check with the fixed-n 90% interval, re-read
  // after every sample, misses far more often than 10%.
  std::mt19937_64 rng(4242);
  std::normal_distribution<double> noise(0.0, 1.0);
  int always_covered = 0;
  for (int r = 0; r < kReps; ++r) {
    std::vector<double> x;
    bool ok = true;
    for (int n = 1; n <= 60 && ok; ++n) {
      x.push_back(noise(rng));
      const Interval iv = QuantileInterval(x, 0.5, 0.90);
      if (iv.confidence >= 0.90) ok = iv.low <= 0.0 && 0.0 <= iv.high;
    }
    always_covered += ok;
  }
  EXPECT_LT(always_covered / double(kReps), 0.80);
}

TEST(ConfidenceSequence, UnboundedUntilTheSamplesCanBoundIt) {
  const std::vector<double> x = {1, 2, 3};
  const Interval iv = QuantileConfidenceSequence(x, 0.5, 0.95);
  EXPECT_TRUE(std::isinf(iv.low) && iv.low < 0);
  EXPECT_TRUE(std::isinf(iv.high) && iv.high > 0);
  EXPECT_EQ(iv.method, "confidence-sequence");
}

TEST(ConfidenceSequence, CriticalCountGrowsWithTheEvidenceNeeded) {
  // With all n samples on one side the evidence is at most n log 2 (p0 = 1/2): no count can
  // reach log(1/alpha) before n > log2(1/alpha).
  EXPECT_EQ(BernoulliMixtureCriticalCount(5, 0.5, 0.01), 6);
  const int c_loose = BernoulliMixtureCriticalCount(100, 0.5, 0.05);
  const int c_tight = BernoulliMixtureCriticalCount(100, 0.5, 1e-4);
  EXPECT_GT(c_loose, 50);
  EXPECT_GT(c_tight, c_loose);
  EXPECT_LE(c_tight, 100);
}

}  // namespace
}  // namespace perfgate::stats

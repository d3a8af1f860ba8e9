// Rank tests, the paired Hodges-Lehmann interval, equivalence and Holm's adjustment, against
// values worked out by hand or with python3's standard library (the snippet beside each).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "common/stats.h"

namespace perfgate::stats {
namespace {

TEST(MannWhitneyTest, ExactWhenSeparatedWithoutTies) {
  // Every x below every y: U = 0, P(U <= 0) = 1 / C(7, 3) = 1/35.
  const std::vector<double> x = {1.1, 2.2, 3.3}, y = {4.4, 5.5, 6.6, 7.7};
  const RankTest t = MannWhitneyTest(x, y);
  EXPECT_EQ(t.method, "exact");
  EXPECT_DOUBLE_EQ(t.statistic, 0);
  EXPECT_DOUBLE_EQ(t.p_less, 1.0 / 35);
  EXPECT_DOUBLE_EQ(t.p_greater, 1.0);
  EXPECT_DOUBLE_EQ(t.p_two_sided, 2.0 / 35);
  // Swapped: U = 12, the same evidence the other way.
  const RankTest s = MannWhitneyTest(y, x);
  EXPECT_DOUBLE_EQ(s.statistic, 12);
  EXPECT_DOUBLE_EQ(s.p_greater, 1.0 / 35);
}

TEST(MannWhitneyTest, TiesUseMidranksAndTheCorrectedNormalApproximation) {
  // x = [1,2,2,3], y = [2,3,4,5,5]: midranks give R1 = 12.5, U = 2.5; tie term
  // sum(t^3 - t) = 24 + 6 + 6 = 36, var = 4*5/12 * (10 - 36/72) = 15.8333...;
  // python3: Phi((2.5 - 10 + 0.5) / sqrt(var)) = 0.03927292547559535,
  // Phi((10 - 2.5 + 0.5) / sqrt(var)) = 0.9778107863272566.
  const std::vector<double> x = {1, 2, 2, 3}, y = {2, 3, 4, 5, 5};
  const RankTest t = MannWhitneyTest(x, y);
  EXPECT_EQ(t.method, "normal");
  EXPECT_DOUBLE_EQ(t.statistic, 2.5);
  EXPECT_NEAR(t.p_less, 0.03927292547559535, 1e-12);
  EXPECT_NEAR(t.p_greater, 0.9778107863272566, 1e-12);
  EXPECT_NEAR(t.p_two_sided, 2 * 0.03927292547559535, 1e-12);
  // The exact permutation p (all C(9,4) = 126 splits, midranks) is 7/126 = 0.0556: the
  // approximation is in its neighbourhood, as it should be at these sizes.
  EXPECT_NEAR(t.p_less, 7.0 / 126, 0.02);
}

TEST(MannWhitneyTest, AllEqualOrEmptyDecidesNothing) {
  const std::vector<double> same = {5, 5, 5}, none;
  EXPECT_DOUBLE_EQ(MannWhitneyTest(same, same).p_two_sided, 1);
  EXPECT_DOUBLE_EQ(MannWhitneyTest(none, same).p_two_sided, 1);
  EXPECT_EQ(MannWhitneyTest(none, same).n, 0);
}

TEST(WilcoxonSignedRankTest, ExactForFiveDifferences) {
  // |d| ranks 2,1,3,4,5; the positive ones sum to W+ = 14. Under the null each of the 2^5
  // sign patterns is equally likely; W+ >= 14 means the negative ranks sum to <= 1: the
  // empty set and {1}, so P = 2/32.
  const std::vector<double> d = {1.5, -0.5, 2.5, 3.5, 4.5};
  const RankTest t = WilcoxonSignedRankTest(d);
  EXPECT_EQ(t.method, "exact");
  EXPECT_EQ(t.n, 5);
  EXPECT_DOUBLE_EQ(t.statistic, 14);
  EXPECT_DOUBLE_EQ(t.p_greater, 2.0 / 32);
  EXPECT_DOUBLE_EQ(t.p_less, 31.0 / 32);
  EXPECT_DOUBLE_EQ(t.p_two_sided, 4.0 / 32);
}

TEST(WilcoxonSignedRankTest, DropsZerosAndCorrectsForTies) {
  // python3: the zero dropped, n = 11, midranks of |d| give W+ = 58.5, tie term 18,
  // var = 11*12*23/24 - 18/48, Phi((33 - 58.5 + 0.5) / sqrt(var)) = 0.013004643155094506.
  const std::vector<double> d = {0, 1, -1, 2, 2, 3, -4, 5, 6, 6, 7, 8};
  const RankTest t = WilcoxonSignedRankTest(d);
  EXPECT_EQ(t.method, "normal");
  EXPECT_EQ(t.n, 11);
  EXPECT_DOUBLE_EQ(t.statistic, 58.5);
  EXPECT_NEAR(t.p_greater, 0.013004643155094506, 1e-12);
  EXPECT_NEAR(t.p_less, 0.9896967079661417, 1e-12);
}

TEST(HodgesLehmannPairedShift, WalshAveragesAndTheirExactInterval) {
  // The 15 Walsh averages of [-1, 2, 3, 5, 8] sorted: -1, .5, 1, 2, 2, 2.5, 3, 3.5, 3.5, 4, 5, 5,
  // 5.5, 6.5, 8; the median is the 8th, 3.5. For n = 5, P(W+ <= 0) = P(W+ <= 1) = ... counts
  // 1, 1, 1, 2 of 32: at 87.5% (alpha/2 = 2/32) k = 2, so [A_2, A_14] = [0.5, 6.5].
  const std::vector<double> d = {-1, 2, 3, 5, 8};
  const Shift s = HodgesLehmannPairedShift(d, 0.875);
  EXPECT_DOUBLE_EQ(s.estimate, 3.5);
  EXPECT_DOUBLE_EQ(s.interval.low, 0.5);
  EXPECT_DOUBLE_EQ(s.interval.high, 6.5);
  EXPECT_DOUBLE_EQ(s.interval.confidence, 1 - 2 * 2.0 / 32);
  // Three differences cannot reach 95%: the whole range, with the 75% it has.
  const std::vector<double> three = {1, 2, 3};
  const Shift t = HodgesLehmannPairedShift(three, 0.95);
  EXPECT_DOUBLE_EQ(t.estimate, 2);
  EXPECT_DOUBLE_EQ(t.interval.low, 1);
  EXPECT_DOUBLE_EQ(t.interval.high, 3);
  EXPECT_DOUBLE_EQ(t.interval.confidence, 0.75);
}

TEST(HodgesLehmannPairedShift, LargeSamplesUseTheNormalApproximationAndCover) {
  // 80 differences 1..80 centred on 40.5: the interval must hold the centre and be narrow.
  std::vector<double> d;
  for (int i = 1; i <= 80; ++i) d.push_back(i);
  const Shift s = HodgesLehmannPairedShift(d, 0.95);
  EXPECT_DOUBLE_EQ(s.estimate, 40.5);
  EXPECT_LT(s.interval.low, 40.5);
  EXPECT_GT(s.interval.high, 40.5);
  EXPECT_GT(s.interval.low, 30);
  EXPECT_LT(s.interval.high, 51);
  EXPECT_NEAR(s.interval.confidence, 0.95, 0.005);
}

TEST(Equivalence, PairedRatiosNearOneAreEquivalentAtTheExactLevel) {
  // Six log ratios within +-0.006, margin 3% (log 1.03 = 0.0296): shifted up by it all six are
  // positive, P(W+ >= 21) = 1/64; shifted down all negative, also 1/64.
  const std::vector<double> near = {0.001, -0.002, 0.003, -0.004, 0.005, -0.006};
  EXPECT_DOUBLE_EQ(PairedEquivalencePValue(near, 0.03), 1.0 / 64);
  // Ratios around 0.94 against a 3% margin: shifted up they are still all negative, so
  // P(W+ >= 0) = 1: nowhere near equivalent.
  std::vector<double> slow;
  for (double v : near) slow.push_back(std::log(0.94) + v);
  EXPECT_DOUBLE_EQ(PairedEquivalencePValue(slow, 0.03), 1.0);
}

TEST(Equivalence, UnpairedGroupsWithinTheMargin) {
  // x + log(1.03) lies above all of y, and x - log(1.03) below: U = 9 and 0, each tail
  // 1 / C(6, 3) = 1/20.
  const std::vector<double> x = {0.0, 0.001, 0.002}, y = {0.0005, 0.0015, 0.0025};
  EXPECT_DOUBLE_EQ(EquivalencePValue(x, y, 0.03), 1.0 / 20);
  // y 6% higher: equivalence rejected with certainty at the exact level.
  const std::vector<double> far = {0.06, 0.061, 0.062};
  EXPECT_DOUBLE_EQ(EquivalencePValue(x, far, 0.03), 1.0);
}

TEST(HolmAdjust, StepDownInTheGivenOrder) {
  // Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running max
  // 0.02, 0.03, 0.06, 0.06.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto adj = HolmAdjust(p);
  ASSERT_EQ(adj.size(), 4U);
  EXPECT_DOUBLE_EQ(adj[0], 0.03);
  EXPECT_DOUBLE_EQ(adj[1], 0.06);
  EXPECT_DOUBLE_EQ(adj[2], 0.06);
  EXPECT_DOUBLE_EQ(adj[3], 0.02);
  const std::vector<double> big = {0.6, 0.9};
  EXPECT_DOUBLE_EQ(HolmAdjust(big)[0], 1.0);
  EXPECT_DOUBLE_EQ(HolmAdjust(big)[1], 1.0);
}

}  // namespace
}  // namespace perfgate::stats

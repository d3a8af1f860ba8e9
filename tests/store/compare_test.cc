// The Hodges-Lehmann shift and its rank interval, against values worked out by hand.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "common/stats.h"

namespace perfgate::stats {
namespace {

TEST(MannWhitney, ExactDistributionOfThreeAgainstThree) {
  // U for m = n = 3 takes 0..9 with counts 1 1 2 3 3 3 3 2 1 1 out of C(6, 3) = 20.
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(0, 3, 3), 1.0 / 20);
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(2, 3, 3), 4.0 / 20);
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(4, 3, 3), 10.0 / 20);
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(8, 3, 3), 19.0 / 20);
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(9, 3, 3), 1.0);
  // m = n = 4: counts 1 1 2 3 5 ... out of 70.
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(4, 4, 4), 12.0 / 70);
  // m = 2, n = 3 and m = 3, n = 2 alike: counts 1 1 2 2 2 1 1 out of C(5, 2) = 10.
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(2, 2, 3), 4.0 / 10);
  EXPECT_DOUBLE_EQ(MannWhitneyCdf(2, 3, 2), 4.0 / 10);
}

TEST(HodgesLehmann, ThreeAgainstThree) {
  // Differences x_i - y_j: 7 8 8 9 9 9 10 10 11; their median is 9. At 90% k = 1
  // (P(U <= 0) = 1/20 = alpha/2): [D(1), D(9)] = [7, 11] with coverage 1 - 2/20.
  const std::vector<double> x = {10, 11, 12}, y = {1, 2, 3};
  const Shift s = HodgesLehmannShift(x, y, 0.90);
  EXPECT_DOUBLE_EQ(s.estimate, 9);
  EXPECT_DOUBLE_EQ(s.interval.low, 7);
  EXPECT_DOUBLE_EQ(s.interval.high, 11);
  EXPECT_DOUBLE_EQ(s.interval.confidence, 0.90);
  // 95% is out of reach with three a side: the widest interval, with the coverage it has.
  const Shift wide = HodgesLehmannShift(x, y, 0.95);
  EXPECT_DOUBLE_EQ(wide.interval.low, 7);
  EXPECT_DOUBLE_EQ(wide.interval.high, 11);
  EXPECT_DOUBLE_EQ(wide.interval.confidence, 0.90);
}

TEST(HodgesLehmann, FourAgainstFour) {
  // Differences sorted: 1 2 2 3 3 3 4 4 4 5 5 5 6 6 7 8; median (D8 + D9) / 2 = 4.
  // 90%: P(U <= 1) = 2/70 <= 0.05 < P(U <= 2) = 4/70, so k = 2: [D(2), D(15)] = [2, 7],
  // coverage 1 - 4/70. 95%: k = 1: [D(1), D(16)] = [1, 8], coverage 1 - 2/70.
  const std::vector<double> x = {5, 6, 7, 9}, y = {1, 2, 3, 4};
  const Shift s90 = HodgesLehmannShift(x, y, 0.90);
  EXPECT_DOUBLE_EQ(s90.estimate, 4);
  EXPECT_DOUBLE_EQ(s90.interval.low, 2);
  EXPECT_DOUBLE_EQ(s90.interval.high, 7);
  EXPECT_NEAR(s90.interval.confidence, 1 - 4.0 / 70, 1e-12);
  const Shift s95 = HodgesLehmannShift(x, y, 0.95);
  EXPECT_DOUBLE_EQ(s95.interval.low, 1);
  EXPECT_DOUBLE_EQ(s95.interval.high, 8);
  EXPECT_NEAR(s95.interval.confidence, 1 - 2.0 / 70, 1e-12);
}

TEST(HodgesLehmann, RatioOfFiguresTenPercentApart) {
  // x = 1.1 y: every log difference is log 1.1 + log(y_i / y_j), symmetric around log 1.1.
  const std::vector<double> y = {100, 101, 99, 102, 98, 100.5, 99.5, 101.5};
  std::vector<double> x;
  for (double v : y) x.push_back(1.1 * v);
  const Shift r = HodgesLehmannRatio(x, y, 0.95);
  EXPECT_NEAR(r.estimate, 1.1, 1e-12);
  EXPECT_LT(r.interval.low, 1.1);
  EXPECT_GT(r.interval.low, 1.05);  // clear of "no change"
  EXPECT_GT(r.interval.high, 1.1);
  EXPECT_LT(r.interval.high, 1.15);
  EXPECT_GE(r.interval.confidence, 0.95);
  EXPECT_EQ(r.interval.method, "hodges-lehmann-log");
}

TEST(HodgesLehmann, LargeSamplesUseTheNormalApproximationAndStillCover) {
  // 120 x 120 pairs: the normal route. Two equal samples: the shift is 0 and the interval
  // straddles it, about as wide as the exact route would make it.
  std::vector<double> x, y;
  for (int i = 0; i < 120; ++i) {
    x.push_back(i);
    y.push_back(i + 0.5);
  }
  const Shift s = HodgesLehmannShift(x, y, 0.95);
  EXPECT_NEAR(s.estimate, -0.5, 1e-12);
  EXPECT_LT(s.interval.low, -0.5);
  EXPECT_GT(s.interval.high, -0.5);
  EXPECT_NEAR(s.interval.confidence, 0.95, 0.005);
  // k from z = 1.96: floor(7200 - 1.96 * sqrt(14400 * 241 / 12) + 0.5) = 6866.
  // D(6866) of {i - j - 0.5}: the interval is symmetric around the estimate.
  EXPECT_NEAR(s.interval.low + s.interval.high, -1.0, 1e-9);
}

TEST(HodgesLehmann, EmptyOrNonPositiveSamplesGiveNoInterval) {
  const std::vector<double> none, some = {1, 2};
  EXPECT_EQ(HodgesLehmannShift(none, some, 0.95).interval.confidence, 0);
  const std::vector<double> zeros = {0, -1};
  EXPECT_EQ(HodgesLehmannRatio(zeros, some, 0.95).interval.confidence, 0);
}

}  // namespace
}  // namespace perfgate::stats

#include "common/verdict.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace perfgate::verdict {
namespace {

using ::testing::HasSubstr;

const std::map<std::string, std::string> kUnits = {{"triadBandwidthGBps", "GB/s"},
                                                   {"latencyUs", "us"}};

Threshold Median(double bound, const std::string& metric = "triadBandwidthGBps") {
  Threshold th;
  th.metric = metric;
  th.statistic = Statistic::kMedian;
  th.op = Op::kGe;
  th.bound = bound;
  return th;
}

Sampling Plan(int min_repeats, int max_repeats, bool fixed = false) {
  Sampling s;
  s.min_repeats = min_repeats;
  s.max_repeats = max_repeats;
  s.fixed = fixed;
  return s;
}

// Feeds samples from `draw` one at a time, assessing after each as the runner does, until
// the assessment says stop. Returns the last assessment.
template <typename Draw>
Assessment RunUntilStop(const std::vector<Threshold>& ths, const Sampling& sampling,
                        double confidence, Draw draw) {
  MetricSamples samples;
  Assessment a;
  for (int n = 1; n <= sampling.max_repeats; ++n) {
    for (const Threshold& th : ths) samples[th.metric].push_back(draw(th.metric));
    a = Assess(ths, samples, sampling, confidence, kUnits, false);
    if (a.stop) break;
  }
  return a;
}

// The default node of the simulation: 32 checks at node confidence 0.99.
const double kNodeCheckConfidence = SplitConfidence(0.99, 32);

TEST(SplitConfidence, BonferroniOverDirectionalErrors) {
  EXPECT_NEAR(SplitConfidence(0.99, 32), 1 - 0.02 / 32, 1e-15);
  EXPECT_NEAR(SplitConfidence(0.95, 1), 0.90, 1e-15);
  EXPECT_NEAR(SplitConfidence(0.95, 0), 0.90, 1e-15);  // no checks: as for one
  EXPECT_NEAR(SideAlpha(SplitConfidence(0.99, 32)), 0.01 / 32, 1e-15);
}

TEST(Parse, SpecSpellings) {
  Statistic s;
  EXPECT_TRUE(ParseStatistic("ciLow", &s));
  EXPECT_EQ(s, Statistic::kCiLow);
  EXPECT_TRUE(ParseStatistic("p95", &s));
  EXPECT_EQ(s, Statistic::kP95);
  EXPECT_FALSE(ParseStatistic("average", &s));
  Op op;
  EXPECT_TRUE(ParseOp("<", &op));
  EXPECT_EQ(op, Op::kLt);
  EXPECT_FALSE(ParseOp("=>", &op));
  for (Statistic st : {Statistic::kMean, Statistic::kMedian, Statistic::kP05, Statistic::kP95,
                       Statistic::kMin, Statistic::kMax, Statistic::kCiLow, Statistic::kCiHigh}) {
    Statistic back;
    ASSERT_TRUE(ParseStatistic(StatisticName(st), &back));
    EXPECT_EQ(back, st);
  }
  EXPECT_STREQ(VerdictName(Verdict::kInconclusive), "INCONCLUSIVE");
}

TEST(Sequential, HealthyFarAboveTheBoundPassesSoonAfterMinRepeats) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(100.0, 1.0);  // CV 1%, bound at 90% of the median
  const std::vector<Threshold> ths = {Median(90.0)};
  const Assessment a = RunUntilStop(ths, Plan(5, 150), kNodeCheckConfidence,
                                    [&](const std::string&) { return noise(rng); });
  ASSERT_TRUE(a.stop);
  EXPECT_TRUE(a.decided);
  EXPECT_EQ(a.stop_reason, "decided");
  // 32 checks at node confidence 0.99 leave each direction 0.01 / 32: with every sample above
  // the bound the evidence reaches that after 14 samples (13 when n log 2 just clears it).
  EXPECT_LE(a.samples, 15);
  ASSERT_EQ(a.outcomes.size(), 1u);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("median triadBandwidthGBps"));
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("GB/s >= bound 90: met"));
  EXPECT_THAT(a.stop_detail, HasSubstr("decided after"));
  EXPECT_GT(a.outcomes[0].interval.low, 90.0);  // the interval shown agrees with the verdict
}

TEST(Sequential, SlowNodeFailsEarlyAndSaysWhy) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> noise(9.81, 0.05);
  const std::vector<Threshold> ths = {Median(10.5)};
  const Assessment a = RunUntilStop(ths, Plan(5, 150), kNodeCheckConfidence,
                                    [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_LE(a.samples, 15);
  const Outcome& o = a.outcomes[0];
  EXPECT_EQ(o.verdict, Verdict::kFail);
  // "median triadBandwidthGBps 9.81 GB/s < bound 10.5 (>= required), 99.94% CS [...]"
  EXPECT_THAT(o.reason, HasSubstr("median triadBandwidthGBps 9."));
  EXPECT_THAT(o.reason, HasSubstr("GB/s < bound 10.5 (>= required)"));
  EXPECT_THAT(o.reason, HasSubstr("99.94% CS ["));
  EXPECT_LT(o.interval.high, 10.5);
}

TEST(Sequential, TruthOnTheBoundRunsToTheCapAndIsInconclusive) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(100.0, 3.0);
  const std::vector<Threshold> ths = {Median(100.0)};
  const Assessment a = RunUntilStop(ths, Plan(5, 150), kNodeCheckConfidence,
                                    [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.samples, 150);
  EXPECT_TRUE(a.stop);
  EXPECT_FALSE(a.decided);
  EXPECT_EQ(a.stop_reason, "maxRepeats");
  EXPECT_THAT(a.stop_detail, HasSubstr("1 of 1 thresholds undecided"));
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
  // "median triadBandwidthGBps 100.2 GB/s in [99.1, 101.3] (99.94% CS) straddles the bound
  // 100 (>= required) after 150 samples"
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("(99.94% CS) straddles the bound 100 (>= required)"
                                              " after 150 samples"));
  EXPECT_LT(a.outcomes[0].interval.low, 100.0);
  EXPECT_GT(a.outcomes[0].interval.high, 100.0);
}

TEST(Sequential, NeverDecidesBeforeMinRepeats) {
  const std::vector<Threshold> ths = {Median(1.0)};
  MetricSamples samples;
  for (int n = 1; n < 30; ++n) {
    samples["triadBandwidthGBps"].push_back(100.0 + n);
    const Assessment a = Assess(ths, samples, Plan(30, 60), 0.90, kUnits, false);
    EXPECT_FALSE(a.stop) << n;
    EXPECT_FALSE(a.decided) << n;
    EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
    EXPECT_THAT(a.outcomes[0].reason, HasSubstr("not decided before 30 (minRepeats) samples"));
  }
  samples["triadBandwidthGBps"].push_back(200);
  EXPECT_TRUE(Assess(ths, samples, Plan(30, 60), 0.90, kUnits, false).decided);
}

TEST(Sequential, OutliersAreCountedReportedAndDoNotFlipTheMedian) {
  // Healthy node with a warm-up-slow first sample and two half-speed iterations.
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(100.0, 1.0);
  std::vector<double> x = {80.0};
  for (int i = 0; i < 30; ++i) x.push_back(noise(rng));
  x[7] = 50;
  x[19] = 49;
  const std::vector<Threshold> ths = {Median(90.0)};
  const Assessment a =
      Assess(ths, {{"triadBandwidthGBps", x}}, Plan(5, 150), kNodeCheckConfidence, kUnits, false);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_EQ(a.outcomes[0].outliers, 3);
  EXPECT_EQ(a.outcomes[0].samples, 31);  // kept, not dropped
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("3 outliers beyond 3 IQR, kept"));
}

TEST(Sequential, LatencyStyleUpperBoundsMirror) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> latency(std::log(10.0), 0.1);
  Threshold p95;
  p95.metric = "latencyUs";
  p95.statistic = Statistic::kP95;
  p95.op = Op::kLe;
  p95.bound = 20;
  Threshold too_tight = p95;
  too_tight.bound = 5;
  const Assessment a = RunUntilStop({p95, too_tight}, Plan(5, 300), 0.95,
                                    [&](const std::string&) { return latency(rng); });
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_LE(a.outcomes[0].interval.high, 20.0);
  EXPECT_EQ(a.outcomes[1].verdict, Verdict::kFail);
  EXPECT_THAT(a.outcomes[1].reason, HasSubstr("p95 latencyUs"));
  EXPECT_THAT(a.outcomes[1].reason, HasSubstr("us > bound 5 (<= required)"));
}

TEST(Sequential, VerdictAgreesWithTheIntervalItShows) {
  std::mt19937_64 rng(6);
  std::normal_distribution<double> noise(100.0, 5.0);
  for (int rep = 0; rep < 200; ++rep) {
    std::vector<double> x(5 + rep % 60);
    for (double& v : x) v = noise(rng);
    for (Statistic st : {Statistic::kMedian, Statistic::kP05, Statistic::kP95}) {
      for (Op op : {Op::kGe, Op::kLe}) {
        Threshold th = Median(100.0 + (rep % 7 - 3) * 4.0);
        th.statistic = st;
        th.op = op;
        const Outcome o =
            Assess({th}, {{th.metric, x}}, Plan(5, 100), 0.95, kUnits, false).outcomes[0];
        const bool above = o.interval.low >= th.bound;
        const bool below = o.interval.high < th.bound;
        const bool low_ok = op == Op::kGe ? above : o.interval.high <= th.bound;
        const bool none_ok = op == Op::kGe ? below : o.interval.low > th.bound;
        if (o.verdict == Verdict::kPass) {
          EXPECT_TRUE(low_ok) << o.reason;
        } else if (o.verdict == Verdict::kFail) {
          EXPECT_TRUE(none_ok) << o.reason;
        } else {
          EXPECT_FALSE(low_ok || none_ok) << o.reason;
        }
      }
    }
  }
}

// The error rate under continuous monitoring: a node exactly on its bound (the hardest
// healthy case) is assessed after every sample from 5 to 100, and stopped at the first
// decision. False FAIL must stay at or below the side budget, 5% here (threshold confidence
// 0.90), within 3 binomial standard errors over 2,000 runs (SE = 0.0049). Skewed data: the
// rule must not depend on normality.
TEST(Sequential, FalseFailRateHoldsUnderContinuousMonitoring) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.3);  // true median exactly 1
  const std::vector<Threshold> ths = {Median(1.0)};
  constexpr int kRuns = 2000;
  int false_fail = 0;
  for (int r = 0; r < kRuns; ++r) {
    const Assessment a =
        RunUntilStop(ths, Plan(5, 100), 0.90, [&](const std::string&) { return noise(rng); });
    false_fail += a.outcomes[0].verdict == Verdict::kFail;
  }
  EXPECT_LE(false_fail / double(kRuns), 0.05 + 3 * 0.0049);
}

TEST(Fixed, DecidesOnceAtMaxRepeats) {
  const std::vector<Threshold> ths = {Median(90.0)};
  MetricSamples samples;
  std::mt19937_64 rng(8);
  std::normal_distribution<double> noise(100.0, 1.0);
  for (int n = 1; n <= 20; ++n) {
    samples["triadBandwidthGBps"].push_back(noise(rng));
    const Assessment a = Assess(ths, samples, Plan(5, 20, true), 0.95, kUnits, false);
    if (n < 20) {
      EXPECT_FALSE(a.stop) << n;
      EXPECT_THAT(a.outcomes[0].reason, HasSubstr("not decided before 20 (fixed) samples"));
    } else {
      EXPECT_TRUE(a.stop);
      EXPECT_EQ(a.stop_reason, "fixed");
      EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
      EXPECT_EQ(a.outcomes[0].interval.method, "order-statistic");
    }
  }
}

TEST(Fixed, TooFewSamplesForTheLevelIsInconclusive) {
  // 5 samples cannot give a 99.9% median interval (best is [min, max] at 93.75%).
  const std::vector<Threshold> ths = {Median(1.0)};
  const Assessment a = Assess(ths, {{"triadBandwidthGBps", {10, 11, 12, 13, 14}}}, Plan(5, 5, true),
                              0.999, kUnits, false);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
  // The reason says why: not a straddle (every sample is above the bound) but too few samples.
  EXPECT_THAT(a.outcomes[0].reason, Not(HasSubstr("straddles")));
  EXPECT_THAT(a.outcomes[0].reason,
              HasSubstr("5 samples cannot decide it at 99.9% confidence ([10, 14] covers 93.75%)"));
}

TEST(Budget, TimeRunningOutIsMaxSeconds) {
  const std::vector<Threshold> ths = {Median(100.0)};
  const Assessment a = Assess(ths, {{"triadBandwidthGBps", {99, 101, 98, 102, 100, 97, 103}}},
                              Plan(5, 50), 0.95, kUnits, true);
  EXPECT_TRUE(a.stop);
  EXPECT_EQ(a.stop_reason, "maxSeconds");
  EXPECT_THAT(a.stop_detail, HasSubstr("after 7 samples"));
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
}

TEST(Budget, MissingMetricIsAnErrorAtTheEnd) {
  const std::vector<Threshold> ths = {Median(1.0, "copyBandwidthGBps")};
  const Assessment running = Assess(ths, {}, Plan(5, 50), 0.95, kUnits, false);
  EXPECT_EQ(running.outcomes[0].verdict, Verdict::kInconclusive);
  EXPECT_FALSE(running.stop);
  const Assessment done = Assess(ths, {}, Plan(5, 50), 0.95, kUnits, true);
  EXPECT_EQ(done.outcomes[0].verdict, Verdict::kError);
  EXPECT_THAT(done.outcomes[0].reason, HasSubstr("no samples of copyBandwidthGBps"));
}

TEST(PointChecks, MinAndMaxDescribeTheSamplesTaken) {
  Threshold min_th = Median(9.0);
  min_th.statistic = Statistic::kMin;
  Threshold max_th = Median(12.0);
  max_th.statistic = Statistic::kMax;
  max_th.op = Op::kLe;
  const MetricSamples x = {{"triadBandwidthGBps", {10, 11, 8.2, 10.5, 11.5}}};
  const Assessment a = Assess({min_th, max_th}, x, Plan(5, 50), 0.95, kUnits, false);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kFail);
  EXPECT_THAT(a.outcomes[0].reason,
              HasSubstr("min triadBandwidthGBps 8.2 GB/s < bound 9 (>= required)"));
  EXPECT_EQ(a.outcomes[1].verdict, Verdict::kPass);
  EXPECT_THAT(a.outcomes[1].reason, HasSubstr("max triadBandwidthGBps 11.5 GB/s <= bound 12"));
  EXPECT_TRUE(a.stop);  // point checks do not hold sampling open
}

TEST(MeanThresholds, StudentTWithLooksSharedAndCiLowAsAPointCheck) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(100.0, 2.0);
  Threshold mean = Median(95.0);
  mean.statistic = Statistic::kMean;
  Threshold ci_low = Median(95.0);
  ci_low.statistic = Statistic::kCiLow;
  const Assessment a = RunUntilStop({mean, ci_low}, Plan(5, 50), 0.95,
                                    [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_THAT(a.outcomes[0].interval.method, HasSubstr("Bonferroni over 46 looks"));
  EXPECT_EQ(a.outcomes[1].verdict, Verdict::kPass);
  EXPECT_DOUBLE_EQ(a.outcomes[1].observed, a.outcomes[1].interval.low);
  EXPECT_GE(a.outcomes[1].observed, 95.0);
}

TEST(MeanThresholds, TimeBudgetBeforeMinRepeatsLeavesTheMeanUndecided) {
  // The Bonferroni split covers looks minRepeats..maxRepeats; 3 samples are outside it.
  Threshold mean = Median(50.0);
  mean.statistic = Statistic::kMean;
  const MetricSamples x = {{mean.metric, {100, 101, 99}}};
  const Assessment early = Assess({mean}, x, Plan(10, 50), 0.95, kUnits, true);
  EXPECT_EQ(early.stop_reason, "maxSeconds");
  EXPECT_EQ(early.outcomes[0].verdict, Verdict::kInconclusive);
  // A fixed plan stopped early by its budget is read as a sequential one, not as one look.
  Sampling fixed = Plan(2, 50, true);
  const Assessment fixed_early = Assess({mean}, x, fixed, 0.95, kUnits, true);
  EXPECT_THAT(fixed_early.outcomes[0].interval.method, HasSubstr("Bonferroni over 49 looks"));
  EXPECT_EQ(fixed_early.outcomes[0].verdict, Verdict::kPass);
}

TEST(MeanThresholds, SequentialMeanIntervalCoversAtEveryLook) {
  // Bonferroni over looks 5..50 at 90%: the interval must hold at all 46 looks at once in at
  // least 90% of runs (3 SE = 0.02 over 2,000 runs).
  std::mt19937_64 rng(10);
  std::normal_distribution<double> noise(0.0, 1.0);
  Threshold mean = Median(0.0);
  mean.statistic = Statistic::kMean;
  int always = 0;
  constexpr int kRuns = 2000;
  for (int r = 0; r < kRuns; ++r) {
    std::vector<double> x;
    bool ok = true;
    for (int n = 1; n <= 50 && ok; ++n) {
      x.push_back(noise(rng));
      if (n < 5) continue;
      const Outcome o =
          Assess({mean}, {{mean.metric, x}}, Plan(5, 50), 0.90, kUnits, false).outcomes[0];
      ok = o.interval.low <= 0 && 0 <= o.interval.high;
    }
    always += ok;
  }
  EXPECT_GE(always / double(kRuns), 0.90 - 0.02);
}

}  // namespace
}  // namespace perfgate::verdict

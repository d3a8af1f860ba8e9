#include "common/verdict.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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
                        const ErrorBudget& budget, Draw draw) {
  MetricSamples samples;
  Assessment a;
  for (int n = 1; n <= sampling.max_repeats; ++n) {
    for (const Threshold& th : ths) samples[th.metric].push_back(draw(th.metric));
    a = Assess(ths, samples, sampling, budget, kUnits, false);
    if (a.stop) break;
  }
  return a;
}

// A node of 32 statistical checks at node confidence 0.99, and one of the H200 profile's
// size (8 GPUs, 82 checks) at 0.95.
const ErrorBudget kNode32 = SplitBudget(0.99, 32);
const ErrorBudget kH200Node = SplitBudget(0.95, 82);
// Each direction 5%: one check at node confidence 0.95.
const ErrorBudget kFivePercent{0.05, 0.05};

TEST(SplitBudget, IntersectionUnionForPassBonferroniForFail) {
  EXPECT_NEAR(kNode32.pass_alpha, 0.01, 1e-15);  // a node PASSes only if every check does
  EXPECT_NEAR(kNode32.fail_alpha, 0.01 / 32, 1e-15);
  const ErrorBudget none = SplitBudget(0.95, 0);  // no checks: as for one
  EXPECT_NEAR(none.pass_alpha, 0.05, 1e-15);
  EXPECT_NEAR(none.fail_alpha, 0.05, 1e-15);
  EXPECT_TRUE(IsStatistical(Statistic::kMedian));
  EXPECT_TRUE(IsStatistical(Statistic::kCiLow));
  EXPECT_FALSE(IsStatistical(Statistic::kMax));
}

TEST(TLooks, EveryCountToEightThenAQuarterApartAndTheCap) {
  EXPECT_EQ(TLooks(Plan(5, 20)), (std::vector<int>{5, 6, 7, 8, 10, 13, 17, 20}));
  EXPECT_EQ(TLooks(Plan(1, 30)), (std::vector<int>{3, 4, 5, 6, 7, 8, 10, 13, 17, 22, 28, 30}));
  EXPECT_EQ(TLooks(Plan(3, 3)), (std::vector<int>{3}));
  EXPECT_EQ(TLooks(Plan(9, 12)), (std::vector<int>{9, 10, 12}));
  EXPECT_EQ(TLooks(Plan(2, 60, true)), (std::vector<int>{60}));  // fixed: one look
  // A cap near the int limit ends the schedule instead of overflowing it.
  const std::vector<int> huge = TLooks(Plan(3, std::numeric_limits<int>::max()));
  EXPECT_EQ(huge.back(), std::numeric_limits<int>::max());
  EXPECT_TRUE(std::is_sorted(huge.begin(), huge.end()));
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

TEST(Sequential, TenPercentClearAtCv3DecidesInThreeToFiveSamples) {
  // The H200 profile's node: 82 checks at 0.95. Figures 10% above the bound, CV 3%.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(110.0, 3.3);
  const std::vector<Threshold> ths = {Median(100.0)};
  std::vector<int> counts;
  for (int r = 0; r < 400; ++r) {
    const Assessment a =
        RunUntilStop(ths, Plan(3, 20), kH200Node, [&](const std::string&) { return noise(rng); });
    ASSERT_EQ(a.outcomes[0].verdict, Verdict::kPass) << a.outcomes[0].reason;
    counts.push_back(a.samples);
  }
  std::sort(counts.begin(), counts.end());
  EXPECT_LE(counts[counts.size() / 2], 4);         // median run: 3 or 4 samples
  EXPECT_LE(counts[counts.size() * 95 / 100], 6);  // 95th percentile
}

TEST(Sequential, HealthyFarAboveTheBoundPassesAtTheFirstLook) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(100.0, 1.0);  // CV 1%, bound at 90% of the median
  const std::vector<Threshold> ths = {Median(90.0)};
  const Assessment a =
      RunUntilStop(ths, Plan(5, 150), kNode32, [&](const std::string&) { return noise(rng); });
  ASSERT_TRUE(a.stop);
  EXPECT_TRUE(a.decided);
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_EQ(a.samples, 5);  // minRepeats, the t rule's first look
  ASSERT_EQ(a.outcomes.size(), 1u);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_STREQ(a.outcomes[0].rule, kRuleT);
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("median triadBandwidthGBps"));
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("GB/s >= bound 90: met"));
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("(t-log, 17 looks)"));  // says which rule
  EXPECT_THAT(a.stop_detail, HasSubstr("decided after"));
  EXPECT_GT(a.outcomes[0].interval.low, 90.0);  // the interval shown agrees with the verdict
}

TEST(Sequential, SlowNodeFailsEarlyAndSaysWhy) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> noise(9.81, 0.05);
  const std::vector<Threshold> ths = {Median(10.5)};
  const Assessment a =
      RunUntilStop(ths, Plan(5, 150), kNode32, [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_LE(a.samples, 6);
  const Outcome& o = a.outcomes[0];
  EXPECT_EQ(o.verdict, Verdict::kFail);
  // "median triadBandwidthGBps 9.81 GB/s < bound 10.5 (>= required), 99.97% CI [...] (t-log,
  // 17 looks), 5 samples"
  EXPECT_THAT(o.reason, HasSubstr("median triadBandwidthGBps 9."));
  EXPECT_THAT(o.reason, HasSubstr("GB/s < bound 10.5 (>= required)"));
  EXPECT_THAT(o.reason, HasSubstr("% CI ["));
  EXPECT_LT(o.interval.high, 10.5);
}

TEST(Sequential, TruthOnTheBoundRunsToTheCapAndIsInconclusive) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(100.0, 3.0);
  const std::vector<Threshold> ths = {Median(100.0)};
  const Assessment a =
      RunUntilStop(ths, Plan(5, 150), kNode32, [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.samples, 150);
  EXPECT_TRUE(a.stop);
  EXPECT_FALSE(a.decided);
  EXPECT_EQ(a.stop_reason, "maxRepeats");
  EXPECT_THAT(a.stop_detail, HasSubstr("1 of 1 thresholds undecided"));
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
  // "median triadBandwidthGBps 100.2 GB/s in [99.1, 101.3] (99.2% CI, t-log, 17 looks)
  // straddles the bound 100 (>= required) after 150 samples"
  EXPECT_THAT(a.outcomes[0].reason,
              HasSubstr("straddles the bound 100 (>= required) after 150 samples"));
  EXPECT_LT(a.outcomes[0].interval.low, 100.0);
  EXPECT_GT(a.outcomes[0].interval.high, 100.0);
}

TEST(Sequential, NeverDecidesBeforeMinRepeats) {
  const std::vector<Threshold> ths = {Median(1.0)};
  MetricSamples samples;
  for (int n = 1; n < 30; ++n) {
    samples["triadBandwidthGBps"].push_back(100.0 + n);
    const Assessment a = Assess(ths, samples, Plan(30, 60), kFivePercent, kUnits, false);
    EXPECT_FALSE(a.stop) << n;
    EXPECT_FALSE(a.decided) << n;
    EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
    EXPECT_THAT(a.outcomes[0].reason, HasSubstr("not decided before 30 (minRepeats) samples"));
  }
  samples["triadBandwidthGBps"].push_back(200);
  EXPECT_TRUE(Assess(ths, samples, Plan(30, 60), kFivePercent, kUnits, false).decided);
}

TEST(Sequential, OutliersAreCountedReportedAndLeaveTheVerdictToTheSignRule) {
  // Healthy node with a warm-up-slow first sample and two half-speed iterations.
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(100.0, 1.0);
  std::vector<double> x = {80.0};
  for (int i = 0; i < 30; ++i) x.push_back(noise(rng));
  x[7] = 50;
  x[19] = 49;
  const std::vector<Threshold> ths = {Median(90.0)};
  const Assessment a =
      Assess(ths, {{"triadBandwidthGBps", x}}, Plan(5, 150), kNode32, kUnits, false);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_EQ(a.outcomes[0].outliers, 3);
  EXPECT_EQ(a.outcomes[0].samples, 31);         // kept, not dropped
  EXPECT_STREQ(a.outcomes[0].rule, kRuleSign);  // the mean of logs is not trusted with them
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("3 outliers beyond 3 IQR, kept"));
}

TEST(Sequential, OutliersFarFromTheBoundStillLetTheTRuleDecide) {
  // A loaded host: a slow sample among eight, every one of them far below an impossible bound.
  // The sign rule alone could not FAIL within 8 samples at this budget; the t rule may, since
  // no sample is on the other side.
  const std::vector<double> x = {20.1, 20.3, 19.8, 20.0, 8.5, 20.2, 19.9, 20.4};
  const Assessment a = Assess({Median(1e9)}, {{"triadBandwidthGBps", x}}, Plan(5, 8),
                              SplitBudget(0.99, 1), kUnits, true);
  EXPECT_GT(a.outcomes[0].outliers, 0);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kFail) << a.outcomes[0].reason;
  EXPECT_STREQ(a.outcomes[0].rule, kRuleT);
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
  Threshold median = p95;
  median.statistic = Statistic::kMedian;
  median.bound = 12;
  const Assessment a = RunUntilStop({p95, too_tight, median}, Plan(5, 300), kFivePercent,
                                    [&](const std::string&) { return latency(rng); });
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_LE(a.outcomes[0].interval.high, 20.0);
  EXPECT_EQ(a.outcomes[1].verdict, Verdict::kFail);
  EXPECT_THAT(a.outcomes[1].reason, HasSubstr("p95 latencyUs"));
  EXPECT_THAT(a.outcomes[1].reason, HasSubstr("us > bound 5 (<= required)"));
  EXPECT_EQ(a.outcomes[2].verdict, Verdict::kPass);
  EXPECT_LE(a.outcomes[2].interval.high, 12.0);
}

TEST(Sequential, VerdictAgreesWithTheIntervalItShows) {
  std::mt19937_64 rng(6);
  std::normal_distribution<double> noise(100.0, 5.0);
  for (int rep = 0; rep < 200; ++rep) {
    std::vector<double> x(5 + rep % 60);
    for (double& v : x) v = noise(rng);
    if (rep % 5 == 0) x[0] = 50;  // an outlier now and then
    for (Statistic st : {Statistic::kMedian, Statistic::kP05, Statistic::kP95}) {
      for (Op op : {Op::kGe, Op::kLe}) {
        Threshold th = Median(100.0 + (rep % 7 - 3) * 4.0);
        th.statistic = st;
        th.op = op;
        const Outcome o =
            Assess({th}, {{th.metric, x}}, Plan(5, 100), kFivePercent, kUnits, false).outcomes[0];
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
// decision. False FAIL must stay at or below the budget, 5% here, within 3 binomial standard
// errors over 2,000 runs (SE = 0.0049).
TEST(Sequential, FalseFailRateHoldsUnderContinuousMonitoring) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.3);  // true median exactly 1
  const std::vector<Threshold> ths = {Median(1.0)};
  constexpr int kRuns = 2000;
  int false_fail = 0;
  for (int r = 0; r < kRuns; ++r) {
    const Assessment a = RunUntilStop(ths, Plan(5, 100), kFivePercent,
                                      [&](const std::string&) { return noise(rng); });
    false_fail += a.outcomes[0].verdict == Verdict::kFail;
  }
  EXPECT_LE(false_fail / double(kRuns), 0.05 + 3 * 0.0049);
}

// Where the t rule's assumption fails: 5% of samples at half speed pull the mean of the logs
// below the median. With the true median exactly on the bound, false FAIL still holds its
// budget, because the rule leaves samples with far outliers to the sign rule.
TEST(Sequential, FalseFailHoldsWithRareHalfSpeedSamples) {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> noise(0.0, 0.03);
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<Threshold> ths = {Median(1.0)};
  constexpr int kRuns = 2000;
  int false_fail = 0;
  for (int r = 0; r < kRuns; ++r) {
    // The mixture's median is exactly 1 when 0.05 + 0.95 * P(normal part < 1) = 0.5, i.e. the
    // normal part is centred `shift` above 1 with Phi(-shift / 0.03) = 0.45 / 0.95.
    const double shift = 0.03 * 0.0660;  // -z(0.47368) = 0.0660
    const Assessment a = RunUntilStop(ths, Plan(5, 100), kFivePercent, [&](const std::string&) {
      return u(rng) < 0.05 ? 0.5 : 1.0 + shift + noise(rng);
    });
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
    const Assessment a = Assess(ths, samples, Plan(5, 20, true), kFivePercent, kUnits, false);
    if (n < 20) {
      EXPECT_FALSE(a.stop) << n;
      EXPECT_THAT(a.outcomes[0].reason, HasSubstr("not decided before 20 (fixed) samples"));
    } else {
      EXPECT_TRUE(a.stop);
      EXPECT_EQ(a.stop_reason, "fixed");
      EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
      EXPECT_EQ(a.outcomes[0].interval.method, "t-log, 1 look");
    }
  }
}

TEST(Fixed, TooFewSamplesForEitherRuleIsInconclusive) {
  // Two samples: too few for the t rule (it needs 3) and for the sign rule at this budget.
  const std::vector<Threshold> ths = {Median(1.0)};
  const Assessment a = Assess(ths, {{"triadBandwidthGBps", {10, 11}}}, Plan(2, 2, true),
                              SplitBudget(0.99, 10), kUnits, false);
  EXPECT_TRUE(a.stop);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
  EXPECT_THAT(a.outcomes[0].reason, HasSubstr("in [-inf, "));
}

TEST(Budget, TimeRunningOutIsMaxSeconds) {
  const std::vector<Threshold> ths = {Median(100.0)};
  const Assessment a = Assess(ths, {{"triadBandwidthGBps", {99, 101, 98, 102, 100, 97, 103}}},
                              Plan(5, 50), kFivePercent, kUnits, true);
  EXPECT_TRUE(a.stop);
  EXPECT_EQ(a.stop_reason, "maxSeconds");
  EXPECT_THAT(a.stop_detail, HasSubstr("after 7 samples"));
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kInconclusive);
}

TEST(Budget, MissingMetricIsAnErrorAtTheEnd) {
  const std::vector<Threshold> ths = {Median(1.0, "copyBandwidthGBps")};
  const Assessment running = Assess(ths, {}, Plan(5, 50), kFivePercent, kUnits, false);
  EXPECT_EQ(running.outcomes[0].verdict, Verdict::kInconclusive);
  EXPECT_FALSE(running.stop);
  const Assessment done = Assess(ths, {}, Plan(5, 50), kFivePercent, kUnits, true);
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
  const Assessment a = Assess({min_th, max_th}, x, Plan(5, 50), kFivePercent, kUnits, false);
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kFail);
  EXPECT_THAT(a.outcomes[0].reason,
              HasSubstr("min triadBandwidthGBps 8.2 GB/s < bound 9 (>= required)"));
  EXPECT_EQ(a.outcomes[1].verdict, Verdict::kPass);
  EXPECT_THAT(a.outcomes[1].reason, HasSubstr("max triadBandwidthGBps 11.5 GB/s <= bound 12"));
  EXPECT_TRUE(a.stop);  // point checks do not hold sampling open
}

TEST(MeanThresholds, StudentTAtTheLooksAndCiLowAsAPointCheck) {
  // Figures twice their bound: the t rule and the unseen slow share are both settled at the
  // first look (a mean 5% clear waits longer: next test).
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(100.0, 2.0);
  Threshold mean = Median(50.0);
  mean.statistic = Statistic::kMean;
  Threshold ci_low = Median(95.0);
  ci_low.statistic = Statistic::kCiLow;
  const Assessment a = RunUntilStop({mean, ci_low}, Plan(5, 50), kFivePercent,
                                    [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.stop_reason, "decided");
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass);
  EXPECT_EQ(a.outcomes[0].interval.method, "t, 12 looks");
  EXPECT_EQ(a.outcomes[1].verdict, Verdict::kPass);
  EXPECT_DOUBLE_EQ(a.outcomes[1].observed, a.outcomes[1].interval.low);
  EXPECT_GE(a.outcomes[1].observed, 95.0);
}

// Five clean samples 5% above the bound settle the t interval, but not the samples a short run
// never drew: 2% at half speed would pull the mean below the bound and 5 samples miss them all
// nine times in ten. The mean waits, says why, and passes once the samples rule that share out.
TEST(MeanThresholds, AMeanNearItsBoundWaitsUntilRareSlowSamplesAreRuledOut) {
  Threshold mean = Median(95.0);
  mean.statistic = Statistic::kMean;
  std::vector<double> x = {100, 100.5, 99.5, 100.2, 99.8};
  const Outcome early =
      Assess({mean}, {{mean.metric, x}}, Plan(5, 200), kFivePercent, kUnits, false).outcomes[0];
  EXPECT_GT(early.interval.low, 95.0);  // the t interval alone would pass it
  EXPECT_EQ(early.verdict, Verdict::kInconclusive);
  EXPECT_THAT(early.reason, HasSubstr("rare slow samples not yet drawn could still pull the mean "
                                      "below the bound"));
  EXPECT_THAT(early.reason, HasSubstr("samples needed at this margin"));
  std::mt19937_64 rng(12);
  std::normal_distribution<double> noise(100.0, 0.5);
  const Assessment a = RunUntilStop({mean}, Plan(5, 200), kFivePercent,
                                    [&](const std::string&) { return noise(rng); });
  EXPECT_EQ(a.outcomes[0].verdict, Verdict::kPass) << a.outcomes[0].reason;
  // (95 / 100)^n <= 0.025 takes n >= 72: no PASS before that.
  EXPECT_GE(a.samples, 72);
  EXPECT_LE(a.samples, 100);
}

TEST(MeanThresholds, TimeBudgetBetweenLooksLeavesTheMeanUndecided) {
  // The t rule's budget covers its looks (10, 13, ... for minRepeats 10); 3 samples are not
  // one of them, and a fixed plan's only look is at maxRepeats.
  // (A bound a quarter of the figures: three samples also rule out an unseen slow share.)
  Threshold mean = Median(25.0);
  mean.statistic = Statistic::kMean;
  const MetricSamples x = {{mean.metric, {100, 101, 99}}};
  const Assessment early = Assess({mean}, x, Plan(10, 50), kFivePercent, kUnits, true);
  EXPECT_EQ(early.stop_reason, "maxSeconds");
  EXPECT_EQ(early.outcomes[0].verdict, Verdict::kInconclusive);
  const Assessment fixed_early = Assess({mean}, x, Plan(2, 50, true), kFivePercent, kUnits, true);
  EXPECT_EQ(fixed_early.outcomes[0].verdict, Verdict::kInconclusive);
  // At a look of the sequential plan, the same three samples decide.
  const Assessment at_look = Assess({mean}, x, Plan(3, 50), kFivePercent, kUnits, true);
  EXPECT_EQ(at_look.outcomes[0].verdict, Verdict::kPass);
}

TEST(MeanThresholds, SequentialMeanIntervalCoversAtEveryLook) {
  // Bonferroni over the looks of 5..50 at 5% per side: the interval must hold at all 12 looks
  // at once in at least 90% of runs (3 SE = 0.02 over 2,000 runs).
  std::mt19937_64 rng(10);
  std::normal_distribution<double> noise(0.0, 1.0);
  Threshold mean = Median(0.0);
  mean.statistic = Statistic::kMean;
  const std::vector<int> looks = TLooks(Plan(5, 50));
  int always = 0;
  constexpr int kRuns = 2000;
  for (int r = 0; r < kRuns; ++r) {
    std::vector<double> x;
    bool ok = true;
    for (int n = 1; n <= 50 && ok; ++n) {
      x.push_back(noise(rng));
      if (!std::binary_search(looks.begin(), looks.end(), n)) continue;
      const Outcome o =
          Assess({mean}, {{mean.metric, x}}, Plan(5, 50), kFivePercent, kUnits, false).outcomes[0];
      ok = o.interval.low <= 0 && 0 <= o.interval.high;
    }
    always += ok;
  }
  EXPECT_GE(always / double(kRuns), 0.90 - 0.02);
}

TEST(Reach, FewestSamplesPerRule) {
  // Median: the t rule's first look. p05: the sign rule needs many samples to PASS.
  const Reach median = FewestSamples(Median(1.0), Plan(3, 20), kH200Node);
  EXPECT_EQ(median.pass_samples, 3);
  EXPECT_EQ(median.fail_samples, 3);
  Threshold p05 = Median(1.0);
  p05.statistic = Statistic::kP05;
  const Reach tail = FewestSamples(p05, Plan(3, 20), kH200Node);
  EXPECT_EQ(tail.pass_samples, std::numeric_limits<int>::max());  // beyond the cap
  EXPECT_LE(tail.fail_samples, 20);
  EXPECT_GT(FewestSamples(p05, Plan(3, 200), kH200Node).pass_samples, 50);
  // A point check decides from one sample.
  Threshold max = Median(0.0);
  max.statistic = Statistic::kMax;
  max.op = Op::kLe;
  EXPECT_EQ(FewestSamples(max, Plan(3, 20), kH200Node).pass_samples, 1);
  // Two samples can decide no median: the plan refuses maxRepeats 2 for one.
  EXPECT_GT(FewestSamples(Median(1.0), Plan(1, 2), kH200Node).pass_samples, 2);
}

TEST(Reach, TypicalSamplesGrowWithNoiseAndShrinkWithMargin) {
  const int cv1 = TypicalPassSamples(Median(1.0), Plan(3, 60), kH200Node, 0.10, 0.01);
  const int cv3 = TypicalPassSamples(Median(1.0), Plan(3, 60), kH200Node, 0.10, 0.03);
  const int cv8 = TypicalPassSamples(Median(1.0), Plan(3, 60), kH200Node, 0.10, 0.08);
  EXPECT_EQ(cv1, 3);
  EXPECT_LE(cv3, 5);
  EXPECT_GT(cv8, cv3);
  EXPECT_LT(TypicalPassSamples(Median(1.0), Plan(3, 60), kH200Node, 0.30, 0.08), cv8);
}

}  // namespace
}  // namespace perfgate::verdict

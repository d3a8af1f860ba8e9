// Threshold evaluation and the stopping rule: from one test's samples on one target to a
// verdict per threshold, and whether sampling may stop. Standard types only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/stats.h"

namespace perfgate::verdict {

enum class Verdict { kPass, kFail, kInconclusive, kSkipped, kError };
const char* VerdictName(Verdict v);  // "PASS", ...

enum class Statistic { kMean, kMedian, kP05, kP95, kMin, kMax, kCiLow, kCiHigh };
enum class Op { kGe, kGt, kLe, kLt };

// Parses the spec's spellings ("median", ">="); false if unknown.
bool ParseStatistic(const std::string& s, Statistic* out);
bool ParseOp(const std::string& s, Op* out);
const char* StatisticName(Statistic s);
const char* OpName(Op op);

struct Threshold {
  std::string metric;
  Statistic statistic = Statistic::kMedian;
  Op op = Op::kGe;
  double bound = 0;
};

struct Sampling {
  // Defaults for a spec that gives none (the profiles set their own): a healthy figure 10%
  // clear of its bound decides at the first looks (3-6 samples); the cap leaves room for a
  // figure near its bound. docs/methodology.md.
  int warmup = 3;
  int min_repeats = 3;
  int max_repeats = 100;
  double max_seconds = 60;
  // Confidence for the whole node (see SplitBudget), e.g. 0.95.
  double confidence = 0.99;
  // Fixed: always take max_repeats samples, then decide once.
  bool fixed = false;
};

struct Outcome {
  Verdict verdict = Verdict::kInconclusive;
  double observed = 0;       // the statistic's point estimate
  stats::Interval interval;  // the interval the verdict was read from (ends may be +-inf
                             // while the samples cannot bound it yet)
  std::string reason;        // "median triadBandwidthGBps 10.2 GB/s >= 9.0: met" ...
  bool decided = false;      // PASS or FAIL that more samples would not be needed for
  int samples = 0;           // samples of the metric the verdict was read from
  int outliers = 0;          // beyond Tukey's 3-IQR fences; counted, kept in the data
  // Which rule decided (or, undecided, which interval is shown): kRuleT, kRuleSign, ...
  const char* rule = "";
};

// The rules' names, as reports and reasons print them.
inline constexpr const char* kRuleT = "t-log";      // Student-t on log figures, at looks
inline constexpr const char* kRuleTRaw = "t";       // Student-t on the figures, at looks
inline constexpr const char* kRuleSign = "sign";    // signs against the bound, anytime
inline constexpr const char* kRulePoint = "point";  // min/max of the samples taken

using MetricSamples = std::map<std::string, std::vector<double>>;

struct Assessment {
  // True when every threshold is decided (PASS or FAIL) and sampling may stop.
  bool decided = false;
  std::vector<Outcome> outcomes;  // one per threshold, in order
  // Whether sampling stops now: decided, or the budget is spent (`final`, or max_repeats
  // reached). The runner stops on `stop`, not only on `decided`.
  bool stop = false;
  // Set when `stop`: "decided" | "maxRepeats" | "maxSeconds" | "fixed" (report.proto's
  // TestResult.stopReason vocabulary), and a sentence for people, e.g. "decided after 23
  // samples: all 4 thresholds decided".
  std::string stop_reason;
  std::string stop_detail;
  int samples = 0;  // samples the assessment saw (the fewest over the thresholds' metrics)
};

// --- The error budget (docs/methodology.md, "One error budget per node") ------------------

// The chance of each wrong verdict one threshold may have: a PASS when its bound is not met,
// and a FAIL when it is.
struct ErrorBudget {
  double pass_alpha = 0.05;
  double fail_alpha = 0.05;
};

// Whether a statistic is decided under an error budget (mean, median, p05, p95, ciLow,
// ciHigh) rather than read off the samples taken (min, max). Only these count as checks.
bool IsStatistical(Statistic s);

// The budget of each of a node's `checks` statistical thresholds (over all its tests and
// devices) that keeps both of the node's errors at most 1 - node_confidence:
//   - a node PASSes only when every threshold PASSes, so a false node PASS needs a false
//     PASS of some threshold that is not met, which each has at most pass_alpha =
//     1 - node_confidence (the intersection-union test; no split needed);
//   - a node FAILs when any threshold FAILs, so a false node FAIL is a union over the
//     thresholds that are met: fail_alpha = (1 - node_confidence) / checks (Bonferroni).
ErrorBudget SplitBudget(double node_confidence, int checks);

// --- The decision rule's building blocks (Assess uses these; the simulation and the plan
// call them directly). ---------------------------------------------------------------------

// The sample counts at which the t rule looks, ascending: max(3, min_repeats), then every
// count up to 8, then about 25% apart (10, 13, 17, 22, 28, ...), and max_repeats; a fixed plan
// looks once, at max_repeats. Each look gets 1/size of the t rule's budget (Bonferroni over
// looks), so its verdicts hold whichever look sampling stops at.
std::vector<int> TLooks(const Sampling& sampling);

// The t rule's verdict for "location >= bound" on `n` values with mean `mean` and sample
// standard deviation `sd`, at one of `looks` looks, spending pass_alpha / looks against a
// false PASS and fail_alpha / looks against a false FAIL (one-sided Student-t, n - 1
// degrees of freedom). INCONCLUSIVE below 3 values. The interval [low, high] it reads from
// goes to `interval` when given: PASS iff low >= bound, FAIL iff high < bound.
Verdict TVerdict(int n, double mean, double sd, double bound, const ErrorBudget& budget, int looks,
                 stats::Interval* interval = nullptr);

// Sign rule for "Q_q >= bound" on running counts: FAIL once the samples strictly below the
// bound reach `BernoulliMixtureCriticalCount(n, q, fail_alpha)`, PASS once those at or
// above it reach `BernoulliMixtureCriticalCount(n, 1 - q, pass_alpha)`; otherwise
// INCONCLUSIVE (undecided).
Verdict SequentialQuantileVerdict(int count_below, int count_at_or_above, int fail_count,
                                  int pass_count);

// How soon a threshold can be decided at all: the fewest samples after which some data
// would PASS it, and some would FAIL it, under `budget` and `sampling` (INT_MAX: never).
// The plan refuses a threshold either of which exceeds max_repeats.
struct Reach {
  int pass_samples = 0;
  int fail_samples = 0;
};
Reach FewestSamples(const Threshold& threshold, const Sampling& sampling,
                    const ErrorBudget& budget);

// The samples a threshold typically needs when its figures sit `margin` (e.g. 0.10) clear of
// the bound with coefficient of variation `cv`: the first look at which the t rule passes
// with the sample mean and deviation equal to their expectations (the sign rule for p05/p95,
// with every sample clear). At least min_repeats; INT_MAX when the cap comes first.
int TypicalPassSamples(const Threshold& threshold, const Sampling& sampling,
                       const ErrorBudget& budget, double margin, double cv);

// Whether the samples already FAIL a threshold for good: a max that breaks an upper bound
// ("<=", "<") or a min that breaks a lower one (">=", ">"); a max only grows and a min only
// falls as samples come, so no later sample can mend it (an error count above its bound).
// The index of the first such threshold, or -1. Pure.
int FailedForGood(const std::vector<Threshold>& thresholds, const MetricSamples& samples);

// Evaluates the thresholds of one test on one target, each under `budget` (from
// SplitBudget). `units` maps metric -> unit for reasons. Called after every sample with all
// samples so far; `final` says sampling has stopped (budget spent): undecided thresholds are
// then INCONCLUSIVE with the reason. Never decides before sampling.min_repeats samples, nor,
// in fixed mode, before max_repeats, unless `final` (a time budget ran out): the sign
// rule stays valid at any n. Reaching max_repeats counts as final. Pure and thread-safe.
Assessment Assess(const std::vector<Threshold>& thresholds, const MetricSamples& samples,
                  const Sampling& sampling, const ErrorBudget& budget,
                  const std::map<std::string, std::string>& units, bool final);

}  // namespace perfgate::verdict

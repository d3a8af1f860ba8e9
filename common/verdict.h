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
  // Defaults from the simulation in docs/benchmarks.md: a 32-check node at CV 8% needs up
  // to ~110 samples to decide; fewer than 13 can never decide 32 checks at 0.99.
  int warmup = 3;
  int min_repeats = 10;
  int max_repeats = 150;
  double max_seconds = 60;
  // Confidence for the whole node (see SplitConfidence), e.g. 0.95.
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
};

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

// --- The decision rule's building blocks (Assess uses these; the simulation benchmark
// calls them directly on running counts so that it can afford 10^4 nodes per cell). ----------

// Error budget of one direction (false PASS or false FAIL) of a threshold whose two-sided
// interval is built at `threshold_confidence`.
double SideAlpha(double threshold_confidence);
// How many looks a sequential mean threshold's Bonferroni split covers: one per possible
// stopping point from max(2, min_repeats) to max_repeats. (A fixed plan at its planned end
// has one look; one stopped early by its time budget is read as a sequential one.)
int MeanLooks(const Sampling& sampling);
// Sequential quantile rule for "Q_q >= bound" on running counts: FAIL once the samples
// strictly below the bound reach `BernoulliMixtureCriticalCount(n, q, side_alpha)`, PASS once
// those at or above it reach `BernoulliMixtureCriticalCount(n, 1 - q, side_alpha)`; otherwise
// INCONCLUSIVE (undecided).
Verdict SequentialQuantileVerdict(int count_below, int count_at_or_above, int fail_count,
                                  int pass_count);

// The per-threshold confidence that keeps the node's family-wise error at `node_confidence`
// when `checks` thresholds (over all tests and devices of the node) are evaluated.
double SplitConfidence(double node_confidence, int checks);

// Evaluates the thresholds of one test on one target. `threshold_confidence` is the
// per-threshold level (from SplitConfidence). `units` maps metric -> unit for reasons.
// Called after every sample with all samples so far; `final` says sampling has stopped
// (budget spent): undecided thresholds are then INCONCLUSIVE with the reason. Never
// decides before sampling.min_repeats samples, nor, in fixed mode, before max_repeats,
// unless `final` (a time budget ran out): the sequential intervals are valid at any n.
// Reaching max_repeats counts as final. Pure and thread-safe.
Assessment Assess(const std::vector<Threshold>& thresholds, const MetricSamples& samples,
                  const Sampling& sampling, double threshold_confidence,
                  const std::map<std::string, std::string>& units, bool final);

}  // namespace perfgate::verdict

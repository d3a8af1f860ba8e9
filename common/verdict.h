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
  int warmup = 2;
  int min_repeats = 5;
  int max_repeats = 50;
  double max_seconds = 60;
  // Confidence for the whole node (see SplitConfidence), e.g. 0.95.
  double confidence = 0.95;
  // Fixed: always take max_repeats samples, then decide once.
  bool fixed = false;
};

struct Outcome {
  Verdict verdict = Verdict::kInconclusive;
  double observed = 0;          // the statistic's point estimate
  stats::Interval interval;     // the interval the verdict was read from
  std::string reason;           // "median triadBandwidthGBps 10.2 GB/s >= 9.0: met" ...
};

using MetricSamples = std::map<std::string, std::vector<double>>;

struct Assessment {
  // True when every threshold is decided (PASS or FAIL) and sampling may stop.
  bool decided = false;
  std::vector<Outcome> outcomes;  // one per threshold, in order
};

// The per-threshold confidence that keeps the node's family-wise error at `node_confidence`
// when `checks` thresholds (over all tests and devices of the node) are evaluated.
double SplitConfidence(double node_confidence, int checks);

// Evaluates the thresholds of one test on one target. `threshold_confidence` is the
// per-threshold level (from SplitConfidence). `units` maps metric -> unit for reasons.
// Called after every sample with all samples so far; `final` says sampling has stopped
// (budget spent): undecided thresholds are then INCONCLUSIVE with the reason. Never
// decides before sampling.min_repeats samples, nor, in fixed mode, before max_repeats.
Assessment Assess(const std::vector<Threshold>& thresholds, const MetricSamples& samples,
                  const Sampling& sampling, double threshold_confidence,
                  const std::map<std::string, std::string>& units, bool final);

}  // namespace perfgate::verdict

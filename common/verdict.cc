#include "common/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>

namespace perfgate::verdict {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Compact figures for reasons: "9.81", "4800", "0.000123", "-inf".
std::string Num(double x) {
  if (std::isinf(x)) return x > 0 ? "+inf" : "-inf";
  char buf[64];
  if (std::fabs(x) >= 1000 && std::fabs(x) < 1e9) {
    std::snprintf(buf, sizeof(buf), "%.0f", x);
  } else {
    std::snprintf(buf, sizeof(buf), "%.4g", x);
  }
  return buf;
}

std::string Percent(double confidence) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g%%", confidence * 100);
  return buf;
}

// The comparison a FAIL shows: the negation of the op.
const char* NegatedOpName(Op op) {
  switch (op) {
    case Op::kGe:
      return "<";
    case Op::kGt:
      return "<=";
    case Op::kLe:
      return ">";
    case Op::kLt:
      return ">=";
  }
  return "?";
}

bool Holds(double value, Op op, double bound) {
  switch (op) {
    case Op::kGe:
      return value >= bound;
    case Op::kGt:
      return value > bound;
    case Op::kLe:
      return value <= bound;
    case Op::kLt:
      return value < bound;
  }
  return false;
}

bool LowerIsRequired(Op op) { return op == Op::kGe || op == Op::kGt; }

// Verdict from an interval: PASS when all of it meets the bound, FAIL when none of it does.
Verdict FromInterval(const stats::Interval& iv, Op op, double bound) {
  if (Holds(iv.low, op, bound) && Holds(iv.high, op, bound)) return Verdict::kPass;
  if (!Holds(iv.low, op, bound) && !Holds(iv.high, op, bound)) return Verdict::kFail;
  return Verdict::kInconclusive;
}

double QuantileOf(Statistic s) {
  switch (s) {
    case Statistic::kP05:
      return 0.05;
    case Statistic::kP95:
      return 0.95;
    default:
      return 0.5;
  }
}

// CS: a confidence sequence (valid at every n); CI: a fixed-n interval.
const char* IntervalKind(const stats::Interval& iv) {
  return iv.method == "confidence-sequence" ? "CS" : "CI";
}

std::string IntervalText(const stats::Interval& iv) {
  return Percent(iv.confidence) + " " + IntervalKind(iv) + " [" + Num(iv.low) + ", " +
         Num(iv.high) + "]";
}

// The sequential quantile verdict on the samples, as the counts rule states it. An op of
// <= / < is the mirror image: negate the samples and the bound, take the 1 - q quantile.
Verdict SequentialQuantile(std::span<const double> samples, double q, Op op, double bound,
                           double side_alpha) {
  const bool lower_required = LowerIsRequired(op);
  const bool strict = op == Op::kGt || op == Op::kLt;
  const double qq = lower_required ? q : 1 - q;
  // Against the requirement: below the bound, and for a strict op a tie too. Everything
  // else is evidence for it.
  int below = 0;
  for (double x0 : samples) {
    const double x = lower_required ? x0 : -x0;
    const double b = lower_required ? bound : -bound;
    if (x < b || (strict && x == b)) ++below;
  }
  const int n = static_cast<int>(samples.size());
  return SequentialQuantileVerdict(below, n - below,
                                   stats::BernoulliMixtureCriticalCount(n, qq, side_alpha),
                                   stats::BernoulliMixtureCriticalCount(n, 1 - qq, side_alpha));
}

struct Plan {
  bool may_decide = false;  // enough samples for this mode, or final
  bool final = false;
  bool one_look = false;  // fixed mode at its one planned look: fixed-n intervals
};

// The Student-t interval a mean threshold is read from: one look in a fixed plan, else the
// threshold's budget split over every look the sequential plan could stop at.
stats::Interval MeanThresholdInterval(std::span<const double> sorted, const Plan& plan,
                                      const Sampling& sampling, double confidence) {
  const int looks = plan.one_look ? 1 : MeanLooks(sampling);
  stats::Interval iv = stats::MeanInterval(sorted, stats::MeanLookConfidence(confidence, looks));
  if (sorted.size() < 2) {
    iv.low = -kInf;
    iv.high = kInf;
  }
  iv.confidence = confidence;
  if (looks > 1) iv.method = "student-t, Bonferroni over " + std::to_string(looks) + " looks";
  return iv;
}

// Whether n is one of the looks the mean's Bonferroni split covers. A time budget that stops
// sampling before minRepeats is outside it, so the mean cannot be decided then.
bool MeanLookCovered(int n, const Plan& plan, const Sampling& sampling) {
  return plan.one_look || n >= std::max(2, sampling.min_repeats);
}

Outcome AssessOne(const Threshold& th, std::span<const double> samples, const Plan& plan,
                  const Sampling& sampling, double confidence, const std::string& unit) {
  Outcome out;
  out.samples = static_cast<int>(samples.size());
  const std::string stat_name = StatisticName(th.statistic);
  const std::string what = stat_name + " " + th.metric;
  const std::string bound_text = std::string(OpName(th.op)) + " bound " + Num(th.bound);
  const std::string unit_text = unit.empty() ? "" : " " + unit;

  if (samples.empty()) {
    out.verdict = plan.final ? Verdict::kError : Verdict::kInconclusive;
    out.reason = "no samples of " + th.metric;
    return out;
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  out.outliers = stats::CountOutliers(sorted);
  const int n = out.samples;
  const std::string n_text = std::to_string(n) + (n == 1 ? " sample" : " samples");
  std::string outlier_text;
  if (out.outliers > 0) {
    outlier_text = "; " + std::to_string(out.outliers) + " outlier" +
                   (out.outliers == 1 ? "" : "s") + " beyond 3 IQR, kept";
  }

  const double side_alpha = SideAlpha(confidence);
  bool point_check = false;
  switch (th.statistic) {
    case Statistic::kMedian:
    case Statistic::kP05:
    case Statistic::kP95: {
      const double q = QuantileOf(th.statistic);
      out.observed = stats::Quantile(sorted, q);
      if (plan.one_look) {
        out.interval = stats::QuantileInterval(sorted, q, confidence);
        out.verdict = FromInterval(out.interval, th.op, th.bound);
        // Too few samples for the level: [min, max] has less coverage than asked.
        if (out.interval.confidence < confidence) out.verdict = Verdict::kInconclusive;
      } else {
        out.interval = stats::QuantileConfidenceSequence(sorted, q, confidence);
        out.verdict = SequentialQuantile(sorted, q, th.op, th.bound, side_alpha);
      }
      break;
    }
    case Statistic::kMean: {
      double sum = 0;
      for (double x : sorted) sum += x;
      out.observed = sum / n;
      out.interval = MeanThresholdInterval(sorted, plan, sampling, confidence);
      out.verdict = FromInterval(out.interval, th.op, th.bound);
      if (!MeanLookCovered(n, plan, sampling)) out.verdict = Verdict::kInconclusive;
      break;
    }
    case Statistic::kMin:
    case Statistic::kMax: {
      point_check = true;
      out.observed = th.statistic == Statistic::kMin ? sorted.front() : sorted.back();
      out.interval = stats::Interval{out.observed, out.observed, 0, "point"};
      out.verdict = Holds(out.observed, th.op, th.bound) ? Verdict::kPass : Verdict::kFail;
      break;
    }
    case Statistic::kCiLow:
    case Statistic::kCiHigh: {
      point_check = true;
      out.interval = MeanThresholdInterval(sorted, plan, sampling, confidence);
      out.observed = th.statistic == Statistic::kCiLow ? out.interval.low : out.interval.high;
      if (!MeanLookCovered(n, plan, sampling)) {
        out.verdict = Verdict::kInconclusive;
      } else if (Holds(out.observed, th.op, th.bound)) {
        out.verdict = Verdict::kPass;
      } else if (plan.final || FromInterval(out.interval, th.op, th.bound) == Verdict::kFail) {
        // Not met at the end, or the whole interval already on the wrong side.
        out.verdict = Verdict::kFail;
      } else {
        out.verdict = Verdict::kInconclusive;
      }
      break;
    }
  }

  if (!plan.may_decide) {
    out.verdict = Verdict::kInconclusive;
    out.decided = false;
    out.reason = what + " " + Num(out.observed) + unit_text + " after " + n_text +
                 ": not decided before " +
                 (sampling.fixed ? std::to_string(sampling.max_repeats) + " (fixed)"
                                 : std::to_string(sampling.min_repeats) + " (minRepeats)") +
                 " samples";
    return out;
  }
  out.decided = out.verdict == Verdict::kPass || out.verdict == Verdict::kFail;
  const std::string figure = what + " " + Num(out.observed) + unit_text;
  const std::string interval_text =
      point_check && th.statistic != Statistic::kCiLow && th.statistic != Statistic::kCiHigh
          ? ""
          : ", " + IntervalText(out.interval);
  switch (out.verdict) {
    case Verdict::kPass:
      out.reason =
          figure + " " + bound_text + ": met" + interval_text + ", " + n_text + outlier_text;
      break;
    case Verdict::kFail:
      out.reason = figure + " " + NegatedOpName(th.op) + " bound " + Num(th.bound) + " (" +
                   OpName(th.op) + " required)" + interval_text + ", " + n_text + outlier_text;
      break;
    default:
      if (FromInterval(out.interval, th.op, th.bound) != Verdict::kInconclusive) {
        // The interval is on one side, but too few samples for the level asked.
        out.reason = figure + " " + bound_text + ": " + n_text + " cannot decide it at " +
                     Percent(confidence) + " confidence ([" + Num(out.interval.low) + ", " +
                     Num(out.interval.high) + "] covers " + Percent(out.interval.confidence) +
                     "); take more samples" + outlier_text;
        break;
      }
      out.reason = figure + " in [" + Num(out.interval.low) + ", " + Num(out.interval.high) +
                   "] (" + Percent(out.interval.confidence) + " " + IntervalKind(out.interval) +
                   ") straddles the bound " + Num(th.bound) + " (" + OpName(th.op) +
                   " required) after " + n_text + outlier_text;
      break;
  }
  return out;
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kInconclusive:
      return "INCONCLUSIVE";
    case Verdict::kSkipped:
      return "SKIPPED";
    case Verdict::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

bool ParseStatistic(const std::string& s, Statistic* out) {
  static const std::pair<const char*, Statistic> kNames[] = {
      {"mean", Statistic::kMean},   {"median", Statistic::kMedian}, {"p05", Statistic::kP05},
      {"p95", Statistic::kP95},     {"min", Statistic::kMin},       {"max", Statistic::kMax},
      {"ciLow", Statistic::kCiLow}, {"ciHigh", Statistic::kCiHigh},
  };
  for (const auto& [name, value] : kNames) {
    if (s == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

bool ParseOp(const std::string& s, Op* out) {
  if (s == ">=") {
    *out = Op::kGe;
  } else if (s == ">") {
    *out = Op::kGt;
  } else if (s == "<=") {
    *out = Op::kLe;
  } else if (s == "<") {
    *out = Op::kLt;
  } else {
    return false;
  }
  return true;
}

const char* StatisticName(Statistic s) {
  switch (s) {
    case Statistic::kMean:
      return "mean";
    case Statistic::kMedian:
      return "median";
    case Statistic::kP05:
      return "p05";
    case Statistic::kP95:
      return "p95";
    case Statistic::kMin:
      return "min";
    case Statistic::kMax:
      return "max";
    case Statistic::kCiLow:
      return "ciLow";
    case Statistic::kCiHigh:
      return "ciHigh";
  }
  return "?";
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kGe:
      return ">=";
    case Op::kGt:
      return ">";
    case Op::kLe:
      return "<=";
    case Op::kLt:
      return "<";
  }
  return "?";
}

double SplitConfidence(double node_confidence, int checks) {
  // Bonferroni over directional errors: a threshold's truth lies on one side of its bound,
  // so it can be wrong in one direction only, with probability at most (1 - c) / 2 for a
  // two-sided level c. k thresholds at c = 1 - 2 (1 - node) / k keep the chance of any
  // wrong verdict on the node at most 1 - node (the union bound needs no independence).
  const int k = std::max(1, checks);
  return std::clamp(1 - 2 * (1 - node_confidence) / k, 0.0, 1.0);
}

double SideAlpha(double threshold_confidence) { return (1 - threshold_confidence) / 2; }

int MeanLooks(const Sampling& sampling) {
  const int first = std::max(2, sampling.min_repeats);
  return std::max(1, sampling.max_repeats - first + 1);
}

Verdict SequentialQuantileVerdict(int count_below, int count_at_or_above, int fail_count,
                                  int pass_count) {
  if (count_below >= fail_count) return Verdict::kFail;
  if (count_at_or_above >= pass_count) return Verdict::kPass;
  return Verdict::kInconclusive;
}

Assessment Assess(const std::vector<Threshold>& thresholds, const MetricSamples& samples,
                  const Sampling& sampling, double threshold_confidence,
                  const std::map<std::string, std::string>& units, bool final) {
  Assessment a;
  int n = std::numeric_limits<int>::max();
  for (const Threshold& th : thresholds) {
    auto it = samples.find(th.metric);
    n = std::min(n, it == samples.end() ? 0 : static_cast<int>(it->second.size()));
  }
  if (thresholds.empty()) {
    n = 0;
    for (const auto& [metric, values] : samples) {
      n = std::max(n, static_cast<int>(values.size()));
    }
  }
  a.samples = n;
  const bool at_cap = n >= sampling.max_repeats;
  Plan plan;
  plan.final = final || at_cap;
  plan.one_look = sampling.fixed && at_cap;
  plan.may_decide = plan.final || (!sampling.fixed && n >= sampling.min_repeats);
  // A fixed plan that ran out of time before its one look decides with the sequential
  // intervals, which stay valid at whatever n the clock stopped it.

  static const std::string kNoUnit;
  bool all_decided = true;
  for (const Threshold& th : thresholds) {
    auto it = samples.find(th.metric);
    std::span<const double> values;
    if (it != samples.end()) values = it->second;
    auto u = units.find(th.metric);
    Outcome out = AssessOne(th, values, plan, sampling, threshold_confidence,
                            u == units.end() ? kNoUnit : u->second);
    all_decided = all_decided && out.decided;
    a.outcomes.push_back(std::move(out));
  }
  a.decided = all_decided && plan.may_decide;

  const int total = static_cast<int>(thresholds.size());
  int undecided = 0;
  for (const Outcome& o : a.outcomes) undecided += o.decided ? 0 : 1;
  const std::string n_text = std::to_string(n) + (n == 1 ? " sample" : " samples");
  if (plan.final) {
    a.stop = true;
    if (sampling.fixed && at_cap) {
      a.stop_reason = "fixed";
      a.stop_detail = "fixed: " + n_text + " as the spec asks";
    } else if (at_cap) {
      a.stop_reason = "maxRepeats";
      a.stop_detail = "maxRepeats: " + n_text;
    } else {
      a.stop_reason = "maxSeconds";
      a.stop_detail = "maxSeconds: time budget spent after " + n_text;
    }
    if (undecided > 0) {
      a.stop_detail += ", " + std::to_string(undecided) + " of " + std::to_string(total) +
                       " thresholds undecided";
    } else if (!a.stop_detail.empty()) {
      a.stop_detail += ", all " + std::to_string(total) + " thresholds decided";
    }
  } else if (a.decided) {
    a.stop = true;
    a.stop_reason = "decided";
    a.stop_detail =
        "decided after " + n_text + ": all " + std::to_string(total) + " thresholds decided";
  }
  return a;
}

}  // namespace perfgate::verdict

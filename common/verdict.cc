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

// Every interval shown is anytime-valid except a fixed plan's one look: CS (a confidence
// sequence, valid at every n) for the sign rule, CI for the t rule at one of its looks.
const char* IntervalKind(const stats::Interval& iv) {
  return iv.method.rfind(kRuleSign, 0) == 0 ? "CS" : "CI";
}

std::string IntervalText(const stats::Interval& iv) {
  return Percent(iv.confidence) + " " + IntervalKind(iv) + " [" + Num(iv.low) + ", " +
         Num(iv.high) + "]";
}

// "the >= side is low": for a bound the figure must stay above, a PASS is read from the low end
// of the interval and a FAIL from the high end; for <= / < the other way round.
struct EndAlphas {
  double low = 0;
  double high = 0;
};
EndAlphas EndsFor(Op op, double pass_alpha, double fail_alpha) {
  return LowerIsRequired(op) ? EndAlphas{pass_alpha, fail_alpha}
                             : EndAlphas{fail_alpha, pass_alpha};
}

// A median threshold's errors are shared by its two rules: most to the t rule, which decides
// clean figures in few samples, the rest to the sign rule, which needs no assumption on their
// shape and takes over when far outliers make the t rule's reading untrustworthy.
constexpr double kTShare = 0.8;
ErrorBudget Share(const ErrorBudget& b, double share) {
  return {b.pass_alpha * share, b.fail_alpha * share};
}

// --- The sign rule ----------------------------------------------------------------------

// The samples against the requirement (below a >= bound; for a strict op a tie too) and the
// rest, which are evidence for it.
int CountAgainst(std::span<const double> sorted, Op op, double bound) {
  const bool lower_required = LowerIsRequired(op);
  const bool strict = op == Op::kGt || op == Op::kLt;
  int against = 0;
  for (double x : sorted) {
    if (lower_required ? (x < bound || (strict && x == bound))
                       : (x > bound || (strict && x == bound))) {
      ++against;
    }
  }
  return against;
}

// The probability of a sample against the requirement when the q-quantile sits exactly at the
// bound: q for a lower bound, 1 - q for an upper bound (the mirror image).
double NullAgainst(double q, Op op) { return LowerIsRequired(op) ? q : 1 - q; }

Verdict SignVerdict(std::span<const double> sorted, double q, Op op, double bound,
                    const ErrorBudget& budget) {
  const int n = static_cast<int>(sorted.size());
  const int against = CountAgainst(sorted, op, bound);
  const double p_against = NullAgainst(q, op);
  return SequentialQuantileVerdict(
      against, n - against, stats::BernoulliMixtureCriticalCount(n, p_against, budget.fail_alpha),
      stats::BernoulliMixtureCriticalCount(n, 1 - p_against, budget.pass_alpha));
}

// The sign rule's confidence sequence for the q-quantile, each end at its own error.
stats::Interval SignInterval(std::span<const double> sorted, double q, const EndAlphas& alphas) {
  stats::Interval iv = stats::QuantileConfidenceSequence(sorted, q, alphas.low, alphas.high);
  iv.method = kRuleSign;
  return iv;
}

// The fewest samples, all on one side, with which the sign rule rejects "a sample is on
// that side with probability at most p0" at `alpha`; INT_MAX when more than `cap`.
int SignFewest(double p0, double alpha, int cap) {
  for (int n = 1; n <= cap; ++n) {
    if (stats::BernoulliMixtureCriticalCount(n, p0, alpha) <= n) return n;
  }
  return std::numeric_limits<int>::max();
}

// --- The t rule ---------------------------------------------------------------------------

struct Moments {
  int n = 0;
  double mean = 0;
  double sd = 0;
};

// Mean and sample deviation of the values, on the log scale when `log` (every value and the
// bound positive).
Moments MomentsOf(std::span<const double> values, bool log) {
  Moments m;
  m.n = static_cast<int>(values.size());
  if (m.n == 0) return m;
  double sum = 0;
  for (double x : values) sum += log ? std::log(x) : x;
  m.mean = sum / m.n;
  double ss = 0;
  for (double x : values) {
    const double d = (log ? std::log(x) : x) - m.mean;
    ss += d * d;
  }
  m.sd = m.n > 1 ? std::sqrt(ss / (m.n - 1)) : 0;
  return m;
}

// The t rule applies on the log scale when ratios are what matter: positive figures and a
// positive bound (bandwidths, throughputs, latencies); otherwise on the figures themselves.
bool UseLog(std::span<const double> sorted, double bound) {
  return bound > 0 && !sorted.empty() && sorted.front() > 0;
}

bool IsLook(int n, const std::vector<int>& looks) {
  return std::binary_search(looks.begin(), looks.end(), n);
}

// The t rule on `sorted` for `op`/`bound`, with its interval mapped back to the figures' scale.
Verdict TRule(std::span<const double> sorted, Op op, double bound, bool log,
              const ErrorBudget& budget, int looks, stats::Interval* iv) {
  const Moments m = MomentsOf(sorted, log);
  const double b = log ? std::log(bound) : bound;
  // Orient to "location >= bound": an upper bound is a lower bound on the negated values.
  const bool lower = LowerIsRequired(op);
  stats::Interval oriented;
  const Verdict v =
      TVerdict(m.n, lower ? m.mean : -m.mean, m.sd, lower ? b : -b, budget, looks, &oriented);
  double lo = lower ? oriented.low : -oriented.high;
  double hi = lower ? oriented.high : -oriented.low;
  if (log) {
    lo = std::exp(lo);
    hi = std::exp(hi);
  }
  *iv = stats::Interval{lo, hi, oriented.confidence,
                        std::string(log ? kRuleT : kRuleTRaw) + ", " + std::to_string(looks) +
                            (looks == 1 ? " look" : " looks")};
  return v;
}

// --- The mean's unseen share ---------------------------------------------------------------

// A mean can be pulled below its bound by rare slow samples a short run never draws: 2% of
// samples at half speed cost the mean 1%, and 5 samples miss them all 90% of the time. No
// interval on the samples drawn sees that. For figures that cannot be negative (bandwidths,
// throughputs) the damage is bounded: a share e of the distribution, however slow, lowers a
// mean of L by at most e x L, so a mean whose drawn samples put it at >= L is below B only if
// e > 1 - B / L, and n samples all miss a share that large with probability (B / L)^n at most.
// A `mean >=` PASS therefore also needs (B / L)^n <= its part of the false-PASS budget: about
// 40 samples at 10% clear of the bound, 125 at 3% (docs/methodology.md). A `mean <=` has no
// such bound (one rare sample of any size lifts a mean), and the plan refuses it.
constexpr double kUnseenShare = 0.5;

// "" when `sorted` (its mean's lower bound `low`) rules out an unseen slow share under
// `alpha`; otherwise why not, for the reason text.
std::string UnseenShareHolds(std::span<const double> sorted, double bound, double low,
                             double alpha) {
  if (bound <= 0) return "";  // a mean of figures that cannot be negative is >= 0 anyway
  if (sorted.empty() || sorted.front() < 0) {
    return "a figure below 0: a rare slow sample could lower this mean without limit";
  }
  const double n = static_cast<double>(sorted.size());
  if (low > bound && n * std::log(bound / low) <= std::log(alpha)) return "";
  const double share = low > bound ? 1 - bound / low : 0;
  const double needed = low > bound ? std::ceil(std::log(alpha) / std::log(bound / low)) : kInf;
  return "rare slow samples not yet drawn could still pull the mean below the bound: a share of " +
         Num(100 * share) + "% would, and " + Num(n) +
         " samples miss a share that large too often" +
         (std::isfinite(needed) ? " (about " + Num(needed) + " samples needed at this margin)"
                                : "");
}

struct Plan {
  bool may_decide = false;  // enough samples for this mode, or final
  bool final = false;
};

Verdict Combine(Verdict t, Verdict sign) {
  const bool pass = t == Verdict::kPass || sign == Verdict::kPass;
  const bool fail = t == Verdict::kFail || sign == Verdict::kFail;
  if (pass && fail) return Verdict::kInconclusive;  // the rules disagree: take more samples
  if (pass) return Verdict::kPass;
  if (fail) return Verdict::kFail;
  return Verdict::kInconclusive;
}

// The median: two rules, each with half of each error: the t rule on log figures (few samples
// when the margin is wide) and the sign rule (no assumption on the distribution's shape).
// `out` has its samples and outliers counted.
void AssessMedian(const Threshold& th, const std::vector<double>& sorted, const ErrorBudget& budget,
                  int k, bool at_look, Outcome* out) {
  const int n = out->samples;
  out->observed = stats::Quantile(sorted, 0.5);
  const ErrorBudget t_part = Share(budget, kTShare);
  const ErrorBudget sign_part = Share(budget, 1 - kTShare);
  const bool log = UseLog(sorted, th.bound);
  stats::Interval t_iv;
  Verdict t = TRule(sorted, th.op, th.bound, log, t_part, k, &t_iv);
  // The t rule reads the mean of the (log) figures. It stands in for the median only
  // where the two agree: no far outliers, and the sample median on the same side.
  // Far outliers void the reading unless every sample lies on the verdict's side of the
  // bound: then the median is there too, whatever the tails do.
  const bool median_side_met = Holds(out->observed, th.op, th.bound);
  const int against = CountAgainst(sorted, th.op, th.bound);
  const bool all_on_its_side =
      (t == Verdict::kPass && against == 0) || (t == Verdict::kFail && against == n);
  if (!at_look || (out->outliers > 0 && !all_on_its_side) ||
      (t == Verdict::kPass && !median_side_met) || (t == Verdict::kFail && median_side_met)) {
    t = Verdict::kInconclusive;
  }
  const Verdict sign = SignVerdict(sorted, 0.5, th.op, th.bound, sign_part);
  const bool t_read =
      at_look && n >= 3 && out->outliers == 0 && !(t_iv.low >= th.bound && !median_side_met);
  out->verdict = Combine(t, sign);
  const stats::Interval sign_iv =
      SignInterval(sorted, 0.5, EndsFor(th.op, sign_part.pass_alpha, sign_part.fail_alpha));
  if (t != Verdict::kInconclusive && sign != Verdict::kInconclusive && t != sign) {
    // The rules disagree: show the hull of both intervals, which straddles the bound.
    out->interval =
        stats::Interval{std::min(t_iv.low, sign_iv.low), std::max(t_iv.high, sign_iv.high),
                        std::min(t_iv.confidence, sign_iv.confidence),
                        std::string(kRuleSign) + " and " + t_iv.method};
    out->rule = kRuleSign;
  } else if (t != Verdict::kInconclusive || (sign == Verdict::kInconclusive && t_read)) {
    out->interval = t_iv;
    out->rule = log ? kRuleT : kRuleTRaw;
  } else {
    out->interval = sign_iv;
    out->rule = kRuleSign;
  }
}

// The mean: half of the false-PASS budget to the t rule, half to the samples the run never drew.
// A PASS that share does not hold is held back, and why goes in `held_text`.
void AssessMean(const Threshold& th, const std::vector<double>& sorted, const ErrorBudget& budget,
                int k, bool at_look, Outcome* out, std::string* held_text) {
  double sum = 0;
  for (double x : sorted) sum += x;
  out->observed = sum / out->samples;
  const ErrorBudget t_part{budget.pass_alpha * (1 - kUnseenShare), budget.fail_alpha};
  out->verdict = TRule(sorted, th.op, th.bound, false, t_part, k, &out->interval);
  if (!at_look) out->verdict = Verdict::kInconclusive;
  if (out->verdict == Verdict::kPass) {
    *held_text = LowerIsRequired(th.op)
                     ? UnseenShareHolds(sorted, th.bound, out->interval.low,
                                        budget.pass_alpha * kUnseenShare)
                     : "one rare slow sample of any size lifts a mean: no number of samples "
                       "rules it out (bound the median or p95)";
    if (!held_text->empty()) out->verdict = Verdict::kInconclusive;
  }
  out->rule = kRuleTRaw;
}

// ciLow / ciHigh: a point check of one end of the mean's interval, built as the mean rule
// builds it.
void AssessCiEnd(const Threshold& th, const std::vector<double>& sorted, const ErrorBudget& budget,
                 int k, bool at_look, bool final, Outcome* out) {
  const bool low_end = th.statistic == Statistic::kCiLow;
  TRule(sorted, low_end ? Op::kGe : Op::kLe, th.bound, false, budget, k, &out->interval);
  out->observed = low_end ? out->interval.low : out->interval.high;
  out->rule = kRuleTRaw;
  // Too early and undecided are both INCONCLUSIVE, for different reasons.
  if (out->samples < 3 || (!at_look && !final)) {  // NOLINT(bugprone-branch-clone)
    out->verdict = Verdict::kInconclusive;
  } else if (Holds(out->observed, th.op, th.bound)) {
    out->verdict = Verdict::kPass;
  } else if (final || FromInterval(out->interval, th.op, th.bound) == Verdict::kFail) {
    // Not met at the end, or the whole interval already on the wrong side.
    out->verdict = Verdict::kFail;
  } else {
    out->verdict = Verdict::kInconclusive;
  }
}

// What a decided or undecided threshold says, in words: `figure` is "<statistic> <metric>
// <observed> <unit>", `n_text` the samples, `held_text` why a PASS is held back ("" when none).
std::string ReasonOf(const Threshold& th, const Outcome& out, bool shows_interval,
                     const std::string& figure, const std::string& n_text,
                     const std::string& outlier_text, const std::string& held_text) {
  const std::string bound_text = std::string(OpName(th.op)) + " bound " + Num(th.bound);
  const std::string interval_text = shows_interval ? ", " + IntervalText(out.interval) : "";
  const std::string rule_text =
      out.decided && shows_interval ? " (" + out.interval.method + ")" : "";
  switch (out.verdict) {
    case Verdict::kPass:
      return figure + " " + bound_text + ": met" + interval_text + rule_text + ", " + n_text +
             outlier_text;
    case Verdict::kFail:
      return figure + " " + NegatedOpName(th.op) + " bound " + Num(th.bound) + " (" +
             OpName(th.op) + " required)" + interval_text + rule_text + ", " + n_text +
             outlier_text;
    default:
      break;
  }
  if (!held_text.empty()) {
    return figure + " " + bound_text + ": " + n_text + " do not decide it yet (" +
           IntervalText(out.interval) + ", " + out.interval.method + "; " + held_text +
           "); take more samples" + outlier_text;
  }
  if (FromInterval(out.interval, th.op, th.bound) != Verdict::kInconclusive) {
    // The interval is on one side, but not at a look of the rule that drew it, or the
    // rules disagree: more samples decide it.
    return figure + " " + bound_text + ": " + n_text + " do not decide it yet (" +
           IntervalText(out.interval) + ", " + out.interval.method + "); take more samples" +
           outlier_text;
  }
  return figure + " in [" + Num(out.interval.low) + ", " + Num(out.interval.high) + "] (" +
         Percent(out.interval.confidence) + " " + IntervalKind(out.interval) + ", " +
         out.interval.method + ") straddles the bound " + Num(th.bound) + " (" + OpName(th.op) +
         " required) after " + n_text + outlier_text;
}

Outcome AssessOne(const Threshold& th, std::span<const double> samples, const Plan& plan,
                  const Sampling& sampling, const ErrorBudget& budget,
                  const std::vector<int>& looks, const std::string& unit) {
  Outcome out;
  out.samples = static_cast<int>(samples.size());
  const std::string what = std::string(StatisticName(th.statistic)) + " " + th.metric;
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

  const int k = static_cast<int>(looks.size());
  const bool at_look = IsLook(n, looks);
  bool point_check = false;
  std::string held_text;  // why a PASS the interval shows is held back
  switch (th.statistic) {
    case Statistic::kMedian:
      AssessMedian(th, sorted, budget, k, at_look, &out);
      break;
    case Statistic::kP05:
    case Statistic::kP95: {
      const double q = QuantileOf(th.statistic);
      out.observed = stats::Quantile(sorted, q);
      out.verdict = SignVerdict(sorted, q, th.op, th.bound, budget);
      out.interval = SignInterval(sorted, q, EndsFor(th.op, budget.pass_alpha, budget.fail_alpha));
      out.rule = kRuleSign;
      break;
    }
    case Statistic::kMean:
      AssessMean(th, sorted, budget, k, at_look, &out, &held_text);
      break;
    case Statistic::kMin:
    case Statistic::kMax:
      point_check = true;
      out.observed = th.statistic == Statistic::kMin ? sorted.front() : sorted.back();
      out.interval = stats::Interval{out.observed, out.observed, 0, kRulePoint};
      out.verdict = Holds(out.observed, th.op, th.bound) ? Verdict::kPass : Verdict::kFail;
      out.rule = kRulePoint;
      break;
    case Statistic::kCiLow:
    case Statistic::kCiHigh:
      point_check = true;
      AssessCiEnd(th, sorted, budget, k, at_look, plan.final, &out);
      break;
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
  const bool shows_interval =
      !point_check || th.statistic == Statistic::kCiLow || th.statistic == Statistic::kCiHigh;
  out.reason = ReasonOf(th, out, shows_interval, what + " " + Num(out.observed) + unit_text, n_text,
                        outlier_text, held_text);
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

bool IsStatistical(Statistic s) { return s != Statistic::kMin && s != Statistic::kMax; }

ErrorBudget SplitBudget(double node_confidence, int checks) {
  const double alpha = std::clamp(1 - node_confidence, 0.0, 1.0);
  return {alpha, alpha / std::max(1, checks)};
}

std::vector<int> TLooks(const Sampling& sampling) {
  if (sampling.fixed) return {std::max(1, sampling.max_repeats)};
  const int first = std::max(3, sampling.min_repeats);
  std::vector<int> looks;
  if (first > sampling.max_repeats) return {std::max(1, sampling.max_repeats)};
  looks.push_back(first);
  for (long long n = 4; n < sampling.max_repeats; n = n < 8 ? n + 1 : (n * 5 + 3) / 4) {
    if (n > first) looks.push_back(static_cast<int>(n));
  }
  if (looks.back() != sampling.max_repeats) looks.push_back(sampling.max_repeats);
  return looks;
}

Verdict TVerdict(int n, double mean, double sd, double bound, const ErrorBudget& budget, int looks,
                 stats::Interval* interval) {
  const double pass_alpha = budget.pass_alpha / std::max(1, looks);
  const double fail_alpha = budget.fail_alpha / std::max(1, looks);
  stats::Interval iv{-kInf, kInf, 1 - pass_alpha - fail_alpha, ""};
  Verdict v = Verdict::kInconclusive;
  if (n >= 3) {
    const double dof = n - 1;
    const double se = sd / std::sqrt(static_cast<double>(n));
    iv.low = mean - stats::StudentTQuantile(1 - pass_alpha, dof) * se;
    iv.high = mean + stats::StudentTQuantile(1 - fail_alpha, dof) * se;
    if (iv.low >= bound) {
      v = Verdict::kPass;
    } else if (iv.high < bound) {
      v = Verdict::kFail;
    }
  }
  if (interval != nullptr) *interval = iv;
  return v;
}

Verdict SequentialQuantileVerdict(int count_below, int count_at_or_above, int fail_count,
                                  int pass_count) {
  if (count_below >= fail_count) return Verdict::kFail;
  if (count_at_or_above >= pass_count) return Verdict::kPass;
  return Verdict::kInconclusive;
}

Reach FewestSamples(const Threshold& th, const Sampling& sampling, const ErrorBudget& budget) {
  constexpr int kNever = std::numeric_limits<int>::max();
  const int cap = sampling.max_repeats;
  if (!IsStatistical(th.statistic)) {
    const int at = std::max(1, sampling.fixed ? cap : 1);  // a fixed plan decides at its cap
    return {at, at};
  }
  const std::vector<int> looks = TLooks(sampling);
  // The t rule decides at its first look (needing 3 values) given data clear enough.
  const int t_first = looks.front() >= 3 ? looks.front() : kNever;
  const double q = QuantileOf(th.statistic);
  const double p_against = NullAgainst(q, th.op);
  auto sign = [&](const ErrorBudget& b) {
    return Reach{SignFewest(1 - p_against, b.pass_alpha, cap),
                 SignFewest(p_against, b.fail_alpha, cap)};
  };
  Reach r{kNever, kNever};
  switch (th.statistic) {
    case Statistic::kMedian: {
      const Reach s = sign(Share(budget, 1 - kTShare));
      r = {std::min(t_first, s.pass_samples), std::min(t_first, s.fail_samples)};
      break;
    }
    case Statistic::kP05:
    case Statistic::kP95:
      r = sign(budget);
      break;
    default:  // mean, ciLow, ciHigh: the t rule alone
      r = {t_first, t_first};
      break;
  }
  const int floor = sampling.fixed ? cap : std::max(1, sampling.min_repeats);
  auto settle = [&](int x) { return x > cap ? kNever : std::max(x, floor); };
  return {settle(r.pass_samples), settle(r.fail_samples)};
}

int TypicalPassSamples(const Threshold& th, const Sampling& sampling, const ErrorBudget& budget,
                       double margin, double cv) {
  constexpr int kNever = std::numeric_limits<int>::max();
  if (!IsStatistical(th.statistic)) return std::max(1, sampling.fixed ? sampling.max_repeats : 1);
  const std::vector<int> looks = TLooks(sampling);
  const int k = static_cast<int>(looks.size());
  const bool median = th.statistic == Statistic::kMedian;
  const bool t_applies = median || th.statistic == Statistic::kMean ||
                         th.statistic == Statistic::kCiLow || th.statistic == Statistic::kCiHigh;
  // Distance to the bound in the rule's scale, and the deviation, as the expectations of a
  // figure `margin` clear of its bound with coefficient of variation `cv`.
  const double shift = median ? std::log1p(margin) : margin / (1 + margin);
  const bool mean_ge = th.statistic == Statistic::kMean && LowerIsRequired(th.op);
  ErrorBudget t_budget = median ? Share(budget, kTShare) : budget;
  if (mean_ge) t_budget.pass_alpha *= 1 - kUnseenShare;
  int best = kNever;
  if (t_applies) {
    for (int n : looks) {
      if (n < sampling.min_repeats || n < 3) continue;
      // A `mean >=` PASS also waits until an unseen slow share is ruled out (UnseenShareHolds).
      if (mean_ge && n * std::log1p(margin) < -std::log(budget.pass_alpha * kUnseenShare)) continue;
      if (TVerdict(n, shift, cv, 0, t_budget, k) == Verdict::kPass) {
        best = n;
        break;
      }
    }
  }
  if (!t_applies || median) {
    // The sign rule with the expected share of samples on the wrong side (normal figures).
    const double q = QuantileOf(th.statistic);
    const ErrorBudget b = median ? Share(budget, 1 - kTShare) : budget;
    const double p_wrong = 0.5 * std::erfc(std::log1p(margin) / cv / std::sqrt(2.0));
    const double p0 = 1 - NullAgainst(q, th.op);
    const int first = sampling.fixed ? sampling.max_repeats : std::max(1, sampling.min_repeats);
    for (int n = first; n <= sampling.max_repeats && n < best; ++n) {
      const int clear = static_cast<int>(std::floor(n * (1 - p_wrong)));
      if (clear >= stats::BernoulliMixtureCriticalCount(n, p0, b.pass_alpha)) {
        best = n;
        break;
      }
    }
  }
  if (best != kNever && sampling.fixed) best = sampling.max_repeats;
  return best;
}

int FailedForGood(const std::vector<Threshold>& thresholds, const MetricSamples& samples) {
  for (std::size_t i = 0; i < thresholds.size(); ++i) {
    const Threshold& th = thresholds[i];
    const bool upper = th.op == Op::kLe || th.op == Op::kLt;
    const bool monotone =
        (th.statistic == Statistic::kMax && upper) || (th.statistic == Statistic::kMin && !upper);
    auto it = samples.find(th.metric);
    if (!monotone || it == samples.end() || it->second.empty()) continue;
    const auto [low, high] = std::minmax_element(it->second.begin(), it->second.end());
    if (!Holds(th.statistic == Statistic::kMax ? *high : *low, th.op, th.bound)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Assessment Assess(const std::vector<Threshold>& thresholds, const MetricSamples& samples,
                  const Sampling& sampling, const ErrorBudget& budget,
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
  plan.may_decide = plan.final || (!sampling.fixed && n >= sampling.min_repeats);
  // A fixed plan that ran out of time before its one look decides with the sign rule, which
  // stays valid at whatever n the clock stopped it.
  const std::vector<int> looks = TLooks(sampling);

  static const std::string kNoUnit;
  bool all_decided = true;
  for (const Threshold& th : thresholds) {
    auto it = samples.find(th.metric);
    std::span<const double> values;
    if (it != samples.end()) values = it->second;
    auto u = units.find(th.metric);
    Outcome out = AssessOne(th, values, plan, sampling, budget, looks,
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

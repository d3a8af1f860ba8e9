// Descriptive statistics and confidence intervals over one metric's samples.
// Standard types only. Every function is pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace perfgate::stats {

struct Interval {
  double low = 0;
  double high = 0;
  double confidence = 0;  // the coverage it was built for, e.g. 0.95
  std::string method;     // "student-t", "order-statistic", "confidence-sequence", ...
};

struct Summary {
  int n = 0;
  double mean = 0;
  double median = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
  double min = 0;
  double max = 0;
  double p05 = 0;      // quantiles by linear interpolation between order statistics
  double p95 = 0;      // (Hyndman & Fan type 7, numpy's and R's default)
  double cv = 0;       // stddev / mean (0 when mean is 0)
  Interval mean_ci;    // Student-t
  Interval median_ci;  // distribution-free, from order statistics
  int outliers = 0;    // beyond Tukey's far fences (3 IQR); counted, never dropped
};

// n == 0 gives a zero Summary; n == 1 gives intervals equal to the value.
Summary Summarize(std::span<const double> samples, double confidence = 0.95);

// Tukey's far outliers: samples beyond [Q1 - 3 IQR, Q3 + 3 IQR] (type-7 quartiles) of
// `sorted` (ascending). Fewer than 4 samples have none.
int CountOutliers(std::span<const double> sorted);

// Type-7 quantile of `sorted` (ascending), q in [0, 1].
double Quantile(std::span<const double> sorted, double q);

// The median of `values` in any order: Quantile(sorted, 0.5), the median every report and verdict
// shows (Summarize), so an even count gives the mean of the two middle values. 0 for none.
double Median(std::vector<double> values);

// Inverse CDF of Student's t with `dof` degrees of freedom at probability p in (0, 1).
double StudentTQuantile(double p, double dof);
// CDF of Student's t.
double StudentTCdf(double t, double dof);
// Inverse standard normal CDF: -inf at 0, +inf at 1.
double NormalQuantile(double p);
// Regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1].
double RegularizedIncompleteBeta(double a, double b, double x);
// P(X <= k) for X ~ Binomial(n, p).
double BinomialCdf(int k, int n, double p);

// Two-sided interval for the mean, Student-t with n - 1 degrees of freedom.
Interval MeanInterval(std::span<const double> samples, double confidence);
// Two-sided distribution-free interval for the q-quantile from order statistics
// (binomial), at least `confidence` coverage where n allows; otherwise [min, max] with
// the confidence it actually has.
Interval QuantileInterval(std::span<const double> samples, double q, double confidence);

// --- Anytime-valid pieces for the sequential rule (docs/methodology.md) -------------------

// Log of a mixture likelihood ratio against "each trial is an event with probability at most
// p0" after `count` events in `n` trials: a mixture over alternatives p1 > p0. Under the null
// it is a nonnegative supermartingale with initial value 1, so by Ville's inequality
// P(it ever reaches log(1/alpha)) <= alpha, however many times it is looked at.
double BernoulliMixtureLogEvidence(int n, int count, double p0);
// The smallest count in 1..n whose evidence reaches log(1/alpha); n + 1 when none does.
int BernoulliMixtureCriticalCount(int n, double p0, double alpha);
// Confidence sequence for the q-quantile: covers the true quantile at every n simultaneously,
// for i.i.d. samples of any distribution, its low end above the quantile with probability at
// most alpha_low and its high end below it with at most alpha_high. Ends are order
// statistics; an end the samples cannot bound yet is -inf / +inf.
Interval QuantileConfidenceSequence(std::span<const double> samples, double q, double alpha_low,
                                    double alpha_high);
// The same with each end at (1 - confidence) / 2.
Interval QuantileConfidenceSequence(std::span<const double> samples, double q, double confidence);

// --- Comparing two runs ----------------------------------------------------------------------

// A shift between two samples and its interval.
struct Shift {
  double estimate = 0;
  Interval interval;
};

// Hodges-Lehmann estimate of how far `x` sits from `y`: the median of the m n differences
// x_i - y_j, with the distribution-free interval [D_(k), D_(mn+1-k)] of the sorted differences,
// k the largest count with P(U < k) <= (1 - confidence) / 2 for the Mann-Whitney U of sizes m, n
// (exact for m n <= 10000, else the normal approximation with continuity correction). Where the
// sizes cannot reach `confidence`, [min D, max D] with the confidence it has. Empty x or y:
// a zero Shift with confidence 0. method "hodges-lehmann".
Shift HodgesLehmannShift(std::span<const double> x, std::span<const double> y, double confidence);
// The same on log figures, turned back into a ratio x / y (estimate and interval ends are
// ratios). Figures <= 0 are left out.
Shift HodgesLehmannRatio(std::span<const double> x, std::span<const double> y, double confidence);
// P(U <= u) for the Mann-Whitney U statistic of samples of sizes m and n with no ties, exact.
double MannWhitneyCdf(int u, int m, int n);

// --- Rank tests, equivalence and multiple comparisons (docs/compare.md) ---------------------

// A rank test's result. The p-values are for the alternatives "x tends to be smaller than y"
// (less), "larger" (greater) and either (two_sided = min(1, 2 min(less, greater))).
struct RankTest {
  double statistic = 0;  // Mann-Whitney U of x, or the Wilcoxon signed-rank sum W+
  int n = 0;             // observations used (signed rank: non-zero differences)
  double p_less = 1;
  double p_greater = 1;
  double p_two_sided = 1;
  std::string method;  // "exact" or "normal" (with tie correction and continuity correction)
};

// Mann-Whitney U test of two independent samples: U = the pairs (x_i, y_j) with x_i > y_j plus
// half the ties, ranks averaged over ties. Exact when there are no ties and m n <= 10000,
// else the normal approximation with the tie-corrected variance and a continuity correction
// of 1/2. Empty x or y: p-values 1, n 0.
RankTest MannWhitneyTest(std::span<const double> x, std::span<const double> y);

// Wilcoxon signed-rank test of paired differences `d` against a symmetric distribution about
// zero: zero differences are dropped (Wilcoxon's rule), W+ is the sum of the ranks of |d| of
// the positive ones, ranks averaged over ties. Exact when there are no ties and at most 50
// non-zero differences, else the normal approximation with the tie-corrected variance and a
// continuity correction of 1/2. "less" means the differences tend to be negative.
RankTest WilcoxonSignedRankTest(std::span<const double> d);

// Hodges-Lehmann estimate of the centre of paired differences `d`: the median of the Walsh
// averages (d_i + d_j) / 2, i <= j, with the distribution-free interval [A_(k), A_(N+1-k)] of
// the N = n (n + 1) / 2 sorted averages, k from the signed-rank distribution (exact up to 50
// differences, else normal). Where n cannot reach `confidence`, [min A, max A] with the
// confidence it has. Empty d: a zero Shift with confidence 0. method "hodges-lehmann-paired".
Shift HodgesLehmannPairedShift(std::span<const double> d, double confidence);

// Two one-sided tests (TOST) of equivalence on the log scale: is the shift between x and y
// (paired: the centre of d) inside (-log(1 + margin), +log(1 + margin))? The p-value is the
// larger of the two one-sided rank-test p-values against the two ends of that range; below
// alpha means equivalent at level alpha (the same decision as the 1 - 2 alpha interval lying
// inside the range). x, y, d are log figures (or log ratios).
double EquivalencePValue(std::span<const double> log_x, std::span<const double> log_y,
                         double margin);
double PairedEquivalencePValue(std::span<const double> log_ratios, double margin);

// Holm's step-down adjustment: adjusted p-values in the order given, each
// max over j <= i of min(1, (m - j + 1) p_(j)) in ascending order. Rejecting where the adjusted
// p is below alpha keeps the chance of any false rejection at most alpha, under any dependence.
std::vector<double> HolmAdjust(std::span<const double> p);

}  // namespace perfgate::stats

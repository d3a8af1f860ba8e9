// Descriptive statistics and confidence intervals over one metric's samples.
// Standard types only. Every function is pure and thread-safe.
#pragma once

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

}  // namespace perfgate::stats

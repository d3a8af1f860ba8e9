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
  double p05 = 0;  // quantiles by linear interpolation between order statistics
  double p95 = 0;  // (Hyndman & Fan type 7, numpy's and R's default)
  double cv = 0;   // stddev / mean (0 when mean is 0)
  Interval mean_ci;    // Student-t
  Interval median_ci;  // distribution-free, from order statistics
  int outliers = 0;    // beyond Tukey's far fences (3 IQR); counted, never dropped
};

// n == 0 gives a zero Summary; n == 1 gives intervals equal to the value.
Summary Summarize(std::span<const double> samples, double confidence = 0.95);

// Type-7 quantile of `sorted` (ascending), q in [0, 1].
double Quantile(std::span<const double> sorted, double q);

// Inverse CDF of Student's t with `dof` degrees of freedom at probability p in (0, 1).
double StudentTQuantile(double p, double dof);
// CDF of Student's t.
double StudentTCdf(double t, double dof);
// Inverse standard normal CDF.
double NormalQuantile(double p);

// Two-sided interval for the mean, Student-t with n - 1 degrees of freedom.
Interval MeanInterval(std::span<const double> samples, double confidence);
// Two-sided distribution-free interval for the q-quantile from order statistics
// (binomial), at least `confidence` coverage where n allows; otherwise [min, max] with
// the confidence it actually has.
Interval QuantileInterval(std::span<const double> samples, double q, double confidence);

}  // namespace perfgate::stats

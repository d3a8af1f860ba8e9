#include "common/stats.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <numeric>
#include <unordered_map>

namespace perfgate::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Continued fraction of the regularized incomplete beta function, evaluated with the modified
// Lentz method. Converges quickly for x < (a + 1) / (a + b + 2); the caller uses the symmetry
// I_x(a, b) = 1 - I_{1-x}(b, a) to stay in that region.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 10000; ++m) {
    const double dm = m;
    // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
    double num = dm * (b - dm) * x / ((a + 2 * dm - 1) * (a + 2 * dm));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    f *= d * c;
    // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    num = -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1.0) < kEps) break;
  }
  return f;
}

double StudentTPdf(double t, double dof) {
  const double log_norm =
      std::lgamma((dof + 1) / 2) - std::lgamma(dof / 2) - 0.5 * std::log(dof * std::numbers::pi);
  return std::exp(log_norm - (dof + 1) / 2 * std::log1p(t * t / dof));
}

std::vector<double> Sorted(std::span<const double> samples) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

}  // namespace

double RegularizedIncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) {
    return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  }
  return 1.0 - std::exp(log_front) * BetaContinuedFraction(b, a, 1.0 - x) / b;
}

double StudentTCdf(double t, double dof) {
  if (std::isnan(t) || !(dof > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{dof / (dof + t^2)}(dof / 2, 1 / 2).
  const double tail = 0.5 * RegularizedIncompleteBeta(dof / 2, 0.5, dof / (dof + t * t));
  return t > 0 ? 1.0 - tail : tail;
}

namespace {

// The decision rules ask for the same few quantiles and critical counts at every sample of every
// check (the same n, level and alpha), and each costs hundreds of incomplete-beta or log1p
// evaluations: both are pure functions, so each thread remembers what it has computed. The key
// holds the arguments' exact bits, so a cached answer is the one the computation would give.
struct ArgsKey {
  std::uint64_t a, b, c;
  bool operator==(const ArgsKey&) const = default;
};
struct ArgsHash {
  std::size_t operator()(const ArgsKey& k) const {
    std::uint64_t h = k.a * 0x9E3779B97F4A7C15ULL;
    h ^= (k.b + 0x7F4A7C159E3779B9ULL + (h << 6) + (h >> 2));
    h ^= (k.c + 0x94D049BB133111EBULL + (h << 6) + (h >> 2));
    return static_cast<std::size_t>(h);
  }
};
template <typename Value>
using Memo = std::unordered_map<ArgsKey, Value, ArgsHash>;
// Past this many entries a memo starts again, so that a long-lived process asking ever new
// questions never grows without bound.
constexpr std::size_t kMemoEntries = 1 << 16;

template <typename Value, typename Compute>
Value Remembered(Memo<Value>& memo, const ArgsKey& key, Compute compute) {
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  if (memo.size() >= kMemoEntries) memo.clear();
  const Value value = compute();
  memo.emplace(key, value);
  return value;
}

double ComputeStudentTQuantile(double p, double dof);
int ComputeBernoulliMixtureCriticalCount(int n, double p0, double alpha);

}  // namespace

double StudentTQuantile(double p, double dof) {
  thread_local Memo<double> memo;
  return Remembered(memo, {std::bit_cast<std::uint64_t>(p), std::bit_cast<std::uint64_t>(dof), 0},
                    [&] { return ComputeStudentTQuantile(p, dof); });
}

int BernoulliMixtureCriticalCount(int n, double p0, double alpha) {
  thread_local Memo<int> memo;
  return Remembered(memo,
                    {static_cast<std::uint64_t>(n), std::bit_cast<std::uint64_t>(p0),
                     std::bit_cast<std::uint64_t>(alpha)},
                    [&] { return ComputeBernoulliMixtureCriticalCount(n, p0, alpha); });
}

namespace {

double ComputeStudentTQuantile(double p, double dof) {
  if (!(p > 0 && p < 1) || !(dof > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.5) return 0;
  if (p < 0.5) return -StudentTQuantile(1 - p, dof);
  // dof 1 (Cauchy) has a closed form, and its tails are too heavy for Newton from the normal.
  if (dof == 1) return std::tan(std::numbers::pi * (p - 0.5));
  // Upper-tail probability, kept as such so that p near 1 does not lose digits.
  const double tail = 1 - p;
  // Bracket the root in [0, hi], then Newton steps safeguarded by bisection.
  double lo = 0;
  double hi = std::max(1.0, NormalQuantile(p));
  while (1.0 - StudentTCdf(hi, dof) > tail) {
    lo = hi;
    hi *= 2;
    if (hi > 1e300) return kInf;
  }
  double t = std::clamp(NormalQuantile(p), lo, hi);
  for (int i = 0; i < 200; ++i) {
    const double upper = 0.5 * RegularizedIncompleteBeta(dof / 2, 0.5, dof / (dof + t * t));
    const double f = tail - upper;  // increasing in t
    if (f > 0) {
      hi = t;
    } else {
      lo = t;
    }
    const double pdf = StudentTPdf(t, dof);
    double next = pdf > 0 ? t - f / pdf : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::fabs(next - t) <= 1e-14 * std::max(1.0, std::fabs(t))) return next;
    t = next;
  }
  return t;
}

}  // namespace

double NormalQuantile(double p) {
  if (!(p > 0 && p < 1)) {
    if (p == 0) return -kInf;
    if (p == 1) return kInf;
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Symmetry: 1 - p is exact for p in [1/2, 1], and the lower tail keeps its digits.
  if (p > 0.5) return -NormalQuantile(1 - p);
  // P. J. Acklam's rational approximation (relative error below 1.15e-9), followed by one
  // Halley step on erfc, which brings it to double precision.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  // One Halley step on erfc (p <= 1/2 here, so no digits are lost in the tail).
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  x = x - u / (1 + x * u / 2);
  return x;
}

double Quantile(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double h = (static_cast<double>(sorted.size()) - 1) * q;
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return Quantile(values, 0.5);
}

double BinomialCdf(int k, int n, double p) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  // P(X <= k) = I_{1-p}(n - k, k + 1).
  return RegularizedIncompleteBeta(n - k, k + 1.0, 1.0 - p);
}

Interval MeanInterval(std::span<const double> samples, double confidence) {
  Interval iv;
  iv.confidence = confidence;
  iv.method = "student-t";
  const size_t n = samples.size();
  if (n == 0) return iv;
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  iv.low = iv.high = mean;
  if (n == 1) return iv;
  double ss = 0;
  for (double x : samples) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / (n - 1));
  const double t = StudentTQuantile(0.5 + confidence / 2, static_cast<double>(n - 1));
  const double half = t * sd / std::sqrt(static_cast<double>(n));
  iv.low = mean - half;
  iv.high = mean + half;
  return iv;
}

Interval QuantileInterval(std::span<const double> samples, double q, double confidence) {
  Interval iv;
  iv.method = "order-statistic";
  const int n = static_cast<int>(samples.size());
  if (n == 0) return iv;
  const std::vector<double> sorted = Sorted(samples);
  const double alpha_side = (1 - confidence) / 2;
  // Ranks l < u (1-based) with P(S <= l - 1) <= alpha/2 and P(S >= u) <= alpha/2, S the
  // number of samples below the true quantile, S ~ Binomial(n, q). Then
  // P(X_(l) <= Q <= X_(u)) = P(l <= S <= u - 1) >= confidence.
  int l = 0;  // 0: no rank qualifies
  while (l + 1 <= n && BinomialCdf(l, n, q) <= alpha_side) ++l;
  int u = n + 1;  // n + 1: no rank qualifies
  while (u - 1 >= 1 && 1 - BinomialCdf(u - 2, n, q) <= alpha_side) --u;
  if (l >= 1 && u <= n && l < u) {
    iv.low = sorted[l - 1];
    iv.high = sorted[u - 1];
    iv.confidence = BinomialCdf(u - 1, n, q) - BinomialCdf(l - 1, n, q);
    // Report the level asked for when it is met; the exact coverage is at least that.
    iv.confidence = std::max(iv.confidence, confidence);
    return iv;
  }
  // n too small for the level asked: [min, max] with the coverage it actually has.
  iv.low = sorted.front();
  iv.high = sorted.back();
  iv.confidence = n == 1 ? 0 : 1 - std::pow(q, n) - std::pow(1 - q, n);
  return iv;
}

Summary Summarize(std::span<const double> samples, double confidence) {
  Summary s;
  s.n = static_cast<int>(samples.size());
  if (s.n == 0) return s;
  const std::vector<double> sorted = Sorted(samples);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / s.n;
  s.median = Quantile(sorted, 0.5);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p05 = Quantile(sorted, 0.05);
  s.p95 = Quantile(sorted, 0.95);
  if (s.n > 1) {
    double ss = 0;
    for (double x : sorted) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / (s.n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  s.mean_ci = MeanInterval(sorted, confidence);
  if (s.n == 1) {
    s.median_ci = Interval{s.median, s.median, 0, "order-statistic"};
  } else {
    s.median_ci = QuantileInterval(sorted, 0.5, confidence);
  }
  s.outliers = CountOutliers(sorted);
  return s;
}

int CountOutliers(std::span<const double> sorted) {
  if (sorted.size() < 4) return 0;
  const double q1 = Quantile(sorted, 0.25);
  const double q3 = Quantile(sorted, 0.75);
  const double iqr = q3 - q1;
  const double lo = q1 - 3 * iqr;
  const double hi = q3 + 3 * iqr;
  return static_cast<int>(
      std::count_if(sorted.begin(), sorted.end(), [&](double x) { return x < lo || x > hi; }));
}

}  // namespace perfgate::stats

namespace perfgate::stats {
namespace {

// The alternatives of the mixture, as log-odds steps above the null's p0: a geometric grid
// from 0.2 (a small shift in the sign's probability) to about 12 (essentially every sample on
// one side), equally weighted. A grid rather than a continuous prior keeps the evidence a
// short sum of exact likelihood ratios, each a nonnegative martingale under p = p0.
constexpr int kMixturePoints = 14;
constexpr double kMixtureFirstStep = 0.2;
constexpr double kMixtureGrowth = 1.4;

double LogSumExp(const double* v, int n) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) m = std::max(m, v[i]);
  if (std::isinf(m)) return m;
  double s = 0;
  for (int i = 0; i < n; ++i) s += std::exp(v[i] - m);
  return m + std::log(s);
}

}  // namespace

double BernoulliMixtureLogEvidence(int n, int count, double p0) {
  if (n <= 0 || !(p0 > 0 && p0 < 1)) return 0;
  const double logit0 = std::log(p0 / (1 - p0));
  double terms[kMixturePoints];
  double step = kMixtureFirstStep;
  for (int j = 0; j < kMixturePoints; ++j, step *= kMixtureGrowth) {
    const double logit = logit0 + step;
    // p1 = 1 / (1 + e^-logit), computed in log space to keep p1 near 1 exact.
    const double log_p1 = -std::log1p(std::exp(-logit));
    const double log_q1 = -std::log1p(std::exp(logit));
    terms[j] = count * (log_p1 - std::log(p0)) + (n - count) * (log_q1 - std::log1p(-p0)) -
               std::log(static_cast<double>(kMixturePoints));
  }
  return LogSumExp(terms, kMixturePoints);
}

namespace {

int ComputeBernoulliMixtureCriticalCount(int n, double p0, double alpha) {
  const double target = -std::log(alpha);
  // The evidence grows with count (every alternative has p1 > p0): binary search.
  if (BernoulliMixtureLogEvidence(n, n, p0) < target) return n + 1;
  int lo = 0;  // evidence(lo) may be below target
  int hi = n;  // evidence(hi) >= target
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (BernoulliMixtureLogEvidence(n, mid, p0) >= target) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return hi;
}

}  // namespace

Interval QuantileConfidenceSequence(std::span<const double> samples, double q, double alpha_low,
                                    double alpha_high) {
  Interval iv;
  iv.confidence = 1 - alpha_low - alpha_high;
  iv.method = "confidence-sequence";
  const int n = static_cast<int>(samples.size());
  if (n == 0) {
    iv.low = -kInf;
    iv.high = kInf;
    return iv;
  }
  const std::vector<double> sorted = Sorted(samples);
  // Upper end: "Q >= theta" is rejected once the count strictly below theta reaches
  // s*, i.e. for every theta above X_(s*).
  const int s_star = BernoulliMixtureCriticalCount(n, q, alpha_high);
  iv.high = s_star <= n ? sorted[s_star - 1] : kInf;
  // Lower end, mirrored: the count strictly above theta, null probability 1 - q.
  const int t_star = BernoulliMixtureCriticalCount(n, 1 - q, alpha_low);
  iv.low = t_star <= n ? sorted[n - t_star] : -kInf;
  return iv;
}

Interval QuantileConfidenceSequence(std::span<const double> samples, double q, double confidence) {
  Interval iv = QuantileConfidenceSequence(samples, q, (1 - confidence) / 2, (1 - confidence) / 2);
  iv.confidence = confidence;
  return iv;
}

namespace {

// Counts of each value of U for sizes m, n (no ties), from the generating function
// prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i): the Gaussian binomial [m+n choose m].
std::vector<double> MannWhitneyCounts(int m, int n) {
  if (m > n) std::swap(m, n);  // the same distribution; fewer passes over the counts
  const int top = m * n;
  std::vector<double> c = {1.0};
  c.resize(static_cast<std::size_t>(std::max(top, 0)) + 1, 0.0);
  for (int i = 1; i <= m; ++i) {
    for (int u = top; u >= n + i; --u) c[u] -= c[u - n - i];  // times (1 - q^(n+i))
    for (int u = i; u <= top; ++u) c[u] += c[u - i];          // over (1 - q^i)
  }
  return c;
}

constexpr int kMostExactPairs = 10000;

}  // namespace

double MannWhitneyCdf(int u, int m, int n) {
  if (u < 0) return 0;
  if (u >= m * n) return 1;
  const auto c = MannWhitneyCounts(m, n);
  double below = 0, total = 0;
  for (int k = 0; k <= m * n; ++k) {
    total += c[k];
    if (k <= u) below += c[k];
  }
  return below / total;
}

Shift HodgesLehmannShift(std::span<const double> x, std::span<const double> y, double confidence) {
  Shift out;
  out.interval.method = "hodges-lehmann";
  const int m = static_cast<int>(x.size());
  const int n = static_cast<int>(y.size());
  if (m == 0 || n == 0) return out;
  std::vector<double> d;
  d.reserve(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  for (double xi : x) {
    for (double yj : y) d.push_back(xi - yj);
  }
  std::sort(d.begin(), d.end());
  const std::size_t total = d.size();
  out.estimate = total % 2 ? d[total / 2] : (d[total / 2 - 1] + d[total / 2]) / 2;

  // k: the largest with P(U <= k - 1) <= alpha / 2; the interval's coverage 1 - 2 P(U <= k - 1).
  const double half_alpha = (1 - confidence) / 2;
  const int pairs = m * n;
  int k = 0;
  double tail = 0;  // P(U <= k - 1)
  if (pairs <= kMostExactPairs) {
    const auto c = MannWhitneyCounts(m, n);
    const double all = std::accumulate(c.begin(), c.end(), 0.0);
    double below = 0;  // P(U <= k - 1) as k grows
    while (k < (pairs + 1) / 2) {
      const double next = below + c[k] / all;  // P(U <= k)
      if (next > half_alpha + 1e-12) break;
      below = next;
      ++k;
    }
    tail = below;
    if (k == 0) tail = c[0] / all;
  } else {
    const double mean = pairs / 2.0;
    const double sd = std::sqrt(static_cast<double>(pairs) * (m + n + 1) / 12.0);
    const double z = -NormalQuantile(half_alpha);
    k = static_cast<int>(std::floor(mean - z * sd + 0.5));
    k = std::clamp(k, 0, (pairs + 1) / 2);
    const double at = std::max(k, 1) - 1 + 0.5;
    tail = 0.5 * std::erfc(-((at - mean) / sd) / std::numbers::sqrt2);
  }
  const int low = std::max(k, 1);  // 1-based order statistics
  out.interval.low = d[static_cast<std::size_t>(low - 1)];
  out.interval.high = d[total - static_cast<std::size_t>(low)];
  out.interval.confidence = std::max(0.0, 1 - 2 * tail);
  return out;
}

Shift HodgesLehmannRatio(std::span<const double> x, std::span<const double> y, double confidence) {
  auto logs = [](std::span<const double> v) {
    std::vector<double> out;
    for (double f : v) {
      if (f > 0) out.push_back(std::log(f));
    }
    return out;
  };
  const auto lx = logs(x), ly = logs(y);
  Shift s = HodgesLehmannShift(lx, ly, confidence);
  if (lx.empty() || ly.empty()) return s;
  s.estimate = std::exp(s.estimate);
  s.interval.low = std::exp(s.interval.low);
  s.interval.high = std::exp(s.interval.high);
  s.interval.method = "hodges-lehmann-log";
  return s;
}

namespace {

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// Ranks (1-based) of `v`, averaged over ties; *tie_term gets the sum of t^3 - t over the groups
// of t tied values.
std::vector<double> MidRanks(std::span<const double> v, double* tie_term) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  *tie_term = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double rank = static_cast<double>(i + j) / 2 + 1;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    const double t = static_cast<double>(j - i + 1);
    *tie_term += t * t * t - t;
    i = j + 1;
  }
  return ranks;
}

RankTest WithTails(RankTest t, double less, double greater) {
  t.p_less = std::clamp(less, 0.0, 1.0);
  t.p_greater = std::clamp(greater, 0.0, 1.0);
  t.p_two_sided = std::min(1.0, 2 * std::min(t.p_less, t.p_greater));
  return t;
}

// P(statistic <= s) and P(statistic >= s) from the counts of each integer value.
std::pair<double, double> ExactTails(const std::vector<double>& counts, double s) {
  const auto at = static_cast<std::size_t>(std::llround(s));
  double below = 0, above = 0, total = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    total += counts[k];
    if (k <= at) below += counts[k];
    if (k >= at) above += counts[k];
  }
  return {below / total, above / total};
}

// Counts of each value of the signed-rank sum W+ of n untied non-zero differences under the
// null: the coefficients of prod_{i=1..n} (1 + q^i).
std::vector<double> SignedRankCounts(int n) {
  const int top = std::max(n * (n + 1) / 2, 0);
  std::vector<double> c = {1.0};
  c.resize(static_cast<std::size_t>(top) + 1, 0.0);
  for (int i = 1; i <= n; ++i) {
    for (int w = top; w >= i; --w) c[w] += c[w - i];
  }
  return c;
}

constexpr int kMostExactSignedRanks = 50;

}  // namespace

RankTest MannWhitneyTest(std::span<const double> x, std::span<const double> y) {
  RankTest out;
  const int m = static_cast<int>(x.size());
  const int n = static_cast<int>(y.size());
  if (m == 0 || n == 0) return out;
  std::vector<double> all(x.begin(), x.end());
  all.insert(all.end(), y.begin(), y.end());
  double tie_term = 0;
  const auto ranks = MidRanks(all, &tie_term);
  double rank_sum = 0;
  for (int i = 0; i < m; ++i) rank_sum += ranks[i];
  out.statistic = rank_sum - m * (m + 1) / 2.0;
  out.n = m + n;
  if (tie_term == 0 && m * n <= kMostExactPairs) {
    out.method = "exact";
    const auto [less, greater] = ExactTails(MannWhitneyCounts(m, n), out.statistic);
    return WithTails(out, less, greater);
  }
  out.method = "normal";
  const double total = m + n;
  const double mean = m * n / 2.0;
  const double var = m * n / 12.0 * ((total + 1) - tie_term / (total * (total - 1)));
  if (var <= 0) return WithTails(out, 1, 1);  // every figure equal
  const double sd = std::sqrt(var);
  return WithTails(out, NormalCdf((out.statistic - mean + 0.5) / sd),
                   NormalCdf((mean - out.statistic + 0.5) / sd));
}

RankTest WilcoxonSignedRankTest(std::span<const double> d) {
  RankTest out;
  std::vector<double> magnitudes;
  std::vector<bool> positive;
  for (double v : d) {
    if (v == 0 || std::isnan(v)) continue;
    magnitudes.push_back(std::fabs(v));
    positive.push_back(v > 0);
  }
  const int n = static_cast<int>(magnitudes.size());
  out.n = n;
  if (n == 0) {
    out.method = "exact";
    return out;
  }
  double tie_term = 0;
  const auto ranks = MidRanks(magnitudes, &tie_term);
  for (int i = 0; i < n; ++i) {
    if (positive[i]) out.statistic += ranks[i];
  }
  if (tie_term == 0 && n <= kMostExactSignedRanks) {
    out.method = "exact";
    const auto [less, greater] = ExactTails(SignedRankCounts(n), out.statistic);
    return WithTails(out, less, greater);
  }
  out.method = "normal";
  const double mean = n * (n + 1) / 4.0;
  const double var = n * (n + 1) * (2.0 * n + 1) / 24.0 - tie_term / 48.0;
  const double sd = std::sqrt(var);
  return WithTails(out, NormalCdf((out.statistic - mean + 0.5) / sd),
                   NormalCdf((mean - out.statistic + 0.5) / sd));
}

Shift HodgesLehmannPairedShift(std::span<const double> d, double confidence) {
  Shift out;
  out.interval.method = "hodges-lehmann-paired";
  const int n = static_cast<int>(d.size());
  if (n == 0) return out;
  std::vector<double> walsh;
  walsh.reserve(static_cast<std::size_t>(n) * (n + 1) / 2);
  for (int i = 0; i < n; ++i) {
    for (int j = i; j < n; ++j) walsh.push_back((d[i] + d[j]) / 2);
  }
  std::sort(walsh.begin(), walsh.end());
  const std::size_t total = walsh.size();
  out.estimate = total % 2 ? walsh[total / 2] : (walsh[total / 2 - 1] + walsh[total / 2]) / 2;

  // k: the largest with P(W+ <= k - 1) <= alpha / 2; coverage 1 - 2 P(W+ <= k - 1).
  const double half_alpha = (1 - confidence) / 2;
  const int averages = static_cast<int>(total);
  int k = 0;
  double tail = 0;
  if (n <= kMostExactSignedRanks) {
    const auto c = SignedRankCounts(n);
    const double all = std::accumulate(c.begin(), c.end(), 0.0);
    double below = 0;
    while (k < (averages + 1) / 2) {
      const double next = below + c[k] / all;
      if (next > half_alpha + 1e-12) break;
      below = next;
      ++k;
    }
    tail = k == 0 ? c[0] / all : below;
  } else {
    const double mean = averages / 2.0;
    const double sd = std::sqrt(n * (n + 1) * (2.0 * n + 1) / 24.0);
    k = static_cast<int>(std::floor(mean + NormalQuantile(half_alpha) * sd + 0.5));
    k = std::clamp(k, 0, (averages + 1) / 2);
    tail = NormalCdf((std::max(k, 1) - 1 + 0.5 - mean) / sd);
  }
  const int low = std::max(k, 1);
  out.interval.low = walsh[static_cast<std::size_t>(low - 1)];
  out.interval.high = walsh[total - static_cast<std::size_t>(low)];
  out.interval.confidence = std::max(0.0, 1 - 2 * tail);
  return out;
}

double EquivalencePValue(std::span<const double> log_x, std::span<const double> log_y,
                         double margin) {
  if (log_x.empty() || log_y.empty()) return 1;
  const double bound = std::log1p(margin);
  auto shifted = [&](double by) {
    std::vector<double> out(log_x.begin(), log_x.end());
    for (double& v : out) v += by;
    return out;
  };
  // H0: shift <= -bound, rejected when x + bound tends to exceed y; H0: shift >= +bound mirrored.
  const double above_low = MannWhitneyTest(shifted(bound), log_y).p_greater;
  const double below_high = MannWhitneyTest(shifted(-bound), log_y).p_less;
  return std::max(above_low, below_high);
}

double PairedEquivalencePValue(std::span<const double> log_ratios, double margin) {
  if (log_ratios.empty()) return 1;
  const double bound = std::log1p(margin);
  std::vector<double> up(log_ratios.begin(), log_ratios.end());
  std::vector<double> down = up;
  for (double& v : up) v += bound;
  for (double& v : down) v -= bound;
  return std::max(WilcoxonSignedRankTest(up).p_greater, WilcoxonSignedRankTest(down).p_less);
}

std::vector<double> HolmAdjust(std::span<const double> p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 0;
  for (std::size_t i = 0; i < m; ++i) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - i) * p[order[i]]));
    out[order[i]] = running;
  }
  return out;
}

}  // namespace perfgate::stats

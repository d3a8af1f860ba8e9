#include "cli/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace perfgate::svg {

double Scale::operator()(double v) const {
  double a = d0, b = d1, x = v;
  if (log2) {
    a = std::log2(std::max(a, 1e-300));
    b = std::log2(std::max(b, 1e-300));
    x = std::log2(std::max(x, 1e-300));
  }
  if (b == a) return (r0 + r1) / 2;
  return r0 + (x - a) / (b - a) * (r1 - r0);
}

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo) || count < 1 || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / count;
  const int exponent = static_cast<int>(std::floor(std::log10(raw)));
  // The step of 1, 2 or 5 times a power of ten whose tick count comes closest to `count`.
  int best = 1, exp10 = exponent;
  double best_miss = INFINITY;
  for (int e : {exponent, exponent + 1}) {
    for (int m : {1, 2, 5}) {
      const double step = m * std::pow(10.0, e);
      const double miss = std::fabs((hi - lo) / step - count);
      if (miss < best_miss) {
        best_miss = miss;
        best = m;
        exp10 = e;
      }
    }
  }
  // Tick k is k * best * 10^exp10, computed so that 0.6 prints as 0.6.
  const double scale = std::pow(10.0, std::abs(exp10));
  auto tick = [&](long long k) {
    const double units = static_cast<double>(k * best);
    return exp10 >= 0 ? units * scale : units / scale;
  };
  const double step = tick(1);
  std::vector<double> ticks;
  for (auto k = static_cast<long long>(std::ceil(lo / step - 1e-9)); tick(k) <= hi + step * 1e-9;
       ++k) {
    ticks.push_back(tick(k));
    if (ticks.size() > 100) break;
  }
  return ticks;
}

std::string Num(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Sequential(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  // From #eef4fb to #08306b.
  const int r = static_cast<int>(std::lround(0xee + (0x08 - 0xee) * t));
  const int g = static_cast<int>(std::lround(0xf4 + (0x30 - 0xf4) * t));
  const int b = static_cast<int>(std::lround(0xfb + (0x6b - 0xfb) * t));
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

}  // namespace perfgate::svg

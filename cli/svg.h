// The few pieces of SVG the HTML report draws with: scales, tick values, numbers and colours.
// The report is plain SVG in one HTML file (no script, no library): it opens offline in any
// browser and needs no upkeep when a charting library moves on.
#pragma once

#include <string>
#include <vector>

namespace perfgate::svg {

// Maps [d0, d1] onto [r0, r1], linearly or (log2) on a base-2 log scale.
struct Scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  bool log2 = false;
  double operator()(double v) const;
};

// About `count` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten apart).
std::vector<double> NiceTicks(double lo, double hi, int count);

// A coordinate or length as SVG wants it: one decimal, no exponent.
std::string Num(double v);

// A colour from light (t = 0) to dark blue (t = 1), for heatmaps.
std::string Sequential(double t);

}  // namespace perfgate::svg

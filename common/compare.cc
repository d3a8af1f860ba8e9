#include "common/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace perfgate::comparison {

stats::Shift Ratio(std::span<const double> now, std::span<const double> reference,
                   double confidence) {
  return stats::HodgesLehmannRatio(now, reference, confidence);
}

stats::Shift PairedRatio(std::span<const double> log_ratios, double confidence) {
  stats::Shift s = stats::HodgesLehmannPairedShift(log_ratios, confidence);
  if (log_ratios.empty()) return s;
  s.estimate = std::exp(s.estimate);
  s.interval.low = std::exp(s.interval.low);
  s.interval.high = std::exp(s.interval.high);
  return s;
}

int Beyond(const stats::Shift& ratio, double margin, bool higher_is_better) {
  if (ratio.interval.confidence == 0) return 0;
  const bool above = ratio.interval.low > 1 + margin;
  const bool below = ratio.interval.high < 1 - margin;
  if (!above && !below) return 0;
  return above == higher_is_better ? 1 : -1;
}

SampleComparison CompareSamples(std::span<const double> now, std::span<const double> reference,
                                bool higher_is_better, double confidence, double margin) {
  SampleComparison c;
  c.ratio = Ratio(now, reference, confidence);
  c.flag = Beyond(c.ratio, margin, higher_is_better);
  return c;
}

namespace {

// The j-th smallest (0-based) of `sorted` once the entries at `removed` (ascending indices into
// it) are taken out.
double KthWithout(const std::vector<double>& sorted, const std::vector<std::size_t>& removed,
                  std::size_t j) {
  std::size_t at = j;
  for (std::size_t idx : removed) {
    if (idx > at) break;
    ++at;
  }
  return sorted[at];
}

// The type-7 median of `sorted` without the entries at `removed`.
double MedianWithout(const std::vector<double>& sorted, const std::vector<std::size_t>& removed) {
  const std::size_t m = sorted.size() - removed.size();
  const double h = (static_cast<double>(m) - 1) * 0.5;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, m - 1);
  const double a = KthWithout(sorted, removed, lo);
  return a + (h - static_cast<double>(lo)) * (KthWithout(sorted, removed, hi) - a);
}

}  // namespace

std::vector<Lag> LaggingPeers(std::span<const Member> members, bool higher_is_better,
                              const PeerRule& rule) {
  std::vector<Lag> out;
  std::map<std::string, std::vector<std::size_t>> by_peer;
  for (std::size_t i = 0; i < members.size(); ++i) by_peer[members[i].peer].push_back(i);
  const int others = static_cast<int>(by_peer.size()) - 1;
  if (others < rule.min_peers || others < 1) return out;
  const double bound = std::max(
      rule.z, stats::NormalQuantile(1 - rule.family_error / static_cast<double>(members.size())));
  std::vector<double> sorted;
  for (const Member& m : members) sorted.push_back(m.value);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [peer, own] : by_peer) {
    // Where this peer's figures sit in the sorted figures, to leave them out.
    std::vector<double> values;
    for (std::size_t i : own) values.push_back(members[i].value);
    std::sort(values.begin(), values.end());
    std::vector<std::size_t> removed;
    for (std::size_t k = 0; k < values.size(); ++k) {
      std::size_t idx = static_cast<std::size_t>(
          std::lower_bound(sorted.begin(), sorted.end(), values[k]) - sorted.begin());
      for (std::size_t e = k; e > 0 && values[e - 1] == values[k]; --e) ++idx;
      removed.push_back(idx);
    }
    const double median = MedianWithout(sorted, removed);
    if (median == 0) continue;
    auto worse_by = [&](double v) { return higher_is_better ? median - v : v - median; };
    bool candidate = false;
    for (std::size_t i : own) {
      const double worse = worse_by(members[i].value);
      candidate = candidate || (worse > 0 && worse >= rule.margin * std::fabs(median));
    }
    if (!candidate) continue;  // the common case: the spread is only needed for a gap
    std::vector<double> peers;
    peers.reserve(sorted.size() - removed.size());
    for (std::size_t i = 0, r = 0; i < sorted.size(); ++i) {
      if (r < removed.size() && removed[r] == i) {
        ++r;
      } else {
        peers.push_back(sorted[i]);
      }
    }
    std::vector<double> deviations;
    for (double v : peers) {
      if (worse_by(v) >= 0) deviations.push_back(std::fabs(v - median));
    }
    std::sort(deviations.begin(), deviations.end());
    const double scale = 1.4826 * stats::Quantile(deviations, 0.5);
    const stats::Interval around = stats::QuantileInterval(peers, 0.5, rule.confidence);
    for (std::size_t i : own) {
      const double v = members[i].value;
      const double worse = worse_by(v);
      if (worse <= 0 || worse < rule.margin * std::fabs(median)) continue;
      const double robust_z = scale > 0 ? worse / scale : std::numeric_limits<double>::infinity();
      if (robust_z < bound) continue;
      Lag lag;
      lag.index = i;
      lag.peer_median = median;
      lag.ratio = v / median;
      lag.robust_z = robust_z;
      lag.peers = others;
      lag.interval = around;
      lag.interval.method = "peers-median";
      const double a = around.low != 0 ? v / around.low : lag.ratio;
      const double b = around.high != 0 ? v / around.high : lag.ratio;
      lag.interval.low = std::min({a, b, lag.ratio});
      lag.interval.high = std::max({a, b, lag.ratio});
      out.push_back(lag);
    }
  }
  std::sort(out.begin(), out.end(), [](const Lag& a, const Lag& b) { return a.index < b.index; });
  return out;
}

}  // namespace perfgate::comparison

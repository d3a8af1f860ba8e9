#include "store/compare.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace perfgate::store {
namespace {

// What a metric is compared with: the reference's samples, its per-result medians, and the
// results (runs or peer nodes) they came from.
struct Reference {
  std::vector<double> samples, medians;
  std::set<std::string> sources;
};

// Every metric of `now` that `reference_of` (test, device, metric) finds a reference for.
std::vector<MetricComparison> Compare(
    const v1alpha1::Report& now,
    const std::function<const Reference*(const std::string&, const std::string&,
                                         const std::string&)>& reference_of,
    double confidence, double margin, int min_sources) {
  std::vector<MetricComparison> out;
  for (const auto& t : now.tests()) {
    for (const auto& m : t.metrics()) {
      const Reference* ref = reference_of(t.name(), t.device(), m.name());
      if (ref == nullptr || ref->samples.empty() || m.samples().empty() ||
          static_cast<int>(ref->sources.size()) < min_sources) {
        continue;
      }
      MetricComparison c;
      c.test = t.name();
      c.device = t.device();
      c.metric = m.name();
      c.unit = m.unit();
      c.higher_is_better = m.higherisbetter();
      c.now_median = m.summary().median();
      c.before_median = stats::Median(ref->medians);
      c.runs_before = static_cast<int>(ref->sources.size());
      const std::vector<double> x(m.samples().begin(), m.samples().end());
      c.ratio = stats::HodgesLehmannRatio(x, ref->samples, confidence);
      // No ratio of figures that are zero (an error count that stayed at 0).
      if (c.ratio.interval.confidence == 0) continue;
      const bool above = c.ratio.interval.low > 1 + margin;
      const bool below = c.ratio.interval.high < 1 - margin;
      if (above || below) c.flag = (above == c.higher_is_better) ? 1 : -1;
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

std::vector<MetricComparison> CompareWithHistory(const v1alpha1::Report& now,
                                                 const std::vector<MetricRecord>& before,
                                                 double confidence, double margin) {
  using Key = std::tuple<std::string, std::string, std::string>;  // test, device, metric
  std::map<Key, Reference> earlier;
  for (const auto& m : before) {
    Reference& e = earlier[{m.test, m.device, m.metric}];
    e.samples.insert(e.samples.end(), m.samples.begin(), m.samples.end());
    e.medians.push_back(m.summary.median());
    e.sources.insert(m.key.run);
  }
  return Compare(
      now,
      [&](const std::string& test, const std::string& device,
          const std::string& metric) -> const Reference* {
        auto it = earlier.find({test, device, metric});
        return it == earlier.end() ? nullptr : &it->second;
      },
      confidence, margin, 1);
}

std::vector<MetricComparison> CompareWithPeers(const v1alpha1::Report& now,
                                               const std::vector<const v1alpha1::Report*>& peers,
                                               double confidence, double margin, int min_peers) {
  using Key = std::pair<std::string, std::string>;  // test, metric
  std::map<Key, Reference> pooled;
  for (size_t i = 0; i < peers.size(); ++i) {
    for (const auto& t : peers[i]->tests()) {
      for (const auto& m : t.metrics()) {
        if (m.samples().empty()) continue;
        Reference& r = pooled[{t.name(), m.name()}];
        r.samples.insert(r.samples.end(), m.samples().begin(), m.samples().end());
        r.medians.push_back(m.summary().median());
        r.sources.insert(std::to_string(i));
      }
    }
  }
  return Compare(
      now,
      [&](const std::string& test, const std::string&,
          const std::string& metric) -> const Reference* {
        auto it = pooled.find({test, metric});
        return it == pooled.end() ? nullptr : &it->second;
      },
      confidence, margin, min_peers);
}

}  // namespace perfgate::store

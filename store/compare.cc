#include "store/compare.h"

#include <map>
#include <set>
#include <tuple>

#include "common/compare.h"

namespace perfgate::store {

std::vector<MetricComparison> CompareWithHistory(const v1alpha1::Report& now,
                                                 const std::vector<MetricRecord>& before,
                                                 double confidence, double margin) {
  // Each metric's earlier samples, per-run medians and the runs they came from.
  struct Earlier {
    std::vector<double> samples, medians;
    std::set<std::string> runs;
  };
  using Key = std::tuple<std::string, std::string, std::string>;  // test, device, metric
  std::map<Key, Earlier> earlier;
  for (const auto& m : before) {
    Earlier& e = earlier[{m.test, m.device, m.metric}];
    e.samples.insert(e.samples.end(), m.samples.begin(), m.samples.end());
    e.medians.push_back(m.summary.median());
    e.runs.insert(m.key.run);
  }
  std::vector<MetricComparison> out;
  for (const auto& t : now.tests()) {
    for (const auto& m : t.metrics()) {
      auto it = earlier.find({t.name(), t.device(), m.name()});
      if (it == earlier.end() || it->second.samples.empty() || m.samples().empty()) continue;
      const Earlier& ref = it->second;
      const std::vector<double> x(m.samples().begin(), m.samples().end());
      const comparison::SampleComparison sc =
          comparison::CompareSamples(x, ref.samples, m.higherisbetter(), confidence, margin);
      // No ratio of figures that are zero (an error count that stayed at 0).
      if (sc.ratio.interval.confidence == 0) continue;
      MetricComparison c;
      c.test = t.name();
      c.device = t.device();
      c.metric = m.name();
      c.unit = m.unit();
      c.higher_is_better = m.higherisbetter();
      c.now_median = m.summary().median();
      c.before_median = stats::Median(ref.medians);
      c.runs_before = static_cast<int>(ref.runs.size());
      c.ratio = sc.ratio;
      c.flag = sc.flag;
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace perfgate::store

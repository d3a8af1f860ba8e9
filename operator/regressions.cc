#include "operator/regressions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

#include "common/node_verdict.h"
#include "common/report.h"
#include "core/names.h"
#include "store/compare.h"
#include "store/store.h"

namespace perfgate::op {
namespace {

constexpr double kDefaultConfidence = 0.95;

std::string Fixed3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

// The worst regressed row of `rows` as a Regression of `node` against `against`; none when
// nothing regressed.
std::optional<Regression> Worst(const std::string& node, const std::string& against,
                                const std::vector<store::MetricComparison>& rows) {
  std::optional<Regression> worst;
  int regressed = 0;
  double worst_badness = 0;
  for (const auto& c : rows) {
    if (c.flag >= 0 || !(c.ratio.estimate > 0)) continue;
    ++regressed;
    // How many times worse: a smaller ratio where higher is better, a larger one otherwise.
    const double badness = c.higher_is_better ? 1 / c.ratio.estimate : c.ratio.estimate;
    if (worst && badness <= worst_badness) continue;
    worst_badness = badness;
    worst = Regression{node,
                       against,
                       c.test,
                       c.device,
                       c.metric,
                       c.unit,
                       c.ratio.estimate,
                       c.ratio.interval.low,
                       c.ratio.interval.high,
                       c.ratio.interval.confidence,
                       c.runs_before,
                       0};
  }
  if (worst) worst->metrics = regressed;
  return worst;
}

}  // namespace

RegressionCheck FindRegressions(const Snapshot& s, const std::vector<NodeOutcome>& outcomes) {
  RegressionCheck check;
  if (!s.spec) return check;
  const auto& spec = s.spec->doc.spec();
  if (spec.policy().regressionmargin() > 0) check.margin = spec.policy().regressionmargin();
  const double confidence =
      spec.sampling().confidence() > 0 ? spec.sampling().confidence() : kDefaultConfidence;
  check.history_read = s.store && s.store->available;
  // The reports of the nodes that passed, by node, and by GPU model for the peer comparison.
  std::map<std::string, bool> passed;
  for (const auto& o : outcomes) passed[o.node] = o.verdict == verdict::Verdict::kPass;
  // The full reports come with the store's view: without a store nothing is compared.
  if (!s.store) return check;
  std::map<std::string, const v1alpha1::Report*> reports;
  for (const auto& [node, report] : s.store->reports) {
    auto it = passed.find(node);
    if (it != passed.end() && it->second) reports.emplace(node, &report);
  }
  std::map<std::string, std::vector<const v1alpha1::Report*>> by_model;
  for (const auto& [node, report] : reports) by_model[store::GpuModel(*report)].push_back(report);

  for (const auto& [node, report] : reports) {
    if (auto h = s.store->history.find(node); h != s.store->history.end()) {
      const auto rows = store::CompareWithHistory(*report, h->second, confidence, check.margin);
      check.compared += static_cast<int>(rows.size());
      if (auto w = Worst(node, "history", rows)) check.found.push_back(*w);
    }
    std::vector<const v1alpha1::Report*> peers;
    for (const auto* p : by_model[store::GpuModel(*report)]) {
      if (p != report) peers.push_back(p);
    }
    const auto rows = store::CompareWithPeers(*report, peers, confidence, check.margin);
    check.compared += static_cast<int>(rows.size());
    if (auto w = Worst(node, "peers", rows)) check.found.push_back(*w);
  }
  std::sort(check.found.begin(), check.found.end(), [](const Regression& a, const Regression& b) {
    const double da = std::abs(1 - a.ratio), db = std::abs(1 - b.ratio);
    return da != db ? da > db : std::tie(a.node, a.against) < std::tie(b.node, b.against);
  });
  return check;
}

Json RegressionsJson(const RegressionCheck& check) {
  Json rows = Json::array();
  for (const auto& r : check.found) {
    if (rows.size() >= 20) break;  // the CRD's maxItems
    rows.push_back({{"node", r.node},
                    {"against", r.against},
                    {"test", r.test},
                    {"device", r.device},
                    {"metric", r.metric},
                    {"ratio", r.ratio},
                    {"low", r.low},
                    {"high", r.high},
                    {"compared", r.compared},
                    {"metrics", r.metrics},
                    {"message", DescribeRegression(r)}});
  }
  return rows;
}

std::string DescribeRegression(const Regression& r) {
  const std::string reference =
      r.against == "history"
          ? "its history (" + std::to_string(r.compared) + (r.compared == 1 ? " run" : " runs")
          : "its peers (" + std::to_string(r.compared) + (r.compared == 1 ? " node" : " nodes");
  std::string text = r.test + " [" + r.device + "] " + r.metric + " " + Fixed3(r.ratio) + " of " +
                     reference + ", interval " + Fixed3(r.low) + "-" + Fixed3(r.high) + ")";
  if (r.metrics > 1) text += " and " + std::to_string(r.metrics - 1) + " more metrics";
  return text;
}

void FailRegressed(const RegressionCheck& check, std::vector<NodeOutcome>* outcomes) {
  for (auto& o : *outcomes) {
    if (!o.verdict || !verdict::RegressionFails(*o.verdict)) continue;
    for (const auto& r : check.found) {
      if (r.node != o.node) continue;
      o.verdict = verdict::Verdict::kFail;
      o.test = r.test;
      o.figure = r.metric + " ratio " + Fixed3(r.ratio);
      o.reason = "regression (policy.failOnRegression): " + DescribeRegression(r);
      break;
    }
  }
}

}  // namespace perfgate::op

#include "operator/policy/regressions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "common/compare.h"
#include "common/node_verdict.h"
#include "common/report.h"
#include "core/fleet.h"
#include "core/names.h"
#include "store/compare.h"

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
  // The reports of the nodes that passed, by node: the ones compared.
  std::map<std::string, bool> passed;
  for (const auto& o : outcomes) passed[o.node] = o.verdict == verdict::Verdict::kPass;
  // The full reports come with the store's view: without a store nothing is compared.
  if (!s.store) return check;
  std::map<std::string, const v1alpha1::Report*> reports;
  for (const auto& [node, report] : s.store->reports) {
    auto it = passed.find(node);
    if (it != passed.end() && it->second) reports.emplace(node, &report);
  }
  // The peers: every node of this run (one that failed is still a peer), as `perfgate summary`
  // and /metrics see them: one definition of "lags its peers" (common/compare.h).
  std::vector<fleet::NodeReport> run;
  for (const auto& [node, report] : s.store->reports) {
    fleet::NodeReport r;
    r.node = node;
    r.report = report;
    run.push_back(std::move(r));
  }
  const std::vector<fleet::Figure> figures = fleet::Figures(run);
  comparison::PeerRule rule;
  rule.margin = check.margin;
  rule.confidence = confidence;
  std::map<std::string, std::vector<fleet::Lagging>> lags;
  for (auto& l : fleet::FindLagging(figures, rule)) lags[l.figure.node].push_back(std::move(l));
  std::map<std::string, std::set<std::string>> group_nodes;
  for (const auto& f : figures) group_nodes[fleet::GroupKey(f) + "\x1f" + f.model].insert(f.node);
  for (const auto& f : figures) {
    const auto peers = static_cast<int>(group_nodes[fleet::GroupKey(f) + "\x1f" + f.model].size());
    if (reports.count(f.node) != 0 && peers > rule.min_peers) ++check.compared;
  }

  for (const auto& [node, report] : reports) {
    if (auto h = s.store->history.find(node); h != s.store->history.end()) {
      const auto rows = store::CompareWithHistory(*report, h->second, confidence, check.margin);
      check.compared += static_cast<int>(rows.size());
      if (auto w = Worst(node, "history", rows)) check.found.push_back(*w);
    }
    auto lagging = lags.find(node);
    if (lagging == lags.end()) continue;
    const fleet::Lagging* worst = nullptr;
    double worst_badness = 0;
    for (const auto& l : lagging->second) {
      if (!(l.ratio > 0)) continue;
      // How many times worse: a smaller ratio where higher is better, a larger one otherwise.
      const double badness = l.figure.higher_is_better ? 1 / l.ratio : l.ratio;
      if (worst != nullptr && badness <= worst_badness) continue;
      worst = &l;
      worst_badness = badness;
    }
    if (worst == nullptr) continue;
    const fleet::Figure& f = worst->figure;
    check.found.push_back(Regression{node, "peers", f.test, f.device, f.metric, f.unit,
                                     worst->ratio, worst->interval.low, worst->interval.high,
                                     worst->interval.confidence, worst->peers,
                                     static_cast<int>(lagging->second.size())});
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

// One fleet, every place perfgate compares nodes: the comparison library itself, a local run's
// history (what `perfgate run` prints), the operator's status.regressions, `perfgate summary`
// (fleet::FindLagging) and the operator's /metrics. Ten H200 nodes, node-3 8% slow and node-6 2%
// slow (inside the 3% margin), each with three earlier runs at its usual speed: every entry point
// names node-3, and none names node-6 or any other. The same with four nodes (node-3 the slow
// one), where the summary used to need eight and said nothing while the status listed it.
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/compare.h"
#include "common/report.h"
#include "core/fleet.h"
#include "operator/policy/regressions.h"
#include "operator/runtime/cache_strip.h"
#include "operator/runtime/metrics.h"
#include "worker/history.h"

namespace perfgate {
namespace {

using Json = nlohmann::json;

constexpr double kNominal = 4000;  // GB/s

std::string Node(int i) { return "node-" + std::to_string(i); }

// How fast node i is now: node-3 8% and node-6 2% below the others, which spread by about 0.3%.
double Speed(int i) {
  if (i == 3) return 0.92;
  if (i == 6) return 0.98;
  return 1 + 0.003 * std::sin(i * 1.7);
}

// Sixteen samples around `level`, CV 0.3%, the same for the same seed.
std::vector<double> Samples(double level, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.003);
  std::vector<double> out;
  for (int k = 0; k < 16; ++k) out.push_back(level * (1 + noise(rng)));
  return out;
}

// Node i's report of this run: an HBM triad on gpu0, checked against a bound it passes.
v1alpha1::Report NowReport(int i) {
  v1alpha1::Report r;
  r.set_validation("fleet");
  r.set_verdict(v1alpha1::PASS);
  r.set_starttime("2026-12-01T10:00:00Z");
  r.set_completiontime("2026-12-01T10:05:00Z");
  r.mutable_identity()->set_hostname(Node(i));
  r.mutable_identity()->add_gpus()->set_name("NVIDIA H200");
  auto* t = r.add_tests();
  t->set_name("hbm-stream");
  t->set_type("hbm-stream");
  t->set_device("gpu0");
  t->set_verdict(v1alpha1::PASS);
  auto* m = t->add_metrics();
  m->set_name("triadBandwidthGBps");
  m->set_unit("GB/s");
  m->set_higherisbetter(true);
  const std::vector<double> samples = Samples(kNominal * Speed(i), 100 + i);
  for (double v : samples) m->add_samples(v);
  const double median = stats::Median(samples);
  m->mutable_summary()->set_n(static_cast<int>(samples.size()));
  m->mutable_summary()->set_median(median);
  auto* th = t->add_thresholds();
  th->mutable_threshold()->set_metric("triadBandwidthGBps");
  th->mutable_threshold()->set_statistic("median");
  th->mutable_threshold()->set_op(">=");
  th->set_bound(3000);
  th->set_observed(median);
  th->set_verdict(v1alpha1::PASS);
  return r;
}

// Node i's three earlier runs, at its usual speed (the nominal one for every node).
std::vector<store::MetricRecord> History(int i) {
  std::vector<store::MetricRecord> out;
  for (int run = 0; run < 3; ++run) {
    store::MetricRecord m;
    m.key = {"default", "fleet", "g0-" + std::to_string(run), Node(i)};
    m.test = "hbm-stream";
    m.device = "gpu0";
    m.metric = "triadBandwidthGBps";
    m.unit = "GB/s";
    m.samples = Samples(kNominal * (i == 3 || i == 6 ? 1.0 : Speed(i)), 1000 + 10 * i + run);
    m.summary.set_median(stats::Median(m.samples));
    out.push_back(m);
  }
  return out;
}

Json PerfResult(int i) {
  auto text = report::ToJson(NowReport(i));
  EXPECT_TRUE(text.ok());
  return {{"kind", "PerfResult"},
          {"metadata", {{"name", "fleet-" + Node(i)}}},
          {"spec",
           {{"nodeName", Node(i)},
            {"validation", "fleet"},
            {"run", "g1"},
            {"report", Json::parse(*text)}}}};
}

const std::set<std::string> kSlow = {"node-3"};

// The fleet's size.
class SameFleet : public ::testing::TestWithParam<int> {};

TEST_P(SameFleet, TheLibraryNamesNode3AgainstItsPeersAndItsHistory) {
  std::vector<comparison::Member> members;
  for (int i = 0; i < GetParam(); ++i) {
    members.push_back({Node(i), NowReport(i).tests(0).metrics(0).summary().median()});
  }
  std::set<std::string> lagging;
  for (const auto& lag : comparison::LaggingPeers(members, true)) {
    lagging.insert(members[lag.index].peer);
    EXPECT_NEAR(lag.ratio, 0.92, 0.01);
    EXPECT_LT(lag.interval.high, 0.97);
  }
  EXPECT_EQ(lagging, kSlow);

  std::set<std::string> worse;
  for (int i = 0; i < GetParam(); ++i) {
    const auto now = NowReport(i).tests(0).metrics(0);
    const std::vector<double> x(now.samples().begin(), now.samples().end());
    std::vector<double> before;
    for (const auto& m : History(i))
      before.insert(before.end(), m.samples.begin(), m.samples.end());
    const auto c = comparison::CompareSamples(x, before, true, 0.95, 0.03);
    if (c.flag < 0) worse.insert(Node(i));
    EXPECT_GE(c.flag, -1);
  }
  EXPECT_EQ(worse, kSlow);
}

TEST_P(SameFleet, ALocalRunsHistoryFlagsNode3Only) {
  for (int i = 0; i < GetParam(); ++i) {
    const auto rows = worker::CompareWithHistory(NowReport(i), History(i), 0.95, 0.03);
    ASSERT_EQ(rows.size(), 1u) << Node(i);
    EXPECT_EQ(rows[0].flag, i == 3 ? -1 : 0) << Node(i);
    const std::string text = worker::FormatComparison(rows, 3, "fleet", 0.95, 0.03);
    EXPECT_EQ(text.find("WORSE") != std::string::npos, i == 3) << text;
  }
}

TEST_P(SameFleet, StatusRegressionsNameNode3AgainstHistoryAndPeers) {
  op::Snapshot s;
  s.spec.emplace();
  s.store.emplace();
  s.store->available = true;
  std::vector<op::NodeOutcome> outcomes;
  for (int i = 0; i < GetParam(); ++i) {
    s.store->reports[Node(i)] = NowReport(i);
    s.store->history[Node(i)] = History(i);
    op::NodeOutcome o;
    o.node = Node(i);
    o.verdict = verdict::Verdict::kPass;
    outcomes.push_back(o);
  }
  const op::RegressionCheck check = op::FindRegressions(s, outcomes);
  std::set<std::string> nodes, against;
  for (const auto& r : check.found) {
    nodes.insert(r.node);
    against.insert(r.against);
    EXPECT_NEAR(r.ratio, 0.92, 0.01) << op::DescribeRegression(r);
    EXPECT_LT(r.high, 0.97) << op::DescribeRegression(r);
  }
  EXPECT_EQ(nodes, kSlow);
  EXPECT_EQ(against, (std::set<std::string>{"history", "peers"}));
}

TEST_P(SameFleet, TheSummaryAndMetricsNameNode3Only) {
  std::vector<fleet::NodeReport> reports;
  op::MetricsSnapshot m;
  m.per_node = true;
  for (int i = 0; i < GetParam(); ++i) {
    Json result = PerfResult(i);
    auto parsed = fleet::ParseReports(result.dump(), Node(i));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    reports.push_back(parsed->front());
    op::StripResult(result, true);  // what /metrics reads: the cache's copy, no samples
    m.results.push_back(result);
  }
  std::set<std::string> summary;
  for (const auto& l : fleet::FindLagging(fleet::Figures(reports))) {
    summary.insert(l.figure.node);
    EXPECT_NEAR(l.ratio, 0.92, 0.01);
  }
  EXPECT_EQ(summary, kSlow);

  const std::string text = op::RenderMetrics(m);
  std::set<std::string> metrics;
  for (int i = 0; i < GetParam(); ++i) {
    if (text.find("perfgate_node_figure_lagging_ratio{node=\"" + Node(i) + "\"") !=
        std::string::npos) {
      metrics.insert(Node(i));
    }
  }
  EXPECT_EQ(metrics, kSlow) << text;
}

INSTANTIATE_TEST_SUITE_P(TenAndFourNodes, SameFleet, ::testing::Values(10, 4));

}  // namespace
}  // namespace perfgate
